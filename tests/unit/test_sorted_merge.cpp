// The tree and index written in one pass over sorted leaves (StreamIndex):
// the same root, cached levels and bytes as the tree built in memory, at
// sizes around the cache level and the 2^16-leaf chunks; and the k-way merge
// of sorted runs with repeats across them.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <random>

#include "wit/data/commitment.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/data/sorted_merge.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

Hash32 random_leaf(std::mt19937_64& rng) {
  Hash32 h;
  for (size_t i = 0; i < 32; i += 8) {
    const uint64_t v = rng();
    std::memcpy(h.data() + i, &v, 8);
  }
  return h;
}

Bytes slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// A cursor over entries in memory, handing them out `step` at a time.
class VecCursor : public SortedCursor {
 public:
  VecCursor(std::vector<SortEntry> v, size_t step) : v_(std::move(v)), step_(step) {}
  bool refill() override {
    if (at_ >= v_.size()) return false;
    cur = v_.data() + at_;
    at_ = std::min(v_.size(), at_ + step_);
    end = v_.data() + at_;
    return true;
  }

 private:
  std::vector<SortEntry> v_;
  size_t step_, at_ = 0;
};

}  // namespace

TEST_CASE("the index written in one pass over sorted leaves is the in-memory index's bytes", "[commit][index]") {
  const fs::path dir = fs::temp_directory_path() / ("wit-smerge-" + std::to_string(getpid()));
  fs::create_directories(dir);
  constexpr uint64_t C = StreamIndex::kChunk;
  for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(255), uint64_t(256), uint64_t(257), C - 1, C,
                     C + 1, 2 * C, 3 * C + 300}) {
    CAPTURE(n);
    std::mt19937_64 rng(n + 1);
    // n distinct leaves with record numbers, in file order, some repeated
    // (a repeat's first occurrence is the earlier record).
    DataTree::LeafRun run;
    for (uint64_t i = 0; i < n; i++) run.push_back(random_leaf(rng));
    for (uint64_t i = 0; i < n / 7; i++) run.push_back(run[size_t(rng() % n)]);
    CommitResult want;
    want.tree = DataTree(std::vector<DataTree::LeafRun>{run}, 2);
    REQUIRE(want.tree.size() == n);
    const MerkleTree t(kDataTree, want.tree.leaves(), n, kIndexCacheLevel, 2);
    want.commitment.root = t.root();
    want.commitment.records = run.size();
    want.commitment.n = n;
    want.levels.assign(t.levels(), t.levels() + MerkleTree::level_entries(n, kIndexCacheLevel));
    const Bytes expect = encode_index(want);

    const std::string path = (dir / "s.widx").string();
    {
      AtomicFile out(path, true);
      StreamIndex si(&out, dir.string(), kDataTree, kIndexVersion, 2);
      for (uint64_t i = 0; i < n; i++) si.add(want.tree.leaf(i), want.tree.first(i));
      si.finish(run.size());
      CHECK(si.root() == t.root());
      CHECK(si.size() == n);
      out.commit();
    }
    CHECK(slurp(path) == expect);
    // No index: the root alone.
    StreamIndex bare(nullptr, dir.string(), kDataTree, kIndexVersion, 1);
    for (uint64_t i = 0; i < n; i++) bare.add(want.tree.leaf(i), want.tree.first(i));
    bare.finish(run.size());
    CHECK(bare.root() == t.root());
  }
  // Only the outputs: the first occurrences' scratch file had no name.
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

namespace {

// Runs of the given lengths drawn from `pool` (so leaves repeat within and
// across runs), keys unique, each sorted by (leaf, key) though its keys were
// drawn in another order.
std::vector<std::vector<SortEntry>> draw_runs(const std::vector<Hash32>& pool, const std::vector<size_t>& lengths,
                                              std::mt19937_64& rng) {
  std::vector<std::vector<SortEntry>> runs;
  uint64_t key = 0;
  for (size_t len : lengths) {
    std::vector<SortEntry> r;
    for (size_t i = 0; i < len; i++) r.push_back({pool[size_t(rng() % pool.size())], key++});
    std::shuffle(r.begin(), r.end(), rng);  // keys not in run order: the merge orders by (leaf, key)
    std::sort(r.begin(), r.end(), entry_less);
    runs.push_back(std::move(r));
  }
  return runs;
}

// merge_sorted of `runs`, run i read step(i) entries at a time, gives each
// distinct leaf once with its smallest key, in leaf order.
void check_merge(const std::vector<std::vector<SortEntry>>& runs, const std::function<size_t(size_t)>& step) {
  std::vector<SortEntry> all;
  for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end(), entry_less);
  std::vector<SortEntry> want;
  for (const auto& e : all)
    if (want.empty() || want.back().leaf != e.leaf) want.push_back(e);
  std::vector<std::unique_ptr<VecCursor>> cs;
  std::vector<SortedCursor*> ptrs;
  for (size_t i = 0; i < runs.size(); i++) {
    cs.push_back(std::make_unique<VecCursor>(runs[i], step(i)));
    ptrs.push_back(cs.back().get());
  }
  std::vector<SortEntry> got;
  merge_sorted(ptrs, [&](const Hash32& l, uint64_t key) { got.push_back({l, key}); });
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); i++) {
    CHECK(got[i].leaf == want[i].leaf);
    CHECK(got[i].rec == want[i].rec);
  }
}

}  // namespace

TEST_CASE("merging sorted runs gives each leaf once with its smallest key", "[commit]") {
  std::mt19937_64 rng(38);
  std::vector<Hash32> pool;
  for (int i = 0; i < 500; i++) pool.push_back(random_leaf(rng));
  // Five runs of 300 and an empty one.
  const auto runs = draw_runs(pool, {300, 300, 300, 300, 300, 0}, rng);
  for (size_t step : {size_t(1), size_t(7), size_t(1000)}) {
    CAPTURE(step);
    check_merge(runs, [&](size_t) { return step; });
  }
}

TEST_CASE("the merge is right for any number of sources and leaves that share their first bytes", "[commit][merge]") {
  // Leaves whose first 8 bytes (the merge's cached key) are often equal,
  // among them all 0xff: ties go to the whole entry.
  std::mt19937_64 rng(3801);
  std::vector<Hash32> pool;
  for (int i = 0; i < 300; i++) {
    Hash32 h = random_leaf(rng);
    const int kind = i % 3;
    if (kind == 0) std::memset(h.data(), 0xff, 8);
    if (kind == 1) std::memset(h.data(), 0x42, 8);
    if (i % 50 == 0) std::memset(h.data(), 0xff, 32);
    pool.push_back(h);
  }
  for (size_t k : {size_t(1), size_t(2), size_t(3), size_t(8), size_t(17)}) {
    CAPTURE(k);
    std::vector<size_t> lengths;
    for (size_t i = 0; i < k; i++) lengths.push_back(size_t(rng() % 200));
    const auto runs = draw_runs(pool, lengths, rng);
    std::vector<size_t> steps;
    for (size_t i = 0; i < k; i++) steps.push_back(1 + size_t(rng() % 5));
    check_merge(runs, [&](size_t i) { return steps[i]; });
  }
}
