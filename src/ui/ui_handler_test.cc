// The web page's answers: each embedded file byte for byte with its content type, ETag and 304,
// the security headers on every answer, 404 for anything else; the same over HTTP through
// AddUiRoutes; and the page names only files it embeds (nothing from another origin).
#include <httplib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ui/assets.h"
#include "ui/ui_handler.h"
#include "ui/ui_routes.h"

namespace tessera::ui {
namespace {

using testing::HasSubstr;

std::string ReadSource(const std::string& name) {
  std::ifstream in(std::string(TESSERA_UI_ASSET_DIR) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> ListedAssets() {
  std::vector<std::string> out;
  std::stringstream list(TESSERA_UI_ASSETS);
  for (std::string name; std::getline(list, name, ',');) out.push_back(name);
  return out;
}

std::string Header(const UiResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

const Asset& Find(std::string_view name) {
  for (const Asset& a : Assets()) {
    if (a.name == name) return a;
  }
  ADD_FAILURE() << "no embedded " << name;
  static const Asset kNone;
  return kNone;
}

TEST(UiAssets, EveryListedFileIsEmbeddedByteForByte) {
  std::vector<std::string> listed = ListedAssets();
  ASSERT_EQ(Assets().size(), listed.size());
  for (const std::string& name : listed) {
    std::string source = ReadSource(name);
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_EQ(Find(name).body, source) << name;
  }
}

TEST(UiAssets, EtagsAreQuotedAndDifferPerFile) {
  std::set<std::string_view> tags;
  for (const Asset& a : Assets()) {
    EXPECT_THAT(std::string(a.etag), testing::MatchesRegex("\"[0-9a-f]{20}\"")) << a.name;
    tags.insert(a.etag);
  }
  EXPECT_EQ(tags.size(), Assets().size());
}

TEST(UiHandler, ServesEachFileWithItsContentType) {
  const std::map<std::string, std::string> expected = {
      {"index.html", "text/html; charset=utf-8"},
      {"style.css", "text/css; charset=utf-8"},
      {"app.mjs", "text/javascript; charset=utf-8"},
      {"model.mjs", "text/javascript; charset=utf-8"},
      {"view.mjs", "text/javascript; charset=utf-8"},
      {"pod.mjs", "text/javascript; charset=utf-8"},
      {"pod_view.mjs", "text/javascript; charset=utf-8"},
      {"fit.mjs", "text/javascript; charset=utf-8"},
      {"fit_view.mjs", "text/javascript; charset=utf-8"},
      {"icon.svg", "image/svg+xml"},
  };
  ASSERT_EQ(expected.size(), Assets().size()) << "a new file needs its line here";
  for (const auto& [name, type] : expected) {
    UiResponse r = ServeUi(name, "");
    EXPECT_EQ(r.status, 200) << name;
    EXPECT_EQ(r.content_type, type) << name;
    EXPECT_EQ(r.body, Find(name).body) << name;
    EXPECT_EQ(Header(r, "ETag"), Find(name).etag) << name;
    EXPECT_EQ(Header(r, "Cache-Control"), "no-cache") << name;
  }
}

TEST(UiHandler, TheFolderItselfIsTheIndex) {
  UiResponse r = ServeUi("", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, Find("index.html").body);
}

TEST(UiHandler, NotModifiedWhenIfNoneMatchNamesTheEtag) {
  const std::string tag(Find("app.mjs").etag);
  for (const std::string& header :
       {tag, "\"other\", " + tag, "W/" + tag, " " + tag + " ", std::string("*")}) {
    UiResponse r = ServeUi("app.mjs", header);
    EXPECT_EQ(r.status, 304) << header;
    EXPECT_TRUE(r.body.empty()) << header;
    EXPECT_EQ(Header(r, "ETag"), tag) << header;
  }
  // Another file's tag, a stale one, or a tag without its quotes: the file itself.
  for (const std::string& header :
       {std::string(Find("style.css").etag), std::string("\"00000000000000000000\""),
        tag.substr(1, tag.size() - 2)}) {
    UiResponse r = ServeUi("app.mjs", header);
    EXPECT_EQ(r.status, 200) << header;
    EXPECT_EQ(r.body, Find("app.mjs").body) << header;
  }
}

TEST(UiHandler, EveryAnswerCarriesTheSecurityHeaders) {
  const std::string tag(Find("index.html").etag);
  for (const UiResponse& r :
       {ServeUi("index.html", ""), ServeUi("index.html", tag), ServeUi("missing.js", "")}) {
    EXPECT_EQ(Header(r, "Content-Security-Policy"), kContentSecurityPolicy) << r.status;
    EXPECT_EQ(Header(r, "X-Content-Type-Options"), "nosniff") << r.status;
    EXPECT_EQ(Header(r, "Referrer-Policy"), "no-referrer") << r.status;
    EXPECT_EQ(Header(r, "X-Frame-Options"), "DENY") << r.status;
  }
  const std::string csp = kContentSecurityPolicy;
  EXPECT_THAT(csp, HasSubstr("default-src 'none'"));
  EXPECT_THAT(csp, HasSubstr("script-src 'self';"));
  EXPECT_THAT(csp, HasSubstr("connect-src 'self';"));
  EXPECT_THAT(csp, HasSubstr("frame-ancestors 'none'"));
  EXPECT_THAT(csp, testing::Not(HasSubstr("unsafe")));
}

TEST(UiHandler, UnknownPathsAreNotFound) {
  for (const char* name : {"missing.js", "../inspect", "assets/index.html", "index.html/",
                           "INDEX.HTML", "index", "/index.html", "app.mjs?x=1"}) {
    UiResponse r = ServeUi(name, "");
    EXPECT_EQ(r.status, 404) << name;
    EXPECT_EQ(r.content_type, "text/plain; charset=utf-8") << name;
    EXPECT_EQ(Header(r, "Cache-Control"), "no-store") << name;
    EXPECT_EQ(Header(r, "ETag"), "") << name;
  }
  EXPECT_EQ(ServeUi("missing.js", "*").status, 404);
}

TEST(UiHandler, EtagListsAreParsedAsRfc9110Says) {
  EXPECT_TRUE(EtagMatches("\"a\"", "\"a\""));
  EXPECT_TRUE(EtagMatches("\"b\",\"a\"", "\"a\""));
  EXPECT_TRUE(EtagMatches("W/\"a\"", "\"a\""));
  EXPECT_TRUE(EtagMatches(" * ", "\"a\""));
  EXPECT_FALSE(EtagMatches("", "\"a\""));
  EXPECT_FALSE(EtagMatches("\"ab\"", "\"a\""));
  EXPECT_FALSE(EtagMatches(",,", "\"a\""));
  EXPECT_FALSE(EtagMatches("a", "\"a\""));
}

// Every file the page names (link, script, import) is one it embeds, and no file names
// another origin: the page works with no network beyond the scheduler.
TEST(UiAssets, ThePageNamesOnlyItsOwnFiles) {
  std::set<std::string> embedded;
  for (const Asset& a : Assets()) embedded.insert(std::string(a.name));
  const std::regex reference(R"((?:href|src)="([^"#]+)\"|from '\./([^']+)')");
  size_t references = 0;
  for (const Asset& a : Assets()) {
    std::string text(a.body);
    // An SVG's namespace is a name, not a request.
    text = std::regex_replace(text, std::regex(R"(xmlns="http://www\.w3\.org/2000/svg")"), "");
    EXPECT_THAT(text, testing::Not(HasSubstr("http://"))) << a.name;
    EXPECT_THAT(text, testing::Not(HasSubstr("https://"))) << a.name;
    for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it) {
      std::string target = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      EXPECT_TRUE(embedded.count(target)) << a.name << " names " << target;
      ++references;
    }
  }
  // index.html: icon, style, app; app.mjs: fit, fit_view, model, pod, pod_view, view; view.mjs:
  // model, pod; pod.mjs: model; pod_view.mjs: pod, view; fit_view.mjs: fit, view, model.
  EXPECT_GE(references, 17u);
}

class UiOverHttp : public testing::Test {
 protected:
  void SetUp() override {
    AddUiRoutes(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  httplib::Client Client() { return httplib::Client("127.0.0.1", port_); }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(UiOverHttp, ServesThePageWithItsHeaders) {
  httplib::Client c = Client();
  auto r = c.Get("/ui/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), kContentSecurityPolicy);
  EXPECT_EQ(r->get_header_value("ETag"), Find("index.html").etag);
  EXPECT_EQ(r->body, Find("index.html").body);

  auto js = c.Get("/ui/model.mjs");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->body, Find("model.mjs").body);
}

TEST_F(UiOverHttp, AnswersNotModifiedToItsOwnEtag) {
  httplib::Client c = Client();
  const std::string tag(Find("style.css").etag);
  auto r = c.Get("/ui/style.css", {{"If-None-Match", tag}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  EXPECT_TRUE(r->body.empty());
  EXPECT_EQ(r->get_header_value("ETag"), tag);
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), kContentSecurityPolicy);
}

TEST_F(UiOverHttp, UnknownFilesAreNotFoundAndTheBarePathRedirects) {
  httplib::Client c = Client();
  auto missing = c.Get("/ui/missing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("Content-Security-Policy"), kContentSecurityPolicy);
  auto bare = c.Get("/ui");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 301);
  EXPECT_EQ(bare->get_header_value("Location"), "ui/");
  auto head = c.Head("/ui/app.mjs");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(head->get_header_value("ETag"), Find("app.mjs").etag);
}

}  // namespace
}  // namespace tessera::ui
