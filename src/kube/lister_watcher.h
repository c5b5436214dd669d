// ListerWatcher: the two calls an Informer makes, behind an interface so that tests can script
// them. ClientListerWatcher is the real one: Client::List and Client::Watch on one Resource with
// fixed selectors.
//
// Implementations must be callable from the informer's thread while Cancel-able through the given
// token from another; the Client-backed one is thread-safe.
#pragma once

#include <memory>
#include <string>

#include "kube/cancel_token.h"
#include "kube/client.h"
#include "kube/resource.h"

namespace tessera::kube {

class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  // All objects now, and the version to watch from.
  virtual Result<ObjectList> List(CancelToken* cancel) = 0;
  // Events after `resource_version` until the stream ends (see Client::Watch for the results).
  virtual Status Watch(const std::string& resource_version, const WatchHandler& handler,
                       CancelToken* cancel) = 0;
};

struct SelectorOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int page_size = 500;
  int watch_timeout_seconds = 300;  // each watch request; the informer then resumes
};

class ClientListerWatcher : public ListerWatcher {
 public:
  // `client` must outlive this object.
  ClientListerWatcher(Client& client, const Resource& resource, SelectorOptions options);
  Result<ObjectList> List(CancelToken* cancel) override;
  Status Watch(const std::string& resource_version, const WatchHandler& handler,
               CancelToken* cancel) override;

 private:
  Client& client_;
  const Resource resource_;
  const SelectorOptions options_;
};

}  // namespace tessera::kube
