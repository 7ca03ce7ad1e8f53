// Crash points (see crash.h).
#include "wit/base/crash.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace wit {

namespace {
struct Plan {
  std::string name;
  long at = 0;
  int sig = SIGKILL;
  std::atomic<long> seen{0};
  Plan() {
    const char* e = std::getenv("WIT_CRASH_AT");
    if (!e) return;
    std::string s(e);
    // NAME[:N[:SIG]]: a third field (INT, TERM or KILL) picks the signal.
    size_t colon = s.rfind(':');
    if (colon != std::string::npos && colon + 1 < s.size() && !std::isdigit(static_cast<unsigned char>(s[colon + 1]))) {
      const std::string sig_name = s.substr(colon + 1);
      sig = sig_name == "INT" ? SIGINT : sig_name == "TERM" ? SIGTERM : SIGKILL;
      s.resize(colon);
      colon = s.rfind(':');
    }
    name = s.substr(0, colon);
    at = colon == std::string::npos ? 1 : std::atol(s.c_str() + colon + 1);
  }
};
Plan& plan() {
  static Plan p;
  return p;
}
}  // namespace

void crash_point(const char* name) {
  Plan& p = plan();
  if (p.name.empty() || p.name != name) return;
  // To the process, not this thread: any thread that does not hold the signal
  // takes it, as with a kill from outside.
  if (++p.seen == p.at) ::kill(::getpid(), p.sig);
}

bool write_all(int fd, const void* buf, size_t n, const char* crash_name) {
  const char* b = static_cast<const char*>(buf);
  size_t off = 0, half = n / 2;
  bool crashed = false;
  while (off < n) {
    if (!crashed && off >= half) {
      crash_point(crash_name);
      crashed = true;
    }
    size_t chunk = (!crashed && half > off) ? half - off : n - off;
    ssize_t w = ::write(fd, b + off, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += size_t(w);
  }
  if (!crashed) crash_point(crash_name);
  return true;
}

}  // namespace wit
