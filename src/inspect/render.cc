#include "inspect/render.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "annotations/inventory.h"
#include "common/strings.h"
#include "inspect/json_to_yaml.h"

namespace tessera::inspect {
namespace {

constexpr int kBarWidth = 20;

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return std::to_string((part * 100 + whole / 2) / whole) + "%";
}

std::string UsedOf(uint64_t used, uint64_t total) {
  return std::to_string(used) + "/" + std::to_string(total) + " (" + Percent(used, total) + ")";
}

// A GPU's memory: what its pods hold of its (virtual) memory, and on a GPU whose memory is scaled
// what that is of the physical memory: "40960/49152 (83%), 167% of 24576 physical".
std::string MemoryOf(const GpuView& g) {
  std::string text = UsedOf(g.used_mib, g.virtual_memory_mib);
  if (g.virtual_memory_mib == g.memory_mib) return text;
  return text + ", " + Percent(g.used_mib, g.memory_mib) + " of " + std::to_string(g.memory_mib) +
         " physical";
}

std::string Bar(uint64_t part, uint64_t whole) {
  int filled =
      whole == 0 ? 0 : static_cast<int>(std::min<uint64_t>(part, whole) * kBarWidth / whole);
  return "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "]";
}

// A table whose columns are padded to their widest cell; rows may be followed by free lines.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back({std::move(header), {}}); }
  void Add(std::vector<std::string> cells) { rows_.push_back({std::move(cells), {}}); }
  void AddLineAfter(std::string line) { rows_.back().second.push_back(std::move(line)); }

  // Columns are as wide as with the header, so that output with and without it lines up alike.
  std::string Print(bool header = true) const {
    std::vector<size_t> width;
    for (const auto& [cells, lines] : rows_) {
      if (width.size() < cells.size()) width.resize(cells.size(), 0);
      for (size_t i = 0; i < cells.size(); ++i) width[i] = std::max(width[i], cells[i].size());
    }
    std::string out;
    for (const auto& [cells, lines] : rows_) {
      if (!header && &cells == &rows_.front().first) continue;
      std::string line;
      for (size_t i = 0; i < cells.size(); ++i) {
        line += cells[i];
        if (i + 1 < cells.size()) line += std::string(width[i] - cells[i].size() + 2, ' ');
      }
      out += line + "\n";
      for (const std::string& l : lines) out += l + "\n";
    }
    return out;
  }

 private:
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> rows_;
};

// MiB as GiB: whole GiB without a fraction, else one decimal (24268 MiB: "23.7").
std::string Gib(uint64_t mib) {
  if (mib % 1024 == 0) return std::to_string(mib / 1024);
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(mib) / 1024.0);
  return text;
}

// "namespace/pod (containers)", or for a DRA share "claim namespace/name (DRA; pods a, b)".
std::string ShareName(const PodShare& p) {
  if (!p.dra) return p.pod + " (" + Join(p.containers, ",") + ")";
  return "claim " + p.pod + " (DRA; " +
         (p.containers.empty() ? std::string("reserved for no pod")
                               : "pods " + Join(p.containers, ", ")) +
         ")";
}

// "ml (ResourceQuota gpu-quota): memory 4 GiB of 10 GiB (40%), compute 30% of 200% (15%)": each
// limit the quota sets, with what the namespace uses against it.
std::string QuotaLine(const QuotaView& q) {
  auto percent = [](int64_t used, int64_t limit) {
    return Percent(static_cast<uint64_t>(std::max<int64_t>(used, 0)),
                   static_cast<uint64_t>(std::max<int64_t>(limit, 0)));
  };
  std::vector<std::string> parts;
  if (q.limits.memory_bytes) {
    parts.push_back("memory " + scheduler::BytesText(q.used.memory_bytes) + " of " +
                    scheduler::BytesText(*q.limits.memory_bytes) + " (" +
                    percent(q.used.memory_bytes, *q.limits.memory_bytes) + ")");
  }
  if (q.limits.cores) {
    parts.push_back("compute " + std::to_string(q.used.cores) + "% of " +
                    std::to_string(*q.limits.cores) + "% of a GPU (" +
                    percent(q.used.cores, *q.limits.cores) + ")");
  }
  return q.ns + " (ResourceQuota " + q.limits.name + "): " + Join(parts, ", ");
}

