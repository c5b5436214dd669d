// deploy/ renders with `kubectl kustomize` and fits the binaries: the args are accepted by
// `tessera scheduler|node --print-config`, ports and paths agree between the objects, RBAC gives
// each part, under its own ServiceAccount, exactly what its code calls and no wildcards, the node
// agent gets its host paths.
// Skipped (with a message) only where kubectl is not installed or too old (1.20 and older).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "rendered_manifests.h"

namespace tessera::deploy_test {
namespace {

const Rendered& Manifests() {
  static const Rendered r = Render(std::string(TESSERA_SOURCE_DIR) + "/deploy");
  return r;
}

class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Manifests().skip.empty()) GTEST_SKIP() << Manifests().skip;
    ASSERT_EQ(Manifests().error, "");
  }
  const std::vector<YAML::Node>& objects() const { return Manifests().objects; }

  YAML::Node Get(const std::string& kind, const std::string& name) const {
    std::optional<YAML::Node> o = Find(objects(), kind, name);
    EXPECT_TRUE(o.has_value()) << kind << " " << name << " is not rendered";
    return o ? *o : YAML::Node();
  }

  static YAML::Node Container(const YAML::Node& pod_spec, const std::string& name) {
    for (const char* list : {"containers", "initContainers"}) {
      for (const YAML::Node& c : pod_spec[list]) {
        if (c["name"].as<std::string>() == name) return c;
      }
    }
    ADD_FAILURE() << "no container " << name;
    return YAML::Node();
  }

  static std::vector<std::string> Strings(const YAML::Node& list) {
    std::vector<std::string> out;
    for (const YAML::Node& n : list) out.push_back(n.as<std::string>());
    return out;
  }

  static std::string FlagValue(const std::vector<std::string>& args, const std::string& flag) {
    for (const std::string& a : args) {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
    }
    return "";
  }

  // Runs `tessera <args> --print-config` with a clean environment plus `env`.
  static void ExpectTesseraAccepts(const std::vector<std::string>& args, const std::string& env) {
    std::string output;
    EXPECT_EQ(PrintTesseraConfig(args, env, output), 0) << output;
  }
};

// The pod template's spec of a workload, or an undefined node for other objects.
YAML::Node PodSpec(const YAML::Node& object) {
  YAML::Node spec = object["spec"];
  if (!spec || !spec.IsMap() || !spec["template"]) return YAML::Node(YAML::NodeType::Undefined);
  return spec["template"]["spec"];
}

const std::set<std::string> kClusterScoped = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                                              "MutatingWebhookConfiguration",
                                              "ValidatingWebhookConfiguration"};

TEST_F(DeployTest, EveryObjectIsComplete) {
  std::set<std::string> namespaces = {"kube-system"};
  for (const YAML::Node& o : objects()) {
    if (o["kind"].as<std::string>("") == "Namespace") {
      namespaces.insert(o["metadata"]["name"].as<std::string>());
    }
  }
  EXPECT_TRUE(namespaces.count("tessera-system"));
  EXPECT_GE(objects().size(), 20u);
  for (const YAML::Node& o : objects()) {
    std::string kind = o["kind"].as<std::string>("");
    std::string name = o["metadata"]["name"].as<std::string>("");
    EXPECT_FALSE(o["apiVersion"].as<std::string>("").empty()) << kind << " " << name;
    EXPECT_FALSE(kind.empty()) << name;
    EXPECT_FALSE(name.empty()) << kind;
    std::string ns = o["metadata"]["namespace"].as<std::string>("");
    if (kClusterScoped.count(kind)) {
      EXPECT_EQ(ns, "") << kind << " " << name << " is cluster-scoped";
    } else {
      EXPECT_TRUE(namespaces.count(ns)) << kind << " " << name << " in namespace '" << ns << "'";
    }
  }
}

TEST_F(DeployTest, ImagesAreSetByKustomize) {
  for (const YAML::Node& o : objects()) {
    YAML::Node spec = PodSpec(o);
    if (!spec) continue;
    for (const char* list : {"containers", "initContainers"}) {
      for (const YAML::Node& c : spec[list]) {
        std::string image = c["image"].as<std::string>("");
        EXPECT_NE(image.find(':'), std::string::npos)
            << o["metadata"]["name"] << "/" << c["name"] << ": image '" << image << "' has no tag";
      }
    }
  }
}

