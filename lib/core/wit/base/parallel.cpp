// parallel_for over std::thread.
#include "wit/base/parallel.h"

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <system_error>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

namespace wit {

unsigned default_threads() {
  if (const char* e = std::getenv("WIT_THREADS")) {
    int v = std::atoi(e);
    if (v > 0) return unsigned(v);
  }
  unsigned h = std::thread::hardware_concurrency();
  return h ? h : 1;
}

void parallel_for(uint64_t n, unsigned threads, uint64_t min_per_thread,
                  const std::function<void(uint64_t, uint64_t)>& fn) {
  if (threads == 0) threads = default_threads();
  if (min_per_thread == 0) min_per_thread = 1;
  uint64_t t = std::min<uint64_t>(threads, n / min_per_thread);
  if (t <= 1) {
    if (n) fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::exception_ptr err;
  std::mutex mu;
  uint64_t chunk = (n + t - 1) / t;
  for (uint64_t i = 0; i < t; i++) {
    uint64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    auto run = [&, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu);
        if (!err) err = std::current_exception();
      }
    };
    try {
      pool.emplace_back(run);
    } catch (const std::system_error&) {
      run();  // no thread to be had (a process or memory limit): this range runs here
    }
  }
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

namespace {

double now_ms(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

}  // namespace

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
// Large mappings start on a 2 MiB boundary, so huge pages cover them from
// their first byte (an unaligned mapping's head is 4 KiB pages, each touched
// one a fault); small ones are not worth the alignment.
size_t huge_span(size_t bytes) { return bytes >= kHugePage ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes; }
}  // namespace

void* huge_alloc(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t span = huge_span(bytes);
  const size_t extra = bytes >= kHugePage ? kHugePage : 0;
  void* m = ::mmap(nullptr, span + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  uint8_t* p = static_cast<uint8_t*>(m);
  if (extra) {
    const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(p) % kHugePage) % kHugePage;
    if (head) ::munmap(p, head);
    if (extra - head) ::munmap(p + head + span, extra - head);
    p += head;
  }
  ::madvise(p, span, MADV_HUGEPAGE);
  return p;
}

void huge_free(void* p, size_t bytes) {
  if (p) ::munmap(p, huge_span(bytes == 0 ? 1 : bytes));
}

void phase_done(const char* name) {
  static const bool on = [] {
    const char* e = std::getenv("WIT_COMMIT_PHASES");
    return e && *e && std::string(e) != "0";
  }();
  if (!on) return;
  static double wall0 = -1, cpu0 = 0;
  const double wall = now_ms(CLOCK_MONOTONIC), cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  if (wall0 >= 0)
    std::fprintf(stderr, "wit: phase %s: %.1f ms wall, %.1f ms CPU\n", name, wall - wall0, cpu - cpu0);
  else
    std::fprintf(stderr, "wit: phase %s: %.1f ms CPU since the process started\n", name, cpu);
  wall0 = wall;
  cpu0 = cpu;
}

}  // namespace wit
