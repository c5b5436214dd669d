#include "node/gpu/pci_address.h"

#include <unistd.h>

#include <cctype>
#include <climits>

namespace tessera::node {
namespace {

bool HexDigits(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string StandardPciBusId(std::string_view nvml_id) {
  // domain:bus:device.function; NVML writes the domain with 8 digits, the kernel with 4.
  size_t first = nvml_id.find(':');
  if (first == std::string_view::npos) return "";
  std::string_view domain = nvml_id.substr(0, first);
  std::string_view rest = nvml_id.substr(first + 1);  // "17:00.0"
  if (domain.size() < 4 || domain.size() > 8 || !HexDigits(domain, domain.size())) return "";
  if (domain.find_first_not_of('0') < domain.size() - 4) return "";
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.' || !HexDigits(rest.substr(0, 2), 2) ||
      !HexDigits(rest.substr(3, 2), 2) || !HexDigits(rest.substr(6, 1), 1)) {
    return "";
  }
  return Lower(domain.substr(domain.size() - 4)) + ":" + Lower(rest);
}

std::string PcieRootOf(const std::string& sysfs_root, std::string_view bdf) {
  if (bdf.empty()) return "";
  const std::string link = sysfs_root + "/bus/pci/devices/" + std::string(bdf);
  char target[PATH_MAX];
  ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return "";
  std::string_view path(target, static_cast<size_t>(n));
  // The kernel's link is relative (../../../devices/pci...); the part after devices/ is the
  // device's path from its root complex, ending with the device itself.
  size_t at = path.find("devices/");
  if (at == std::string_view::npos || (at > 0 && path[at - 1] != '/')) return "";
  path.remove_prefix(at + 8);
  size_t slash = path.find('/');
  if (slash == std::string_view::npos) return "";
  std::string_view root = path.substr(0, slash);
  size_t last = path.rfind('/');
  if (path.substr(last + 1) != bdf || root.substr(0, 3) != "pci" || root.size() <= 3) return "";
  return std::string(root);
}

}  // namespace tessera::node