TEST_F(DeployTest, SchedulerArgsAreAcceptedAndAgreeWithServiceAndKubeScheduler) {
  YAML::Node pod = Get("Deployment", "tessera-scheduler")["spec"]["template"]["spec"];
  YAML::Node tessera = Container(pod, "tessera");
  std::vector<std::string> args = Strings(tessera["args"]);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "scheduler");
  ExpectTesseraAccepts(args, "");

  std::string listen = FlagValue(args, "--listen");
  std::string port = listen.substr(listen.rfind(':') + 1);
  EXPECT_EQ(port, tessera["ports"][0]["containerPort"].as<std::string>());
  YAML::Node service = Get("Service", "tessera-scheduler");
  EXPECT_EQ(service["spec"]["ports"][0]["port"].as<std::string>(), port);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"].as<std::string>(),
            tessera["ports"][0]["name"].as<std::string>());
  for (const auto& kv : service["spec"]["selector"]) {
    EXPECT_EQ(Get("Deployment", "tessera-scheduler")["spec"]["template"]["metadata"]["labels"]
                                                    [kv.first.as<std::string>()]
                                                        .as<std::string>(""),
              kv.second.as<std::string>());
  }

  // kube-scheduler, in its own Deployment: its --config file comes from the ConfigMap mounted
  // there, the extender URL is the Service's HTTPS port under a name the certificate holds, its
  // CA file is the Secret's "ca" key, and it is given no other key of the Secret.
  YAML::Node ks_pod = Get("Deployment", "tessera-kube-scheduler")["spec"]["template"]["spec"];
  YAML::Node ks = Container(ks_pod, "kube-scheduler");
  EXPECT_NE(ks_pod["serviceAccountName"].as<std::string>(""),
            pod["serviceAccountName"].as<std::string>(""))
      << "kube-scheduler and Tessera must not share a ServiceAccount (least privilege)";
  std::string config_path = FlagValue(Strings(ks["command"]), "--config");
  std::string dir = config_path.substr(0, config_path.rfind('/'));
  std::string file = config_path.substr(config_path.rfind('/') + 1);
  std::string config_volume;
  for (const YAML::Node& m : ks["volumeMounts"]) {
    if (m["mountPath"].as<std::string>() == dir) config_volume = m["name"].as<std::string>();
  }
  ASSERT_FALSE(config_volume.empty()) << "nothing mounted at " << dir;
  std::string config_map;
  for (const YAML::Node& v : ks_pod["volumes"]) {
    if (v["name"].as<std::string>() == config_volume) {
      config_map = v["configMap"]["name"].as<std::string>("");
    }
  }
  YAML::Node cm = Get("ConfigMap", config_map);
  ASSERT_TRUE(cm["data"][file]) << config_map << " has no key " << file;
  YAML::Node kcfg = YAML::Load(cm["data"][file].as<std::string>());
  EXPECT_EQ(kcfg["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(kcfg["profiles"][0]["schedulerName"].as<std::string>(), "tessera");
  YAML::Node extender = kcfg["extenders"][0];
  // kube-scheduler calls the replica that leads (the extender's Service selects the leader's
  // label); the webhooks call any of them.
  YAML::Node extender_service = Get("Service", "tessera-scheduler-extender");
  EXPECT_EQ(extender_service["spec"]["selector"]["tessera.io/scheduler-leader"].as<std::string>(""),
            "true");
  EXPECT_EQ(extender_service["spec"]["ports"][0]["port"].as<std::string>(), port);
  EXPECT_EQ(FlagValue(args, "--scheduler.leader-election.enabled"), "true");
  EXPECT_GE(Get("Deployment", "tessera-scheduler")["spec"]["replicas"].as<int>(), 2);
  std::string service_host = extender_service["metadata"]["name"].as<std::string>() + "." +
                             extender_service["metadata"]["namespace"].as<std::string>() + ".svc";
  EXPECT_EQ(extender["urlPrefix"].as<std::string>(), "https://" + service_host + ":" + port);
  EXPECT_TRUE(extender["enableHTTPS"].as<bool>(false));
  for (const char* verb : {"filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"}) {
    EXPECT_TRUE(extender[verb]) << verb;
  }
  EXPECT_EQ(kcfg["profiles"][0]["percentageOfNodesToScore"].as<int>(0), 100)
      << "every feasible node goes to the extender (docs/scheduler.md)";
  EXPECT_TRUE(extender["nodeCacheCapable"].as<bool>(false));
  EXPECT_FALSE(extender["ignorable"].as<bool>(true));
  std::set<std::string> managed;
  for (const YAML::Node& r : extender["managedResources"]) {
    EXPECT_TRUE(r["ignoredByScheduler"].as<bool>(false)) << r["name"];
    managed.insert(r["name"].as<std::string>());
  }
  EXPECT_EQ(managed, (std::set<std::string>{"nvidia.com/gpu", "nvidia.com/gpumem",
                                            "nvidia.com/gpumem-percentage", "nvidia.com/gpucores",
                                            "tencent.com/vcuda-core", "tencent.com/vcuda-memory",
                                            "aliyun.com/gpu-mem"}));
  YAML::Node job = Get("Job", "tessera-certgen")["spec"]["template"]["spec"];
  std::vector<std::string> certgen = Strings(Container(job, "certgen")["args"]);
  std::string hosts = "," + FlagValue(certgen, "--certgen.hosts") + ",";
  EXPECT_NE(hosts.find("," + service_host + ","), std::string::npos)
      << "the certificate does not name " << service_host;
  // Its CA, client certificate and key are the keys of its own Secret, the one certgen makes
  // for the client Tessera's extender-clients names; not the scheduler's Secret.
  std::map<std::string, std::string> ks_files;  // path -> Secret key
  for (const YAML::Node& m : ks["volumeMounts"]) {
    std::string mp = m["mountPath"].as<std::string>();
    for (const YAML::Node& v : ks_pod["volumes"]) {
      if (v["name"].as<std::string>() != m["name"].as<std::string>() || !v["secret"]) continue;
      EXPECT_EQ(v["secret"]["secretName"].as<std::string>(), "tessera-kube-scheduler-client-tls");
      for (const YAML::Node& item : v["secret"]["items"]) {
        ks_files[mp + "/" + item["path"].as<std::string>()] = item["key"].as<std::string>();
      }
    }
  }
  YAML::Node tls_config = extender["tlsConfig"];
  EXPECT_EQ(ks_files[tls_config["caFile"].as<std::string>("")], "ca");
  EXPECT_EQ(ks_files[tls_config["certFile"].as<std::string>("")], "cert");
  EXPECT_EQ(ks_files[tls_config["keyFile"].as<std::string>("")], "key");
  EXPECT_EQ(FlagValue(certgen, "--certgen.extender-client-name"),
            FlagValue(args, "--scheduler.tls.extender-clients"));
  EXPECT_NE(FlagValue(args, "--scheduler.tls.client-ca"), "")
      << "the extender must authenticate kube-scheduler";
  // Its leader-election lease is one the Role allows.
  YAML::Node lease_role = Get("Role", "tessera-kube-scheduler-lease");
  EXPECT_EQ(lease_role["metadata"]["namespace"].as<std::string>(),
            kcfg["leaderElection"]["resourceNamespace"].as<std::string>());
  EXPECT_EQ(lease_role["rules"][1]["resourceNames"][0].as<std::string>(),
            kcfg["leaderElection"]["resourceName"].as<std::string>());

  // The TLS files given to Tessera are the Secret's cert and key.
  std::map<std::string, std::string> secret_files;  // path -> key
  for (const YAML::Node& m : tessera["volumeMounts"]) {
    for (const YAML::Node& v : pod["volumes"]) {
      if (v["name"].as<std::string>() != m["name"].as<std::string>() || !v["secret"]) continue;
      for (const YAML::Node& item : v["secret"]["items"]) {
        secret_files[m["mountPath"].as<std::string>() + "/" + item["path"].as<std::string>()] =
            item["key"].as<std::string>();
      }
    }
  }
  EXPECT_EQ(secret_files[FlagValue(args, "--scheduler.tls.cert")], "cert");
  EXPECT_EQ(secret_files[FlagValue(args, "--scheduler.tls.key")], "key");
  EXPECT_EQ(secret_files[FlagValue(args, "--scheduler.tls.client-ca")], "ca");
}

TEST_F(DeployTest, NodeAgentArgsAreAcceptedAndItsHostPathsAreMounted) {
  YAML::Node ds = Get("DaemonSet", "tessera-node");
  YAML::Node pod = ds["spec"]["template"]["spec"];
  YAML::Node agent = Container(pod, "tessera-node");
  std::vector<std::string> args = Strings(agent["args"]);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "node");
  ExpectTesseraAccepts(args, "NODE_NAME=node-1");

  std::string metrics = FlagValue(args, "--node.metrics-listen");
  EXPECT_EQ(metrics.substr(metrics.rfind(':') + 1),
            agent["ports"][0]["containerPort"].as<std::string>(""));
  EXPECT_TRUE(pod["hostPID"].as<bool>(false));
  EXPECT_EQ(pod["nodeSelector"]["tessera.io/enabled"].as<std::string>(""), "true");

  std::map<std::string, std::string> host_of;  // volume -> host path
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["hostPath"])
      host_of[v["name"].as<std::string>()] = v["hostPath"]["path"].as<std::string>();
  }
  std::map<std::string, bool> mounted;  // host path mounted at the same path -> read-only
  for (const YAML::Node& m : agent["volumeMounts"]) {
    if (m["name"].as<std::string>() == "annotation-key") continue;  // a Secret, checked below
    auto it = host_of.find(m["name"].as<std::string>());
    ASSERT_NE(it, host_of.end()) << m["name"] << " is not a hostPath volume";
    EXPECT_EQ(it->second, m["mountPath"].as<std::string>())
        << "host paths must be mounted at the same path (kubelet mounts them by host path)";
    mounted[it->second] = m["readOnly"].as<bool>(false);
  }
  std::string kubelet_dir = FlagValue(args, "--kubelet-dir");
  std::string library = FlagValue(args, "--node.library-path");
  for (const std::string& path :
       {kubelet_dir + "/device-plugins", FlagValue(args, "--cdi-dir"),
        FlagValue(args, "--state-dir"), library.substr(0, library.rfind('/')),
        std::string("/sys/fs/cgroup")}) {
    EXPECT_TRUE(mounted.count(path)) << path << " is not mounted";
  }
  EXPECT_TRUE(mounted["/sys/fs/cgroup"]) << "/sys/fs/cgroup must be read-only";
  EXPECT_FALSE(mounted[FlagValue(args, "--state-dir")]);

  // The init container installs the library where --node.library-path points.
  YAML::Node install = Container(pod, "install-library");
  std::string script = Strings(install["command"]).back();
  EXPECT_NE(script.find("/host" + library), std::string::npos) << script;
}

