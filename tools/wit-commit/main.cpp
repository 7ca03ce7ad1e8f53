// wit-commit: commit an ordered dataset (records read from files) to a
// commitment JSON and a data index. Logic lives in wit_core (commitment.h, index.h).
#include <chrono>
#include <filesystem>
#include <iostream>

#include "wit/cli.h"
#include "wit/commitment.h"
#include "wit/error.h"
#include "wit/file_kind.h"
#include "wit/index.h"
#include "wit/io.h"
#include "wit/progress.h"
#include "wit/readers.h"
#include "wit/tree_audit.h"

namespace {

// OUT.commit.json -> OUT.widx; other names get ".widx" appended.
std::string default_index_path(const std::string& out) {
  const std::string suffixes[] = {".commit.json", ".json"};
  for (const auto& s : suffixes)
    if (out.size() > s.size() && out.compare(out.size() - s.size(), s.size(), s) == 0)
      return out.substr(0, out.size() - s.size()) + ".widx";
  return out + ".widx";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Commit a dataset: records -> commitment JSON (one tree over the distinct records) + data index"};
  wit::cli::setup(app, "wit-commit");
  std::string reader = "lines", field = "text", out = "-", index_path;
  uint64_t seq_len = 0;
  unsigned token_bytes = 2;
  unsigned threads = 0;
  bool quiet = false, no_index = false;
  std::vector<std::string> files;
  auto* reader_opt = app.add_option("--reader", reader, "How files become records (default: jsonl for .jsonl inputs, else lines)")
                         ->check(CLI::IsMember(wit::ReaderSpec::kind_names()))
                         ->default_str("lines");
  app.add_option("--field", field, "JSONL field holding the record (jsonl)")->default_str("text");
  app.add_option("--seq-len", seq_len, "Tokens per record (tokens reader)");
  auto* token_bytes_opt =
      app.add_option("--token-bytes", token_bytes, "Bytes per token id, 2 (uint16) or 4 (uint32) (tokens reader)")
          ->check(CLI::IsMember({2u, 4u}))
          ->default_str("2");
  app.add_option("-o,--output", out, "Commitment JSON to write (- = stdout)")->default_str("-");
  wit::cli::mark_output(app.add_option("--index", index_path, "Index to write (default: beside -o as NAME.widx)"));
  app.add_flag("--no-index", no_index, "Write no index");
  app.add_option("-j,--threads", threads, "Hashing threads (0 = all cores)")->default_str("0");
  app.add_flag("-q,--quiet", quiet, "No progress or summary on stderr");
  app.add_option("FILE", files, "Input files (a directory for --reader files; - = stdin)");
  std::string show_commit, show_index;
  auto* show = app.add_subcommand("show", "Print a commitment for a person to read (and audit an index against it)");
  show->add_option("COMMIT", show_commit, "Commitment JSON")->required();
  show->add_option("--index", show_index, "Also audit this index: built for the commitment, sorted, reproducing its root");
  std::string leaves_index, leaves_out;
  auto* leaves = app.add_subcommand("leaves", "Export the index's sorted leaves to a leaves file, for an audit of the tree with the commitment alone (docs/leaves.md)");
  leaves->add_option("--index", leaves_index, "Data index (.widx) whose leaves to export")->required()->type_name("I");
  wit::cli::mark_output(leaves->add_option("-o,--output", leaves_out, "Leaves file to write (- = stdout, not a terminal)"))
      ->required()
      ->type_name("F");
  app.require_subcommand(0, 1);

  return wit::cli::run(app, argc, argv, [&] {
    if (show->parsed()) {
      const auto pair_lock = wit::lock_commit_pair(show_commit, false);
      wit::Commitment c = wit::Commitment::load(show_commit);
      std::string text = "commitment   " + show_commit + " (" + wit::kCommitFormat + " version " +
                         std::to_string(wit::kCommitVersion) + ")\n" + c.describe();
      if (!show_index.empty()) {
        wit::Index idx(show_index);
        idx.check_matches(c, show_commit);  // with the full audit
        text += "index        " + show_index + ": matches; its " + std::to_string(idx.n()) +
                " leaves are sorted, distinct and give the root\n";
      }
      std::cout << text;
      return wit::cli::kOk;
    }
    if (leaves->parsed()) {
      const wit::Index idx(leaves_index);
      wit::write_leaves(idx, leaves_out);
      if (!quiet && leaves_out != "-")
        wit::cli::note("wrote " + wit::cli::count_of(idx.n(), "leaf") + " of root " + idx.root().hex().substr(0, 16) +
                       " to " + leaves_out);
      return wit::cli::kOk;
    }
    if (files.empty()) throw wit::Error("no input files (wit-commit [options] FILE... or wit-commit show COMMIT)");
    if (reader_opt->count() == 0) {  // by the inputs' names (docs/records.md)
      reader = wit::default_reader(files);
      if (reader == "jsonl" && !quiet)
        wit::cli::note("reading the .jsonl inputs with --reader jsonl (the record is each line's \"" + field +
                       "\" field); --reader lines commits the raw lines");
    }
    wit::ReaderSpec spec;
    spec.kind = wit::ReaderSpec::parse_kind(reader);
    spec.field = field;
    spec.seq_len = seq_len;
    spec.token_bytes = token_bytes;
    if (token_bytes_opt->count() > 0 && spec.kind != wit::ReaderKind::kTokens)
      throw wit::Error("--token-bytes applies to the tokens reader only", "--reader " + reader);
    spec.validate();
    if (index_path.empty() && !no_index && out != "-") index_path = default_index_path(out);
    if (index_path == "-" || (!index_path.empty() && index_path == out))
      throw wit::Error("the index needs a file of its own", "--index " + index_path);
    wit::check_outputs_apart(files, {out, index_path});  // the default index path too

    uint64_t total = 0;
    for (const auto& f : files) {
      std::error_code ec;
      if (f != "-" && std::filesystem::is_regular_file(f, ec)) total += std::filesystem::file_size(f, ec);
    }
    // Text readers read every file twice (the records, then the source
    // digest); the tokens reader's digest reuses its record leaves.
    if (spec.kind != wit::ReaderKind::kTokens) total *= 2;
    wit::Progress progress("hashing", total, "B", quiet);
    auto t0 = std::chrono::steady_clock::now();
    // Both outputs are staged first and renamed into place at the end, the
    // index first; the index is written while the source digests are hashed.
    std::unique_ptr<wit::AtomicFile> idx;
    if (!index_path.empty()) idx = std::make_unique<wit::AtomicFile>(index_path, true);
    std::function<void(const wit::CommitResult&)> write_index;
    // The writer thread also waits for the index's fsync, while the source
    // digests are still being hashed (text readers), not after them.
    if (idx) write_index = [&](const wit::CommitResult& c) {
        wit::write_index(*idx, c);
        idx->sync();
      };
    wit::CommitResult r =
        wit::commit_dataset(spec, files, threads, [&](uint64_t b) { progress.add(b); }, write_index);
    wit::AtomicFile commit(out);
    commit.write(r.commitment.dump());
    {
      // The pair is published under its lock: another wit-commit to the same
      // output waits, and a reader holding the lock shared sees both or neither.
      const auto pair_lock = wit::lock_commit_pair(out, true);
      // Both renames, then the directory's fsync once (the index's directory
      // is synced again only where it is another one: a no-op otherwise).
      if (idx) idx->commit(false);
      commit.commit();
      if (idx) wit::sync_parent_dir(idx->target());
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    uint64_t bytes = 0;
    for (const auto& s : r.commitment.sources) bytes += s.size;
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.2fs, %s/s", secs, wit::human_bytes(secs > 0 ? double(bytes) / secs : 0).c_str());
    progress.finish();
    if (!quiet)
      wit::cli::note("committed " + wit::cli::count_of(r.commitment.records, "record") + " (" +
                     std::to_string(r.commitment.n) + " distinct) from " +
                     wit::cli::count_of(r.commitment.sources.size(), "file") + ", " + wit::human_bytes(double(bytes)) +
                     " in " + rate + "; root " + r.commitment.root.hex().substr(0, 16) +
                     (index_path.empty() ? "" : "; index " + index_path));
    if (!quiet && spec.kind == wit::ReaderKind::kFortune)
      for (const auto& s : r.commitment.sources)
        if (s.records == 1 && s.size > 0)
          wit::cli::note("warning: " + s.path + " has no '%' separator line, so it is one record (is it a fortune file? "
                         "--reader lines makes one record a line)");
    return wit::cli::kOk;
  });
}
