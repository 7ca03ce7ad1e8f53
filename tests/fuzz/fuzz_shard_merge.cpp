// Fuzz target for what wit-commit merge reads of a shard's index (merge_commits,
// commit_merge.cpp: its header against the commitment, then the leaves and
// first occurrences through buffers, then the body checksum). Each input is an
// index file merged with itself as two shards, under a commitment made from
// its own header (so a well-formed header reaches the body), and again with
// magic, version, cache level, n, the body checksum and the header checksum
// patched in (so the body's order and first-occurrence checks are reached).
// A merge that succeeds must have written an index that loads and passes the
// full audit against the merged commitment, with the shard's n and the root
// of its leaves: checked here by plain means.
// Letters (outcome.h): a merged (and checked), r rejected.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <xxhash.h>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"

#include "outcome.h"

namespace {

const wit::TempDir& dir() {
  static const wit::TempDir d("wit-fuzz-merge");
  return d;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

void exercise(const uint8_t* data, size_t size) {
  const std::string idx = dir() / "s.widx", com = dir() / "s.commit.json", out = dir() / "m.widx";
  write(idx, data, size);
  try {
    const wit::IndexHeader h = wit::parse_index_header(wit::ByteView(data, size), size, "fuzz");
    wit::Commitment c;
    c.version = int(h.version);
    c.reader.kind = wit::ReaderKind::kLines;
    c.records = h.records;
    c.n = h.n;
    c.root = h.root;
    c.sources.push_back({"s.txt", 0, wit::kDefaultPieceSize, h.records, wit::Hash32()});
    c.inputs = {"s.txt"};
    const std::string j = c.dump();
    write(com, reinterpret_cast<const uint8_t*>(j.data()), j.size());
    wit::CommitResult r;
    {
      wit::AtomicFile f(out, true);
      wit::IndexSink sink;
      sink.file = &f;
      wit::CommitLimits lim;
      lim.memory = 4096;  // the smallest buffers: inputs of a few leaves cross them
      lim.spill_dir = dir().path();
      r = wit::merge_commits({{com, idx}, {com, idx}}, sink, lim, 1);
      f.commit();
    }
    // Accepted: the shard's leaves were strictly increasing, so the merge
    // of it with itself is its own leaves, and the index it wrote loads and
    // passes the audit against the merged commitment.
    if (r.commitment.n != h.n || r.commitment.records != 2 * h.records) std::abort();
    std::vector<wit::Hash32> leaves(size_t(h.n));
    if (h.n) std::memcpy(leaves.data(), data + wit::kIndexHeaderSize, size_t(32 * h.n));
    if (wit::merkle_root(wit::kDataTree, leaves) != r.commitment.root) std::abort();
    const wit::Index merged(out);
    try {
      merged.check_matches(r.commitment, "fuzz", 1);
    } catch (const wit::Error&) {
      std::abort();
    }
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise(data, size);
  if (size < wit::kIndexHeaderSize) return 0;
  // Patched: a version-3 header at cache level 8 whose n fits the bytes
  // (under 256 leaves there are no cached levels: 40 bytes a leaf), the body
  // cut to it, its checksums right.
  const uint64_t n = std::min<uint64_t>((size - wit::kIndexHeaderSize) / 40, 255);
  std::vector<uint8_t> copy(data, data + wit::kIndexHeaderSize + 40 * n);
  uint8_t* h = copy.data();
  std::memcpy(h, wit::kIndexMagic, 8);
  wit::put_le32(h + 8, wit::kIndexVersion);
  wit::put_le32(h + 12, wit::kIndexCacheLevel);
  wit::put_le64(h + 16, n);
  const uint64_t records = std::max<uint64_t>(n, std::min<uint64_t>(wit::get_le64(h + 24), n + 3));
  wit::put_le64(h + 24, records);
  wit::put_le64(h + 96, XXH3_64bits(h + wit::kIndexHeaderSize, copy.size() - wit::kIndexHeaderSize));
  wit::put_le64(h + 104, XXH3_64bits(h, 104));
  exercise(copy.data(), copy.size());
  return 0;
}