// The scheduler and every node agent read their annotation key file from the one Secret, which
// must exist: a part without the key would sign nothing, and the other would refuse all it wrote.
TEST_F(DeployTest, SchedulerAndNodeAgentShareTheAnnotationKeySecret) {
  for (const auto& [kind, name, container, flag] :
       {std::tuple{"Deployment", "tessera-scheduler", "tessera", "--scheduler.annotation-key-file"},
        std::tuple{"DaemonSet", "tessera-node", "tessera-node", "--node.annotation-key-file"}}) {
    YAML::Node pod = PodSpec(Get(kind, name));
    YAML::Node c = Container(pod, container);
    std::string file = FlagValue(Strings(c["args"]), flag);
    ASSERT_FALSE(file.empty()) << name << " has no " << flag;
    std::string found;
    for (const YAML::Node& m : c["volumeMounts"]) {
      for (const YAML::Node& v : pod["volumes"]) {
        if (v["name"].as<std::string>() != m["name"].as<std::string>() || !v["secret"]) continue;
        for (const YAML::Node& item : v["secret"]["items"]) {
          if (m["mountPath"].as<std::string>() + "/" + item["path"].as<std::string>() != file) {
            continue;
          }
          found = v["secret"]["secretName"].as<std::string>() + "/" + item["key"].as<std::string>();
          EXPECT_TRUE(m["readOnly"].as<bool>(false)) << name;
          EXPECT_FALSE(v["secret"]["optional"].as<bool>(false)) << name;
        }
      }
    }
    EXPECT_EQ(found, "tessera-annotation-key/key") << name << ": " << file;
  }
}

