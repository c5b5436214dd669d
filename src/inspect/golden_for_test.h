// Golden files of the inspect tests: testdata/<name>.golden, rewritten instead of compared when
// TESSERA_UPDATE_GOLDENS is set (then review `git diff src/inspect/testdata`). Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::inspect {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `actual` with testdata/<name>.golden, or rewrites it when TESSERA_UPDATE_GOLDENS is set.
inline void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(TESSERA_INSPECT_TESTDATA) + "/" + name + ".golden";
  if (std::getenv("TESSERA_UPDATE_GOLDENS")) {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream probe(path);
  ASSERT_TRUE(probe) << path << " is missing; run with TESSERA_UPDATE_GOLDENS=1 to create it";
  EXPECT_EQ(ReadFile(path), actual) << "output differs from " << path;
}

}  // namespace tessera::inspect
