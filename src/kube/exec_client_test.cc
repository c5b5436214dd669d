// A Client built from a kubeconfig whose user is an exec credential plugin (a shell script):
// the plugin's token is sent as the bearer token, and the plugin runs once while it is valid.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <thread>

#include "kube/client.h"
#include "kube/connection.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

TEST(ExecClientTest, ClientSendsThePluginsToken) {
  httplib::Server server;
  std::string authorization;
  server.Get("/api/v1/nodes/n1", [&](const httplib::Request& req, httplib::Response& res) {
    authorization = req.get_header_value("Authorization");
    if (authorization != "Bearer from-plugin") {
      res.status = 401;
      res.set_content(R"({"kind":"Status","code":401,"reason":"Unauthorized"})",
                      "application/json");
      return;
    }
    res.set_content(R"({"metadata":{"name":"n1"}})", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  for (int i = 0; i < 500 && !server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  TempDir dir;
  std::string plugin = dir.Write("get-token", R"(#!/bin/sh
echo run >> "$(dirname "$0")/runs"
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"from-plugin"}}'
)");
  chmod(plugin.c_str(), 0755);
  std::string kubeconfig = dir.Write("config",
                                     "current-context: c\n"
                                     "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                     "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:" +
                                         std::to_string(port) +
                                         "'}}]\n"
                                         "users:\n- name: u\n  user:\n    exec:\n"
                                         "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                         "      command: ./get-token\n");
  Result<ConnectionConfig> connection = ResolveConnection(kubeconfig, {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  Result<std::unique_ptr<Client>> client = Client::Create(*connection, {.qps = 0});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (int i = 0; i < 2; ++i) {
    Result<Json> node = (*client)->Get(kNodes, "", "n1");
    ASSERT_TRUE(node.ok()) << node.status().ToString();
  }
  EXPECT_EQ(authorization, "Bearer from-plugin");
  std::ifstream runs(dir.path() + "/runs");
  std::string text((std::istreambuf_iterator<char>(runs)), {});
  EXPECT_EQ(text, "run\n");  // no expiry: run once

  client->reset();  // closes its kept-alive connection, so that stop() need not wait for it
  server.stop();
  serving.join();
}

}  // namespace
}  // namespace tessera::kube
