// The web page's files (src/ui/assets/), embedded into the binary at build time by
// embed_assets.cmake: no file is read at run time and nothing is fetched from elsewhere.
//
//   for (const Asset& a : Assets()) ...  // a.name "index.html", a.body its bytes, a.etag "\"...\""
//
// Constant data; thread-safe.
#pragma once

#include <span>
#include <string_view>

namespace tessera::ui {

struct Asset {
  std::string_view name;  // the file's name under assets/, which is its path under /ui/
  std::string_view body;  // the file's bytes
  std::string_view etag;  // a strong ETag, quoted: the start of the file's SHA-256 in hex
};

// Every embedded file, sorted by name. Defined in the generated ui_assets.cc.
std::span<const Asset> Assets();

}  // namespace tessera::ui
