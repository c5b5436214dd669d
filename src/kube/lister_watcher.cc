#include "kube/lister_watcher.h"

namespace tessera::kube {

ClientListerWatcher::ClientListerWatcher(Client& client, const Resource& resource,
                                         SelectorOptions options)
    : client_(client), resource_(resource), options_(std::move(options)) {}

Result<ObjectList> ClientListerWatcher::List(CancelToken* cancel) {
  ListOptions list{.ns = options_.ns,
                   .label_selector = options_.label_selector,
                   .field_selector = options_.field_selector,
                   .page_size = options_.page_size};
  return client_.List(resource_, list, CallOptions{.cancel = cancel});
}

Status ClientListerWatcher::Watch(const std::string& resource_version, const WatchHandler& handler,
                                  CancelToken* cancel) {
  WatchOptions watch{.ns = options_.ns,
                     .label_selector = options_.label_selector,
                     .field_selector = options_.field_selector,
                     .resource_version = resource_version,
                     .allow_bookmarks = true,
                     .timeout_seconds = options_.watch_timeout_seconds};
  return client_.Watch(resource_, watch, handler, cancel);
}

}  // namespace tessera::kube
