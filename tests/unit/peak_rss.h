// Peak memory of a piece of work, for the tests that bound it: `fn` runs in a
// forked child (so the test process's earlier peaks cannot hide its own),
// which reports how much its peak RSS (getrusage's ru_maxrss) grew and up to
// three numbers of fn's own. Under AddressSanitizer, whose allocator keeps
// freed memory in quarantine, fn runs in this process for its numbers alone
// and `measured` is false.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <functional>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WIT_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WIT_TEST_ASAN 1
#endif

namespace wit_test {

struct PeakRss {
  bool measured = false;
  uint64_t grew = UINT64_MAX;        // bytes; UINT64_MAX when fn threw or the child died
  std::array<uint64_t, 3> values{};  // what fn returned
};

inline PeakRss peak_rss_growth(const std::function<std::array<uint64_t, 3>()>& fn) {
  PeakRss out;
#ifndef WIT_TEST_ASAN
  int fds[2];
  if (::pipe(fds) != 0) return out;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto peak = [] {
      struct rusage ru {};
      ::getrusage(RUSAGE_SELF, &ru);
      return uint64_t(ru.ru_maxrss) * 1024;
    };
    uint64_t report[4] = {UINT64_MAX, 0, 0, 0};
    try {
      const uint64_t before = peak();
      const std::array<uint64_t, 3> v = fn();
      report[0] = peak() - before;
      for (size_t i = 0; i < 3; i++) report[i + 1] = v[i];
    } catch (...) {
    }
    [[maybe_unused]] const ssize_t n = ::write(fds[1], report, sizeof report);
    ::_exit(0);
  }
  ::close(fds[1]);
  uint64_t report[4] = {UINT64_MAX, 0, 0, 0};
  const bool got = pid > 0 && ::read(fds[0], report, sizeof report) == ssize_t(sizeof report);
  ::close(fds[0]);
  if (pid > 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
  }
  out.measured = true;
  if (got) {
    out.grew = report[0];
    for (size_t i = 0; i < 3; i++) out.values[i] = report[i + 1];
  }
#else
  out.values = fn();
#endif
  return out;
}

}  // namespace wit_test
