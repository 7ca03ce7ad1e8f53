// The trainer's Dataset, the whole way against the bounded way (issue 38
// item 5; docs/commitment.md, "reader of a corpus"): loads a commitment and
// its index as wit-train does (load_commit_pair), opens the Dataset, then
// reads `reads` records at pseudo-random positions as batches do. Run each
// way in its own process under GNU time for its peak memory.
//
// Usage: bench_dataset whole|bounded COMMIT INDEX FILE... [--reads K] [--memory BYTES]
// (--memory: the bounded way's budget, default wit-commit's 1 GiB; a small
// one takes small files the bounded way too)
// Prints "key=value" lines: open_s (the check), read_ns (a record),
// step_us_BN (the data of a step of N records, N = 1, 8, 64, 512), peak_mib
// (VmHWM after the reads), n, on_demand (records read from the files).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"

namespace {
uint64_t vm_hwm_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  using clk = std::chrono::steady_clock;
  std::vector<std::string> args(argv + 1, argv + argc), files;
  uint64_t reads = 100000;
  wit::CommitLimits limits;
  while (args.size() >= 2 && (args[args.size() - 2] == "--reads" || args[args.size() - 2] == "--memory")) {
    (args[args.size() - 2] == "--reads" ? reads : limits.memory) = std::strtoull(args.back().c_str(), nullptr, 10);
    args.resize(args.size() - 2);
  }
  if (args.size() < 4 || (args[0] != "whole" && args[0] != "bounded")) {
    std::fprintf(stderr, "usage: bench_dataset whole|bounded COMMIT INDEX FILE... [--reads K] [--memory BYTES]\n");
    return 2;
  }
  files.assign(args.begin() + 3, args.end());
  try {
    const wit::CommitPair pair = wit::load_commit_pair(args[1], args[2], wit::IndexUse::kIndexNeeded);
    const auto t0 = clk::now();
    const wit::Dataset ds = args[0] == "whole" ? wit::Dataset(pair.commit, files, 0)
                                               : wit::Dataset(pair.commit, *pair.index, files, 0, limits);
    const double open_s = std::chrono::duration<double>(clk::now() - t0).count();
    uint64_t x = 38, bytes = 0;
    const auto t1 = clk::now();
    for (uint64_t k = 0; k < reads; k++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      bytes += ds.record((x >> 11) % ds.size()).size();
    }
    const double read_s = std::chrono::duration<double>(clk::now() - t1).count();
    // A step's data as a function of its records: B records at
    // pseudo-random positions a step, the mean over the steps.
    for (uint64_t b : {1, 8, 64, 512}) {
      const uint64_t steps = std::max<uint64_t>(1, reads / b / 4);
      const auto t2 = clk::now();
      for (uint64_t s = 0; s < steps; s++)
        for (uint64_t k = 0; k < b; k++) {
          x = x * 6364136223846793005ULL + 1442695040888963407ULL;
          bytes += ds.record((x >> 11) % ds.size()).size();
        }
      std::printf("step_us_B%llu=%.1f\n", (unsigned long long)b,
                  std::chrono::duration<double>(clk::now() - t2).count() * 1e6 / double(steps));
    }
    std::printf("way=%s\non_demand=%d\nbounded=%d\nn=%llu\nopen_s=%.2f\nread_ns=%.0f\nbytes_read=%llu\npeak_mib=%.0f\n",
                args[0].c_str(), int(ds.on_demand()), int(ds.bounded()), (unsigned long long)ds.size(), open_s,
                reads ? read_s * 1e9 / double(reads) : 0.0, (unsigned long long)bytes, double(vm_hwm_kib()) / 1024);
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "bench_dataset: %s\n", e.what());
    return 2;
  }
  return 0;
}
