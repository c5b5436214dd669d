#include "config/reference.h"

#include <gtest/gtest.h>

namespace tessera::config {
namespace {

TEST(Reference, OneTablePerGroupWithEnvFlagsAndBounds) {
  Schema s;
  AddCommonKeys(s);
  s.Add({.path = "node.device-split-count",
         .type = Type::kInt,
         .default_value = "10",
         .help = "vGPU slots per GPU",
         .min = 1,
         .max = 1000,
         .flags = {"split"}});
  std::string md = MarkdownReference(s);
  EXPECT_NE(md.find("\n## log\n"), std::string::npos);
  EXPECT_NE(md.find("\n## node\n"), std::string::npos);
  EXPECT_NE(md.find("| `node.device-split-count` | integer | `10` | "
                    "`TESSERA_NODE_DEVICE_SPLIT_COUNT` | `--node.device-split-count`, `--split` | "
                    "vGPU slots per GPU; 1 to 1000 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("one of `debug`, `info`, `warn`, `error` |"), std::string::npos) << md;
}

}  // namespace
}  // namespace tessera::config
