#include "certgen/certgen_command.h"

#include <optional>

#include "certgen/annotation_key.h"
#include "common/strings.h"
#include "kube/config_keys.h"
#include "kube/resource.h"
#include "log/log.h"

namespace tessera::certgen {
namespace {

using Json = kube::Json;

// The Secret `name`, nullopt when it does not exist.
Result<std::optional<Json>> ReadSecret(kube::Client& client, const std::string& ns,
                                       const std::string& name) {
  Result<Json> secret = client.Get(kube::kSecrets, ns, name);
  if (secret.ok()) return std::optional<Json>(std::move(*secret));
  if (secret.status().code() == StatusCode::kNotFound) return std::optional<Json>();
  return secret.status().WithContext("reading Secret " + ns + "/" + name +
                                     " (certgen needs get on it)");
}

// The Secrets of a run, in the order of Pairs: the server's, the extender client's, and the
// webhook client's when one is asked for.
std::vector<std::string> SecretNames(const Options& o) {
  std::vector<std::string> names = {o.server_secret, o.extender_client_secret};
  if (!o.bundle.webhook_client.empty()) names.push_back(o.webhook_client_secret);
  return names;
}

// The bundle's key pairs in the order of SecretNames (`webhook`: the webhook client's too).
std::vector<KeyPair*> Pairs(Bundle& b, bool webhook) {
  std::vector<KeyPair*> pairs = {&b.server, &b.extender_client};
  if (webhook) pairs.push_back(b.webhook_client ? &*b.webhook_client : &b.webhook_client.emplace());
  return pairs;
}

// The bundle the Secrets `secrets` (of SecretNames) hold, or why it cannot be used.
Result<Bundle> ReadBundle(const std::vector<std::optional<Json>>& secrets, const Options& o) {
  const std::vector<std::string> names = SecretNames(o);
  Bundle b;
  std::vector<KeyPair*> pairs = Pairs(b, names.size() > 2);
  for (size_t i = 0; i < names.size(); ++i) {
    if (!secrets[i]) return NotFound("Secret " + names[i] + " does not exist yet");
    auto data = FromSecretData(secrets[i]->value("data", Json::object()));
    if (!data) return InvalidArgument("Secret " + names[i] + " lacks base64 keys ca, cert, key");
    if (i == 0) b.ca = data->first;
    if (data->first != b.ca) return InvalidArgument("Secret " + names[i] + " holds another CA");
    *pairs[i] = data->second;
  }
  return b;
}

Status WriteSecret(kube::Client& client, const std::string& ns, const std::string& name,
                   const std::optional<Json>& existing, const Json& data) {
  Result<Json> written = [&] {
    if (existing) {
      Json updated = *existing;
      updated["data"] = data;
      return client.Update(kube::kSecrets, updated);
    }
    Json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata",
                    {{"name", name},
                     {"namespace", ns},
                     {"labels", {{"app.kubernetes.io/managed-by", "tessera-certgen"}}}}},
                   {"type", "Opaque"},
                   {"data", data}};
    return client.Create(kube::kSecrets, ns, secret);
  }();
  if (!written.ok()) {
    return written.status().WithContext("writing Secret " + ns + "/" + name +
                                        " (certgen needs create, and update on it)");
  }
  return Status::Ok();
}

// Writes `ca` into the caBundle of every webhook of the configuration `name` of `kind`.
Status WriteCaBundle(kube::Client& client, const kube::Resource& kind, const std::string& name,
                     const std::string& ca) {
  const std::string bundle = Base64Encode(ca);
  for (int attempt = 0;; ++attempt) {
    Result<Json> config = client.Get(kind, "", name);
    if (!config.ok()) {
      return config.status().WithContext("reading " + std::string(kind.kind) + " " + name +
                                         " (apply deploy/webhook first; certgen needs get on it)");
    }
    bool changed = false;
    for (Json& webhook : (*config)["webhooks"]) {
      Json& client_config = webhook["clientConfig"];
      if (client_config.value("caBundle", "") != bundle) {
        client_config["caBundle"] = bundle;
        changed = true;
      }
    }
    if (!changed) return Status::Ok();
    Result<Json> updated = client.Update(kind, *config);
    if (updated.ok()) return Status::Ok();
    if (updated.status().code() != StatusCode::kConflict || attempt == 4) {
      return updated.status().WithContext("updating the caBundle of " + std::string(kind.kind) +
                                          " " + name + " (certgen needs update on it)");
    }
  }
}

}  // namespace

