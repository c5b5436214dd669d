// A JSON answer compressed with gzip when the client accepts it, for the large answers that
// browsers read (/inspect, which the web page polls).
//
// Why not httplib's own compression: cpp-httplib 0.11.4 picks brotli whenever the client offers
// it (every browser over HTTPS) and compresses at brotli's highest quality: 21 s of one core for
// the 6.3 MB /inspect answer of a 1,000-node cluster, against 44 ms with gzip (80 KB against
// 234 KB). Any client that reaches the port could spend the scheduler's CPU that way.
//
//   SetCompressedJson(req, res, Dump(InspectJson(...)));
//
// Stateless; thread-safe.
#pragma once

#include <httplib.h>

#include <string>

namespace tessera::scheduler {

// Sets `json` as the body, gzip-compressed (Content-Encoding: gzip) when `req`'s Accept-Encoding
// lists gzip and the body is over 1 KiB, plain otherwise; "Vary: Accept-Encoding" either way.
// The Content-Type is "application/json; charset=utf-8", which httplib does not compress again.
// Should compression fail (out of memory), the body is sent plain.
void SetCompressedJson(const httplib::Request& req, httplib::Response& res, std::string json);

}  // namespace tessera::scheduler
