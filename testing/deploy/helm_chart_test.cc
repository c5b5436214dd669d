// deploy/helm/tessera, rendered by real Helm (the dev cluster's, testing/cluster/upstream/helm):
// at its defaults it renders the objects of `kubectl kustomize deploy`, field by field (so a
// change of deploy/ that is not carried into the chart fails here, with the diff to carry); with
// the dev cluster's values the objects of its overlay, with networkPolicy and node.mode=dra the
// components'; it passes `helm lint --strict`, and every value users set reaches the parts (their
// flags accepted by the `tessera` binary, the webhooks, kube-scheduler's configuration, the
// objects for Prometheus and Grafana).
// Skipped (with a message) only where kubectl (1.21+) or the built helm is missing.
#include <gtest/gtest.h>

#include <fstream>

#include "object_comparison.h"
#include "rendered_manifests.h"

namespace tessera::deploy_test {
namespace {

const std::string kSource = TESSERA_SOURCE_DIR;
const std::string kValues = kSource + "/testing/deploy/helm/";

// What only one of the two tools makes: deploy/ has the namespace (Helm installs into one, or
// makes it with namespace.create); the chart owns the certificates' Secrets deploy/ leaves to
// certgen, so that uninstalling it removes them.
const std::set<std::string> kOnlyKustomize = {"Namespace//tessera-system"};
const std::set<std::string> kOnlyChart = {
    "Secret/tessera-system/tessera-scheduler-tls",
    "Secret/tessera-system/tessera-kube-scheduler-client-tls"};

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class DeployHelmChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    helm_ = HelmBinary(why);
    if (helm_.empty()) GTEST_SKIP() << why;
  }

  // The chart (helm template, for the Kubernetes version deploy/ pins kube-scheduler to) and
  // kustomize's `dir` agree, but for the tools' own objects.
  static void ExpectSameObjects(const std::vector<std::string>& helm_args, const std::string& dir,
                                const std::set<std::string>& only_kustomize = kOnlyKustomize) {
    Rendered kustomized = Render(dir);
    if (!kustomized.skip.empty()) GTEST_SKIP() << kustomized.skip;
    ASSERT_EQ(kustomized.error, "");
    Rendered chart = RenderChart("tessera-system", helm_args, kDeployKubeVersion);
    ASSERT_EQ(chart.error, "");
    std::vector<std::string> differences =
        Differences(Normalized(kustomized.objects, Renderer::kKustomize),
                    Normalized(chart.objects, Renderer::kHelm), only_kustomize, kOnlyChart);
    EXPECT_TRUE(differences.empty())
        << "kubectl kustomize " << dir << " (first) and the chart (second) differ; carry the "
        << "change into deploy/helm/tessera/templates (or back):\n"
        << Join(differences);
  }

  std::string helm_;
};

TEST_F(DeployHelmChartTest, AtItsDefaultsTheChartRendersDeploy) {
  ExpectSameObjects({}, kSource + "/deploy");
}

// namespace.create: deploy/'s Namespace, with the Pod Security level the agent needs.
TEST_F(DeployHelmChartTest, NamespaceCreateRendersDeploysNamespace) {
  ExpectSameObjects({"--set", "namespace.create=true"}, kSource + "/deploy", {});
}

TEST_F(DeployHelmChartTest, TheDevClusterValuesRenderTheDevClusterOverlay) {
  ExpectSameObjects({"--values", kValues + "dev-cluster-values.yaml"},
                    kSource + "/testing/deploy/overlays/dev-cluster");
}

TEST_F(DeployHelmChartTest, NetworkPolicyValuesRenderTheComponent) {
  ExpectSameObjects({"--set", "networkPolicy.enabled=true", "--set",
                     "networkPolicy.apiServerCIDRs={10.0.0.10/32}"},
                    kSource + "/testing/deploy/overlays/network-policy");
}

TEST_F(DeployHelmChartTest, DraModeRendersTheDraComponent) {
  ExpectSameObjects({"--set", "node.mode=dra"}, kSource + "/testing/deploy/overlays/dra");
}

// A mistyped mode would quietly keep the device plugins: the schema refuses it, and the
// template too when the schema is skipped.
TEST_F(DeployHelmChartTest, UnknownNodeModeIsRefused) {
  Rendered chart = RenderChart("tessera-system", {"--set", "node.mode=DRA"});
  EXPECT_NE(chart.error.find("/node/mode': value must be one of 'device-plugin', 'dra'"),
            std::string::npos)
      << chart.error;
  chart = RenderChart("tessera-system", {"--set", "node.mode=DRA", "--skip-schema-validation"});
  EXPECT_NE(chart.error.find("node.mode: \"DRA\" is not a mode"), std::string::npos) << chart.error;
}

