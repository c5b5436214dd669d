// The objects `kubectl kustomize deploy` renders, and helpers to look into their pod templates.
// For deploy_test only. Thread-compatible.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::deploy_test {

struct Rendered {
  std::vector<YAML::Node> objects;
  std::string error;  // why rendering failed ("" on success)
  bool no_kubectl = false;
};

// Runs `kubectl kustomize <dir>` and parses every document.
Rendered Render(const std::string& dir);

// The object of `kind` and `name`, if rendered.
std::optional<YAML::Node> Find(const std::vector<YAML::Node>& objects, const std::string& kind,
                               const std::string& name);

// Runs a command line through the shell; returns its exit status and fills `output` (stdout and
// stderr).
int RunCommand(const std::string& command, std::string& output);

// Quotes a word for sh.
std::string ShellQuote(const std::string& word);

}  // namespace tessera::deploy_test
