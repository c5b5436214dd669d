// Leader election between clients of the fake API server.
#include "kube/leader_elector.h"

#include <gtest/gtest.h>

#include "kube/fake_server_for_test.h"

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Members are destroyed in reverse order: the elector goes first, so that the callbacks its
// Stop() runs still find the fields they write and the client it uses.
struct Candidate {
  std::atomic<int> started{0}, stopped{0};
  std::string holder_at_stop;  // the Lease's holder when on_stopped_leading last ran
  std::unique_ptr<Client> client;
  std::unique_ptr<LeaderElector> elector;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartFakeServer();
    ASSERT_NE(server_, nullptr);
  }
  std::unique_ptr<Candidate> Make(const std::string& identity, bool release_on_stop = true) {
    auto c = std::make_unique<Candidate>();
    c->client = ClientFor(*server_);
    Candidate* raw = c.get();
    auto elector =
        LeaderElector::Create(*c->client, {.lease_namespace = "kube-system",
                                           .lease_name = "tessera-test",
                                           .identity = identity,
                                           .lease_duration = milliseconds(2000),
                                           .renew_deadline = milliseconds(1000),
                                           .retry_period = milliseconds(200),
                                           .release_on_stop = release_on_stop,
                                           .on_started_leading = [raw] { ++raw->started; },
                                           .on_stopped_leading =
                                               [this, raw] {
                                                 raw->holder_at_stop = Holder();
                                                 ++raw->stopped;
                                               }});
    EXPECT_TRUE(elector.ok()) << elector.status().ToString();
    c->elector = std::move(*elector);
    return c;
  }
  std::string Holder() {
    auto client = ClientFor(*server_);
    Result<Json> lease = client->Get(kLeases, "kube-system", "tessera-test");
    return lease.ok() ? StringAt(*lease, "/spec/holderIdentity")
                      : "<" + lease.status().message() + ">";
  }

  std::unique_ptr<testing::FakeApiServer> server_;
};

TEST_F(LeaderElectorTest, HandOverWithinTheLeaseDurationOnRelease) {
  auto a = Make("a");
  auto b = Make("b");
  a->elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a->elector->IsLeader(); }));
  b->elector->Start();
  std::this_thread::sleep_for(milliseconds(1200));  // several renewals of a, tries of b
  EXPECT_TRUE(a->elector->IsLeader());
  EXPECT_FALSE(b->elector->IsLeader());
  EXPECT_EQ(b->elector->Leader(), "a");
  EXPECT_EQ(Holder(), "a");

  auto stop = steady_clock::now();
  a->elector->Stop();
  EXPECT_EQ(a->started, 1);
  EXPECT_EQ(a->stopped, 1);
  EXPECT_EQ(a->holder_at_stop, "a") << "a stops its work before it hands the lease over";
  ASSERT_TRUE(WaitUntil([&] { return b->elector->IsLeader(); }, milliseconds(5000)));
  EXPECT_LT(steady_clock::now() - stop, milliseconds(2000));
  EXPECT_EQ(Holder(), "b");
  b->elector->Stop();
  EXPECT_EQ(b->stopped, 1);
  EXPECT_EQ(Holder(), "");
}

TEST_F(LeaderElectorTest, TakeOverAfterTheLeaseExpiresWithoutRelease) {
  auto a = Make("a", /*release_on_stop=*/false);
  auto b = Make("b");
  a->elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a->elector->IsLeader(); }));
  b->elector->Start();
  std::this_thread::sleep_for(milliseconds(500));
  auto stop = steady_clock::now();
  a->elector->Stop();  // a vanishes without a word: b must wait out the lease
  EXPECT_EQ(Holder(), "a");
  ASSERT_TRUE(WaitUntil([&] { return b->elector->IsLeader(); }, milliseconds(6000)));
  // a renewed at most one retry period before it stopped; the lease lasts 2 s from there.
  EXPECT_GE(steady_clock::now() - stop, milliseconds(1500));
  EXPECT_EQ(Holder(), "b");
}

TEST_F(LeaderElectorTest, StopsLeadingWhenRenewalsFailAndLeadsAgainAfterwards) {
  auto a = Make("a");
  a->elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a->elector->IsLeader(); }));
  server_->FailNext(1'000'000, 500);
  auto failing = steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return !a->elector->IsLeader(); }, milliseconds(5000)));
  // It must give up before the lease (2 s) can pass to someone else.
  EXPECT_LT(steady_clock::now() - failing, milliseconds(2000));
  // The callbacks run on the elector's thread just after IsLeader() changes.
  EXPECT_TRUE(WaitUntil([&] { return a->stopped == 1; }));
  server_->FailNext(0, 500);
  ASSERT_TRUE(WaitUntil([&] { return a->elector->IsLeader(); }, milliseconds(5000)));
  EXPECT_TRUE(WaitUntil([&] { return a->started == 2; }));
  EXPECT_EQ(a->stopped, 1);
}

TEST_F(LeaderElectorTest, RejectsInconsistentDurations) {
  auto client = ClientFor(*server_);
  auto elector = LeaderElector::Create(*client, {.lease_name = "x",
                                                 .identity = "a",
                                                 .lease_duration = milliseconds(1000),
                                                 .renew_deadline = milliseconds(1000),
                                                 .retry_period = milliseconds(200)});
  ASSERT_FALSE(elector.ok());
  EXPECT_NE(elector.status().message().find("retry period < renew deadline < lease duration"),
            std::string::npos);
  EXPECT_FALSE(LeaderElector::Create(*client, {.lease_name = "x"}).ok());  // no identity
}

// A leader whose thread is stuck (here in on_started_leading) stops renewing while it still says it
// leads; once lease_duration + the tolerance have passed, RenewalOverdue says so (the scheduler's
// /healthz then fails and kubelet restarts it). Once its thread runs again it gives leadership up
// (its renewal deadline has passed) and is no longer overdue; a follower never is.
TEST_F(LeaderElectorTest, AStuckLeaderIsOverdue) {
  std::atomic<bool> release{false};
  auto client = ClientFor(*server_);
  auto elector = LeaderElector::Create(*client, {.lease_namespace = "kube-system",
                                                 .lease_name = "tessera-test",
                                                 .identity = "stuck",
                                                 .lease_duration = milliseconds(600),
                                                 .renew_deadline = milliseconds(400),
                                                 .retry_period = milliseconds(100),
                                                 .on_started_leading = [&] {
                                                   while (!release.load())
                                                     std::this_thread::sleep_for(milliseconds(10));
                                                 }});
  ASSERT_TRUE(elector.ok()) << elector.status().ToString();
  EXPECT_FALSE((*elector)->RenewalOverdue(milliseconds(0)));
  (*elector)->Start();
  ASSERT_TRUE(WaitUntil([&] { return (*elector)->IsLeader(); }));
  EXPECT_FALSE((*elector)->RenewalOverdue(milliseconds(5000)));
  ASSERT_TRUE(
      WaitUntil([&] { return (*elector)->RenewalOverdue(milliseconds(200)); }, milliseconds(5000)));
  EXPECT_TRUE((*elector)->IsLeader());
  release.store(true);
  ASSERT_TRUE(WaitUntil([&] { return !(*elector)->RenewalOverdue(milliseconds(200)); },
                        milliseconds(5000)));
  (*elector)->Stop();
  EXPECT_FALSE((*elector)->RenewalOverdue(milliseconds(0)));
}

}  // namespace
}  // namespace tessera::kube