// The namespaces' GPU quotas (where the source counts them and there are any), the pending pods
// and the warnings, after either table.
std::string RenderFooter(const ClusterView& view) {
  std::string out;
  if (view.quotas && !view.quotas->empty()) {
    out += "Quotas:\n";
    for (const QuotaView& q : *view.quotas) out += "  " + QuotaLine(q) + "\n";
  }
  if (view.pending.empty()) {
    out += "Pending pods: none\n";
  } else {
    out += "Pending pods: " + std::to_string(view.pending.size()) + "\n";
    for (const PendingPod& p : view.pending) out += "  " + p.pod + ": " + p.reason + "\n";
  }
  if (!view.warnings.empty()) {
    out += "Warnings:\n";
    for (const std::string& w : view.warnings) out += "  " + w + "\n";
  }
  return out;
}

// gpushare's view: a column per GPU index with its allocated/total GiB, the node's sum, then the
// cluster's. A GPU that pods hold but the inventory does not list counts in the node's sum and
// is named on a line of its own. With `details`, each pod's share follows its node's line.
std::string RenderGib(const ClusterView& view, bool details, bool no_headers) {
  int columns = 0;
  for (const NodeView& n : view.nodes) {
    for (const GpuView& g : n.gpus) columns = std::max(columns, g.index + 1);
  }
  std::vector<std::string> header = {"NAME", "IPADDRESS"};
  for (int i = 0; i < columns; ++i)
    header.push_back("GPU" + std::to_string(i) + "(Allocated/Total)");
  header.push_back("GPU Memory(GiB)");
  Table table(header);
  uint64_t used = 0, total = 0;
  for (const NodeView& n : view.nodes) {
    std::vector<std::string> row(static_cast<size_t>(columns) + 3, "-");
    row[0] = n.name;
    if (!n.address.empty()) row[1] = n.address;
    uint64_t node_used = 0, node_total = 0;
    std::vector<std::string> unlisted;
    for (const GpuView& g : n.gpus) {
      node_used += g.used_mib;
      node_total += g.virtual_memory_mib;
      if (g.index >= 0) {
        // On a GPU whose memory is scaled, the total is its virtual memory, the scaling after it.
        row[static_cast<size_t>(g.index) + 2] =
            Gib(g.used_mib) + "/" + Gib(g.virtual_memory_mib) +
            (g.virtual_memory_mib == g.memory_mib
                 ? ""
                 : " (x" + annotations::MemoryScalingText(g.memory_scaling) + ")");
      } else {
        unlisted.push_back("    GPU " + g.uuid +
                           " (not in the node's inventory): " + Gib(g.used_mib) + " GiB allocated");
      }
    }
    if (n.error.empty()) row.back() = Gib(node_used) + "/" + Gib(node_total);
    used += node_used;
    total += node_total;
    table.Add(std::move(row));
    if (!n.error.empty()) table.AddLineAfter("    " + n.error);
    for (std::string& line : unlisted) table.AddLineAfter(std::move(line));
    if (!details) continue;
    for (const GpuView& g : n.gpus) {
      for (const PodShare& p : g.pods) {
        table.AddLineAfter("    " + ShareName(p) + ": GPU" +
                           (g.index >= 0 ? std::to_string(g.index) : "?") + " " +
                           Gib(p.memory_mib) + " GiB");
      }
    }
  }
  std::string out = table.Print(!no_headers);
  out += std::string(66, '-') + "\n";
  out += "Allocated/Total GPU Memory In Cluster:\n";
  out += Gib(used) + "/" + Gib(total) + " (" + Percent(used, total) + ")\n";
  return out + RenderFooter(view);
}

