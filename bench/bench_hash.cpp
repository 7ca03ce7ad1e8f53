// The BLAKE2b kernels on one core (issue 26): record leaves H(0x00 || r) of
// equal-size records through hash_lanes() SIMD lanes (leaves_lanes), the
// four-lane AVX2 kernel (leaves_x4) and libsodium one at a time
// (kBlake2bTree.leaf), and tree nodes (node_pairs). Thread CPU time, best of
// 5, over 64 MiB in memory (no page faults in the timed part). Prints
// key=value lines; bench/commit.sh shows them beside the b2sum comparison.
//
// Usage: bench_hash [RECORD_BYTES...]   (default 2048 200)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "wit/hash/blake2b_x4.h"
#include "wit/hash/merkle.h"

using namespace wit;

namespace {

double thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

template <class F>
double best_of_5(F&& f) {
  double best = 1e30;
  for (int i = 0; i < 5; i++) {
    const double t0 = thread_cpu();
    f();
    best = std::min(best, thread_cpu() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; i++) sizes.push_back(size_t(std::strtoull(argv[i], nullptr, 10)));
  if (sizes.empty()) sizes = {2048, 200};
  const size_t total = size_t(64) << 20;
  std::vector<uint8_t> data(total);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (auto& b : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = uint8_t(x);
  }
  std::printf("hash_lanes=%u\n", hash_lanes());
  for (size_t len : sizes) {
    if (len == 0) continue;
    const size_t n = total / len;
    std::vector<Hash32> out(n);
    const double lanes = best_of_5([&] { leaves_lanes(data.data(), len, len, n, out.data()); });
    const double one = best_of_5([&] {
      for (size_t i = 0; i < n; i++) out[i] = kBlake2bTree.leaf(ByteView(data.data() + i * len, len));
    });
    std::printf("leaves_%zu_lanes_MBps=%.0f\n", len, double(n * len) / lanes / 1e6);
    std::printf("leaves_%zu_libsodium_MBps=%.0f\n", len, double(n * len) / one / 1e6);
    if (leaves_x4_available()) {
      const double x4 = best_of_5([&] {
        for (size_t i = 0; i + 4 <= n; i += 4) {
          const uint8_t* d[4] = {&data[i * len], &data[(i + 1) * len], &data[(i + 2) * len], &data[(i + 3) * len]};
          leaves_x4(d, len, &out[i]);
        }
      });
      std::printf("leaves_%zu_avx2x4_MBps=%.0f\n", len, double(n / 4 * 4 * len) / x4 / 1e6);
    }
  }
  std::vector<Hash32> leaves(total / 32 / 2), level(leaves.size() / 2);
  std::memcpy(static_cast<void*>(leaves.data()), data.data(), leaves.size() * 32);
  const double nodes = best_of_5([&] { node_pairs(leaves.data(), level.size(), level.data()); });
  std::printf("nodes_ns=%.1f\n", nodes * 1e9 / double(level.size()));
  return 0;
}