TEST_F(DeployTest, VolumesOfEveryPodExist) {
  // Created by tessera-certgen.
  std::set<std::string> secrets = {"tessera-scheduler-tls", "tessera-kube-scheduler-client-tls"};
  secrets.insert("tessera-annotation-key");  // created at install (docs/install.md)
  for (const YAML::Node& o : objects()) {
    YAML::Node spec = PodSpec(o);
    if (!spec) continue;
    std::set<std::string> volumes;
    for (const YAML::Node& v : spec["volumes"]) {
      volumes.insert(v["name"].as<std::string>());
      if (v["configMap"]) {
        EXPECT_TRUE(Find(objects(), "ConfigMap", v["configMap"]["name"].as<std::string>()))
            << v["configMap"]["name"];
      }
      if (v["secret"]) {
        EXPECT_TRUE(secrets.count(v["secret"]["secretName"].as<std::string>()));
      }
    }
    for (const char* list : {"containers", "initContainers"}) {
      for (const YAML::Node& c : spec[list]) {
        for (const YAML::Node& m : c["volumeMounts"]) {
          EXPECT_TRUE(volumes.count(m["name"].as<std::string>()))
              << o["metadata"]["name"] << "/" << c["name"] << " mounts unknown " << m["name"];
        }
      }
    }
    EXPECT_TRUE(Find(objects(), "ServiceAccount", spec["serviceAccountName"].as<std::string>("")))
        << o["metadata"]["name"];
  }
}

