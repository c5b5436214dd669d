// The Secret of the key that signs Tessera's annotations (docs/annotations.md), made by certgen
// once: created with a new key when it does not exist, and otherwise left alone. certgen never
// reads it (its Role has no get on it), so an existing key, the installer's or an earlier run's,
// is kept by the API server's refusal to create it again; rendering the manifests again (helm
// template under Argo CD or Flux) never changes the key.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/client.h"

namespace tessera::certgen {

// A new key file's text: 32 random bytes in base64 and a newline, as `openssl rand -base64 32`
// writes it. Internal when the system gives no random bytes.
Result<std::string> NewAnnotationKey();

// Creates the Secret `ns`/`name` (key `key`: a NewAnnotationKey) unless one of that name exists.
// OK when it was created or already existed; the API server's error otherwise.
Status EnsureAnnotationKey(kube::Client& client, const std::string& ns, const std::string& name);

}  // namespace tessera::certgen
