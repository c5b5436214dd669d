#include "fakeapiserver/selectors.h"

#include <gtest/gtest.h>

namespace tessera::testing {
namespace {

using nlohmann::json;

json Labeled(const json& labels) {
  return {{"metadata", {{"name", "x"}, {"labels", labels}}}};
}

TEST(LabelSelectorTest, OperatorsMatchAsOnTheRealServer) {
  const json obj = Labeled({{"app", "web"}, {"tier", "front"}});
  struct Case {
    const char* selector;
    bool matches;
  } cases[] = {
      {"", true},
      {"app=web", true},
      {"app==web", true},
      {"app=db", false},
      {"app!=db", true},
      {"app!=web", false},
      {"missing!=x", true},
      {"app in (db,web)", true},
      {"app in (db)", false},
      {"app notin (db)", true},
      {"app notin (web, db)", false},
      {"missing notin (a)", true},
      {"tier", true},
      {"missing", false},
      {"!missing", true},
      {"!app", false},
      {"app=web,tier=front", true},
      {"app=web,tier=back", false},
      {"app in (web,db),!canary", true},
  };
  for (const Case& c : cases) {
    ApiResult<LabelSelector> s = LabelSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector << ": " << s.error().message;
    EXPECT_EQ(s->Matches(obj), c.matches) << c.selector;
  }
}

TEST(LabelSelectorTest, ObjectWithoutLabels) {
  const json obj = {{"metadata", {{"name", "x"}}}};
  EXPECT_FALSE(LabelSelector::Parse("app=web")->Matches(obj));
  EXPECT_TRUE(LabelSelector::Parse("app!=web")->Matches(obj));
  EXPECT_TRUE(LabelSelector::Parse("!app")->Matches(obj));
}

TEST(LabelSelectorTest, MalformedIsBadRequest) {
  for (const char* text : {"app in web", "app in ()", "a b c", "app=we b", ",", "app in (a"}) {
    ApiResult<LabelSelector> s = LabelSelector::Parse(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.error().code, 400) << text;
    EXPECT_NE(s.error().message.find("unable to parse requirement"), std::string::npos);
  }
}

TEST(FieldSelectorTest, EqualsNotEqualsAndAnd) {
  const std::vector<std::string> allowed = {"spec.nodeName", "status.phase", "spec.schedulerName",
                                            "spec.unschedulable"};
  const json pod = {{"metadata", {{"name", "p1"}, {"namespace", "default"}}},
                    {"spec", {{"nodeName", "n1"}, {"unschedulable", true}}},
                    {"status", {{"phase", "Running"}}}};
  struct Case {
    const char* selector;
    bool matches;
  } cases[] = {
      {"metadata.name=p1", true},
      {"metadata.name==p2", false},
      {"metadata.namespace=default", true},
      {"spec.nodeName=n1,status.phase=Running", true},
      {"spec.nodeName=n1,status.phase!=Running", false},
      {"spec.nodeName!=", true},
      {"spec.schedulerName=", true},
      {"spec.unschedulable=true", true},
  };
  for (const Case& c : cases) {
    ApiResult<FieldSelector> s = FieldSelector::Parse(c.selector, allowed);
    ASSERT_TRUE(s.ok()) << c.selector << ": " << s.error().message;
    EXPECT_EQ(s->Matches(pod), c.matches) << c.selector;
  }
}

TEST(FieldSelectorTest, UnknownFieldAndMissingOperatorAreBadRequests) {
  ApiResult<FieldSelector> unknown = FieldSelector::Parse("spec.hostname=x", {"spec.nodeName"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, 400);
  EXPECT_EQ(unknown.error().message, "field label not supported: spec.hostname");
  ApiResult<FieldSelector> no_op = FieldSelector::Parse("metadata.name", {});
  ASSERT_FALSE(no_op.ok());
  EXPECT_EQ(no_op.error().code, 400);
}

}  // namespace
}  // namespace tessera::testing
