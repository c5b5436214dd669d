#include "common/metric_labels.h"

#include "common/strings.h"

namespace tessera {

std::string GpuLabels(std::string_view node, int index, std::string_view uuid,
                      std::string_view model) {
  const std::string n = PrometheusLabelValue(node);
  return "node=\"" + n + "\",Hostname=\"" + n + "\",gpu=\"" +
         (index >= 0 ? std::to_string(index) : std::string()) + "\",UUID=\"" +
         PrometheusLabelValue(uuid) + "\",modelName=\"" + PrometheusLabelValue(model) + "\"";
}

std::string_view TesseraVersion() {
  return TESSERA_VERSION;
}

void RenderBuildInfo(std::string& out, std::string_view component) {
  out +=
      "# HELP tessera_build_info The running Tessera's version (always 1).\n"
      "# TYPE tessera_build_info gauge\n"
      "tessera_build_info{component=\"" +
      PrometheusLabelValue(component) + "\",version=\"" + PrometheusLabelValue(TesseraVersion()) +
      "\"} 1\n";
}

}  // namespace tessera
