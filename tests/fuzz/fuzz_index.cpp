// Fuzz target for the data index parser (wit::Index over bytes). Each input is
// parsed as given, and, when it is at least a header long, again with magic,
// version and both XXH3 checksums patched in, so that the structural checks
// behind the checksums (sizes, levels, roots) and the lookups get fuzzed too.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/proofs/proofs.h"

#include "outcome.h"

namespace {

// Header offsets of docs/index.md (lib/core/wit/data/index.cpp): version u32 at 8,
// body XXH3 at 96, header XXH3 (of bytes 0..103) at 104. wit::xxh3_64 with
// seed 0 is XXH3_64bits, the checksum the index uses.
constexpr size_t kOffVersion = 8, kOffBodySum = 96, kOffHeaderSum = 104;

void exercise(const uint8_t* data, size_t size) {
  try {
    wit::Index idx(wit::ByteView(data, size), "fuzz");
    const wit::Hash32 root = idx.root();
    if (idx.tree().size() != idx.n() || idx.n() > idx.records()) std::abort();
    // Lookups: a value that is in the leaves (if any), one that is
    // probably not, and the root itself. A hit yields an inclusion proof, a
    // miss an exclusion proof; both walk the cached levels.
    std::vector<wit::Hash32> probes{wit::Hash32{}, root};
    if (idx.n() > 0) probes.push_back(idx.tree().leaves()[idx.n() / 2]);
    for (const wit::Hash32& h : probes) {
      if (auto pos = idx.find(h)) {
        if (*pos >= idx.n()) std::abort();
        (void)wit::prove_inclusion(idx, h, *pos);
        (void)idx.first_record(*pos);
      } else {
        (void)wit::prove_exclusion(idx, h);
      }
    }
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');  // the expected rejection
  }
  // The audit an exclusion rests on: any index is either refused or, if it
  // passes, strictly sorted (checked again here by plain comparison).
  try {
    wit::Index idx(wit::ByteView(data, size), "fuzz");
    idx.audit(1);
    for (uint64_t i = 1; i < idx.n(); i++)
      if (!(idx.tree().leaves()[i - 1] < idx.tree().leaves()[i])) std::abort();
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise(data, size);
  if (size < wit::kIndexHeaderSize) return 0;
  std::vector<uint8_t> copy(data, data + size);
  uint8_t* h = copy.data();
  std::memcpy(h, wit::kIndexMagic, 8);
  // A version this wit reads stays (2: the RFC 6962 tree; 3: the ranged one).
  const uint32_t v = wit::get_le32(h + kOffVersion);
  if (v != wit::kIndexVersion && v != uint32_t(wit::kCommitVersionUnranged)) wit::put_le32(h + kOffVersion, wit::kIndexVersion);
  wit::put_le64(h + kOffBodySum, wit::xxh3_64(wit::ByteView(h + wit::kIndexHeaderSize, size - wit::kIndexHeaderSize)));
  wit::put_le64(h + kOffHeaderSum, wit::xxh3_64(wit::ByteView(h, kOffHeaderSum)));
  exercise(copy.data(), copy.size());
  return 0;
}