Status Generate(kube::Client& client, const Options& o, std::chrono::system_clock::time_point now) {
  if (!o.annotation_key_secret.empty()) {
    RETURN_IF_ERROR(EnsureAnnotationKey(client, o.ns, o.annotation_key_secret));
  }
  if (!o.certificates) return Status::Ok();
  const std::vector<std::string> names = SecretNames(o);
  std::vector<std::optional<Json>> secrets(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(secrets[i], ReadSecret(client, o.ns, names[i]));
  }
  Result<Bundle> existing = ReadBundle(secrets, o);
  std::string why =
      existing.ok() ? WhyRenew(*existing, o.bundle, now) : existing.status().message();
  Bundle bundle;
  if (why.empty()) {
    bundle = std::move(*existing);
    log::Info("certificates kept: valid, for these names, not due for renewal",
              {{"namespace", o.ns}, {"secret", o.server_secret}});
  } else {
    ASSIGN_OR_RETURN(bundle, MakeBundle(o.bundle));
    std::vector<KeyPair*> pairs = Pairs(bundle, names.size() > 2);
    for (size_t i = 0; i < names.size(); ++i) {
      RETURN_IF_ERROR(
          WriteSecret(client, o.ns, names[i], secrets[i], SecretData(bundle.ca, *pairs[i])));
    }
    log::Info(
        "new CA and certificates written; restart the tessera-scheduler and "
        "tessera-kube-scheduler Deployments if they were running",
        {{"reason", why}, {"namespace", o.ns}, {"secrets", Join(names, " ")}});
  }
  if (o.webhook_configuration.empty()) return Status::Ok();
  for (const kube::Resource* kind :
       {&kube::kMutatingWebhookConfigurations, &kube::kValidatingWebhookConfigurations}) {
    RETURN_IF_ERROR(WriteCaBundle(client, *kind, o.webhook_configuration, bundle.ca));
  }
  log::Info("caBundle written", {{"webhook-configuration", o.webhook_configuration}});
  return Status::Ok();
}

Options Options::FromConfig(const config::Config& cfg) {
  Options o;
  o.ns = cfg.GetString("certgen.namespace");
  o.server_secret = cfg.GetString("certgen.server-secret");
  o.extender_client_secret = cfg.GetString("certgen.extender-client-secret");
  o.webhook_client_secret = cfg.GetString("certgen.webhook-client-secret");
  o.webhook_configuration = cfg.GetString("certgen.webhook-configuration");
  o.annotation_key_secret = cfg.GetString("certgen.annotation-key-secret");
  o.certificates = cfg.GetBool("certgen.certificates");
  o.bundle.server_hosts = cfg.GetList("certgen.hosts");
  o.bundle.extender_client = cfg.GetString("certgen.extender-client-name");
  o.bundle.webhook_client = cfg.GetString("certgen.webhook-client-name");
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  o.bundle.validity = duration_cast<seconds>(cfg.GetDuration("certgen.validity"));
  o.bundle.renew_before = duration_cast<seconds>(cfg.GetDuration("certgen.renew-before"));
  return o;
}

