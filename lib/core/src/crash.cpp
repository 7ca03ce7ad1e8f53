// Crash points (see crash.h).
#include "wit/crash.h"

#include <unistd.h>

#include <atomic>
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
  std::atomic<long> seen{0};
  Plan() {
    const char* e = std::getenv("WIT_CRASH_AT");
    if (!e) return;
    std::string s(e);
    size_t colon = s.rfind(':');
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
  if (++p.seen == p.at) ::kill(::getpid(), SIGKILL);
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