TEST_F(DeployTest, WebhooksPointAtTheSchedulerAndGetTheirCertificate) {
  YAML::Node service = Get("Service", "tessera-scheduler");
  YAML::Node job = Get("Job", "tessera-certgen")["spec"]["template"]["spec"];
  std::vector<std::string> certgen = Strings(Container(job, "certgen")["args"]);
  ASSERT_FALSE(certgen.empty());
  EXPECT_EQ(certgen[0], "certgen");
  ExpectTesseraAccepts(certgen, "");
  std::string hosts = FlagValue(certgen, "--certgen.hosts");
  for (const char* host : {"tessera-scheduler.tessera-system.svc",
                           "tessera-scheduler-extender.tessera-system.svc", "localhost"}) {
    EXPECT_NE(("," + hosts + ",").find(std::string(",") + host + ","), std::string::npos) << host;
  }
  // certgen's defaults: the Secret the scheduler mounts, the webhook configurations "tessera".
  std::string webhook_name = FlagValue(certgen, "--certgen.webhook-configuration");
  if (webhook_name.empty()) webhook_name = "tessera";
  std::string server_secret = FlagValue(certgen, "--certgen.server-secret");
  if (server_secret.empty()) server_secret = "tessera-scheduler-tls";
  YAML::Node scheduler_pod = PodSpec(Get("Deployment", "tessera-scheduler"));
  bool mounted = false;
  for (const YAML::Node& v : scheduler_pod["volumes"]) {
    mounted = mounted || v["secret"]["secretName"].as<std::string>("") == server_secret;
  }
  EXPECT_TRUE(mounted) << "the scheduler does not mount " << server_secret;
  for (const auto& [kind, path] : {std::pair{"MutatingWebhookConfiguration", "/mutate"},
                                   std::pair{"ValidatingWebhookConfiguration", "/validate"}}) {
    YAML::Node config = Get(kind, webhook_name);
    ASSERT_TRUE(config["webhooks"]) << kind;
    for (const YAML::Node& w : config["webhooks"]) {
      YAML::Node svc = w["clientConfig"]["service"];
      EXPECT_EQ(svc["name"].as<std::string>(), service["metadata"]["name"].as<std::string>());
      EXPECT_EQ(svc["namespace"].as<std::string>(),
                service["metadata"]["namespace"].as<std::string>());
      EXPECT_EQ(svc["port"].as<std::string>(),
                service["spec"]["ports"][0]["port"].as<std::string>());
      EXPECT_EQ(svc["path"].as<std::string>(), path);
      EXPECT_EQ(w["admissionReviewVersions"][0].as<std::string>(), "v1");
      std::string expression = w["matchConditions"][0]["expression"].as<std::string>();
      if (w["name"].as<std::string>() == "guard.tessera.io") {
        // Tessera's annotations on CREATE and UPDATE, with no opt-out label to get around it.
        EXPECT_FALSE(w["objectSelector"]);
        EXPECT_EQ(Strings(w["rules"][0]["operations"]),
                  (std::vector<std::string>{"CREATE", "UPDATE"}));
        for (const char* a :
             {"tessera.io/allocation", "tessera.io/allocated", "tessera.io/allocation-failed",
              "tessera.io/allocation-signature", "tessera.io/allocated-signature",
              "tessera.io/allocation-failed-signature", "tessera.io/resize-status"}) {
          EXPECT_NE(expression.find(std::string("'") + a + "'"), std::string::npos) << a;
        }
        continue;
      }
      if (std::string name = w["name"].as<std::string>(); name.rfind("claim", 0) == 0) {
        // DRA claims and templates that use the driver, when they are created.
        EXPECT_EQ(Strings(w["rules"][0]["apiGroups"]),
                  (std::vector<std::string>{"resource.k8s.io"}));
        EXPECT_EQ(Strings(w["rules"][0]["resources"]),
                  (std::vector<std::string>{
                      name == "claims.tessera.io" ? "resourceclaims" : "resourceclaimtemplates"}));
        EXPECT_EQ(Strings(w["rules"][0]["operations"]), (std::vector<std::string>{"CREATE"}));
        EXPECT_NE(expression.find("'gpu.tessera.io'"), std::string::npos) << name;
        EXPECT_NE(expression.find(name == "claims.tessera.io" ? "has(object.spec.devices)"
                                                              : "has(object.spec.spec.devices)"),
                  std::string::npos)
            << name;
        continue;
      }
      EXPECT_EQ(w["objectSelector"]["matchExpressions"][0]["key"].as<std::string>(),
                "tessera.io/webhook");
      for (const char* r : {"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores",
                            "nvidia.com/gpumem-percentage", "tencent.com/vcuda-core",
                            "tencent.com/vcuda-memory", "aliyun.com/gpu-mem"}) {
        EXPECT_NE(expression.find(std::string("'") + r + "'"), std::string::npos) << r;
      }
    }
  }
}

// (apiGroup, resource, verb, resource name or "*") a ServiceAccount is allowed, from the rendered
// Roles and ClusterRoles bound to it.
using Right = std::tuple<std::string, std::string, std::string, std::string>;
using Rights = std::set<Right>;

// What each ServiceAccount may do in `objects`: the rules of the Roles and ClusterRoles bound to
// it, and the names of roles bound to it that `objects` does not hold (built-in ones).
struct ServiceAccountRights {
  std::map<std::string, Rights> rights;
  std::map<std::string, std::set<std::string>> external_roles;
};

ServiceAccountRights RightsOf(const std::vector<YAML::Node>& objects) {
  ServiceAccountRights out;
  for (const YAML::Node& b : objects) {
    std::string kind = b["kind"].as<std::string>("");
    if (kind != "RoleBinding" && kind != "ClusterRoleBinding") continue;
    std::string role_kind = b["roleRef"]["kind"].as<std::string>();
    std::string role_name = b["roleRef"]["name"].as<std::string>();
    std::optional<YAML::Node> role = Find(objects, role_kind, role_name);
    for (const YAML::Node& s : b["subjects"]) {
      std::string sa = s["name"].as<std::string>();
      if (!role) {
        out.external_roles[sa].insert(role_name);
        continue;
      }
      for (const YAML::Node& rule : (*role)["rules"]) {
        std::vector<std::string> names;
        for (const YAML::Node& n : rule["resourceNames"]) names.push_back(n.as<std::string>());
        if (names.empty()) names = {"*"};
        for (const YAML::Node& g : rule["apiGroups"]) {
          for (const YAML::Node& r : rule["resources"]) {
            for (const YAML::Node& v : rule["verbs"]) {
              for (const std::string& n : names) {
                out.rights[sa].insert(
                    {g.as<std::string>(), r.as<std::string>(), v.as<std::string>(), n});
              }
            }
          }
        }
      }
    }
  }
  for (const auto& [sa, set] : out.rights) {
    for (const auto& [g, r, v, n] : set) {
      EXPECT_TRUE(g != "*" && r != "*" && v != "*") << sa << " has a wildcard rule";
    }
  }
  return out;
}

