#include "demo/narrator.h"

#include <sstream>

namespace tessera::demo {
namespace {

std::string Quoted(const std::string& text) {
  std::istringstream lines(text);
  std::string out;
  for (std::string line; std::getline(lines, line);) out += "     | " + line + "\n";
  return out;
}

}  // namespace

void Narrator::Write(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (silenced_) return;
  out_ << text << std::flush;
}

void Narrator::Step(const std::string& title) {
  int step;
  {
    std::lock_guard<std::mutex> lock(mu_);
    step = ++step_;
  }
  Write("\n" + std::to_string(step) + ". " + title + "\n");
}

void Narrator::Say(const std::string& text) {
  Write("   " + text + "\n");
}

void Narrator::Quote(const std::string& text) {
  Write(Quoted(text));
}

void Narrator::Print(const std::string& text) {
  Write(text.empty() || text.back() == '\n' ? text : text + "\n");
}

bool Narrator::Check(bool ok, const std::string& what, const std::string& detail) {
  if (ok) {
    Write("   ok: " + what + "\n");
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++failures_;
  }
  Write("   FAILED: " + what + (detail.empty() ? "" : " (" + detail + ")") + "\n");
  return false;
}

void Narrator::Silence() {
  std::lock_guard<std::mutex> lock(mu_);
  silenced_ = true;
}

void Narrator::Final(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  out_ << "   " << text << "\n" << std::flush;
}

void Narrator::FinalQuote(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  out_ << Quoted(text) << std::flush;
}

int Narrator::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

}  // namespace tessera::demo
