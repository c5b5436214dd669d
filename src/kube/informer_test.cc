// Informer against a scripted ListerWatcher: the exact sequence of handler calls.
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "kube/api_error.h"

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

Json Pod(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"name", name}, {"namespace", "d"}, {"resourceVersion", rv}}}};
}

WatchEvent Event(WatchEvent::Type type, Json object) {
  return {type, std::move(object)};
}

WatchEvent Bookmark(const std::string& rv) {
  return {WatchEvent::Type::kBookmark, {{"metadata", {{"resourceVersion", rv}}}}};
}

// Plays back scripted lists and watches; once the script is used up, a watch waits for cancel.
class ScriptedSource : public ListerWatcher {
 public:
  struct WatchStep {
    std::vector<WatchEvent> events;
    Status end;
  };

  std::deque<Result<ObjectList>> lists;
  std::deque<WatchStep> watches;

  Result<ObjectList> List(CancelToken*) override {
    std::lock_guard lock(mutex_);
    if (lists.empty()) return Unavailable("script: no more lists");
    Result<ObjectList> next = std::move(lists.front());
    lists.pop_front();
    return next;
  }

  Status Watch(const std::string& rv, const WatchHandler& handler, CancelToken* cancel) override {
    WatchStep step;
    {
      std::lock_guard lock(mutex_);
      watched_from_.push_back(rv);
      if (watches.empty()) {
        idle_ = true;
      } else {
        step = std::move(watches.front());
        watches.pop_front();
      }
    }
    if (idle_) {
      for (int i = 0; i < 2000 && !cancel->cancelled(); ++i) {
        std::this_thread::sleep_for(milliseconds(5));
      }
      return Status::Ok();
    }
    for (const WatchEvent& event : step.events) {
      if (!handler(event)) return Status::Ok();
    }
    return step.end;
  }

  std::vector<std::string> WatchedFrom() {
    std::lock_guard lock(mutex_);
    return watched_from_;
  }
  // True once every scripted watch has been played and the informer waits in the last one.
  bool Idle() {
    std::lock_guard lock(mutex_);
    return idle_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> watched_from_;
  std::atomic<bool> idle_{false};
};

class InformerTest : public ::testing::Test {
 protected:
  InformerHandlers Recorder() {
    return {.on_add =
                [this](const Json& o) { Record("add " + NameOf(o) + "@" + ResourceVersionOf(o)); },
            .on_update =
                [this](const Json& old_object, const Json& new_object) {
                  Record("update " + NameOf(new_object) + "@" + ResourceVersionOf(old_object) +
                         "->" + ResourceVersionOf(new_object));
                },
            .on_delete = [this](const Json& o) { Record("delete " + NameOf(o)); }};
  }
  void Record(std::string line) {
    std::lock_guard lock(mutex_);
    log_.push_back(std::move(line));
  }
  std::vector<std::string> Log() {
    std::lock_guard lock(mutex_);
    return log_;
  }
  // Starts the informer and waits (bounded) until the script has been played out.
  std::unique_ptr<Informer> Run(ScriptedSource* source_raw,
                                std::unique_ptr<ScriptedSource> source) {
    InformerOptions options{.backoff = {.initial = milliseconds(5), .max = milliseconds(20)}};
    auto informer = std::make_unique<Informer>(std::move(source), options, Recorder());
    informer->Start();
    for (int i = 0; i < 1000 && !source_raw->Idle(); ++i)
      std::this_thread::sleep_for(milliseconds(5));
    EXPECT_TRUE(source_raw->Idle()) << "the informer did not play the whole script";
    return informer;
  }

