// deploy/grafana/tessera-dashboard.json queries only metrics that the code exports, and groups,
// joins, filters and names its series only by labels those metrics carry: the names and labels
// are taken from the real /metrics renderings of the scheduler and the node agent, not from a
// list kept by hand.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "node/allocation/allocation_files.h"
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

// Each sample name of the exposition with the label names its samples carry.
std::map<std::string, std::set<std::string>> ExportedLabels(const std::string& exposition) {
  std::map<std::string, std::set<std::string>> labels;
  std::istringstream lines(exposition);
  std::string line;
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? )");
  const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*")");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (line.empty() || line[0] == '#' || !std::regex_search(line, m, sample)) continue;
    std::set<std::string>& names = labels[m[1].str()];
    const std::string list = m[3].str();
    for (std::sregex_iterator it(list.begin(), list.end(), label), end; it != end; ++it) {
      names.insert((*it)[1].str());
    }
  }
  return labels;
}

// The node agent's exposition with one container and one DRA claim on GPU-1 of node-a.
std::string NodeExposition() {
  std::string state_dir = (std::filesystem::temp_directory_path() / "dashboard_test.XXXXXX");
  EXPECT_NE(mkdtemp(state_dir.data()), nullptr);
  const node::Grant grant{"hard", {{"GPU-1", 1024, 30}}};
  for (const auto& [id, owner] :
       {std::pair{"a", R"({"namespace":"ns","pod":"p","uid":"u","container":"c"})"},
        std::pair{"b",
                  R"({"kind":"ResourceClaim","namespace":"ns","claim":"k","claimUid":"b"})"}}) {
    const std::string dir = state_dir + "/allocations/" + id;
    EXPECT_TRUE(node::MakeDirs(dir).ok());
    EXPECT_TRUE(node::WriteFileAtomic(dir + "/owner.json", owner).ok());
    EXPECT_TRUE(node::WriteFileAtomic(dir + "/limits", node::LimitsText(grant)).ok());
  }
  std::string out = node::RenderMetrics(
      "node-a", state_dir, {node::GpuInfo{.uuid = "GPU-1", .index = 1, .model = "NVIDIA H200"}});
  std::filesystem::remove_all(state_dir);
  return out;
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
      ExportedNames(node::RenderMetrics("node-a", state_dir, {node::GpuInfo{.uuid = "GPU-1"}}));
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

// The scheduler's view of one node, node-a, with one GPU.
scheduler::StateSnapshot OneGpuState() {
  scheduler::StateSnapshot state;
  scheduler::GpuSlot gpu;
  gpu.info.uuid = "GPU-1";
  gpu.info.index = 1;
  state.nodes["node-a"].gpus.push_back(gpu);
  return state;
}

// The labels a query uses: grouping and joining (by, without, on, ignoring, group_left/right),
// label matchers and label_values(metric, label).
std::set<std::string> LabelsUsed(const std::string& expression) {
  std::set<std::string> used;
  const std::regex lists(R"(\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\))");
  const std::regex selectors(R"(\{([^}]*)\})");
  const std::regex matcher(R"(([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=))");
  const std::regex word(R"([a-zA-Z_][a-zA-Z0-9_]*)");
  const std::regex label_values(R"(label_values\(\s*[a-zA-Z_:][a-zA-Z0-9_:]*\s*,\s*(\w+)\s*\))");
  auto each = [&](const std::string& text, const std::regex& re, int group, auto f) {
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      f((*it)[group].str());
    }
  };
  each(expression, lists, 1, [&](const std::string& list) {
    each(list, word, 0, [&](const std::string& w) { used.insert(w); });
  });
  each(expression, selectors, 1, [&](const std::string& list) {
    each(list, matcher, 1, [&](const std::string& w) { used.insert(w); });
  });
  each(expression, label_values, 1, [&](const std::string& w) { used.insert(w); });
  return used;
}

// Issue 32: the node agent's `gpu` was the UUID, the scheduler's the index. Every label a panel
// groups, joins or filters by, and every {{label}} of its legend, is one the series it queries
// carry.
TEST(Dashboard, UsesOnlyLabelsTheSeriesCarry) {
  std::map<std::string, std::set<std::string>> labels =
      ExportedLabels(scheduler::Metrics{}.Render(OneGpuState()));
  for (auto& [name, names] : ExportedLabels(NodeExposition())) labels[name] = names;
  ASSERT_TRUE(labels["tessera_container_memory_used_bytes"].count("UUID"));

  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/deploy/grafana/tessera-dashboard.json");
  nlohmann::json dashboard = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded());
  std::vector<nlohmann::json> targets;
  std::function<void(const nlohmann::json&)> collect = [&](const nlohmann::json& j) {
    if (j.is_object() && (j.contains("expr") || j.contains("query"))) targets.push_back(j);
    if (j.is_structured()) {
      for (const auto& item : j) collect(item);
    }
  };
  collect(dashboard);
  const std::regex metric(R"(\btessera_[a-z0-9_]+)");
  const std::regex placeholder(R"(\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\})");
  size_t checked = 0;
  for (const nlohmann::json& t : targets) {
    const std::string e = t.value("expr", t.value("query", nlohmann::json("")).is_string()
                                              ? t.value("query", std::string())
                                              : std::string());
    std::set<std::string> carried;
    for (std::sregex_iterator it(e.begin(), e.end(), metric), end; it != end; ++it) {
      const std::set<std::string>& l = labels[it->str()];
      carried.insert(l.begin(), l.end());
    }
    if (carried.empty()) continue;  // no series rendered for it (a counter without labels)
    std::set<std::string> used = LabelsUsed(e);
    const std::string legend = t.value("legendFormat", std::string());
    for (std::sregex_iterator it(legend.begin(), legend.end(), placeholder), end; it != end; ++it) {
      used.insert((*it)[1].str());
    }
    for (const std::string& l : used) {
      EXPECT_TRUE(carried.count(l)) << "`" << e << "` (legend `" << legend << "`) uses label " << l
                                    << ", which its series do not carry";
      ++checked;
    }
  }
  EXPECT_GE(checked, 20u);
}

// Before, the scheduler reported memory in MiB and the node agent in bytes.
TEST(Dashboard, EveryMemoryMetricIsInBytesAndNoNameMeansTwoThings) {
  std::set<std::string> scheduler_names = ExportedNames(scheduler::Metrics{}.Render({}));
  std::string state_dir = (std::filesystem::temp_directory_path() / "dashboard_test.XXXXXX");
  ASSERT_NE(mkdtemp(state_dir.data()), nullptr);
  std::set<std::string> node_names =
      ExportedNames(node::RenderMetrics("node-a", state_dir, {node::GpuInfo{.uuid = "GPU-1"}}));
  std::filesystem::remove_all(state_dir);
  for (const std::set<std::string>* names : {&scheduler_names, &node_names}) {
    for (const std::string& name : *names) {
      if (name.find("memory") == std::string::npos) continue;
      EXPECT_TRUE(name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0)
          << name << " is a memory metric not in bytes";
    }
  }
  for (const std::string& name : scheduler_names) {
    if (name == "tessera_build_info") continue;  // one series per component, by its label
    EXPECT_FALSE(node_names.count(name))
        << name << " is exported by both the scheduler and the node agent, with other labels";
  }
}

}  // namespace
}  // namespace tessera::deploy_test
