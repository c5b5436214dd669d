#include "annotations/signing.h"

#include <chrono>
#include <map>
#include <mutex>

#include "annotations/names.h"
#include "common/strings.h"
#include "log/log.h"
#include "log/log_limiter.h"

namespace tessera::annotations {
namespace {

using nlohmann::json;

const json* Member(const json* object, const std::string& key) {
  if (!object || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

std::string Text(const json* value) {
  return value && value->is_string() ? value->get<std::string>() : "";
}

const char* WriterOf(const std::string& name) {
  return name == kAllocation ? "the Tessera scheduler" : "a Tessera node agent";
}

}  // namespace

struct Signing::Tally {
  std::mutex mu;
  std::map<std::string, uint64_t> refused;  // guarded by mu
  log::LogLimiter log;
};

Signing::Signing() : tally_(std::make_shared<Tally>()) {}

Signing::Signing(KeyRing keys) : keys_(std::move(keys)), tally_(std::make_shared<Tally>()) {}

Result<Signing> Signing::FromKeyFile(const std::string& key_file) {
  if (key_file.empty()) return Signing();
  ASSIGN_OR_RETURN(KeyRing keys, KeyRing::Load(key_file));
  return Signing(std::move(keys));
}

std::vector<std::pair<std::string, std::string>> Signing::Signed(const std::string& name,
                                                                 std::string_view uid,
                                                                 std::string value) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (keys_) out.emplace_back(name + kSignatureSuffix, keys_->Sign(name, uid, value));
  out.emplace_back(name, std::move(value));
  return out;
}

Status Signing::Check(const json& object, const std::string& name, const std::string& what) const {
  if (!keys_) return Status::Ok();
  const std::string signature_name = name + kSignatureSuffix;
  const std::string subject = "the " + name + " of " + what + " ";
  const json* metadata = Member(&object, "metadata");
  const json* annotations = Member(metadata, "annotations");
  const std::string signature = Text(Member(annotations, signature_name));
  if (signature.empty()) {
    return FailedPrecondition(subject + "is not signed by " + WriterOf(name) + " (no " +
                              signature_name + ")");
  }
  Status verified = keys_->Verify(name, Text(Member(metadata, "uid")),
                                  Text(Member(annotations, name)), signature);
  if (verified.ok()) return verified;
  return FailedPrecondition(subject + verified.message());
}

void Signing::Refused(const std::string& name, const std::string& why,
                      const std::string& action) const {
  {
    std::lock_guard<std::mutex> lock(tally_->mu);
    ++tally_->refused[name];
  }
  uint64_t dropped = 0;
  if (tally_->log.Allow(std::chrono::steady_clock::now(), &dropped)) {
    log::Warn("annotation not signed by Tessera", {{"annotation", name},
                                                   {"error", why},
                                                   {"action", action},
                                                   {"suppressed", std::to_string(dropped)}});
  }
}

uint64_t Signing::RefusedCount(const std::string& name) const {
  std::lock_guard<std::mutex> lock(tally_->mu);
  auto it = tally_->refused.find(name);
  return it == tally_->refused.end() ? 0 : it->second;
}

void Signing::RenderRefused(std::string& out, const std::string& metric,
                            const std::vector<std::string>& names) const {
  out += "# HELP " + metric +
         " annotation values refused because their signature is missing or does not verify\n";
  out += "# TYPE " + metric + " counter\n";
  for (const std::string& name : names) {
    out += metric + "{annotation=\"" + PrometheusLabelValue(name) + "\"} " +
           std::to_string(RefusedCount(name)) + "\n";
  }
}

void LogSigning(const Signing& signing, const std::string& key, const std::string& file) {
  if (!signing.enabled()) {
    log::Warn(
        "Tessera's annotations are trusted unsigned: a user who can write them outside the "
        "webhook (kube-system, tessera-system) changes what Tessera charges and grants; to "
        "sign and verify them, give the scheduler and every node agent the same key file (" +
        key + ", docs/install.md)");
    return;
  }
  log::Info("Tessera's annotations are signed and verified",
            {{"key-file", file},
             {"signing-key-id", signing.keys()->signing_key_id()},
             {"key-ids", Join(signing.keys()->key_ids(), ",")}});
}

}  // namespace tessera::annotations
