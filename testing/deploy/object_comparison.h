// Comparing the objects of two renderings of Tessera's manifests (kustomize's deploy/ and the
// Helm chart) field by field, after taking out what only says which tool made them. For
// deploy_test only. Thread-compatible.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

namespace tessera::deploy_test {

// Which tool rendered the objects: the parts of names and labels that each tool adds differ.
enum class Renderer { kKustomize, kHelm };

// A copy of `objects` without what only the renderer puts there:
// - Helm's labels (helm.sh/chart, app.kubernetes.io/managed-by, instance, version) and pod
//   template annotations checksum/*;
// - kustomize's hash suffix of generated ConfigMaps (in their names and in every reference);
// - the release revision that ends the chart's Job names;
// and with the text of matchConditions expressions collapsed to single spaces (CEL ignores the
// layout) and ConfigMap data of *.yaml keys parsed (comments and layout do not count).
std::vector<YAML::Node> Normalized(const std::vector<YAML::Node>& objects, Renderer renderer);

// kind/namespace/name of an object.
std::string Key(const YAML::Node& object);

// One text of an object with its map keys sorted, quoted scalars quoted ("true" is not true).
std::string Canonical(const YAML::Node& node);

// What differs between two normalized renderings: objects only in one of them (but for the
// keys in `only_left` and `only_right`, which must be there and only there), and for each object
// in both, `diff -u` of their canonical texts. Empty when they agree.
std::vector<std::string> Differences(const std::vector<YAML::Node>& left,
                                     const std::vector<YAML::Node>& right,
                                     const std::set<std::string>& only_left,
                                     const std::set<std::string>& only_right);

}  // namespace tessera::deploy_test
