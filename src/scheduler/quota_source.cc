#include "scheduler/quota_source.h"

#include "kube/resource.h"

namespace tessera::scheduler {

kube::InformerHandlers LedgerHandlers(std::function<void(EventType, const kube::Json&)> apply) {
  return {.on_add = [apply](const kube::Json& o) { apply(EventType::kAdded, o); },
          .on_update = [apply](const kube::Json&,
                               const kube::Json& o) { apply(EventType::kModified, o); },
          .on_delete = [apply](const kube::Json& o) { apply(EventType::kDeleted, o); }};
}

QuotaSource::QuotaSource(kube::Client& client, QuotaLedger& ledger, DraShareTable* dra)
    : ledger_(ledger),
      quotas_(std::make_unique<kube::Informer>(
          client, kube::kResourceQuotas, kube::InformerOptions{.name = "resource quotas"},
          LedgerHandlers([&ledger](EventType t, const kube::Json& o) { ledger.OnQuota(t, o); }))),
      claims_(std::make_unique<kube::Informer>(
          client, kube::kResourceClaims, kube::InformerOptions{.name = "resource claims"},
          LedgerHandlers([&ledger, dra](EventType t, const kube::Json& o) {
            ledger.OnClaim(t, o);
            if (dra) dra->OnClaim(t, o);
          }))) {}

QuotaSource::~QuotaSource() {
  Stop();
}

void QuotaSource::Start() {
  quotas_->Start();
  claims_->Start();
}

void QuotaSource::Stop() {
  quotas_->Stop();
  claims_->Stop();
}

bool QuotaSource::WaitForSync(std::chrono::milliseconds timeout) const {
  return quotas_->WaitForSync(timeout);
}

}  // namespace tessera::scheduler
