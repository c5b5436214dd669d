// Driver: calls the scheduler's HTTP endpoints the way kube-scheduler does (filter with
// NodeNames and nulls, prioritize, then bind the best-scored node). Test-only; one per thread.
#pragma once

#include <httplib.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::scheduler::testing {

class Driver {
 public:
  explicit Driver(int port) : client_("127.0.0.1", port) {
    client_.set_read_timeout(30, 0);
    client_.set_connection_timeout(30, 0);
  }

  nlohmann::json Post(const std::string& path, const std::string& body, int want_status = 200) {
    auto res = client_.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(res) << path << ": " << httplib::to_string(res.error());
    if (!res) return nlohmann::json();
    EXPECT_EQ(res->status, want_status) << path << ": " << res->body;
    return nlohmann::json::parse(res->body, nullptr, false);
  }
  nlohmann::json Get(const std::string& path, int* status = nullptr) {
    auto res = client_.Get(path.c_str());
    EXPECT_TRUE(res);
    if (!res) return nlohmann::json();
    if (status) *status = res->status;
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    return j.is_discarded() ? nlohmann::json(res->body) : j;
  }

  // filter -> prioritize -> bind. Returns the node, or "" when nothing fits.
  std::string Schedule(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
    nlohmann::json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}};
    nlohmann::json filtered = Post("/filter", args.dump());
    if (!filtered["Error"].get<std::string>().empty()) return "";
    std::vector<std::string> feasible = filtered["NodeNames"];
    if (feasible.empty()) return "";
    args["NodeNames"] = feasible;
    nlohmann::json scores = Post("/prioritize", args.dump());
    std::string best;
    int best_score = -1;
    for (const nlohmann::json& s : scores) {
      if (s["Score"].get<int>() > best_score) {
        best_score = s["Score"];
        best = s["Host"];
      }
    }
    nlohmann::json bound = Post("/bind", nlohmann::json{{"PodName", pod["metadata"]["name"]},
                                                        {"PodNamespace", "default"},
                                                        {"PodUID", pod["metadata"]["uid"]},
                                                        {"Node", best}}
                                             .dump());
    return bound["Error"].get<std::string>().empty()
               ? best
               : "bind failed: " + bound["Error"].get<std::string>();
  }

 private:
  httplib::Client client_;
};

}  // namespace tessera::scheduler::testing