const Rights kNodeAgentRights = {{"", "events", "create", "*"}, {"", "pods", "list", "*"},
                                 {"", "pods", "watch", "*"},    {"", "pods", "patch", "*"},
                                 {"", "nodes", "get", "*"},     {"", "nodes", "patch", "*"}};

// Least privilege: each part has exactly the rights its code uses (the calls are listed in
// deploy/*/rbac.yaml), narrowed to one object where the code touches one; the built-in roles go
// only to the second kube-scheduler, which has its own ServiceAccount.
TEST_F(DeployTest, RbacGivesEachPartExactlyWhatItCalls) {
  auto [rights, external_roles] = RightsOf(objects());
  EXPECT_EQ(rights["tessera-scheduler"],
            (Rights{{"", "nodes", "list", "*"},
                    {"", "nodes", "watch", "*"},
                    {"", "pods", "list", "*"},
                    {"", "pods", "watch", "*"},
                    {"", "pods/binding", "create", "*"},
                    // preemption
                    {"", "pods", "delete", "*"},
                    {"", "pods/status", "patch", "*"},
                    {"", "events", "create", "*"},
                    // the webhook's DRA mode
                    {"resource.k8s.io", "resourceclaimtemplates", "create", "*"},
                    // namespace GPU quotas (docs/quotas.md)
                    {"", "resourcequotas", "list", "*"},
                    {"", "resourcequotas", "watch", "*"},
                    {"resource.k8s.io", "resourceclaims", "list", "*"},
                    {"resource.k8s.io", "resourceclaims", "watch", "*"},
                    // who may read /inspect and /fit (scheduler.read-access=token)
                    {"authentication.k8s.io", "tokenreviews", "create", "*"},
                    {"authorization.k8s.io", "subjectaccessreviews", "create", "*"},
                    // leader election: the Lease, and the leader's label on its own pod
                    {"coordination.k8s.io", "leases", "create", "*"},
                    {"coordination.k8s.io", "leases", "get", "tessera-scheduler"},
                    {"coordination.k8s.io", "leases", "update", "tessera-scheduler"},
                    {"", "pods", "patch", "*"}}));
  EXPECT_TRUE(external_roles["tessera-scheduler"].empty());
  EXPECT_EQ(rights["tessera-node"], kNodeAgentRights);
  EXPECT_TRUE(external_roles["tessera-node"].empty());
  EXPECT_EQ(rights["tessera-kube-scheduler"],
            (Rights{{"coordination.k8s.io", "leases", "create", "*"},
                    {"coordination.k8s.io", "leases", "get", "tessera-kube-scheduler"},
                    {"coordination.k8s.io", "leases", "update", "tessera-kube-scheduler"}}));
  EXPECT_EQ(external_roles["tessera-kube-scheduler"],
            (std::set<std::string>{"system:kube-scheduler", "system:volume-scheduler",
                                   "extension-apiserver-authentication-reader"}));
  const std::string webhooks = "admissionregistration.k8s.io";
  EXPECT_EQ(rights["tessera-certgen"],
            (Rights{{"", "secrets", "create", "*"},
                    {"", "secrets", "get", "tessera-kube-scheduler-client-tls"},
                    {"", "secrets", "get", "tessera-scheduler-tls"},
                    {"", "secrets", "get", "tessera-webhook-client-tls"},
                    {"", "secrets", "update", "tessera-kube-scheduler-client-tls"},
                    {"", "secrets", "update", "tessera-scheduler-tls"},
                    {"", "secrets", "update", "tessera-webhook-client-tls"},
                    {webhooks, "mutatingwebhookconfigurations", "get", "tessera"},
                    {webhooks, "mutatingwebhookconfigurations", "update", "tessera"},
                    {webhooks, "validatingwebhookconfigurations", "get", "tessera"},
                    {webhooks, "validatingwebhookconfigurations", "update", "tessera"}}));
  EXPECT_TRUE(external_roles["tessera-certgen"].empty());
  EXPECT_EQ(rights.size(), 4u) << "a ServiceAccount this test does not know has rights";

  // Each workload runs under the ServiceAccount whose rights are checked above.
  for (const auto& [kind, name, sa] :
       {std::tuple{"Deployment", "tessera-scheduler", "tessera-scheduler"},
        std::tuple{"Deployment", "tessera-kube-scheduler", "tessera-kube-scheduler"},
        std::tuple{"DaemonSet", "tessera-node", "tessera-node"},
        std::tuple{"Job", "tessera-certgen", "tessera-certgen"}}) {
    EXPECT_EQ(PodSpec(Get(kind, name))["serviceAccountName"].as<std::string>(""), sa) << name;
  }
}

