// Narrator: prints the demo's story (numbered steps, plain sentences, indented program output)
// and keeps the score of its checks: each Check prints what was verified, and a failed one is
// counted, so the demo exits non-zero when anything it told did not happen.
//
// When a signal stops the demo, Silence() ends the story (what the main thread still tells is
// dropped), and Final() prints what the cleanup has to say.
//
// Thread-safety: every method may be called from any thread; lines never interleave.
#pragma once

#include <mutex>
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
  // Prints text as it is (a line of its own when it ends without a newline).
  void Print(const std::string& text);

  void Silence();
  // Prints text as Say does, even after Silence().
  void Final(const std::string& text);
  void FinalQuote(const std::string& text);

  int failures() const;

 private:
  void Write(const std::string& text);  // under mu_, unless silenced_

  std::ostream& out_;
  mutable std::mutex mu_;
  int step_ = 0;           // guarded by mu_
  int failures_ = 0;       // guarded by mu_
  bool silenced_ = false;  // guarded by mu_
};

}  // namespace tessera::demo
