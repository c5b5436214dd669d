// tessera-fake-apiserver: the in-memory Kubernetes API server of the tests, as a program.
//
//   tessera-fake-apiserver --listen 127.0.0.1:0 [--tls-cert F --tls-key F] [--client-ca F]
//                          [--history N] [--admission-webhook URL]
// Prints "listening on <url>" as its first line, then serves until SIGTERM or SIGINT.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "fakeapiserver/fake_api_server.h"

namespace {

constexpr const char* kUsage =
    "usage: tessera-fake-apiserver [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE]\n"
    "                              [--client-ca FILE] [--history N] [--admission-webhook URL]\n"
    "  --listen     address to serve on (default 127.0.0.1:0: a free port)\n"
    "  --tls-cert   PEM certificate; with --tls-key, serve HTTPS\n"
    "  --tls-key    PEM private key of --tls-cert\n"
    "  --client-ca  PEM CA; clients must present a certificate it signed\n"
    "  --history    watch events kept for replay (default 1000)\n"
    "  --admission-webhook  base URL of an admission webhook that every pod created goes\n"
    "               through: URL/mutate, then URL/validate (AdmissionReview v1)\n";

int Fail(const std::string& message) {
  std::cerr << "tessera-fake-apiserver: " << message << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::testing::FakeApiServer::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::string value;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Fail("flag " + arg + " needs a value");
    }
    if (arg == "--listen") {
      options.listen = value;
    } else if (arg == "--tls-cert") {
      options.tls_cert = value;
    } else if (arg == "--tls-key") {
      options.tls_key = value;
    } else if (arg == "--client-ca") {
      options.client_ca = value;
    } else if (arg == "--admission-webhook") {
      options.admission_webhook = value;
    } else if (arg == "--history") {
      try {
        options.history = std::stoul(value);
      } catch (const std::exception&) {
        return Fail("--history \"" + value + "\" must be a positive whole number");
      }
    } else {
      return Fail("unknown flag " + arg);
    }
  }

  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto server = tessera::testing::FakeApiServer::Start(options);
  if (!server.ok()) {
    std::cerr << "tessera-fake-apiserver: " << server.status().ToString() << "\n";
    return 1;
  }
  std::cout << "listening on " << (*server)->url() << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  (*server)->Stop();
  return 0;
}
