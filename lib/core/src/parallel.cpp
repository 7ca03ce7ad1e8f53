// parallel_for over std::thread.
#include "wit/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

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
    pool.emplace_back([&, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu);
        if (!err) err = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace wit
