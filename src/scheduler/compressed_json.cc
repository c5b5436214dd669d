#include "scheduler/compressed_json.h"

#include <zlib.h>

#include <cstdlib>
#include <optional>

#include "common/strings.h"

namespace tessera::scheduler {
namespace {

constexpr char kJsonType[] = "application/json; charset=utf-8";
constexpr size_t kMinCompressed = 1024;

// Whether an Accept-Encoding value lists gzip with a quality above 0.
bool AcceptsGzip(const std::string& accept_encoding) {
  for (const std::string& item : Split(accept_encoding, ',')) {
    std::string coding = ToLower(Trim(item.substr(0, item.find(';'))));
    if (coding != "gzip") continue;
    size_t q = item.find("q=");
    return q == std::string::npos || std::strtod(item.c_str() + q + 2, nullptr) > 0;
  }
  return false;
}

std::optional<std::string> Gzip(const std::string& in) {
  z_stream z{};
  // 15 window bits + 16: a gzip header and trailer; level 6, zlib's default.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return {};
  return out;
}

}  // namespace

void SetCompressedJson(const httplib::Request& req, httplib::Response& res, std::string json) {
  res.set_header("Vary", "Accept-Encoding");
  if (json.size() > kMinCompressed && AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
    if (std::optional<std::string> gz = Gzip(json)) {
      res.set_header("Content-Encoding", "gzip");
      res.set_content(std::move(*gz), kJsonType);
      return;
    }
  }
  res.set_content(std::move(json), kJsonType);
}

}  // namespace tessera::scheduler
