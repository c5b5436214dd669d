// Small helpers the replay scenarios share. Thread-compatible.
#ifndef TESSERA_HOOK_TESTS_REPLAY_REPLAY_DEVICE_H_
#define TESSERA_HOOK_TESTS_REPLAY_REPLAY_DEVICE_H_

#include <cstdint>
#include <string>

#include "replay_calls.h"

namespace tessera::replay {

// cuInit and device `ordinal`'s primary context made current, as a runtime's cudaSetDevice.
bool UseDevice(Calls& calls, int ordinal);

// What the driver charges for `bytes`: whole 2 MiB granules (simgpu's, and a GPU's for cudaMalloc
// of 2 MiB and more).
inline uint64_t RoundUpToGranule(uint64_t bytes) {
  constexpr uint64_t kGranule = 2ull << 20;
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

// A 64-byte handle as bytes to send, and back.
template <typename Handle>
std::string BytesOf(const Handle& h) {
  return std::string(h.reserved, sizeof(h.reserved));
}
template <typename Handle>
Handle HandleFrom(const std::string& bytes) {
  Handle h{};
  for (size_t i = 0; i < sizeof(h.reserved) && i < bytes.size(); ++i) h.reserved[i] = bytes[i];
  return h;
}

}  // namespace tessera::replay

#endif  // TESSERA_HOOK_TESTS_REPLAY_REPLAY_DEVICE_H_
