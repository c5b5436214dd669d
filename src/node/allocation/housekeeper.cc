#include "node/allocation/housekeeper.h"

#include <filesystem>
#include <fstream>

#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/pod_view.h"

namespace tessera::node {

namespace fs = std::filesystem;

Housekeeper::Housekeeper(Allocator& allocator, const PodSource& pods, std::string state_dir,
                         std::chrono::seconds grace)
    : allocator_(allocator), pods_(pods), state_dir_(std::move(state_dir)), grace_(grace) {}

std::vector<std::string> Housekeeper::RunOnce() {
  std::vector<std::string> removed;
  if (claims_ != nullptr) removed = claims_->ReleaseAbandoned(grace_);
  std::error_code ec;
  fs::directory_iterator it(AllocationsRoot(state_dir_), ec);
  if (ec) return removed;
  for (const fs::directory_entry& e : it) {
    if (!e.is_directory()) continue;
    std::string id = e.path().filename().string();
    std::ifstream in(e.path() / "owner.json");
    nlohmann::json owner = nlohmann::json::parse(in, nullptr, false);
    std::string uid = owner.is_object() ? owner.value("uid", "") : "";
    std::string claim_uid = owner.is_object() ? owner.value("claimUid", "") : "";
    auto written_before_grace = [&] {
      auto written = fs::last_write_time(e.path() / "limits", ec);
      return !ec && fs::file_time_type::clock::now() - written > grace_;
    };
    bool stale;
    if (!claim_uid.empty()) {
      stale = (claims_ == nullptr || !claims_->Holds(claim_uid)) && written_before_grace();
    } else if (uid.empty()) {
      stale = written_before_grace();
    } else {
      std::optional<nlohmann::json> pod =
          pods_.Pod(owner.value("namespace", ""), owner.value("pod", ""));
      stale = !pod || (*pod)["metadata"].value("uid", "") != uid || PodTerminal(*pod);
    }
    if (!stale) continue;
    fs::remove_all(e.path(), ec);
    fs::remove_all(RegionDirOf(state_dir_, id), ec);
    if (claim_uid.empty()) {
      fs::remove(allocator_.CdiSpecPath(id), ec);
      log::Info(
          "removed the files of a finished allocation",
          {{"allocation", id},
           {"pod",
            owner.is_object() ? owner.value("namespace", "") + "/" + owner.value("pod", "") : ""}});
    } else {
      fs::remove(allocator_.cdi_dir() + "/" + CdiSpecFileName(kCdiClaimKind, id), ec);
      log::Info("removed the files of a ResourceClaim that is not prepared",
                {{"claim", owner.value("namespace", "") + "/" + owner.value("claim", "")},
                 {"uid", claim_uid}});
    }
    removed.push_back(id);
  }
  return removed;
}

}  // namespace tessera::node