// The role a user of the web page needs (docs/ui.md): exactly the two SubjectAccessReviews the
// scheduler asks for /inspect and /fit, bound to nobody by the install.
TEST_F(DeployTest, TheGpuViewerRoleGrantsTheSchedulersStateAndNothingElse) {
  std::optional<YAML::Node> role = Find(objects(), "ClusterRole", "tessera-gpu-viewer");
  ASSERT_TRUE(role.has_value());
  std::set<std::tuple<std::string, std::string, std::string>> granted;
  for (const YAML::Node& rule : (*role)["rules"]) {
    for (const YAML::Node& g : rule["apiGroups"]) {
      for (const YAML::Node& r : rule["resources"]) {
        for (const YAML::Node& v : rule["verbs"]) {
          granted.insert({g.as<std::string>(), r.as<std::string>(), v.as<std::string>()});
        }
      }
    }
  }
  EXPECT_EQ(granted, (std::set<std::tuple<std::string, std::string, std::string>>{
                         {"tessera.io", "scheduler/inspect", "get"},
                         {"tessera.io", "scheduler/fit", "create"}}));
  for (const YAML::Node& o : objects()) {
    if (o["kind"].as<std::string>("").find("Binding") == std::string::npos) continue;
    EXPECT_NE(o["roleRef"]["name"].as<std::string>(""), "tessera-gpu-viewer");
  }
}

