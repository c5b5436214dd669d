#include "demo/narrator.h"

#include <sstream>

namespace tessera::demo {

void Narrator::Step(const std::string& title) {
  out_ << "\n" << ++step_ << ". " << title << "\n" << std::flush;
}

void Narrator::Say(const std::string& text) {
  out_ << "   " << text << "\n" << std::flush;
}

void Narrator::Quote(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out_ << "     | " << line << "\n";
  out_ << std::flush;
}

bool Narrator::Check(bool ok, const std::string& what, const std::string& detail) {
  if (ok) {
    out_ << "   ok: " << what << "\n";
  } else {
    ++failures_;
    out_ << "   FAILED: " << what << (detail.empty() ? "" : " (" + detail + ")") << "\n";
  }
  out_ << std::flush;
  return ok;
}

}  // namespace tessera::demo
