// Informer against the fake API server: sync, resume after dropped watches, re-list after 410.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "kube/fake_server_for_test.h"
#include "kube/informer.h"

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

// Counts handler calls per object key.
struct Counts {
  std::mutex mutex;
  std::map<std::string, int> adds, updates, deletes;
  InformerHandlers Handlers() {
    return {.on_add = [this](const Json& o) { Bump(adds, o); },
            .on_update = [this](const Json&, const Json& o) { Bump(updates, o); },
            .on_delete = [this](const Json& o) { Bump(deletes, o); }};
  }
  void Bump(std::map<std::string, int>& map, const Json& object) {
    std::lock_guard lock(mutex);
    ++map[ObjectKey(object)];
  }
  size_t Size(std::map<std::string, int>& map) {
    std::lock_guard lock(mutex);
    return map.size();
  }
};

class InformerFakeServerTest : public ::testing::Test {
 protected:
  void Start(testing::FakeApiServer::Options options = {}) {
    server_ = StartFakeServer(options);
    ASSERT_NE(server_, nullptr);
    client_ = ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
  }
  void CreatePod(const std::string& ns, const std::string& name) {
    Result<Json> pod = client_->Create(kPods, ns, PodObject(ns, name));
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  }
  InformerOptions Options(const std::string& ns = "") {
    return {.name = "test pods",
            .selectors = {.ns = ns, .page_size = 4},
            .backoff = {.initial = milliseconds(20), .max = milliseconds(200)}};
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<Client> client_;
  Counts counts_;
};

TEST_F(InformerFakeServerTest, SyncsThenFollowsAddsUpdatesAndDeletes) {
  Start();
  for (int i = 0; i < 10; ++i) CreatePod("default", "pre" + std::to_string(i));
  Informer informer(*client_, kPods, Options("default"), counts_.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(10)));
  EXPECT_EQ(informer.List().size(), 10u);  // gathered from pages of 4

  CreatePod("default", "new");
  ASSERT_TRUE(client_->PatchAnnotations(kPods, "default", "pre0", {{"a", "b"}}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "default", "pre1").ok());
  CreatePod("kube-system", "elsewhere");  // outside the informer's namespace
  ASSERT_TRUE(WaitUntil([&] { return counts_.Size(counts_.deletes) == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return informer.Get("default/new").has_value(); }));
  EXPECT_EQ(Annotation(*informer.Get("default/pre0"), "a"), "b");
  EXPECT_FALSE(informer.Get("default/pre1").has_value());
  EXPECT_FALSE(informer.Get("kube-system/elsewhere").has_value());
  std::lock_guard lock(counts_.mutex);
  EXPECT_EQ(counts_.adds.size(), 11u);
  EXPECT_EQ(counts_.updates, (std::map<std::string, int>{{"default/pre0", 1}}));
  EXPECT_EQ(counts_.deletes, (std::map<std::string, int>{{"default/pre1", 1}}));
}

TEST_F(InformerFakeServerTest, ResumesAfterClosedWatchesWithoutMissingOrRepeating) {
  Start();
  Informer informer(*client_, kPods, Options(), counts_.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(10)));

  constexpr int kPods = 40;
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    for (int i = 0; i < kPods; ++i) {
      std::string name = "p" + std::to_string(i);
      EXPECT_TRUE(
          client_->Create(tessera::kube::kPods, "default", PodObject("default", name)).ok());
      EXPECT_TRUE(client_->PatchLabels(tessera::kube::kPods, "default", name, {{"v", "2"}}).ok());
      std::this_thread::sleep_for(milliseconds(5));
    }
    writing = false;
  });
  int closes = 0;
  while (writing) {
    server_->CloseWatches();
    ++closes;
    std::this_thread::sleep_for(milliseconds(30));
  }
  writer.join();
  EXPECT_GE(closes, 3);
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(counts_.mutex);
    return counts_.updates.size() == static_cast<size_t>(kPods);
  })) << "updates seen: "
      << counts_.Size(counts_.updates);
  std::this_thread::sleep_for(milliseconds(200));  // room for any stray repeat to show up
  std::lock_guard lock(counts_.mutex);
  EXPECT_EQ(counts_.adds.size(), static_cast<size_t>(kPods));
  for (const auto& [key, n] : counts_.adds) EXPECT_EQ(n, 1) << "add of " << key;
  for (const auto& [key, n] : counts_.updates) EXPECT_EQ(n, 1) << "update of " << key;
  EXPECT_TRUE(counts_.deletes.empty());
  EXPECT_EQ(informer.ListCount(), 1) << "resumed watches must not need a re-list";
  for (const Json& pod : informer.List()) EXPECT_EQ(Labels(pod).at("v"), "2");
}

class InformerRelistTest : public InformerFakeServerTest,
                           public ::testing::WithParamInterface<bool> {};

TEST_P(InformerRelistTest, RelistsAfterExpiredHistory) {
  // No bookmarks, so the informer's resourceVersion stays behind changes it does not watch.
  Start({.bookmark_interval = std::chrono::hours(1)});
  server_->SetTooOldAsEvent(GetParam());
  CreatePod("default", "a");
  Informer informer(*client_, kPods, Options("default"), counts_.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(10)));
  CreatePod("kube-system", "moves-the-version");
  server_->ExpireHistory();
  server_->CloseWatches();
  ASSERT_TRUE(WaitUntil([&] { return informer.ListCount() == 2; }));
  CreatePod("default", "b");
  // The cache shows "b" before its add handler has run: wait for the handler.
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(counts_.mutex);
    return counts_.adds.count("default/b") != 0;
  }));
  std::lock_guard lock(counts_.mutex);
  EXPECT_EQ(counts_.adds, (std::map<std::string, int>{{"default/a", 1}, {"default/b", 1}}));
  EXPECT_TRUE(counts_.updates.empty());  // the re-list found "a" unchanged
}

INSTANTIATE_TEST_SUITE_P(HttpStatusOrErrorEvent, InformerRelistTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "ErrorEvent" : "Http410"; });

TEST_F(InformerFakeServerTest, KeepsRetryingWhileTheServerFailsThenSyncs) {
  Start();
  CreatePod("default", "a");
  server_->FailNext(3, 503);
  Informer informer(*client_, kPods, Options(), counts_.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(10)));
  EXPECT_TRUE(informer.Get("default/a").has_value());
  auto start = std::chrono::steady_clock::now();
  informer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace tessera::kube
