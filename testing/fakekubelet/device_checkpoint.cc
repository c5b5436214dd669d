#include "fakekubelet/device_checkpoint.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "log/log.h"

namespace tessera::fakekubelet {

using nlohmann::json;

FakeDeviceCheckpoint::FakeDeviceCheckpoint(std::string dir) : dir_(std::move(dir)) {}

Status FakeDeviceCheckpoint::Start() {
  std::error_code ec;
  std::filesystem::create_directories(dir_ + "/device-plugins", ec);
  if (ec) return Internal("cannot create " + dir_ + "/device-plugins: " + ec.message());
  std::lock_guard lock(mu_);
  WriteLocked();
  return Status::Ok();
}

void FakeDeviceCheckpoint::Record(const std::string& ns, const std::string& pod,
                                  const std::string& uid, const std::string& container,
                                  const std::string& resource,
                                  const std::vector<std::string>& device_ids,
                                  const std::string& answer) {
  std::lock_guard lock(mu_);
  entries_.push_back({ns, pod, uid, container, resource, device_ids, answer});
  WriteLocked();
}

void FakeDeviceCheckpoint::ForgetPod(const std::string& ns, const std::string& pod) {
  std::lock_guard lock(mu_);
  std::erase_if(entries_, [&](const Entry& e) { return e.ns == ns && e.pod == pod; });
  WriteLocked();
}

std::vector<std::string> FakeDeviceCheckpoint::Used(const std::string& resource) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (e.resource == resource) out.insert(out.end(), e.ids.begin(), e.ids.end());
  }
  return out;
}

void FakeDeviceCheckpoint::WriteLocked() const {
  json entries = json::array();
  for (const Entry& e : entries_) {
    entries.push_back({{"PodUID", e.uid},
                       {"ContainerName", e.container},
                       {"ResourceName", e.resource},
                       {"DeviceIDs", {{"-1", e.ids}}},
                       {"AllocResp", Base64Encode(e.answer)}});
  }
  // kubelet writes null, not [], when it holds no entry.
  json doc = {{"Data",
               {{"PodDeviceEntries", entries.empty() ? json(nullptr) : entries},
                {"RegisteredDevices", json::object()}}},
              {"Checksum", 0}};
  std::string tmp = Path() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, Path(), ec);
  if (ec) log::Error("cannot write the device checkpoint", {{"error", ec.message()}});
}

}  // namespace tessera::fakekubelet
