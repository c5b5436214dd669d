// `tessera certgen`: makes (once, and again before they expire) the certificates of the
// scheduler's endpoints and their clients, stores them in Secrets, and writes the CA into the
// caBundle of Tessera's webhook configurations; makes the annotation key's Secret when it does not
// exist (annotation_key.h). Run by the tessera-certgen Job (deploy/webhook/certgen-job.yaml);
// idempotent, so a re-run keeps valid certificates and the key.
#pragma once

#include <chrono>
#include <string>

#include "certgen/bundle.h"
#include "config/command.h"
#include "config/schema.h"
#include "kube/client.h"

namespace tessera::certgen {

struct Options {
  std::string ns = "tessera-system";
  std::string server_secret = "tessera-scheduler-tls";
  std::string extender_client_secret = "tessera-kube-scheduler-client-tls";
  std::string webhook_client_secret = "tessera-webhook-client-tls";
  std::string webhook_configuration = "tessera";                 // "" = no caBundle written
  std::string annotation_key_secret = "tessera-annotation-key";  // "" = none made
  bool certificates = true;  // false: only the annotation key (cert-manager makes the certificates)
  BundleSpec bundle;

  static Options FromConfig(const config::Config& cfg);
};

void AddCertgenKeys(config::Schema& schema);
config::Command CertgenCommand();

// What one run does: the command's body.
Status Generate(kube::Client& client, const Options& options,
                std::chrono::system_clock::time_point now);

}  // namespace tessera::certgen
