// Configuration that loads cleanly and then breaks at run time is refused when it is loaded
// (also by --print-config, which loads the same way), naming the key, the source and what is
// allowed. Each test is named after the configuration that used to load.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "scheduler/config_keys.h"

namespace tessera::scheduler {
namespace {

std::string LoadError(const std::vector<std::string>& args, const config::Environment& env = {}) {
  config::Schema schema;
  config::AddCommonKeys(schema);
  AddSchedulerKeys(schema);
  Result<config::Loaded> r = config::Load(schema, args, env);
  return r.ok() ? "" : r.status().message();
}

TEST(ConfigThatCannotWork, DefaultsLoad) {
  EXPECT_EQ(LoadError({}), "");
}

TEST(ConfigThatCannotWork, MaxBodyZeroWhichRefusedEveryPost) {
  EXPECT_EQ(LoadError({"--scheduler.max-body=0"}),
            "invalid value \"0\" for scheduler.max-body (flag --scheduler.max-body): expected a "
            "value of at least 1Ki");
}

TEST(ConfigThatCannotWork, VcudaMemoryUnitZeroWhichDeniedEveryVcudaPod) {
  EXPECT_EQ(LoadError({}, {{"TESSERA_SCHEDULER_DIALECTS_VCUDA_MEMORY_UNIT", "0"}}),
            "invalid value \"0\" for scheduler.dialects.vcuda.memory-unit (env "
            "TESSERA_SCHEDULER_DIALECTS_VCUDA_MEMORY_UNIT): expected a value of at least 1Mi");
  EXPECT_EQ(LoadError({"--scheduler.dialects.vcuda.memory-unit=1500Ki"}),
            "invalid value for scheduler.dialects.vcuda.memory-unit \"1500Ki\" (flag "
            "--scheduler.dialects.vcuda.memory-unit): expected a whole number of MiB, such as "
            "256Mi or 1Gi");
}

TEST(ConfigThatCannotWork, TwoDialectsMappedToOneResourceName) {
  EXPECT_EQ(LoadError({"--scheduler.dialects.gpushare.memory-resource=nvidia.com/gpumem"}),
            "scheduler.dialects.gpushare.memory-resource \"nvidia.com/gpumem\" (flag "
            "--scheduler.dialects.gpushare.memory-resource) and "
            "scheduler.dialects.vgpu.memory-resource \"nvidia.com/gpumem\" (default) name the "
            "same resource; each resource may belong to one dialect only: rename one of them or "
            "turn its dialect off");
  // With the vGPU dialect off, gpushare may take the name.
  EXPECT_EQ(LoadError({"--scheduler.dialects.gpushare.memory-resource=nvidia.com/gpumem",
                       "--scheduler.dialects.vgpu.enabled=false"}),
            "");
}

TEST(ConfigThatCannotWork, ResourceNameWithoutADomain) {
  EXPECT_EQ(LoadError({"--scheduler.dialects.vcuda.core-resource=vcuda-core"}),
            "invalid value for scheduler.dialects.vcuda.core-resource \"vcuda-core\" (flag "
            "--scheduler.dialects.vcuda.core-resource): expected an extended resource name such "
            "as example.com/gpu");
}

TEST(ConfigThatCannotWork, EmptySchedulerName) {
  EXPECT_EQ(LoadError({"--scheduler.name="}),
            "invalid value \"\" for scheduler.name (flag --scheduler.name): expected a "
            "non-empty value");
}

TEST(ConfigThatCannotWork, ListenAddressWithoutAPort) {
  EXPECT_EQ(LoadError({"--listen=localhost"}),
            "invalid value for scheduler.listen \"localhost\" (flag --listen): expected host:port "
            "such as 0.0.0.0:8443 or [::]:8443 (port 0..65535)");
}

TEST(ConfigThatCannotWork, TlsCertificateWithoutKey) {
  EXPECT_EQ(LoadError({"--scheduler.tls.cert=/etc/tls.crt"}),
            "scheduler.tls.cert \"/etc/tls.crt\" (flag --scheduler.tls.cert) and "
            "scheduler.tls.key \"\" (default): set both (HTTPS) or neither (plain HTTP)");
}

TEST(ConfigThatCannotWork, ZeroHttpTimeouts) {
  EXPECT_EQ(LoadError({"--scheduler.http.request-timeout=0"}),
            "invalid value \"0\" for scheduler.http.request-timeout (flag "
            "--scheduler.http.request-timeout): expected a value of at least 1ms");
}

}  // namespace
}  // namespace tessera::scheduler