  std::mutex mutex_;
  std::vector<std::string> log_;
};

TEST_F(InformerTest, ListThenWatchEventsInOrder) {
  auto source = std::make_unique<ScriptedSource>();
  ScriptedSource* raw = source.get();
  source->lists.push_back(ObjectList{{Pod("a", "1"), Pod("b", "2")}, "2"});
  source->watches.push_back({{Event(WatchEvent::Type::kAdded, Pod("c", "3")),
                              Event(WatchEvent::Type::kModified, Pod("a", "4")),
                              Event(WatchEvent::Type::kDeleted, Pod("b", "5")), Bookmark("6")},
                             Status::Ok()});
  auto informer = Run(raw, std::move(source));
  EXPECT_TRUE(informer->HasSynced());
  EXPECT_EQ(Log(), (std::vector<std::string>{"add a@1", "add b@2", "add c@3", "update a@1->4",
                                             "delete b"}));
  EXPECT_EQ(raw->WatchedFrom(), (std::vector<std::string>{"2", "6"}));
  EXPECT_EQ(informer->LastResourceVersion(), "6");
  ASSERT_TRUE(informer->Get("d/a").has_value());
  EXPECT_EQ(ResourceVersionOf(*informer->Get("d/a")), "4");
  EXPECT_FALSE(informer->Get("d/b").has_value());
  EXPECT_EQ(informer->List().size(), 2u);
  EXPECT_EQ(informer->ListCount(), 1);
}

TEST_F(InformerTest, RelistAfterGoneDeliversEveryMissedTransition) {
  auto source = std::make_unique<ScriptedSource>();
  ScriptedSource* raw = source.get();
  source->lists.push_back(ObjectList{{Pod("a", "1"), Pod("b", "2"), Pod("k", "3")}, "3"});
  Status gone =
      ApiError{.http_status = 410, .reason = "Expired", .message = "too old"}.ToStatus("watch");
  source->watches.push_back({{}, gone});
  // While the watch was away: a changed, b deleted, c created, k unchanged.
  source->lists.push_back(ObjectList{{Pod("a", "7"), Pod("c", "8"), Pod("k", "3")}, "9"});
  auto informer = Run(raw, std::move(source));
  EXPECT_EQ(Log(), (std::vector<std::string>{"add a@1", "add b@2", "add k@3", "update a@1->7",
                                             "add c@8", "delete b"}));
  EXPECT_EQ(raw->WatchedFrom(), (std::vector<std::string>{"3", "9"}));
  EXPECT_EQ(informer->ListCount(), 2);
}

TEST_F(InformerTest, ResumesFromTheLastVersionAfterErrorsAndIgnoresRepeats) {
  auto source = std::make_unique<ScriptedSource>();
  ScriptedSource* raw = source.get();
  source->lists.push_back(Unavailable("connection refused"));
  source->lists.push_back(ObjectList{{Pod("a", "1")}, "1"});
  source->watches.push_back(
      {{Event(WatchEvent::Type::kModified, Pod("a", "2"))}, Unavailable("connection reset")});
  // The server repeats the last event after the reconnect: no second update.
  source->watches.push_back({{Event(WatchEvent::Type::kModified, Pod("a", "2")),
                              Event(WatchEvent::Type::kModified, Pod("a", "3"))},
                             Status::Ok()});
  auto informer = Run(raw, std::move(source));
  EXPECT_EQ(Log(), (std::vector<std::string>{"add a@1", "update a@1->2", "update a@2->3"}));
  EXPECT_EQ(raw->WatchedFrom(), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(informer->ListCount(), 1);
}

TEST_F(InformerTest, WaitForSyncGivesUpAndStopIsPrompt) {
  auto source = std::make_unique<ScriptedSource>();  // every list fails
  Informer informer(std::move(source), {.backoff = {.initial = milliseconds(5)}}, Recorder());
  informer.Start();
  EXPECT_FALSE(informer.WaitForSync(milliseconds(100)));
  EXPECT_FALSE(informer.HasSynced());
  auto start = std::chrono::steady_clock::now();
  informer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(informer.WaitForSync(milliseconds(10)));
}

}  // namespace
}  // namespace tessera::kube
