#include "object_comparison.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <regex>

#include "rendered_manifests.h"

namespace tessera::deploy_test {
namespace {

const std::set<std::string> kHelmLabels = {"helm.sh/chart", "app.kubernetes.io/managed-by",
                                           "app.kubernetes.io/instance",
                                           "app.kubernetes.io/version"};

// Replaces every scalar of `node` that `renamed` has with its new text.
void Rename(YAML::Node node, const std::map<std::string, std::string>& renamed) {
  auto replace = [&](YAML::Node child) {
    if (!child.IsScalar()) return Rename(child, renamed);
    auto it = renamed.find(child.Scalar());
    if (it != renamed.end()) child = it->second;
  };
  if (node.IsMap()) {
    std::vector<std::string> keys;
    for (auto kv : node) keys.push_back(kv.first.as<std::string>());
    for (const std::string& k : keys) replace(node[k]);
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) replace(node[i]);
  }
}

void RemoveKeys(YAML::Node map, const std::function<bool(const std::string&)>& drop) {
  if (!map || !map.IsMap()) return;
  std::vector<std::string> keys;
  for (auto kv : map) {
    if (drop(kv.first.as<std::string>())) keys.push_back(kv.first.as<std::string>());
  }
  for (const std::string& k : keys) map.remove(k);
}

// Removes `key` of `parent` when it holds an empty map.
void RemoveIfEmpty(YAML::Node parent, const std::string& key) {
  if (parent && parent.IsMap() && parent[key] && parent[key].IsMap() && parent[key].size() == 0) {
    parent.remove(key);
  }
}

void CollapseExpressions(YAML::Node object) {
  static const std::regex kSpace(R"(\s+)");
  for (YAML::Node webhook : object["webhooks"]) {
    for (YAML::Node condition : webhook["matchConditions"]) {
      std::string text = condition["expression"].as<std::string>("");
      text = std::regex_replace(text, kSpace, " ");
      text.erase(0, text.find_first_not_of(' '));
      text.erase(text.find_last_not_of(' ') + 1);
      condition["expression"] = text;
    }
  }
}

void ParseYamlData(YAML::Node object) {
  YAML::Node data = object["data"];
  if (!data || !data.IsMap()) return;
  std::vector<std::string> keys;
  for (auto kv : data) keys.push_back(kv.first.as<std::string>());
  for (const std::string& k : keys) {
    if (k.size() > 5 && k.compare(k.size() - 5, 5, ".yaml") == 0) {
      data[k] = YAML::Load(data[k].as<std::string>());
    }
  }
}

// A plain scalar that YAML (1.1, as Kubernetes reads it) takes for a number, a boolean or null.
bool LooksTyped(const std::string& text) {
  static const std::regex kTyped(
      R"([-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+|[-+]?([0-9]*\.[0-9]+|[0-9]+\.?)([eE][-+]?[0-9]+)?)"
      R"(|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)"
      R"(|~|null|Null|NULL|)");
  return std::regex_match(text, kTyped);
}

void Dump(const YAML::Node& n, int indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (n.IsMap()) {
    if (n.size() == 0) {
      out += " {}\n";
      return;
    }
    std::map<std::string, YAML::Node> sorted;
    for (auto kv : n) sorted.emplace(kv.first.as<std::string>(), kv.second);
    out += "\n";
    for (const auto& [k, v] : sorted) {
      out += pad + k + ":";
      Dump(v, indent + 2, out);
    }
  } else if (n.IsSequence()) {
    if (n.size() == 0) {
      out += " []\n";
      return;
    }
    out += "\n";
    for (const YAML::Node& item : n) {
      out += pad + "-";
      Dump(item, indent + 2, out);
    }
  } else if (n.IsScalar()) {
    // Strings quoted, whether written quoted (yaml-cpp tags those "!") or plain; plain numbers,
    // booleans and nulls as they are: "true" is not true, "pods" is pods.
    std::string text = n.Scalar();
    if (n.Tag() == "!" || !LooksTyped(text)) {
      std::string quoted = "\"";
      for (char c : text) quoted += c == '\n' ? std::string("\\n") : std::string(1, c);
      text = quoted + "\"";
    }
    out += " " + text + "\n";
  } else {
    out += " null\n";
  }
}

std::string Diff(const std::string& left, const std::string& right) {
  char left_path[] = "/tmp/deploy_test_left.XXXXXX";
  char right_path[] = "/tmp/deploy_test_right.XXXXXX";
  int l = mkstemp(left_path);
  int r = mkstemp(right_path);
  if (l < 0 || r < 0) return "(cannot write temporary files for diff)";
  close(l);
  close(r);
  std::ofstream(left_path) << left;
  std::ofstream(right_path) << right;
  std::string output;
  RunCommand("diff -u " + ShellQuote(left_path) + " " + ShellQuote(right_path), output);
  std::remove(left_path);
  std::remove(right_path);
  return output;
}

}  // namespace

