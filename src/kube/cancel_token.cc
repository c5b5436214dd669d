#include "kube/cancel_token.h"

#include <curl/curl.h>

namespace tessera::kube {

void CancelToken::Cancel() {
  std::lock_guard lock(mutex_);
  cancelled_.store(true);
  if (multi_ != nullptr) curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

bool CancelToken::Attach(void* multi) {
  std::lock_guard lock(mutex_);
  if (cancelled_.load()) return false;
  multi_ = multi;
  return true;
}

void CancelToken::Detach() {
  std::lock_guard lock(mutex_);
  multi_ = nullptr;
}

}  // namespace tessera::kube
