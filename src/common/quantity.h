// Kubernetes resource quantities as whole counts.
//
// Extended resources (nvidia.com/gpu, tencent.com/vcuda-core, ...) must be whole numbers. This
// parses the quantity forms the API server accepts ("4", "4096", "1k", "2Ki", "1000m", "1.5k") and
// rejects negatives and fractions with a message naming the value. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera {

// The whole, non-negative count `text` stands for, or InvalidArgument saying why it is not one.
Result<int64_t> ParseWholeQuantity(std::string_view text);
// Same for a JSON value: a string as above, or a JSON integer.
Result<int64_t> ParseWholeQuantity(const nlohmann::json& value);

}  // namespace tessera
