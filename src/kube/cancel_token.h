// CancelToken: stops a running HTTP transfer (typically a long watch) from another thread.
//
// Cancel() is sticky: once cancelled, every transfer that uses the token ends promptly (the one in
// progress is woken at once, later ones end before sending). Thread-safe; a token serves one
// transfer at a time.
#pragma once

#include <atomic>
#include <mutex>

namespace tessera::kube {

class CancelToken {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class HttpTransport;
  // Registers the curl multi handle a transfer waits on, so Cancel() can wake it. Returns false
  // (and registers nothing) when the token is already cancelled.
  bool Attach(void* multi);
  void Detach();

  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  void* multi_ = nullptr;  // guarded by mutex_: a CURLM* while a transfer runs
};

}  // namespace tessera::kube
