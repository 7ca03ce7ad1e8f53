// The commands of wit-commit (commit_cmd.h): what main used to decide.
#include "wit/cmd/commit_cmd.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "wit/cmd/cli.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/cmd/file_kind.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/base/parallel.h"
#include "wit/base/progress.h"
#include "wit/data/readers.h"
#include "wit/data/sorted_merge.h"
#include "wit/data/tree_audit.h"

namespace wit {

namespace {

// OUT.commit.json -> OUT.widx; other names get ".widx" appended.
std::string default_index_path(const std::string& out) {
  const std::string suffixes[] = {".commit.json", ".json"};
  for (const auto& s : suffixes)
    if (out.size() > s.size() && out.compare(out.size() - s.size(), s.size(), s) == 0)
      return out.substr(0, out.size() - s.size()) + ".widx";
  return out + ".widx";
}

// Where a commit spills its runs and a merge its scratch: beside the index
// (else the commitment; else the temporary directory).
CommitLimits limits_for(const std::string& memory, const std::string& out, const std::string& index_path, bool quiet) {
  CommitLimits l;
  l.memory = parse_size(memory, "--memory");
  l.spill_dir = !index_path.empty() ? parent_dir(index_path) : out != "-" ? parent_dir(out) : temp_root();
  if (!quiet) l.note = [](const std::string& s) { cli::note(s); };
  return l;
}

// Writes the commitment and publishes it with its index (staged in `idx`):
// both renamed under the pair's lock, so another wit-commit to the same
// output waits, and a reader holding the lock shared sees both or neither.
void publish_pair(const CommitResult& r, const std::string& out, AtomicFile* idx) {
  AtomicFile commit(out);
  commit.write(r.commitment.dump());
  const auto pair_lock = lock_commit_pair(out, true);
  // Both renames, then the directory's fsync once (the index's directory
  // is synced again only where it is another one: a no-op otherwise). A
  // signal waits for the pair: it finds both in place or neither. The
  // slow half of each commit (fsync, the output rules) comes first.
  if (idx) idx->prepare();
  commit.prepare();
  {
    const OutputSection pair;
    if (idx) idx->commit(false);
    commit.commit(false);
  }
  if (out != "-") sync_parent_dir(commit.target());
  if (idx) sync_parent_dir(idx->target());
  phase_done("publish: fsync and rename the pair");
}

}  // namespace

uint64_t parse_size(const std::string& v, const std::string& what) {
  size_t i = 0;
  uint64_t n = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; i++) {
    if (n > (UINT64_MAX - 9) / 10) throw Error(what + " is too large", v);
    n = n * 10 + uint64_t(v[i] - '0');
  }
  std::string unit = v.substr(i);
  for (char& ch : unit) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'i') unit.pop_back();
  const std::string units = "kmgt";
  unsigned shift = 0;
  if (unit == "b" || unit.empty()) shift = 0;
  else if (unit.size() == 1 && units.find(unit[0]) != std::string::npos) shift = 10 * unsigned(units.find(unit[0]) + 1);
  else i = 0;
  if (i == 0) throw Error(what + " is not a size (bytes, or a number with K, M, G or T: 512M, 4G)", v);
  if (shift && n > (UINT64_MAX >> shift)) throw Error(what + " is too large", v);
  return n << shift;
}

int commit_show_cmd(const std::string& commit_path, const std::string& index_path) {
  const auto pair_lock = lock_commit_pair(commit_path, false);
  Commitment c = Commitment::load(commit_path);
  std::string text = "commitment   " + commit_path + " (" + kCommitFormat + " version " +
                     std::to_string(kCommitVersion) + ")\n" + c.describe();
  if (!index_path.empty()) {
    Index idx(index_path);
    idx.check_matches(c, commit_path);  // with the full audit
    text += "index        " + index_path + ": matches; its " + std::to_string(idx.n()) +
            " leaves are sorted, distinct and give the root\n";
  }
  std::cout << text;
  return cli::kOk;
}

int commit_leaves_cmd(const std::string& index_path, const std::string& out, bool quiet) {
  const Index idx(index_path);
  write_leaves(idx, out);
  if (!quiet && out != "-")
    cli::note("wrote " + cli::count_of(idx.n(), "leaf", "leaves") + " of root " + idx.root().hex().substr(0, 16) + " to " + out);
  return cli::kOk;
}

