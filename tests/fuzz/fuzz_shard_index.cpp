// Fuzz target for the sharded-checkpoint index parser (ShardIndex::parse,
// docs/distributed.md): every input is rejected with a wit::Error or
// accepted, and an accepted index names only plain file names beside it
// (no path separators, nothing hidden), at least one shard, and a step >= 0.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "wit/base/error.h"
#include "wit/run/shards.h"

#include "outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  wit::ShardIndex x;
  try {
    x = wit::ShardIndex::parse(text, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  if (x.shards.empty() || x.step < 0) std::abort();
  for (const auto& [f, names] : x.shards)
    if (f.empty() || f[0] == '.' || f.find('/') != std::string::npos) {
      std::fprintf(stderr, "fuzz_shard_index: accepted shard file '%s'\n", f.c_str());
      std::abort();
    }
  wit_fuzz::note('a');
  return 0;
}
