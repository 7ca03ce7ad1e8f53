// A minimal parallel-for over index ranges with std::thread (no pool: the
// work items wit splits are large, so thread start-up cost is negligible).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <utility>

namespace wit {

// Number of threads to use when the caller says 0 ("all cores").
unsigned default_threads();

// Calls fn(begin, end) on disjoint chunks covering [0, n), on up to `threads`
// threads. Runs inline when n < min_per_thread * 2 or threads <= 1. An exception
// thrown by fn is rethrown in the caller after all threads finish.
void parallel_for(uint64_t n, unsigned threads, uint64_t min_per_thread,
                  const std::function<void(uint64_t, uint64_t)>& fn);

// Memory for large tables written once (a commit's leaves): an anonymous
// mapping marked for transparent huge pages, so that first touching it costs a
// fault per 2 MiB, not per 4 KiB (on a virtual machine each fault is dear:
// docs/commitment.md, "Performance"). Where huge pages are off it is plain
// anonymous memory. Throws std::bad_alloc when the mapping fails.
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes);

// A deleter for std::unique_ptr<uint8_t[], HugeFree> of huge_alloc(bytes).
struct HugeFree {
  size_t bytes = 0;
  void operator()(uint8_t* p) const { huge_free(p, bytes); }
};

// An allocator over huge_alloc, for std::vector of tables written once.
// resize() default-initialises new elements (a trivial type's bytes are left
// unset, not zeroed: the caller writes them), so a table filled on several
// threads has its fresh pages first touched on those threads, once.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(huge_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { huge_free(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }
};

// Phase timing, for finding where a long operation's time goes: with the
// environment variable WIT_COMMIT_PHASES=1, each call prints one line to
// stderr, "wit: phase NAME: W ms wall, C ms CPU", the wall time since the
// previous call (or the process's first call) and the CPU time (user + system,
// all threads of the process) in the same span. Without it, it does nothing
// (one cached getenv). Call it from one thread.
void phase_done(const char* name);

}  // namespace wit