// In another namespace, the DRA policy and binding name the agent's ServiceAccount there.
TEST_F(DeployHelmChartTest, DraModeNamesTheAgentOfTheReleaseNamespace) {
  Rendered chart = RenderChart("gpu-system", {"--set", "node.mode=dra"});
  ASSERT_EQ(chart.error, "");
  std::optional<YAML::Node> policy =
      Find(chart.objects, "ValidatingAdmissionPolicy", "tessera-node-resourceslices");
  ASSERT_TRUE(policy.has_value());
  EXPECT_EQ((*policy)["spec"]["matchConditions"][0]["expression"].as<std::string>(),
            "request.userInfo.username == \"system:serviceaccount:gpu-system:tessera-node\"");
  std::optional<YAML::Node> binding = Find(chart.objects, "ClusterRoleBinding", "tessera-node-dra");
  ASSERT_TRUE(binding.has_value());
  EXPECT_EQ((*binding)["subjects"][0]["namespace"].as<std::string>(), "gpu-system");
}

TEST_F(DeployHelmChartTest, LintsStrictWithEachValuesFile) {
  for (const std::string& values :
       {std::string(), kValues + "dev-cluster-values.yaml", kValues + "custom-values.yaml"}) {
    std::string command =
        ShellQuote(helm_) + " lint --strict " + ShellQuote(kSource + "/deploy/helm/tessera");
    if (!values.empty()) command += " --values " + ShellQuote(values);
    std::string output;
    EXPECT_EQ(RunCommand(command, output), 0) << command << "\n" << output;
  }
}

// A NetworkPolicy without the API server's addresses would time every webhook call out.
TEST_F(DeployHelmChartTest, NetworkPolicyWithoutApiServerAddressesIsRefused) {
  Rendered chart = RenderChart("tessera-system", {"--set", "networkPolicy.enabled=true"});
  EXPECT_NE(chart.error.find("networkPolicy.apiServerCIDRs"), std::string::npos) << chart.error;
}

// custom-values.yaml: another namespace, a dialect off and one renamed, other policies, images,
// placement, split count, driver and cgroup roots, a webhook client certificate, the Prometheus
// and Grafana objects.
class DeployHelmChartValuesTest : public DeployHelmChartTest {
 protected:
  void SetUp() override {
    DeployHelmChartTest::SetUp();
    if (IsSkipped()) return;
    chart_ = RenderChart("gpu-system", {"--values", kValues + "custom-values.yaml"});
    ASSERT_EQ(chart_.error, "");
  }

  YAML::Node Get(const std::string& kind, const std::string& name) const {
    std::optional<YAML::Node> o = Find(chart_.objects, kind, name);
    EXPECT_TRUE(o.has_value()) << kind << " " << name << " is not rendered";
    return o ? *o : YAML::Node();
  }

  YAML::Node Pod(const std::string& kind, const std::string& name) const {
    return Get(kind, name)["spec"]["template"]["spec"];
  }

  static std::vector<std::string> Args(const YAML::Node& container, const char* field = "args") {
    std::vector<std::string> out;
    for (const YAML::Node& a : container[field]) out.push_back(a.as<std::string>());
    return out;
  }

  Rendered chart_;
};

TEST_F(DeployHelmChartValuesTest, EveryObjectIsInTheReleaseNamespace) {
  for (const YAML::Node& o : chart_.objects) {
    std::string ns = o["metadata"]["namespace"].as<std::string>("");
    if (Key(o) == "RoleBinding/kube-system/tessera-kube-scheduler-authentication-reader") continue;
    std::string kind = o["kind"].as<std::string>();
    if (kind.rfind("Cluster", 0) == 0 || kind.find("WebhookConfiguration") != std::string::npos) {
      EXPECT_EQ(ns, "") << Key(o);
    } else {
      EXPECT_EQ(ns, "gpu-system") << Key(o);
    }
    for (const YAML::Node& s : o["subjects"]) {
      EXPECT_EQ(s["namespace"].as<std::string>(), "gpu-system") << Key(o);
    }
  }
}

