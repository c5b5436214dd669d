#include "certgen/annotation_key.h"

#include <openssl/rand.h>

#include "common/strings.h"
#include "kube/resource.h"
#include "log/log.h"

namespace tessera::certgen {

Result<std::string> NewAnnotationKey() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Internal("no random bytes for the key");
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes)) + "\n";
}

Status EnsureAnnotationKey(kube::Client& client, const std::string& ns, const std::string& name) {
  ASSIGN_OR_RETURN(std::string key, NewAnnotationKey());
  kube::Json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata",
                        {{"name", name},
                         {"namespace", ns},
                         {"labels",
                          {{"app.kubernetes.io/managed-by", "tessera-certgen"},
                           {"app.kubernetes.io/part-of", "tessera"}}}}},
                       {"type", "Opaque"},
                       {"data", {{"key", Base64Encode(key)}}}};
  Result<kube::Json> created = client.Create(kube::kSecrets, ns, secret);
  if (created.ok()) {
    log::Info("annotation key made", {{"namespace", ns}, {"secret", name}});
    return Status::Ok();
  }
  if (created.status().code() == StatusCode::kAlreadyExists) {
    log::Info("annotation key kept: its Secret exists", {{"namespace", ns}, {"secret", name}});
    return Status::Ok();
  }
  return created.status().WithContext("creating Secret " + ns + "/" + name +
                                      " (the annotation key; certgen needs create on secrets)");
}

}  // namespace tessera::certgen
