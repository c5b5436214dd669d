// deploy/helm/tessera as an operator runs it in production (issue 32): under GitOps (`helm
// template` renders the same bytes every time; the annotation key is certgen's to make once, or
// a Secret of the operator's), through drains (PodDisruptionBudgets that let one replica go), on
// k0s and microk8s (kubelet's folder moved), under Pod Security admission, with cert-manager, and
// with the values users of NVIDIA's and HAMi's charts expect, each reaching its object; the
// values schema refuses what no template reads; kube-scheduler follows the cluster's version; the
// scheduler's web page stays off unless its value turns it on (issue 35).
// Skipped (with a message) only where the built helm or kubectl (1.21+) is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "object_comparison.h"
#include "rendered_manifests.h"

namespace tessera::deploy_test {
namespace {

const std::string kSource = TESSERA_SOURCE_DIR;

class DeployHelmValuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (HelmBinary(why).empty()) GTEST_SKIP() << why;
  }

  // The chart rendered with `args` in tessera-system (failing the test when it does not render).
  static Rendered Chart(const std::vector<std::string>& args,
                        const std::string& kube_version = kDeployKubeVersion) {
    Rendered chart = RenderChart("tessera-system", args, kube_version);
    EXPECT_EQ(chart.error, "");
    return chart;
  }

  static YAML::Node Get(const Rendered& chart, const std::string& kind, const std::string& name) {
    std::optional<YAML::Node> o = Find(chart.objects, kind, name);
    EXPECT_TRUE(o.has_value()) << kind << " " << name << " is not rendered";
    return o ? *o : YAML::Node();
  }

  static YAML::Node Pod(const Rendered& chart, const std::string& kind, const std::string& name) {
    return Get(chart, kind, name)["spec"]["template"]["spec"];
  }

  static std::vector<std::string> Strings(const YAML::Node& list) {
    std::vector<std::string> out;
    for (const YAML::Node& a : list) out.push_back(a.as<std::string>());
    return out;
  }

  // The settings of `tessera` run with a container's args.
  static std::string Config(const YAML::Node& container, const std::string& env = "") {
    return TesseraSettings(Strings(container["args"]), env);
  }

  // The volume of a pod named `name`, and the path the container mounts it at.
  static YAML::Node Volume(const YAML::Node& pod, const std::string& name) {
    for (const YAML::Node& v : pod["volumes"]) {
      if (v["name"].as<std::string>() == name) return v;
    }
    ADD_FAILURE() << "no volume " << name;
    return YAML::Node();
  }
  static std::string MountPath(const YAML::Node& container, const std::string& volume) {
    for (const YAML::Node& m : container["volumeMounts"]) {
      if (m["name"].as<std::string>() == volume) return m["mountPath"].as<std::string>();
    }
    return "";
  }
};

// Argo CD and Flux render the chart at every sync: a key made by randBytes changed every time.
TEST_F(DeployHelmValuesTest, RendersTheSameBytesEveryTime) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{},
        {"--values", kSource + "/testing/deploy/helm/custom-values.yaml"},
        {"--set", "webhook.certManager.enabled=true"}}) {
    std::string first = RenderChartText("tessera-system", args, kDeployKubeVersion);
    ASSERT_NE(first, "");
    EXPECT_EQ(RenderChartText("tessera-system", args, kDeployKubeVersion), first);
  }
}

// The key's Secret is certgen's to make once (never rendered, so never replaced); both parts
// mount it.
TEST_F(DeployHelmValuesTest, CertgenMakesTheAnnotationKeyThePartsMount) {
  Rendered chart = Chart({});
  EXPECT_FALSE(Find(chart.objects, "Secret", "tessera-annotation-key"));
  std::string config = Config(Pod(chart, "Job", "tessera-certgen-1")["containers"][0]);
  ExpectSetting(config, "certgen.annotation-key-secret", "tessera-annotation-key");
  for (const auto& [kind, name] :
       {std::pair<std::string, std::string>{"Deployment", "tessera-scheduler"},
        {"DaemonSet", "tessera-node"}}) {
    YAML::Node secret = Volume(Pod(chart, kind, name), "annotation-key")["secret"];
    EXPECT_EQ(secret["secretName"].as<std::string>(""), "tessera-annotation-key") << name;
    EXPECT_EQ(secret["items"][0]["key"].as<std::string>(""), "key") << name;
  }
}