TEST_F(DeployHelmChartValuesTest, TheSchedulerGetsItsValues) {
  YAML::Node pod = Pod("Deployment", "tessera-scheduler");
  YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["image"].as<std::string>(), "registry.example.org/gpu/tessera:1.2.3");
  EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "Always");
  EXPECT_EQ(pod["imagePullSecrets"][0]["name"].as<std::string>(), "registry-login");
  EXPECT_EQ(pod["nodeSelector"]["node-role.kubernetes.io/control-plane"].as<std::string>("x"), "");
  EXPECT_EQ(pod["tolerations"][0]["key"].as<std::string>(),
            "node-role.kubernetes.io/control-plane");
  std::string config = TesseraSettings(Args(c), "");
  ExpectSetting(config, "scheduler.node-policy", "spread");
  ExpectSetting(config, "scheduler.gpu-policy", "spread");
  ExpectSetting(config, "scheduler.dialects.vgpu.count-resource", "example.com/vgpu");
  ExpectSetting(config, "scheduler.dialects.vgpu.memory-resource", "example.com/vgpu-memory");
  ExpectSetting(config, "scheduler.dialects.vcuda.enabled", "false");
  ExpectSetting(config, "scheduler.dialects.gpushare.enabled", "true");
  ExpectSetting(config, "scheduler.webhook.dra", "opt-in");
  ExpectSetting(config, "scheduler.webhook.trusted-users",
                "system:serviceaccount:gpu-system:tessera-scheduler,"
                "system:serviceaccount:gpu-system:tessera-node");
}

TEST_F(DeployHelmChartValuesTest, TheNodeAgentGetsItsValues) {
  YAML::Node pod = Pod("DaemonSet", "tessera-node");
  EXPECT_EQ(pod["nodeSelector"]["gpu"].as<std::string>(), "shared");
  EXPECT_EQ(pod["tolerations"].size(), 1u);
  EXPECT_EQ(pod["tolerations"][0]["key"].as<std::string>(), "dedicated");
  EXPECT_EQ(pod["initContainers"][0]["image"].as<std::string>(),
            "registry.example.org/gpu/tessera:1.2.3");
  YAML::Node c = pod["containers"][0];
  std::string config = TesseraSettings(Args(c), "NODE_NAME=node-1");
  ExpectSetting(config, "node.device-split-count", "4");
  ExpectSetting(config, "node.driver-root", "/run/nvidia/driver");
  ExpectSetting(config, "node.kubelet-cgroup-root", "/kubelet.slice");
  ExpectSetting(config, "node.dialects.vgpu.resource", "example.com/vgpu");
  ExpectSetting(config, "node.dialects.vcuda.enabled", "false");
  ExpectSetting(config, "node.dialects.gpushare.enabled", "true");
  bool driver_mounted = false;
  for (const YAML::Node& m : c["volumeMounts"]) {
    driver_mounted |= m["mountPath"].as<std::string>() == "/run/nvidia/driver";
  }
  EXPECT_TRUE(driver_mounted) << "the driver root is not mounted into the agent";
}

TEST_F(DeployHelmChartValuesTest, CertgenMakesTheWebhookClientCertificateForTheNamespace) {
  YAML::Node c = Pod("Job", "tessera-certgen-1")["containers"][0];
  std::string config = TesseraSettings(Args(c), "");
  ExpectSetting(config, "certgen.namespace", "gpu-system");
  ExpectSetting(config, "certgen.webhook-client-name", "kube-apiserver-webhook-client");
  EXPECT_NE(config.find("tessera-scheduler.gpu-system.svc,"), std::string::npos) << config;
  Get("Secret", "tessera-webhook-client-tls");
  // annotationKey.existingSecret: certgen makes no key.
  ExpectSetting(config, "certgen.annotation-key-secret", "\"\"");
}

