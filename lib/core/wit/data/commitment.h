// Dataset commitments: ONE Merkle tree (root) over the sorted, distinct record
// leaves, with the reader spec, the record counts and per-source digests. The
// run's data order permutes positions of this tree, and every proof (inclusion,
// exclusion, usage, contamination, a replayed batch) is against its root.
// Where a record sits in its files is an index lookup, never a second root.
// Format: docs/commitment.md.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/base/parallel.h"
#include "wit/data/readers.h"

namespace wit {

inline constexpr const char* kCommitFormat = "wit.commit";
// Version 3: the data tree is ranged (kDataTree, docs/proofs.md). Version 2
// (an RFC 6962 tree over the sorted leaves) is still read: its inclusion
// proofs verify, its exclusion proofs only if its tree is sorted.
inline constexpr int kCommitVersion = 3;
inline constexpr int kCommitVersionUnranged = 2;
// Piece size of the source digest for text and file readers; the tokens reader
// uses its window (token_bytes * seq_len bytes) so the digest reuses the record leaves.
inline constexpr uint64_t kDefaultPieceSize = uint64_t(1) << 20;

struct SourceInfo {
  std::string path;
  uint64_t size = 0;
  uint64_t piece_size = 0;
  uint64_t records = 0;
  Hash32 digest;  // H(kSourceDigest || le64 size || le64 piece_size || MTH(pieces))
};

struct Commitment {
  int version = kCommitVersion;  // kCommitVersion or kCommitVersionUnranged (read only)
  ReaderSpec reader;
  uint64_t records = 0;  // records the files held, duplicates included
  uint64_t n = 0;        // distinct records: the leaves of the tree, positions 0 .. n-1
  Hash32 root;           // MTH of the sorted distinct record leaves
  std::vector<SourceInfo> sources;
  std::vector<std::string> inputs;  // the paths as given to wit-commit

  nlohmann::json to_json() const;
  // Pretty JSON with a final newline; byte-identical for identical inputs.
  std::string dump() const;
  // Throws wit::Error naming `where` on a wrong format name, unknown version or bad field.
  static Commitment from_json(const nlohmann::json& j, const std::string& where);
  static Commitment load(const std::string& path);
  // What a person needs to read the commitment (wit-commit show): counts in
  // the files and distinct, reader, the root and what it is for, the sources.
  std::string describe() const;
  // Where global record number `record` (file order, 0-based) lies: "FILE,
  // record K" (1-based K), from the sources' record counts.
  std::string place_of(uint64_t record) const;
  // The tree of this version: kDataTree (ranged), or kBlake2bTree for version 2.
  const TreeHash& tree_hash() const { return data_tree_hash(version); }
  bool ranged() const { return version >= kCommitVersion; }
  static const TreeHash& data_tree_hash(int version) { return version >= kCommitVersion ? kDataTree : kBlake2bTree; }
};

// H(0x00 || record): a record's leaf.
Hash32 record_leaf(ByteView record);

// Whether `root` is the data tree of these sorted distinct leaves, of version
// 3 (ranged) or 2 (RFC 6962): for checks that hold a commitment's root and
// its leaves but not its version (an eval's scores against its eval set). No
// root is both: a ranged root is a personalised BLAKE2b output.
bool is_data_tree_root(const std::vector<Hash32>& sorted_leaves, const Hash32& root);

// The records of `paths` opened with a reader, file after file.
struct RecordFiles {
  std::vector<std::unique_ptr<RecordSource>> readers;
  std::vector<uint64_t> first;  // global number of each reader's first record
  uint64_t records = 0;         // total, duplicates included
  // Opens every path (a reader error names the file and line).
  static RecordFiles open(const ReaderSpec& spec, const std::vector<std::string>& paths);
  // Canonical bytes of global record `i` (see RecordSource::record).
  ByteView record(uint64_t i, std::string& scratch) const;
};

// The record leaves of `paths` in file order, computed on `threads` threads (0 =
// all cores), with each source's info. `on_bytes` (may be empty) is called with
// progress in bytes of input consumed. For eval sets and certificates, which
// keep file order; the data tree is DataTree.
struct LeafSet {
  std::vector<Hash32> leaves;
  std::vector<SourceInfo> sources;
  RecordFiles files;
};
LeafSet hash_records(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                     const std::function<void(uint64_t)>& on_bytes = {});

// The one data tree of some files: the distinct record leaves in ascending byte
// order (memcmp), each with the global number of the record's first occurrence.
// Built from the leaves in file order (32 bytes a record) into one buffer of
// 40 bytes a record (leaf, record number), sorted there; peak memory is those
// 72 bytes a record plus the readers' per-record tables.
class DataTree {
 public:
  DataTree() = default;
  // Hashes every record of `files` and sorts (both in parallel). `in_file_order`
  // (may be empty) sees the leaves in file order before they are sorted: leaf
  // of record i at leaves + i * stride.
  DataTree(const RecordFiles& files, unsigned threads, const std::function<void(uint64_t)>& on_bytes = {},
           const std::function<void(const uint8_t* leaves, size_t stride)>& in_file_order = {});
  // The tree of leaves already hashed: record i's leaf is the i-th of the
  // runs taken one after the other (the streamed commit of text files).
  using LeafRun = std::vector<Hash32, HugePageAllocator<Hash32>>;
  DataTree(const std::vector<LeafRun>& runs, unsigned threads);
  uint64_t size() const { return n_; }
  uint64_t records() const { return records_; }
  const Hash32* leaves() const { return reinterpret_cast<const Hash32*>(buf_.get()); }
  const Hash32& leaf(uint64_t i) const { return leaves()[i]; }
  // Global record number of the first occurrence of leaf i.
  uint64_t first(uint64_t i) const { return first_[i]; }
  const std::vector<uint64_t, HugePageAllocator<uint64_t>>& firsts() const { return first_; }
  // Position of `leaf`, if present (binary search).
  std::optional<uint64_t> find(const Hash32& leaf) const;