TEST_F(DeployHelmValuesTest, AnExistingKeySecretIsMountedAndNoneIsMade) {
  Rendered chart = Chart({"--set", "annotationKey.existingSecret=gpu-signing-key", "--set",
                          "annotationKey.existingSecretKey=hmac"});
  ExpectSetting(Config(Pod(chart, "Job", "tessera-certgen-1")["containers"][0]),
                "certgen.annotation-key-secret", "\"\"");
  for (const auto& [kind, name] :
       {std::pair<std::string, std::string>{"Deployment", "tessera-scheduler"},
        {"DaemonSet", "tessera-node"}}) {
    YAML::Node secret = Volume(Pod(chart, kind, name), "annotation-key")["secret"];
    EXPECT_EQ(secret["secretName"].as<std::string>(""), "gpu-signing-key") << name;
    EXPECT_EQ(secret["items"][0]["key"].as<std::string>(""), "hmac") << name;
    EXPECT_EQ(secret["items"][0]["path"].as<std::string>(""), "key") << name;
  }
}

// minAvailable: 1 at one replica blocks every drain; at two it keeps one.
TEST_F(DeployHelmValuesTest, DisruptionBudgetsLetADrainEvictOneReplica) {
  Rendered kustomized = Render(kSource + "/deploy");
  if (!kustomized.skip.empty()) GTEST_SKIP() << kustomized.skip;
  Rendered one = Chart({"--set", "scheduler.replicas=1", "--set", "kubeScheduler.replicas=1"});
  for (const Rendered* r : {&kustomized, &one}) {
    int budgets = 0;
    for (const YAML::Node& o : r->objects) {
      if (o["kind"].as<std::string>() != "PodDisruptionBudget") continue;
      ++budgets;
      EXPECT_FALSE(o["spec"]["minAvailable"]) << Key(o);
      EXPECT_EQ(o["spec"]["maxUnavailable"].as<int>(0), 1) << Key(o);
    }
    EXPECT_EQ(budgets, 2);
  }
}

// Without honorLabels Prometheus renames the series' own namespace, pod and container labels.
TEST_F(DeployHelmValuesTest, ServiceMonitorsHonorTheSeriesLabels) {
  Rendered chart = Chart({"--set", "metrics.serviceMonitor.enabled=true"});
  for (const char* name : {"tessera-scheduler", "tessera-node"}) {
    for (const YAML::Node& e : Get(chart, "ServiceMonitor", name)["spec"]["endpoints"]) {
      EXPECT_TRUE(e["honorLabels"].as<bool>(false)) << name;
    }
  }
}

