// Internal to src/mig: builds the tables of model_tables.cc. Use Models() (profiles.h) instead.
#pragma once

#include <vector>

#include "mig/profiles.h"

namespace tessera::mig {

// Every known model, built from the source tables; called once by Models().
std::vector<GpuModel> BuildModels();

}  // namespace tessera::mig
