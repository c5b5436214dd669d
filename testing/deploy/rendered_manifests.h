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
  std::string skip;   // why this machine cannot render them (no kubectl, or one too old)
};

// Runs `kubectl kustomize <dir>` and parses every document. kubectl 1.20 and older embed
// kustomize v2, which reads directories only from `bases:` and knows no `labels:`; deploy/ needs
// kubectl 1.21 or newer (kustomize v4+), and says so in `skip` on an older one.
Rendered Render(const std::string& dir);

// Parses a stream of YAML documents into `r` (its error when they do not parse).
void ParseObjects(const std::string& text, Rendered& r);

// The helm the dev cluster's components hold (testing/cluster/upstream/helm), "" with the reason
// in `why` when it is not built.
std::string HelmBinary(std::string& why);

// The Kubernetes version deploy/ pins its kube-scheduler image to (the dev cluster's): the chart
// takes that image's tag from the cluster's version, so it renders deploy/ for this one.
inline constexpr char kDeployKubeVersion[] = "1.36.3";

// Runs `helm template tessera deploy/helm/tessera --namespace NAMESPACE --kube-version VERSION
// ARGS...`, by default for the oldest Kubernetes the chart supports (1.29).
Rendered RenderChart(const std::string& ns, const std::vector<std::string>& args,
                     const std::string& kube_version = "1.29.0");

// The same command line's standard output as it is, "" when it fails.
std::string RenderChartText(const std::string& ns, const std::vector<std::string>& args,
                            const std::string& kube_version = "1.29.0");

// The object of `kind` and `name`, if rendered.
std::optional<YAML::Node> Find(const std::vector<YAML::Node>& objects, const std::string& kind,
                               const std::string& name);

// Runs a command line through the shell; returns its exit status and fills `output` (stdout and
// stderr).
int RunCommand(const std::string& command, std::string& output);

// Runs `tessera ARGS --print-config` (the binary of $TESSERA_BUILD_DIR, which ctest sets) in a
// clean environment plus `env` (NAME=VALUE words): its exit status, or -1 without
// TESSERA_BUILD_DIR; `output` gets the command line and what it printed.
int PrintTesseraConfig(const std::vector<std::string>& args, const std::string& env,
                       std::string& output);

// The settings in what `tessera ... --print-config` printed, as "key value" lines (its first two
// columns; an empty value is ""), each line ending in a newline, the first preceded by one.
std::string Settings(const std::string& printed);

// Settings of what `tessera ARGS --print-config` printed with `env`; a run that fails is a test
// failure.
std::string TesseraSettings(const std::vector<std::string>& args, const std::string& env = "");

// Expects the line "key value" among `settings` (TesseraSettings' lines).
void ExpectSetting(const std::string& settings, const std::string& key, const std::string& value);

// Quotes a word for sh.
std::string ShellQuote(const std::string& word);

}  // namespace tessera::deploy_test