std::string RenderText(const ClusterView& view, const RenderOptions& options) {
  bool wide = options.format == OutputFormat::kWide;
  std::vector<std::string> header = {"NODE", "GPU", "MODEL", "MEMORY (MiB)", "CORES (%)", "PODS"};
  if (wide) {
    for (const char* h : {"UUID", "NUMA", "HEALTH", "EXCLUSIVE"}) header.push_back(h);
  }
  Table table(header);
  for (const NodeView& n : view.nodes) {
    if (!n.error.empty()) {
      table.Add({n.name, "-", "(no usable inventory)", "-", "-", "-"});
      table.AddLineAfter("    " + n.error);
    }
    for (const GpuView& g : n.gpus) {
      bool known = g.index >= 0;
      std::vector<std::string> row = {
          n.name,
          known ? std::to_string(g.index) : "?",
          g.model,
          MemoryOf(g),
          known ? UsedOf(static_cast<uint64_t>(g.used_cores), 100) : std::to_string(g.used_cores),
          std::to_string(g.PodCount())};
      if (wide) {
        bool exclusive = std::any_of(g.pods.begin(), g.pods.end(),
                                     [](const PodShare& p) { return p.exclusive; });
        row.push_back(g.uuid);
        row.push_back(g.numa >= 0 ? std::to_string(g.numa) : "-");
        row.push_back(g.healthy ? "healthy" : "UNHEALTHY");
        row.push_back(exclusive ? "yes" : "no");
      }
      table.Add(std::move(row));
      if (options.bars) {
        table.AddLineAfter("    memory " + Bar(g.used_mib, g.virtual_memory_mib) + " " +
                           Percent(g.used_mib, g.virtual_memory_mib) + "  cores " +
                           Bar(static_cast<uint64_t>(g.used_cores), 100) + " " +
                           Percent(static_cast<uint64_t>(g.used_cores), 100));
      }
      if (options.details) {
        for (const PodShare& p : g.pods) {
          table.AddLineAfter("    " + ShareName(p) + ": " + std::to_string(p.memory_mib) +
                             " MiB, " +
                             (p.cores > 0 ? std::to_string(p.cores) + "% cores"
                                          : std::string("no compute limit")) +
                             (p.exclusive ? ", exclusive" : ""));
        }
      }
    }
  }
  std::string out = view.nodes.empty() ? std::string(
                                             "No Tessera GPU nodes (no node has a tessera.io/gpus "
                                             "annotation yet).\n")
                                       : table.Print(!options.no_headers);
  Totals t = view.ComputeTotals();
  uint64_t cores = static_cast<uint64_t>(t.cores), used_cores = static_cast<uint64_t>(t.used_cores);
  out += "\nTotal: " + std::to_string(t.nodes) + (t.nodes == 1 ? " node, " : " nodes, ") +
         std::to_string(t.gpus) + (t.gpus == 1 ? " GPU, " : " GPUs, ") + std::to_string(t.pods) +
         (t.pods == 1 ? " pod" : " pods") + "; memory " + std::to_string(t.used_mib) + "/" +
         std::to_string(t.virtual_memory_mib) + " MiB (" +
         Percent(t.used_mib, t.virtual_memory_mib) +
         (t.virtual_memory_mib == t.memory_mib
              ? ""
              : ", virtual; " + std::to_string(t.memory_mib) + " MiB physical") +
         "); cores " + std::to_string(used_cores) + "/" + std::to_string(cores) + "% (" +
         Percent(used_cores, cores) + ")\n";
  return out + RenderFooter(view);
}

}  // namespace

std::string Render(const ClusterView& view, const RenderOptions& options) {
  if (options.format == OutputFormat::kJson) return view.ToJson().dump(2) + "\n";
  if (options.format == OutputFormat::kYaml) return JsonToYaml(view.ToJson());
  if (options.format == OutputFormat::kGib) {
    if (view.nodes.empty()) return RenderText(view, options);
    return RenderGib(view, options.details, options.no_headers);
  }
  return RenderText(view, options);
}

}  // namespace tessera::inspect
