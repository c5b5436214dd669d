// QuotaSource: feeds a QuotaLedger (quota_ledger.h) from the API server: its own informers on
// ResourceQuotas and ResourceClaims (all namespaces), and handlers the scheduler app adds to its
// pod and node informers (FeedPods, FeedNodes) so that pods and nodes are watched once.
// Until the quota informer has synced, the ledger knows no quota and refuses nothing: the app
// reports ready only after it (SchedulerApp::WaitForSync). The claim informer is not waited for:
// a cluster without resource.k8s.io/v1 has no claims, and its informer only retries.
// The claim informer also feeds the DRA shares /inspect shows (dra_shares.h), when given.
// Thread-safe after construction; the Client, the ledger and the share table must outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "kube/client.h"
#include "kube/informer.h"
#include "scheduler/dra_shares.h"
#include "scheduler/quota_ledger.h"

namespace tessera::scheduler {

// Informer handlers that hand each event to `apply(type, object)`.
kube::InformerHandlers LedgerHandlers(std::function<void(EventType, const kube::Json&)> apply);

class QuotaSource {
 public:
  QuotaSource(kube::Client& client, QuotaLedger& ledger, DraShareTable* dra = nullptr);
  ~QuotaSource();  // Stop()

  void Start();
  void Stop();
  // True once the ResourceQuotas have been listed; false when `timeout` passed first.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // What the app's pod and node informers also call, for each of their events.
  void OnPod(EventType type, const kube::Json& pod) { ledger_.OnPod(type, pod); }
  void OnNode(EventType type, const kube::Json& node) { ledger_.OnNode(type, node); }

 private:
  QuotaLedger& ledger_;
  std::unique_ptr<kube::Informer> quotas_;
  std::unique_ptr<kube::Informer> claims_;
};

}  // namespace tessera::scheduler