// k0s keeps kubelet's folder in /var/lib/k0s/kubelet: every kubelet path (the volumes, the
// mounts and the agent's own setting, from which it finds device-plugins/, plugins_registry/ and
// plugins/) moves there, in both modes; the other host folders follow their values.
TEST_F(DeployHelmValuesTest, HostPathsFollowTheirValues) {
  for (const char* mode : {"device-plugin", "dra"}) {
    Rendered chart =
        Chart({"--set", std::string("node.mode=") + mode, "--set",
               "node.kubeletRootDir=/var/lib/k0s/kubelet", "--set", "node.cdiDir=/etc/cdi", "--set",
               "node.stateDir=/opt/tessera/state", "--set", "node.libraryDir=/opt/tessera/lib"});
    YAML::Node pod = Pod(chart, "DaemonSet", "tessera-node");
    YAML::Node agent = pod["containers"][0];
    std::string config = Config(agent, "NODE_NAME=node-1");
    ExpectSetting(config, "node.kubelet-dir", "/var/lib/k0s/kubelet");
    ExpectSetting(config, "node.cdi-dir", "/etc/cdi");
    ExpectSetting(config, "node.state-dir", "/opt/tessera/state");
    ExpectSetting(config, "node.library-path", "/opt/tessera/lib/libtessera-cuda.so");
    int kubelet_paths = 0;
    for (const YAML::Node& v : pod["volumes"]) {
      if (!v["hostPath"]) continue;
      const std::string path = v["hostPath"]["path"].as<std::string>();
      const std::string name = v["name"].as<std::string>();
      if (path.find("kubelet") != std::string::npos) {
        ++kubelet_paths;
        EXPECT_EQ(path.rfind("/var/lib/k0s/kubelet/", 0), 0u) << name << " " << path;
      }
      // Mounted at the host's path: the agent names host paths to kubelet.
      if (name != "cgroup") {
        EXPECT_EQ(MountPath(agent, name), path) << mode << " " << name;
      }
    }
    EXPECT_EQ(kubelet_paths, std::string(mode) == "dra" ? 3 : 1) << mode;
    EXPECT_EQ(Volume(pod, "cdi")["hostPath"]["path"].as<std::string>(""), "/etc/cdi");
    EXPECT_EQ(Volume(pod, "library")["hostPath"]["path"].as<std::string>(""), "/opt/tessera/lib");
    EXPECT_EQ(Canonical(Get(chart, "DaemonSet", "tessera-node")).find("/var/lib/kubelet"),
              std::string::npos)
        << mode;
  }
}