int commit_cmd(CommitArgs a) {
  if (a.files.empty()) throw Error("no input files (wit-commit [options] FILE... or wit-commit show COMMIT)");
  if (!a.reader_given) {  // by the inputs' names (docs/records.md)
    a.reader = default_reader(a.files);
    if (a.reader == "jsonl" && !a.quiet)
      cli::note("reading the .jsonl inputs with --reader jsonl (the record is each line's \"" + a.field +
                "\" field); --reader lines commits the raw lines");
  }
  ReaderSpec spec;
  spec.kind = ReaderSpec::parse_kind(a.reader);
  spec.field = a.field;
  spec.seq_len = a.seq_len;
  spec.token_bytes = a.token_bytes;
  if (a.token_bytes_given && spec.kind != ReaderKind::kTokens)
    throw Error("--token-bytes applies to the tokens reader only", "--reader " + a.reader);
  spec.validate();
  if (a.index_path.empty() && !a.no_index && a.out != "-") a.index_path = default_index_path(a.out);
  if (a.index_path == "-" || (!a.index_path.empty() && a.index_path == a.out))
    throw Error("the index needs a file of its own", "--index " + a.index_path);
  check_outputs_apart(a.files, {a.out, a.index_path});  // the default index path too

  uint64_t total = 0;
  for (const auto& f : a.files) {
    std::error_code ec;
    if (f != "-" && std::filesystem::is_regular_file(f, ec)) total += std::filesystem::file_size(f, ec);
  }
  // Text readers read every file twice (the records, then the source
  // digest); the tokens reader's digest reuses its record leaves.
  if (spec.kind != ReaderKind::kTokens) total *= 2;
  Progress progress("hashing", total, "B", a.quiet);
  auto t0 = std::chrono::steady_clock::now();
  // Both outputs are staged first and renamed into place at the end, the
  // index first; its entries are written while the tree is hashed, and its
  // fsync waited for on the writer's thread (IndexWriter).
  std::unique_ptr<AtomicFile> idx;
  std::unique_ptr<IndexWriter> writer;
  IndexSink sink;
  if (!a.index_path.empty()) {
    idx = std::make_unique<AtomicFile>(a.index_path, true);
    writer = std::make_unique<IndexWriter>(*idx);
    sink.entries = [&](const DataTree& t) { writer->entries(t); };
    sink.finish = [&](const CommitResult& c) { writer->finish(c); };
    sink.file = idx.get();
  }
  CommitResult r = commit_dataset(spec, a.files, a.threads, [&](uint64_t b) { progress.add(b); }, sink,
                                  limits_for(a.memory, a.out, a.index_path, a.quiet));
  publish_pair(r, a.out, idx.get());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  uint64_t bytes = 0;
  for (const auto& s : r.commitment.sources) bytes += s.size;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.2fs, %s/s", secs, human_bytes(secs > 0 ? double(bytes) / secs : 0).c_str());
  progress.finish();
  if (!a.quiet)
    cli::note("committed " + cli::count_of(r.commitment.records, "record") + " (" +
              std::to_string(r.commitment.n) + " distinct) from " +
              cli::count_of(r.commitment.sources.size(), "file") + ", " + human_bytes(double(bytes)) +
              " in " + rate + "; root " + r.commitment.root.hex().substr(0, 16) +
              (a.index_path.empty() ? "" : "; index " + a.index_path));
  if (!a.quiet && r.spilled_runs)
    cli::note("sorted and merged " + cli::count_of(r.spilled_runs, "spilled run") + " (" +
              human_bytes(double(r.spilled_bytes)) + " of temporary disk, now freed) within --memory " + a.memory);
  if (!a.quiet && spec.kind == ReaderKind::kFortune)
    for (const auto& s : r.commitment.sources)
      if (s.records == 1 && s.size > 0)
        cli::note("warning: " + s.path + " has no '%' separator line, so it is one record (is it a fortune file? "
                  "--reader lines makes one record a line)");
  return cli::kOk;
}

}  // namespace wit

namespace wit {

int commit_merge_cmd(const MergeArgs& a) {
  if (a.shards.empty()) throw Error("no shards to merge (wit-commit merge SHARD.commit.json... -o OUT)");
  std::string index_path = a.index_path;
  if (index_path.empty() && !a.no_index && a.out != "-") index_path = default_index_path(a.out);
  if (index_path == "-" || (!index_path.empty() && index_path == a.out))
    throw Error("the index needs a file of its own", "--index " + index_path);
  std::vector<ShardFiles> shards;
  std::vector<std::string> inputs;
  for (const auto& s : a.shards) {
    if (s == "-") throw Error("a shard is a commitment file with its index beside it, not stdin", s);
    shards.push_back({s, default_index_path(s)});
    inputs.push_back(s);
    inputs.push_back(shards.back().index);
  }
  check_outputs_apart(inputs, {a.out, index_path});
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<AtomicFile> idx;
  IndexSink sink;
  if (!index_path.empty()) {
    idx = std::make_unique<AtomicFile>(index_path, true);
    sink.file = idx.get();
  }
  CommitResult r = merge_commits(shards, sink, limits_for(a.memory, a.out, index_path, a.quiet), a.threads);
  publish_pair(r, a.out, idx.get());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.quiet) {
    char t[32];
    std::snprintf(t, sizeof t, "%.2fs", secs);
    cli::note("merged " + cli::count_of(a.shards.size(), "shard") + ": " +
              cli::count_of(r.commitment.records, "record") + " (" + std::to_string(r.commitment.n) +
              " distinct) from " + cli::count_of(r.commitment.sources.size(), "file") + " in " + t + "; root " +
              r.commitment.root.hex().substr(0, 16) + (index_path.empty() ? "" : "; index " + index_path));
  }
  return cli::kOk;
}

}  // namespace wit
