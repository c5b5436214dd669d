// Signing: how one part of Tessera signs the annotations it writes and checks those it reads.
//
// With a key ring, each value written gets its signature beside it ("<name>-signature",
// key_ring.h), and a value read passes only when its signature verifies for the object's
// metadata.uid. Without one (unsigned mode: no annotation key file) nothing is signed and every
// value passes, as before signatures existed.
//
// Copies share one tally of refused values (the part's
// tessera_<part>_unverified_annotations_total counter) and one log limit, so every component of
// a part may hold its own copy. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "annotations/key_ring.h"
#include "common/status.h"

namespace tessera::annotations {

class Signing {
 public:
  Signing();  // unsigned mode
  explicit Signing(KeyRing keys);
  // The keys of `key_file`, or unsigned mode when it is "". Errors name the file and the line.
  static Result<Signing> FromKeyFile(const std::string& key_file);

  bool enabled() const { return keys_.has_value(); }
  const KeyRing* keys() const { return keys_ ? &*keys_ : nullptr; }

  // What to write for name=value on the object of `uid`: the pair itself and, with keys, its
  // signature.
  std::vector<std::pair<std::string, std::string>> Signed(const std::string& name,
                                                          std::string_view uid,
                                                          std::string value) const;

  // OK in unsigned mode, or when the value of annotation `name` on `object` (an API object)
  // verifies with its signature annotation and metadata.uid. Otherwise FailedPrecondition naming
  // the annotation, `what` holds it ("pod default/p") and why, e.g. "the tessera.io/allocation
  // of pod default/p is not signed by the Tessera scheduler (no tessera.io/allocation-signature)".
  Status Check(const nlohmann::json& object, const std::string& name,
               const std::string& what) const;

  // Counts a refused value of annotation `name` and logs it with `why` (Check's message) and
  // `action` (what the part does instead), at most 20 lines a minute.
  void Refused(const std::string& name, const std::string& why, const std::string& action) const;
  uint64_t RefusedCount(const std::string& name) const;
  // The counter `metric` in Prometheus text, one sample per annotation of `names`.
  void RenderRefused(std::string& out, const std::string& metric,
                     const std::vector<std::string>& names) const;

 private:
  struct Tally;
  std::optional<KeyRing> keys_;
  std::shared_ptr<Tally> tally_;
};

// The line a part logs at start: in unsigned mode a warning naming `key` (its key-file setting),
// else the key file and its key ids.
void LogSigning(const Signing& signing, const std::string& key, const std::string& file);

}  // namespace tessera::annotations
