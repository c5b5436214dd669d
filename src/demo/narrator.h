// Narrator: prints the demo's story (numbered steps, plain sentences, indented program output)
// and keeps the score of its checks: each Check prints what was verified, and a failed one is
// counted, so the demo exits non-zero when anything it told did not happen.
//
// Thread-safety: one thread.
#pragma once

#include <ostream>
#include <string>

namespace tessera::demo {

class Narrator {
 public:
  explicit Narrator(std::ostream& out) : out_(out) {}

  void Step(const std::string& title);
  void Say(const std::string& text);
  // Prints text indented as quoted output (a program's, kubectl's).
  void Quote(const std::string& text);
  // Prints "ok: what" or "FAILED: what (detail)"; returns `ok`.
  bool Check(bool ok, const std::string& what, const std::string& detail = "");

  int failures() const { return failures_; }

 private:
  std::ostream& out_;
  int step_ = 0;
  int failures_ = 0;
};

}  // namespace tessera::demo
