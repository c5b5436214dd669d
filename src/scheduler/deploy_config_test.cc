// deploy/scheduler/kube-scheduler-config.yaml must manage every resource the dialects accept, or
// kube-scheduler would count one itself and reject pods that only kubelet's slots could hold.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scheduler/dialect.h"

namespace tessera::scheduler {
namespace {

TEST(DeployConfig, ExtenderManagesEveryDialectResource) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) +
                   "/deploy/scheduler/kube-scheduler-config.yaml");
  ASSERT_TRUE(in) << "deploy/scheduler/kube-scheduler-config.yaml is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string yaml = text.str();
  for (const std::string& resource : DialectConfig{}.ResourceNames()) {
    std::string entry = "- name: " + resource + "\n        ignoredByScheduler: true";
    EXPECT_NE(yaml.find(entry), std::string::npos) << resource;
  }
  for (const char* line : {"apiVersion: kubescheduler.config.k8s.io/v1", "filterVerb: filter",
                           "prioritizeVerb: prioritize", "bindVerb: bind", "nodeCacheCapable: true",
                           "schedulerName: tessera"}) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace tessera::scheduler