TEST_F(DeployHelmChartValuesTest, WebhooksAndKubeSchedulerKnowOnlyTheEnabledResources) {
  const std::vector<std::string> resources = {"example.com/vgpu", "example.com/vgpu-memory",
                                              "nvidia.com/gpumem-percentage", "nvidia.com/gpucores",
                                              "aliyun.com/gpu-mem"};
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    for (const YAML::Node& w : Get(kind, "tessera")["webhooks"]) {
      EXPECT_EQ(w["clientConfig"]["service"]["namespace"].as<std::string>(), "gpu-system");
      EXPECT_EQ(w["namespaceSelector"]["matchExpressions"][0]["values"][0].as<std::string>(),
                "gpu-system");
      const std::string name = w["name"].as<std::string>();
      // The guard sees annotations, the claim webhooks DRA claims: no resource names.
      if (name == "guard.tessera.io" || name.rfind("claim", 0) == 0) continue;
      std::string expression = w["matchConditions"][0]["expression"].as<std::string>();
      for (const std::string& r : resources) {
        EXPECT_NE(expression.find("'" + r + "'"), std::string::npos) << r << " in " << expression;
      }
      EXPECT_EQ(expression.find("vcuda"), std::string::npos) << expression;
      EXPECT_EQ(expression.find("'nvidia.com/gpu'"), std::string::npos) << expression;
    }
  }
  YAML::Node config = YAML::Load(
      Get("ConfigMap", "tessera-kube-scheduler-config")["data"]["kube-scheduler-config.yaml"]
          .as<std::string>());
  EXPECT_EQ(config["extenders"][0]["urlPrefix"].as<std::string>(),
            "https://tessera-scheduler-extender.gpu-system.svc:8443");
  EXPECT_EQ(config["leaderElection"]["resourceNamespace"].as<std::string>(), "gpu-system");
  std::vector<std::string> managed;
  for (const YAML::Node& r : config["extenders"][0]["managedResources"]) {
    EXPECT_TRUE(r["ignoredByScheduler"].as<bool>());
    managed.push_back(r["name"].as<std::string>());
  }
  EXPECT_EQ(managed, resources);
  YAML::Node kube_scheduler = Pod("Deployment", "tessera-kube-scheduler")["containers"][0];
  EXPECT_EQ(kube_scheduler["image"].as<std::string>(),
            "registry.example.org/k8s/kube-scheduler:v1.35.2");
  EXPECT_EQ(Args(kube_scheduler, "command").back(), "--v=4");
}

TEST_F(DeployHelmChartValuesTest, PrometheusAndGrafanaObjectsSelectWhatTheyShould) {
  YAML::Node scheduler_monitor = Get("ServiceMonitor", "tessera-scheduler");
  EXPECT_EQ(scheduler_monitor["metadata"]["labels"]["release"].as<std::string>(), "prometheus");
  YAML::Node service = Get("Service", "tessera-scheduler");
  for (const auto& kv : scheduler_monitor["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(service["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  YAML::Node endpoint = scheduler_monitor["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["port"].as<std::string>(),
            service["spec"]["ports"][0]["name"].as<std::string>());
  EXPECT_EQ(endpoint["scheme"].as<std::string>(), "https");
  EXPECT_EQ(endpoint["interval"].as<std::string>(), "15s");
  EXPECT_EQ(endpoint["tlsConfig"]["serverName"].as<std::string>(),
            "tessera-scheduler.gpu-system.svc");
  EXPECT_EQ(endpoint["tlsConfig"]["ca"]["secret"]["name"].as<std::string>(),
            "tessera-scheduler-tls");

  YAML::Node node_monitor = Get("ServiceMonitor", "tessera-node");
  YAML::Node node_service = Get("Service", "tessera-node-metrics");
  for (const auto& kv : node_monitor["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(node_service["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  YAML::Node agent_labels =
      Get("DaemonSet", "tessera-node")["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : node_service["spec"]["selector"]) {
    EXPECT_EQ(agent_labels[kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  EXPECT_EQ(
      node_service["spec"]["ports"][0]["targetPort"].as<std::string>(),
      Pod("DaemonSet", "tessera-node")["containers"][0]["ports"][0]["name"].as<std::string>());

  YAML::Node dashboard = Get("ConfigMap", "tessera-dashboard");
  EXPECT_EQ(dashboard["metadata"]["labels"]["grafana_dashboard"].as<std::string>(), "1");
  std::ifstream file(kSource + "/deploy/grafana/tessera-dashboard.json");
  std::string json((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!json.empty() && json.back() == '\n') json.pop_back();
  EXPECT_EQ(dashboard["data"]["tessera-dashboard.json"].as<std::string>(), json);

  YAML::Node policy = Get("NetworkPolicy", "tessera-scheduler");
  EXPECT_EQ(policy["spec"]["ingress"][1]["from"].size(), 2u);
  EXPECT_EQ(policy["spec"]["ingress"][1]["from"][1]["ipBlock"]["cidr"].as<std::string>(),
            "10.0.0.11/32");
}

}  // namespace
}  // namespace tessera::deploy_test