std::vector<YAML::Node> Normalized(const std::vector<YAML::Node>& objects, Renderer renderer) {
  static const std::regex kGeneratedName(R"((.+)-[a-z0-9]{10})");
  static const std::regex kRevision(R"((.+)-[0-9]+)");
  std::map<std::string, std::string> renamed;
  std::vector<YAML::Node> out;
  for (const YAML::Node& o : objects) out.push_back(YAML::Clone(o));
  for (YAML::Node o : out) {
    const std::string kind = o["kind"].as<std::string>("");
    const std::string name = o["metadata"]["name"].as<std::string>("");
    std::smatch m;
    if (renderer == Renderer::kKustomize && kind == "ConfigMap" &&
        std::regex_match(name, m, kGeneratedName)) {
      renamed[name] = m[1];
    }
    if (renderer == Renderer::kHelm && kind == "Job" && std::regex_match(name, m, kRevision)) {
      o["metadata"]["name"] = std::string(m[1]);
    }
    RemoveKeys(o["metadata"]["labels"], [](const std::string& k) { return kHelmLabels.count(k); });
    YAML::Node spec = o["spec"];
    if (spec && spec.IsMap() && spec["template"] && spec["template"]["metadata"]) {
      YAML::Node meta = spec["template"]["metadata"];
      RemoveKeys(meta["annotations"],
                 [](const std::string& k) { return k.rfind("checksum/", 0) == 0; });
      RemoveIfEmpty(meta, "annotations");
    }
    CollapseExpressions(o);
    if (kind == "ConfigMap") ParseYamlData(o);
  }
  for (YAML::Node o : out) Rename(o, renamed);
  return out;
}

std::string Key(const YAML::Node& object) {
  return object["kind"].as<std::string>("") + "/" +
         object["metadata"]["namespace"].as<std::string>("") + "/" +
         object["metadata"]["name"].as<std::string>("");
}

std::string Canonical(const YAML::Node& node) {
  std::string out;
  Dump(node, 0, out);
  return out;
}

std::vector<std::string> Differences(const std::vector<YAML::Node>& left,
                                     const std::vector<YAML::Node>& right,
                                     const std::set<std::string>& only_left,
                                     const std::set<std::string>& only_right) {
  std::map<std::string, YAML::Node> l, r;
  for (const YAML::Node& o : left) l[Key(o)] = o;
  for (const YAML::Node& o : right) r[Key(o)] = o;
  std::vector<std::string> out;
  for (const std::string& k : only_left) {
    if (!l.count(k) || r.count(k)) out.push_back(k + " should be in the first rendering only");
  }
  for (const std::string& k : only_right) {
    if (!r.count(k) || l.count(k)) out.push_back(k + " should be in the second rendering only");
  }
  for (const auto& [k, o] : l) {
    if (only_left.count(k)) continue;
    auto it = r.find(k);
    if (it == r.end()) {
      out.push_back(k + " is only in the first rendering");
      continue;
    }
    std::string a = Canonical(o), b = Canonical(it->second);
    if (a != b) out.push_back(k + " differs:\n" + Diff(a, b));
  }
  for (const auto& [k, o] : r) {
    if (!l.count(k) && !only_right.count(k)) out.push_back(k + " is only in the second rendering");
  }
  return out;
}

}  // namespace tessera::deploy_test
