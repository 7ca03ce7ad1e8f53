// A minimal parallel-for over index ranges with std::thread (no pool: the
// work items wit splits are large, so thread start-up cost is negligible).
#pragma once
#include <cstdint>
#include <functional>

namespace wit {

// Number of threads to use when the caller says 0 ("all cores").
unsigned default_threads();

// Calls fn(begin, end) on disjoint chunks covering [0, n), on up to `threads`
// threads. Runs inline when n < min_per_thread * 2 or threads <= 1. An exception
// thrown by fn is rethrown in the caller after all threads finish.
void parallel_for(uint64_t n, unsigned threads, uint64_t min_per_thread,
                  const std::function<void(uint64_t, uint64_t)>& fn);

}  // namespace wit