void AddCertgenKeys(config::Schema& s) {
  using config::Type;
  s.Add({.path = "certgen.namespace",
         .type = Type::kString,
         .default_value = "tessera-system",
         .help = "namespace of the Secrets certgen writes",
         .non_empty = true});
  s.Add({.path = "certgen.server-secret",
         .type = Type::kString,
         .default_value = "tessera-scheduler-tls",
         .help = "Secret of the scheduler's serving certificate (keys ca, cert, key)",
         .non_empty = true});
  s.Add({.path = "certgen.hosts",
         .type = Type::kList,
         .default_value = "tessera-scheduler,tessera-scheduler.tessera-system,"
                          "tessera-scheduler.tessera-system.svc,"
                          "tessera-scheduler.tessera-system.svc.cluster.local,"
                          "tessera-scheduler-extender.tessera-system.svc,"
                          "tessera-scheduler-extender.tessera-system.svc.cluster.local,localhost,"
                          "127.0.0.1",
         .help = "names (DNS names or IP addresses) of the serving certificate; the first is its "
                 "common name"});
  s.Add({.path = "certgen.extender-client-secret",
         .type = Type::kString,
         .default_value = "tessera-kube-scheduler-client-tls",
         .help = "Secret of the second kube-scheduler's client certificate",
         .non_empty = true});
  s.Add({.path = "certgen.extender-client-name",
         .type = Type::kString,
         .default_value = "tessera-kube-scheduler",
         .help = "common name of that client certificate (scheduler.tls.extender-clients)",
         .non_empty = true});
  s.Add({.path = "certgen.webhook-client-secret",
         .type = Type::kString,
         .default_value = "tessera-webhook-client-tls",
         .help = "Secret of the API server's webhook client certificate",
         .non_empty = true});
  s.Add({.path = "certgen.webhook-client-name",
         .type = Type::kString,
         .default_value = "",
         .help = "common name of a client certificate for the API server to present to the "
                 "webhooks (scheduler.tls.webhook-clients; docs/install.md); empty = none made"});
  s.Add({.path = "certgen.webhook-configuration",
         .type = Type::kString,
         .default_value = "tessera",
         .help = "name of the Mutating- and ValidatingWebhookConfiguration whose caBundle gets "
                 "the CA; empty = none"});
  s.Add({.path = "certgen.annotation-key-secret",
         .type = Type::kString,
         .default_value = "tessera-annotation-key",
         .help = "Secret of the key that signs Tessera's annotations (key `key`): made with 32 "
                 "random bytes when it does not exist, never read or replaced; empty = none made"});
  s.Add({.path = "certgen.certificates",
         .type = Type::kBool,
         .default_value = "true",
         .help = "make the certificates and write the caBundle; false: only the annotation key "
                 "(when cert-manager makes the certificates)"});
  s.Add({.path = "certgen.validity",
         .type = Type::kDuration,
         .default_value = "87600h",
         .help = "lifetime of the CA and the certificates",
         .min = 24 * 3600.0,
         .max = 100 * 365 * 24 * 3600.0});
  s.Add({.path = "certgen.renew-before",
         .type = Type::kDuration,
         .default_value = "720h",
         .help = "certificates that expire within this are made anew",
         .min = 0,
         .max = 10 * 365 * 24 * 3600.0});
  s.AddRule([](const config::Config& c) {
    if (c.GetDuration("certgen.renew-before") >= c.GetDuration("certgen.validity")) {
      return InvalidArgument(c.Describe("certgen.renew-before") + " must be shorter than " +
                             c.Describe("certgen.validity"));
    }
    if (c.GetList("certgen.hosts").empty()) {
      return InvalidArgument(c.Describe("certgen.hosts") +
                             ": the serving certificate needs at least one name");
    }
    return Status::Ok();
  });
}

namespace {

int Run(const config::Config& cfg, const std::vector<std::string>&) {
  std::unique_ptr<kube::Client> client = kube::CommandClient(cfg);
  if (client == nullptr) return 1;
  Status s = Generate(*client, Options::FromConfig(cfg), std::chrono::system_clock::now());
  if (!s.ok()) {
    log::Error("certgen failed", {{"error", s.message()}});
    return 1;
  }
  return 0;
}

}  // namespace

config::Command CertgenCommand() {
  return {.name = "certgen",
          .summary = "make the TLS certificates of the scheduler and its clients into Secrets",
          .key_prefixes = {"certgen", "kube"},
          .run = Run};
}

}  // namespace tessera::certgen