TEST_F(DeployHelmValuesTest, TheAgentsPodGetsItsValues) {
  Rendered defaults = Chart({});
  YAML::Node pod = Pod(defaults, "DaemonSet", "tessera-node");
  EXPECT_FALSE(pod["runtimeClassName"]);
  EXPECT_EQ(pod["priorityClassName"].as<std::string>(""), "system-node-critical");
  YAML::Node term =
      pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
         ["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(term["key"].as<std::string>(""), "nvidia.com/gpu.present");
  EXPECT_EQ(Strings(term["values"]), std::vector<std::string>{"true"});

  Rendered chart = Chart({"--set", "node.runtimeClassName=nvidia",
                          "--set", "node.priorityClassName=gpu-critical",
                          "--set", "node.affinity=null",
                          "--set", "node.podAnnotations.team=ml",
                          "--set", "node.podLabels.tier=gpu",
                          "--set", "node.updateStrategy.rollingUpdate.maxUnavailable=3",
                          "--set", "node.podSecurityContext.fsGroup=7",
                          "--set", "node.securityContext.readOnlyRootFilesystem=false",
                          "--set", "node.extraVolumes[0].name=extra",
                          "--set", "node.extraVolumes[0].emptyDir.medium=Memory",
                          "--set", "node.extraVolumeMounts[0].name=extra",
                          "--set", "node.extraVolumeMounts[0].mountPath=/extra",
                          "--set", "node.tolerations=null"});
  YAML::Node daemonset = Get(chart, "DaemonSet", "tessera-node");
  pod = daemonset["spec"]["template"]["spec"];
  YAML::Node metadata = daemonset["spec"]["template"]["metadata"];
  EXPECT_EQ(pod["runtimeClassName"].as<std::string>(""), "nvidia");
  EXPECT_EQ(pod["priorityClassName"].as<std::string>(""), "gpu-critical");
  EXPECT_FALSE(pod["affinity"]);
  EXPECT_FALSE(pod["tolerations"]);
  EXPECT_EQ(metadata["annotations"]["team"].as<std::string>(""), "ml");
  EXPECT_EQ(metadata["annotations"]["prometheus.io/port"].as<std::string>(""), "9394");
  EXPECT_EQ(metadata["labels"]["tier"].as<std::string>(""), "gpu");
  EXPECT_EQ(metadata["labels"]["app.kubernetes.io/name"].as<std::string>(""), "tessera-node");
  EXPECT_EQ(daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"].as<int>(0), 3);
  EXPECT_EQ(pod["securityContext"]["fsGroup"].as<int>(0), 7);
  EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(-1), 0);
  YAML::Node agent = pod["containers"][0];
  EXPECT_FALSE(agent["securityContext"]["readOnlyRootFilesystem"].as<bool>(true));
  EXPECT_EQ(Volume(pod, "extra")["emptyDir"]["medium"].as<std::string>(""), "Memory");
  EXPECT_EQ(MountPath(agent, "extra"), "/extra");
}

// HAMi's deviceMemoryScaling (issue 33): the agent's node.device-memory-scaling, left to its
// default (no flag) at 1; the schema refuses what the agent would. `--set` gives a fraction as a
// string ("1.5"), which the schema takes as the agent does.
TEST_F(DeployHelmValuesTest, DeviceMemoryScalingReachesTheAgent) {
  const std::string plain = Config(Pod(Chart({}), "DaemonSet", "tessera-node")["containers"][0]);
  ExpectSetting(plain, "node.device-memory-scaling", "1");
  for (const char* scaling : {"2", "1.5"}) {
    Rendered chart = Chart({"--set", std::string("node.deviceMemoryScaling=") + scaling});
    ExpectSetting(Config(Pod(chart, "DaemonSet", "tessera-node")["containers"][0]),
                  "node.device-memory-scaling", scaling);
  }
  for (const char* bad : {"11", "0.5"}) {
    Rendered chart =
        RenderChart("tessera-system", {"--set", std::string("node.deviceMemoryScaling=") + bad},
                    kDeployKubeVersion);
    EXPECT_NE(chart.error.find("schema"), std::string::npos) << bad << ": " << chart.error;
  }
}

// The web page (issue 35, docs/ui.md): off by default (no flag, the render of deploy/), and
// scheduler.ui.enabled=true reaches the scheduler as its key.
TEST_F(DeployHelmValuesTest, TheWebPageReachesTheSchedulerOnlyWhenTurnedOn) {
  const YAML::Node plain = Pod(Chart({}), "Deployment", "tessera-scheduler")["containers"][0];
  for (const std::string& a : Strings(plain["args"])) {
    EXPECT_EQ(a.find("scheduler.ui"), std::string::npos) << a;
  }
  ExpectSetting(Config(plain), "scheduler.ui.enabled", "false");
  ExpectSetting(Config(Pod(Chart({"--set", "scheduler.ui.enabled=false"}), "Deployment",
                           "tessera-scheduler")["containers"][0]),
                "scheduler.ui.enabled", "false");
  const YAML::Node on = Pod(Chart({"--set", "scheduler.ui.enabled=true"}), "Deployment",
                            "tessera-scheduler")["containers"][0];
  std::vector<std::string> args = Strings(on["args"]);
  EXPECT_EQ(std::count(args.begin(), args.end(), "--scheduler.ui.enabled=true"), 1);
  ExpectSetting(Config(on), "scheduler.ui.enabled", "true");
}

TEST_F(DeployHelmValuesTest, TheSchedulersPodsGetTheirValues) {
  for (const char* part : {"scheduler", "kubeScheduler"}) {
    const std::string p = part;
    Rendered chart = Chart({"--set", p + ".podAnnotations.team=ml", "--set",
                            p + ".podLabels.tier=control", "--set", p + ".priorityClassName=high",
                            "--set", p + ".podSecurityContext.runAsUser=1000", "--set",
                            p + ".securityContext.privileged=false"});
    const std::string name = p == "scheduler" ? "tessera-scheduler" : "tessera-kube-scheduler";
    YAML::Node template_ = Get(chart, "Deployment", name)["spec"]["template"];
    EXPECT_EQ(template_["metadata"]["annotations"]["team"].as<std::string>(""), "ml") << name;
    EXPECT_EQ(template_["metadata"]["labels"]["tier"].as<std::string>(""), "control") << name;
    EXPECT_EQ(template_["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>(""), name);
    EXPECT_EQ(template_["spec"]["priorityClassName"].as<std::string>(""), "high") << name;
    EXPECT_EQ(template_["spec"]["securityContext"]["runAsUser"].as<int>(0), 1000) << name;
    EXPECT_TRUE(template_["spec"]["securityContext"]["runAsNonRoot"].as<bool>(false)) << name;
    YAML::Node c = template_["spec"]["containers"][0]["securityContext"];
    EXPECT_FALSE(c["privileged"].as<bool>(true)) << name;
    EXPECT_EQ(c["capabilities"]["drop"][0].as<std::string>(""), "ALL") << name;
  }
}

TEST_F(DeployHelmValuesTest, NamespaceOverrideMovesEveryNamespacedObject) {
  Rendered chart =
      Chart({"--set", "namespaceOverride=gpu", "--set", "namespace.create=true", "--set",
             "metrics.serviceMonitor.enabled=true", "--set", "webhook.certManager.enabled=true"});
  YAML::Node ns = Get(chart, "Namespace", "gpu");
  EXPECT_EQ(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].as<std::string>(""),
            "privileged");
  for (const YAML::Node& o : chart.objects) {
    if (Key(o) == "RoleBinding/kube-system/tessera-kube-scheduler-authentication-reader") continue;
    const std::string kind = o["kind"].as<std::string>();
    const std::string on = o["metadata"]["namespace"].as<std::string>("");
    if (kind == "Namespace" || kind.rfind("Cluster", 0) == 0 ||
        kind.find("WebhookConfiguration") != std::string::npos) {
      EXPECT_EQ(on, "") << Key(o);
    } else {
      EXPECT_EQ(on, "gpu") << Key(o);
    }
    for (const YAML::Node& s : o["subjects"]) {
      EXPECT_EQ(s["namespace"].as<std::string>(), "gpu") << Key(o);
    }
  }
  std::string config = Config(Pod(chart, "Job", "tessera-certgen-1")["containers"][0]);
  ExpectSetting(config, "certgen.namespace", "gpu");
}

// cert-manager makes the CA and the certificates into the Secrets the parts mount (with its
// keys), its cainjector fills the webhooks' caBundle, and certgen makes only the annotation key.
TEST_F(DeployHelmValuesTest, CertManagerMakesTheCertificates) {
  Rendered chart = Chart({"--set", "webhook.certManager.enabled=true", "--set",
                          "metrics.serviceMonitor.enabled=true", "--set",
                          "certgen.webhookClientName=apiserver"});
  EXPECT_FALSE(Find(chart.objects, "Secret", "tessera-scheduler-tls"));
  EXPECT_FALSE(Find(chart.objects, "Secret", "tessera-kube-scheduler-client-tls"));
  YAML::Node serving = Get(chart, "Certificate", "tessera-scheduler-tls")["spec"];
  EXPECT_EQ(serving["secretName"].as<std::string>(""), "tessera-scheduler-tls");
  std::vector<std::string> names = Strings(serving["dnsNames"]);
  for (const char* host :
       {"tessera-scheduler.tessera-system.svc", "tessera-scheduler-extender.tessera-system.svc"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), host), names.end()) << host;
  }
  EXPECT_EQ(Strings(serving["ipAddresses"]), std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(serving["issuerRef"]["name"].as<std::string>(""), "tessera-ca");
  YAML::Node client = Get(chart, "Certificate", "tessera-kube-scheduler-client-tls")["spec"];
  EXPECT_EQ(client["commonName"].as<std::string>(""), "tessera-kube-scheduler");
  EXPECT_EQ(
      Get(chart, "Certificate", "tessera-webhook-client-tls")["spec"]["commonName"].as<std::string>(
          ""),
      "apiserver");
  EXPECT_TRUE(Get(chart, "Certificate", "tessera-ca")["spec"]["isCA"].as<bool>(false));
  EXPECT_EQ(Get(chart, "Issuer", "tessera-ca")["spec"]["ca"]["secretName"].as<std::string>(""),
            "tessera-ca");
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    EXPECT_EQ(
        Get(chart, kind, "tessera")["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            .as<std::string>(""),
        "tessera-system/tessera-scheduler-tls");
  }
  for (const auto& [deployment, volume] :
       {std::pair<std::string, std::string>{"tessera-scheduler", "tls"},
        {"tessera-kube-scheduler", "extender-tls"}}) {
    std::vector<std::string> keys;
    for (const YAML::Node& i :
         Volume(Pod(chart, "Deployment", deployment), volume)["secret"]["items"]) {
      keys.push_back(i["key"].as<std::string>() + "=" + i["path"].as<std::string>());
    }
    EXPECT_EQ(keys,
              (std::vector<std::string>{"ca.crt=ca.crt", "tls.crt=tls.crt", "tls.key=tls.key"}))
        << deployment;
  }
  EXPECT_EQ(Get(chart, "ServiceMonitor",
                "tessera-scheduler")["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["key"]
                .as<std::string>(""),
            "ca.crt");
  std::string config = Config(Pod(chart, "Job", "tessera-certgen-1")["containers"][0]);
  ExpectSetting(config, "certgen.certificates", "false");
  ExpectSetting(config, "certgen.annotation-key-secret", "tessera-annotation-key");

  // With a key Secret of the operator's too, certgen has nothing to do.
  Rendered none = Chart(
      {"--set", "webhook.certManager.enabled=true", "--set", "annotationKey.existingSecret=mine"});
  EXPECT_FALSE(Find(none.objects, "Job", "tessera-certgen-1"));
}

// kube-scheduler as new as the API server (the skew policy), without the distribution's suffix;
// its configuration's kubescheduler.config.k8s.io/v1 is served by every version the chart takes.
TEST_F(DeployHelmValuesTest, KubeSchedulerFollowsTheClusterVersion) {
  for (const auto& [cluster, tag] : {std::pair<std::string, std::string>{"1.33.5", "v1.33.5"},
                                     {"1.36.3", "v1.36.3"},
                                     {"v1.31.4-eks-1552ad0", "v1.31.4"}}) {
    Rendered chart = Chart({}, cluster);
    EXPECT_EQ(Pod(chart, "Deployment", "tessera-kube-scheduler")["containers"][0]["image"]
                  .as<std::string>(""),
              "registry.k8s.io/kube-scheduler:" + tag)
        << cluster;
    YAML::Node config =
        YAML::Load(Get(chart, "ConfigMap",
                       "tessera-kube-scheduler-config")["data"]["kube-scheduler-config.yaml"]
                       .as<std::string>());
    EXPECT_EQ(config["apiVersion"].as<std::string>(""), "kubescheduler.config.k8s.io/v1");
  }
  Rendered pinned = Chart({"--set", "kubeScheduler.image.tag=v1.34.0"}, "1.36.3");
  EXPECT_EQ(
      Pod(pinned, "Deployment", "tessera-kube-scheduler")["containers"][0]["image"].as<std::string>(
          ""),
      "registry.k8s.io/kube-scheduler:v1.34.0");
  EXPECT_NE(RenderChart("tessera-system", {}, "1.28.9").error, "") << "the chart needs 1.29";
}

// values.schema.json: a mistyped or misplaced value is refused, not silently ignored.
TEST_F(DeployHelmValuesTest, TheSchemaRefusesWhatNoTemplateReads) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--set", "nodeSelector.gpu=yes"},
        {"--set", "node.deviceSplitCount=many"},
        {"--set", "node.kubeletDir=/var/lib/k0s/kubelet"},
        {"--set", "scheduler.replicas=-1"},
        {"--set", "scheduler.ui.enabled=yes"},
        {"--set", "scheduler.ui.port=8080"},
        {"--set", "webhook.failurePolicy=Fial"},
        {"--set", "annotationKey.create=false"},
        {"--set", "image.tag=1"}}) {
    Rendered chart = RenderChart("tessera-system", args, kDeployKubeVersion);
    EXPECT_NE(chart.error.find("schema"), std::string::npos) << args[1] << ": " << chart.error;
  }
  // What other charts and the lead's rules add.
  Chart({"--set", "metrics.prometheusRule.enabled=false", "--set", "global.imageRegistry=x"});
}

}  // namespace
}  // namespace tessera::deploy_test