// The optional NetworkPolicy (deploy/components/network-policy), as an overlay sets it up: it
// selects the scheduler's pods, and admits to its HTTPS port only kube-scheduler's pods, the
// control plane's addresses and Prometheus.
TEST_F(DeployTest, NetworkPolicyAdmitsOnlyKubeSchedulerTheApiServerAndPrometheus) {
  static const Rendered overlay =
      Render(std::string(TESSERA_SOURCE_DIR) + "/testing/deploy/overlays/network-policy");
  ASSERT_EQ(overlay.error, "");
  std::optional<YAML::Node> policy = Find(overlay.objects, "NetworkPolicy", "tessera-scheduler");
  ASSERT_TRUE(policy.has_value()) << "the component adds no NetworkPolicy";
  EXPECT_FALSE(Find(objects(), "NetworkPolicy", "tessera-scheduler"))
      << "the default install must not carry it (the API server's addresses are per cluster)";
  YAML::Node spec = (*policy)["spec"];
  YAML::Node scheduler_labels =
      Get("Deployment", "tessera-scheduler")["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : spec["podSelector"]["matchLabels"]) {
    EXPECT_EQ(scheduler_labels[kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  EXPECT_EQ(Strings(spec["policyTypes"]), std::vector<std::string>{"Ingress"});
  ASSERT_EQ(spec["ingress"].size(), 3u);
  std::string port_name =
      Container(PodSpec(Get("Deployment", "tessera-scheduler")), "tessera")["ports"][0]["name"]
          .as<std::string>();
  for (const YAML::Node& rule : spec["ingress"]) {
    ASSERT_EQ(rule["ports"].size(), 1u);
    EXPECT_EQ(rule["ports"][0]["port"].as<std::string>(), port_name);
  }
  YAML::Node kube_scheduler_labels =
      Get("Deployment", "tessera-kube-scheduler")["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : spec["ingress"][0]["from"][0]["podSelector"]["matchLabels"]) {
    EXPECT_EQ(kube_scheduler_labels[kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  EXPECT_EQ(spec["ingress"][1]["from"][0]["ipBlock"]["cidr"].as<std::string>(), "10.0.0.10/32");
  EXPECT_EQ(spec["ingress"][2]["from"][0]["namespaceSelector"]["matchLabels"]
                ["tessera.io/metrics-scraper"]
                    .as<std::string>(),
            "true");
}

// The DRA mode (deploy/components/dra, as testing/deploy/overlays/dra lists it): the node agent
// gets --node.mode=dra and kubelet's plugin folders, exactly the DRA calls on top of its rights,
// the DeviceClass and a policy that confines its slice writes to its node; the default install
// has none of it.
class DeployDraTest : public DeployTest {
 protected:
  void SetUp() override {
    DeployTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(Dra().error, "");
  }
  static const Rendered& Dra() {
    static const Rendered r =
        Render(std::string(TESSERA_SOURCE_DIR) + "/testing/deploy/overlays/dra");
    return r;
  }
  static YAML::Node DraGet(const std::string& kind, const std::string& name) {
    std::optional<YAML::Node> o = Find(Dra().objects, kind, name);
    EXPECT_TRUE(o.has_value()) << kind << " " << name << " is not in the DRA overlay";
    return o ? *o : YAML::Node();
  }
};

TEST_F(DeployDraTest, TheAgentGetsTheModeAndKubeletsPluginFolders) {
  YAML::Node pod = PodSpec(DraGet("DaemonSet", "tessera-node"));
  std::vector<std::string> args = Strings(Container(pod, "tessera-node")["args"]);
  EXPECT_EQ(FlagValue(args, "--node.mode"), "dra");
  EXPECT_EQ(FlagValue(Strings(Container(PodSpec(Get("DaemonSet", "tessera-node")),
                                        "tessera-node")["args"]),
                      "--node.mode"),
            "")
      << "the default install keeps the device plugins";
  std::map<std::string, std::string> host_of;  // volume -> host path
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["hostPath"])
      host_of[v["name"].as<std::string>()] = v["hostPath"]["path"].as<std::string>();
  }
  std::set<std::string> mounted;
  for (const YAML::Node& m : Container(pod, "tessera-node")["volumeMounts"]) {
    auto it = host_of.find(m["name"].as<std::string>());
    if (it == host_of.end()) continue;
    EXPECT_EQ(it->second, m["mountPath"].as<std::string>())
        << "kubelet reaches the sockets by host path: mount them at the same path";
    mounted.insert(it->second);
  }
  const std::string kubelet_dir = FlagValue(args, "--kubelet-dir");
  for (const std::string& folder : {kubelet_dir + "/plugins_registry", kubelet_dir + "/plugins"}) {
    EXPECT_TRUE(mounted.contains(folder)) << folder << " is not mounted";
  }
}

TEST_F(DeployDraTest, RbacAddsExactlyTheDraCalls) {
  auto [rights, external_roles] = RightsOf(Dra().objects);
  Rights node = kNodeAgentRights;
  node.insert({{"resource.k8s.io", "resourceslices", "list", "*"},
               {"resource.k8s.io", "resourceslices", "watch", "*"},
               {"resource.k8s.io", "resourceslices", "create", "*"},
               {"resource.k8s.io", "resourceslices", "update", "*"},
               {"resource.k8s.io", "resourceslices", "delete", "*"},
               {"resource.k8s.io", "resourceclaims", "get", "*"}});
  EXPECT_EQ(rights["tessera-node"], node);
  EXPECT_FALSE(external_roles.contains("tessera-node"));
  // Nobody else gains anything.
  auto [base_rights, base_external] = RightsOf(objects());
  for (const auto& [sa, set] : rights) {
    if (sa != "tessera-node") {
      EXPECT_EQ(set, base_rights[sa]) << sa;
    }
  }
  EXPECT_EQ(external_roles, base_external);
}

TEST_F(DeployDraTest, TheDeviceClassSelectsTheDriversDevices) {
  YAML::Node selectors = DraGet("DeviceClass", "gpu.tessera.io")["spec"]["selectors"];
  ASSERT_EQ(selectors.size(), 1u);
  EXPECT_EQ(selectors[0]["cel"]["expression"].as<std::string>(),
            "device.driver == \"gpu.tessera.io\"");
  EXPECT_FALSE(Find(objects(), "DeviceClass", "gpu.tessera.io"))
      << "the default install publishes no ResourceSlice: no class for them";
}

// The policy applies to the agent's ServiceAccount (the one its DaemonSet runs as), to every
// write of a ResourceSlice, and denies.
TEST_F(DeployDraTest, AgentsWriteOnlyTheirOwnNodesSlices) {
  YAML::Node policy = DraGet("ValidatingAdmissionPolicy", "tessera-node-resourceslices");
  YAML::Node spec = policy["spec"];
  EXPECT_EQ(spec["failurePolicy"].as<std::string>(), "Fail");
  YAML::Node rule = spec["matchConstraints"]["resourceRules"][0];
  EXPECT_EQ(Strings(rule["apiGroups"]), std::vector<std::string>{"resource.k8s.io"});
  EXPECT_EQ(Strings(rule["resources"]), std::vector<std::string>{"resourceslices"});
  EXPECT_EQ(Strings(rule["operations"]), (std::vector<std::string>{"CREATE", "UPDATE", "DELETE"}));
  EXPECT_EQ(spec["matchConstraints"]["matchPolicy"].as<std::string>(), "Equivalent")
      << "writes through other versions of resource.k8s.io are checked too";
  YAML::Node ds = DraGet("DaemonSet", "tessera-node");
  std::string user = "system:serviceaccount:" + ds["metadata"]["namespace"].as<std::string>() +
                     ":" + PodSpec(ds)["serviceAccountName"].as<std::string>();
  EXPECT_EQ(spec["matchConditions"][0]["expression"].as<std::string>(),
            "request.userInfo.username == \"" + user + "\"");
  // The node named in the agent's token, the slice's node (the old object for a DELETE), the
  // driver.
  std::string cel;
  for (const char* list : {"variables", "validations"}) {
    for (const YAML::Node& v : spec[list]) cel += v["expression"].as<std::string>() + "\n";
  }
  for (const char* part : {"authentication.kubernetes.io/node-name", "spec.?nodeName",
                           "spec.driver == \"gpu.tessera.io\"", "oldObject"}) {
    EXPECT_NE(cel.find(part), std::string::npos) << part << " is not in:\n" << cel;
  }
  YAML::Node binding = DraGet("ValidatingAdmissionPolicyBinding", "tessera-node-resourceslices");
  EXPECT_EQ(binding["spec"]["policyName"].as<std::string>(),
            policy["metadata"]["name"].as<std::string>());
  EXPECT_EQ(Strings(binding["spec"]["validationActions"]), std::vector<std::string>{"Deny"});
}

}  // namespace
}  // namespace tessera::deploy_test