 private:
  // Leaves in file order: record numbers count on from one run to the next.
  struct Span {
    const Hash32* data;
    uint64_t size;
  };
  // Sorts the runs' leaves with their record numbers into buf_ (a bucket pass
  // on a thread a run, then the buckets sorted), then keeps the first of equal
  // leaves: n_ leaves at the front, first_ their records.
  void bucket_sort(const std::vector<Span>& runs, unsigned threads);
  // Keeps the first of equal leaves of the sorted entries (see bucket_sort).
  void distinct();
  // 40 bytes per record (huge_alloc), the n_ distinct leaves at the front once built.
  std::unique_ptr<uint8_t[], HugeFree> buf_;
  void allocate(uint64_t records);
  std::vector<uint64_t, HugePageAllocator<uint64_t>> first_;
  uint64_t n_ = 0, records_ = 0;
};

// Source digests of the files. The tokens reader's pieces are the record
// leaves in file order: given `leaves_in_order` (leaf of record i at
// leaves_in_order + i * stride) they are reused, else hashed again.
std::vector<SourceInfo> source_digests(const ReaderSpec& spec, const RecordFiles& files, unsigned threads,
                                       const std::function<void(uint64_t)>& on_bytes = {},
                                       const uint8_t* leaves_in_order = nullptr, size_t stride = 0);

// Everything commit_dataset computes: the commitment and the tree the index
// stores. A commit that spilled (or a merge of shards) wrote its index as it
// went and holds no tree: `tree` is empty and `spilled_runs` > 0 (or `merged`).
struct CommitResult {
  Commitment commitment;
  DataTree tree;
  // Cached tree levels (MerkleTree::levels() layout) at kIndexCacheLevel.
  std::vector<Hash32> levels;
  size_t spilled_runs = 0;     // sorted runs spilled to disk (0: the tree was built in memory)
  uint64_t spilled_bytes = 0;  // their size on disk, at the most
  bool merged = false;         // written by merge_commits
};

// The memory a commit may use (wit-commit --memory; docs/commitment.md,
// "Bounded memory"). The streamed text commit (jsonl and lines files) holds
// about kCommitBytesPerRecord bytes a record at its peak when it builds the
// tree in memory; once the records read would pass the budget at that rate,
// it sorts what it holds into runs spilled to an unnamed scratch file in
// `spill_dir`, and merges them into the tree and the index in one pass.
inline constexpr uint64_t kDefaultCommitMemory = uint64_t(1) << 30;
inline constexpr uint64_t kCommitBytesPerRecord = 80;
struct CommitLimits {
  uint64_t memory = kDefaultCommitMemory;  // 0: no limit (never spill)
  std::string spill_dir;                   // "" = the temporary directory ($TMPDIR, else /tmp)
  // Told once, when the first run spills: how much disk the runs will take.
  std::function<void(const std::string&)> note;
};
// The level from which an index caches tree nodes: a proof then costs at most
// about 2^8 hashes per path node below the cache.
inline constexpr unsigned kIndexCacheLevel = 8;
// Where commit_dataset sends the index while it works (IndexWriter, index.h).
// Both are called on one thread of its own: `entries` as soon as the sorted
// distinct leaves are known (while the tree above them is hashed), `finish`
// once the root and the cached levels are (while the source digests of the
// ordinary path are hashed). Either may be empty.
// A commit that spills writes the index itself, in one pass, to `file`
// (which must then be set, and seekable).
struct IndexSink {
  std::function<void(const DataTree&)> entries;
  std::function<void(const CommitResult&)> finish;
  AtomicFile* file = nullptr;
  explicit operator bool() const { return entries || finish; }
};
// Commits the records of `paths`, sending the index to `index` as it goes;
// the sink's exception, if any, is rethrown.
CommitResult commit_dataset(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                            const std::function<void(uint64_t)>& on_bytes = {}, const IndexSink& index = {},
                            const CommitLimits& limits = CommitLimits{});

// Commits made apart (shards: a commitment and its index each) merged, in the
// order given, into the commitment and index one commit of all their files
// in that order makes (docs/commitment.md, "Shards"): the sorted leaves of
// the shards' indexes k-way merged, each shard's record numbers counted on
// from the records of the shards before it, the sources and inputs one
// after the other. The index goes to index.file (may be null); scratch
// files go to limits.spill_dir. Throws wit::Error naming the shard at fault.
struct ShardFiles {
  std::string commit, index;
};
CommitResult merge_commits(const std::vector<ShardFiles>& shards, const IndexSink& index, const CommitLimits& limits,
                           unsigned threads);

// The first difference between what `files` hold and commitment `c`, in the
// order a person can act on (number of files, each file's record count and
// digest, then the counts and the root), or ok when they match. `tree` is
// the files' tree; digests are computed only when the tree differs.
Problem first_mismatch(const Commitment& c, const ReaderSpec& spec, const RecordFiles& files, const DataTree& tree,
                       unsigned threads);

class Index;  // index.h

// Random access to the committed records by tree position, checked against
// their commitment when opened: the files are read with the commitment's
// reader, their tree rebuilt, and any difference refused.
//
// Two ways (docs/commitment.md, "reader of a corpus"):
//  - whole: every file held (RecordFiles::open) and the tree built in memory
//    (DataTree, about 100 B a record); the constructor without an index.
//  - bounded, given the commitment's index (loaded and audited against `c` by
//    load_commit_pair): the files are checked by the commit itself
//    (commit_dataset within `limits`, spilling past its budget, the index it
//    would write discarded), so no DataTree is held; positions (leaf,
//    first occurrence) are read from the index. A corpus whose files take at
//    most limits.memory / kDatasetWholeShare bytes (and a version-2
//    commitment, whose tree the commit does not build) takes the whole way,
//    which reads the files once instead of twice.
//    After the check the records are read on demand (docs/commitment.md,
//    step 3): a second pass in order (jsonl, lines, fortune) notes where
//    each record's bytes lie, 16 B a record in an unnamed scratch file, and
//    copies there only the records that are not a slice of their file (a
//    jsonl value with escapes, a fortune with CRLF lines, a record cut by a
//    read); tokens need nothing (record k is at k x window). record(i)
//    reads the one record with pread, hashes it and compares it with leaf
//    i, so a file changed after the check is refused, never served. Other
//    readers (files) and inputs that are not regular files are held whole
//    after the check (RecordFiles::open).
inline constexpr uint64_t kDatasetWholeShare = 8;
class Dataset {
 public:
  // Throws wit::Error naming the first mismatch when the files' tree is not
  // the commitment's (see first_mismatch).
  Dataset(const Commitment& c, const std::vector<std::string>& paths, unsigned threads);
  // The bounded way (above); `index` must outlive the Dataset. The same
  // errors, in the same words, as the constructor above.
  Dataset(const Commitment& c, const Index& index, const std::vector<std::string>& paths, unsigned threads,
          const CommitLimits& limits = CommitLimits{});
  // Distinct records: the positions 0 .. size()-1 of the tree.
  uint64_t size() const;
  // The record at tree position i (its first occurrence in the files).
  std::string record(uint64_t i) const;
  const Hash32& leaf(uint64_t i) const;
  // Global record number (file order) of the first occurrence of position i.
  uint64_t first(uint64_t i) const;
  // Whether positions come from the index (the bounded way).
  bool bounded() const { return index_ != nullptr; }
  // Whether records are read from the files on demand (the bounded way's
  // step 3) rather than held.
  bool on_demand() const { return demand_ != nullptr; }
  // The tree, held on the whole way only (throws on the bounded way).
  const DataTree& tree() const;

 private:
  void open_whole(const Commitment& c, const std::vector<std::string>& paths, unsigned threads);
  RecordFiles files_;
  DataTree tree_;
  const Index* index_ = nullptr;
  struct OnDemand;  // commitment.cpp
  std::shared_ptr<const OnDemand> demand_;
};

}  // namespace wit
