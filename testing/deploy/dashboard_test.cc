// deploy/grafana/tessera-dashboard.json queries only metrics that the code exports: the names
// are taken from the real /metrics renderings of the scheduler and the node agent, not from a
// list kept by hand.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "node/metrics/metrics.h"
#include "scheduler/metrics.h"

namespace tessera::deploy_test {
namespace {

// Every sample name of the exposition: for each "# TYPE name kind" the name, and for histograms
// also name_bucket, name_sum and name_count.
std::set<std::string> ExportedNames(const std::string& exposition) {
  std::set<std::string> names;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string hash, type, name, kind;
    if (!(words >> hash >> type >> name >> kind) || hash != "#" || type != "TYPE") continue;
    names.insert(name);
    if (kind == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(name + suffix);
    }
  }
  return names;
}

void CollectExpressions(const nlohmann::json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if ((key == "expr" || key == "query" || key == "definition") && value.is_string()) {
        out.push_back(value.get<std::string>());
      } else {
        CollectExpressions(value, out);
      }
    }
  } else if (node.is_array()) {
    for (const nlohmann::json& item : node) CollectExpressions(item, out);
  }
}

TEST(Dashboard, QueriesOnlyMetricsTheCodeExports) {
  std::set<std::string> exported = ExportedNames(scheduler::Metrics{}.Render({}));
  ASSERT_TRUE(exported.count("tessera_gpu_memory_inventory_bytes"))
      << "the scheduler's names changed";
  std::string state_dir = (std::filesystem::temp_directory_path() / "dashboard_test.XXXXXX");
  ASSERT_NE(mkdtemp(state_dir.data()), nullptr);
  std::set<std::string> node_names =
      ExportedNames(node::RenderMetrics(state_dir, {node::GpuInfo{.uuid = "GPU-1"}}));
  std::filesystem::remove_all(state_dir);
  ASSERT_TRUE(node_names.count("tessera_container_memory_used_bytes"))
      << "the node agent's names changed";
  exported.insert(node_names.begin(), node_names.end());

  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/deploy/grafana/tessera-dashboard.json");
  ASSERT_TRUE(in) << "deploy/grafana/tessera-dashboard.json is missing";
  nlohmann::json dashboard = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "the dashboard is not JSON";

  std::vector<std::string> expressions;
  CollectExpressions(dashboard, expressions);
  ASSERT_GE(expressions.size(), 10u);
  std::set<std::string> used;
  const std::regex metric(R"(\btessera_[a-z0-9_]+)");
  for (const std::string& e : expressions) {
    for (std::sregex_iterator it(e.begin(), e.end(), metric), end; it != end; ++it) {
      used.insert(it->str());
      EXPECT_TRUE(exported.count(it->str()))
          << it->str() << " (in `" << e << "`) is not a metric the code exports";
    }
  }
  // Every GPU gauge and every histogram is on the dashboard.
  for (const char* name :
       {"tessera_gpu_memory_inventory_bytes", "tessera_gpu_memory_allocated_bytes",
        "tessera_gpu_cores_allocated_percent", "tessera_gpu_pods",
        "tessera_scheduler_filter_seconds_bucket", "tessera_scheduler_bind_seconds_bucket",
        "tessera_scheduler_decisions_total"}) {
    EXPECT_TRUE(used.count(name)) << name << " is not shown";
  }
}

// Before, the scheduler reported memory in MiB and the node agent in bytes.
TEST(Dashboard, EveryMemoryMetricIsInBytesAndNoNameMeansTwoThings) {
  std::set<std::string> scheduler_names = ExportedNames(scheduler::Metrics{}.Render({}));
  std::string state_dir = (std::filesystem::temp_directory_path() / "dashboard_test.XXXXXX");
  ASSERT_NE(mkdtemp(state_dir.data()), nullptr);
  std::set<std::string> node_names =
      ExportedNames(node::RenderMetrics(state_dir, {node::GpuInfo{.uuid = "GPU-1"}}));
  std::filesystem::remove_all(state_dir);
  for (const std::set<std::string>* names : {&scheduler_names, &node_names}) {
    for (const std::string& name : *names) {
      if (name.find("memory") == std::string::npos) continue;
      EXPECT_TRUE(name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0)
          << name << " is a memory metric not in bytes";
    }
  }
  for (const std::string& name : scheduler_names) {
    EXPECT_FALSE(node_names.count(name))
        << name << " is exported by both the scheduler and the node agent, with other labels";
  }
}

}  // namespace
}  // namespace tessera::deploy_test
