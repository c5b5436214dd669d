#include "rendered_manifests.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace tessera::deploy_test {

int RunCommand(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int PrintTesseraConfig(const std::vector<std::string>& args, const std::string& env,
                       std::string& output) {
  const char* build = std::getenv("TESSERA_BUILD_DIR");
  if (build == nullptr) {
    output = "TESSERA_BUILD_DIR is not set (run through ctest)";
    return -1;
  }
  std::string command = "env -i " + env + " " + ShellQuote(std::string(build) + "/bin/tessera");
  for (const std::string& a : args) command += " " + ShellQuote(a);
  command += " --print-config";
  int status = RunCommand(command, output);
  output = command + "\n" + output;
  return status;
}

std::string Settings(const std::string& printed) {
  static const std::regex kColumns(R"(\s+)");
  std::istringstream in(printed);
  std::string line, out = "\n";
  while (std::getline(in, line)) {
    std::sregex_token_iterator it(line.begin(), line.end(), kColumns, -1), end;
    std::vector<std::string> words(it, end);
    if (words.size() >= 2) out += words[0] + " " + words[1] + "\n";
  }
  return out;
}

std::string TesseraSettings(const std::vector<std::string>& args, const std::string& env) {
  std::string output;
  EXPECT_EQ(PrintTesseraConfig(args, env, output), 0) << output;
  return Settings(output);
}

void ExpectSetting(const std::string& settings, const std::string& key, const std::string& value) {
  EXPECT_NE(settings.find("\n" + key + " " + value + "\n"), std::string::npos)
      << key << " is not " << value << " in:\n"
      << settings;
}

std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Rendered Render(const std::string& dir) {
  Rendered r;
  std::string output;
  if (RunCommand("command -v kubectl", output) != 0) {
    r.skip = "kubectl is not installed: deploy/ not rendered";
    return r;
  }
  std::smatch version;
  static const std::regex kVersion(R"re("major":\s*"([0-9]+)[^"]*",\s*"minor":\s*"([0-9]+))re");
  if (RunCommand("kubectl version --client -o json", output) == 0 &&
      std::regex_search(output, version, kVersion) && std::stoi(version[1]) == 1 &&
      std::stoi(version[2]) < 21) {
    r.skip = "kubectl 1." + version[2].str() +
             " embeds kustomize v2, too old for deploy/ (kubectl 1.21 or newer is needed)";
    return r;
  }
  if (RunCommand("kubectl kustomize " + ShellQuote(dir), output) != 0) {
    r.error = "kubectl kustomize " + dir + " failed:\n" + output;
    return r;
  }
  ParseObjects(output, r);
  return r;
}

void ParseObjects(const std::string& text, Rendered& r) {
  try {
    for (const YAML::Node& doc : YAML::LoadAll(text)) {
      if (doc.IsNull()) continue;
      r.objects.push_back(doc);
    }
  } catch (const YAML::Exception& e) {
    r.error = std::string("the rendered manifests do not parse: ") + e.what();
  }
}

std::string HelmBinary(std::string& why) {
  const std::string script = std::string(TESSERA_SOURCE_DIR) + "/testing/cluster/build-components";
  std::string output;
  if (RunCommand(ShellQuote(script) + " --print 2>/dev/null", output) != 0) {
    why = "helm is not built (testing/cluster/build-components builds it; make test does)";
    return "";
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  return output + "/helm";
}

namespace {

std::string ChartCommand(const std::string& helm, const std::string& ns,
                         const std::vector<std::string>& args, const std::string& kube_version) {
  std::string command = ShellQuote(helm) + " template tessera " +
                        ShellQuote(std::string(TESSERA_SOURCE_DIR) + "/deploy/helm/tessera") +
                        " --namespace " + ShellQuote(ns) + " --kube-version " +
                        ShellQuote(kube_version);
  for (const std::string& a : args) command += " " + ShellQuote(a);
  return command;
}

}  // namespace

std::string RenderChartText(const std::string& ns, const std::vector<std::string>& args,
                            const std::string& kube_version) {
  std::string why;
  std::string helm = HelmBinary(why);
  std::string output;
  if (helm.empty() ||
      RunCommand("{ " + ChartCommand(helm, ns, args, kube_version) + " 2>/dev/null; }", output) !=
          0) {
    return "";
  }
  return output;
}

Rendered RenderChart(const std::string& ns, const std::vector<std::string>& args,
                     const std::string& kube_version) {
  Rendered r;
  std::string helm = HelmBinary(r.skip);
  if (helm.empty()) return r;
  std::string command = ChartCommand(helm, ns, args, kube_version);
  // Only its standard output is YAML; when it fails, run again for its messages.
  std::string output;
  if (RunCommand("{ " + command + " 2>/dev/null; }", output) != 0) {
    RunCommand(command, output);
    r.error = command + " failed:\n" + output;
    return r;
  }
  ParseObjects(output, r);
  return r;
}

std::optional<YAML::Node> Find(const std::vector<YAML::Node>& objects, const std::string& kind,
                               const std::string& name) {
  for (const YAML::Node& o : objects) {
    if (o["kind"].as<std::string>("") == kind &&
        o["metadata"]["name"].as<std::string>("") == name) {
      return o;
    }
  }
  return std::nullopt;
}

}  // namespace tessera::deploy_test
