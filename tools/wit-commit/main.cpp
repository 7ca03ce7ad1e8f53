// wit-commit: commit an ordered dataset (records read from files) to a
// commitment JSON and a data index. Logic lives in wit_core (commit_cmd.h,
// commitment.h, index.h).
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/commit_cmd.h"
#include "wit/data/readers.h"

int main(int argc, char** argv) {
  CLI::App app{"Commit a dataset: records -> commitment JSON (one tree over the distinct records) + data index"};
  wit::cli::setup(app, "wit-commit");
  wit::CommitArgs a;
  auto* reader_opt = app.add_option("--reader", a.reader, "How files become records (default: jsonl for .jsonl inputs, else lines)")
                         ->check(CLI::IsMember(wit::ReaderSpec::kind_names()))
                         ->default_str("lines");
  app.add_option("--field", a.field, "JSONL field holding the record (jsonl)")->default_str("text");
  app.add_option("--seq-len", a.seq_len, "Tokens per record (tokens reader)");
  auto* token_bytes_opt =
      app.add_option("--token-bytes", a.token_bytes, "Bytes per token id, 2 (uint16) or 4 (uint32) (tokens reader)")
          ->check(CLI::IsMember({2u, 4u}))
          ->default_str("2");
  app.add_option("-o,--output", a.out, "Commitment JSON to write (- = stdout)")->default_str("-");
  wit::cli::mark_output(app.add_option("--index", a.index_path, "Index to write (default: beside -o as NAME.widx)"));
  app.add_flag("--no-index", a.no_index, "Write no index");
  app.add_option("-j,--threads", a.threads, "Hashing threads (0 = all cores)")->default_str("0");
  app.add_flag("-q,--quiet", a.quiet, "No progress or summary on stderr");
  app.add_option("--memory", a.memory,
                 "Memory budget, bytes or with K, M, G, T (1024s; 0 = no limit): past it, sorted runs spill to disk "
                 "beside the index")
      ->type_name("SIZE")
      ->default_str("1G");
  app.add_option("FILE", a.files, "Input files (a directory for --reader files; - = stdin)");
  std::string show_commit, show_index;
  auto* show = app.add_subcommand("show", "Print a commitment for a person to read (and audit an index against it)");
  show->add_option("COMMIT", show_commit, "Commitment JSON")->required();
  show->add_option("--index", show_index, "Also audit this index: built for the commitment, sorted, reproducing its root");
  std::string leaves_index, leaves_out;
  auto* leaves = app.add_subcommand("leaves", "Export the index's sorted leaves to a leaves file, for an audit of the tree with the commitment alone (docs/leaves.md)");
  leaves->add_option("--index", leaves_index, "Data index (.widx) whose leaves to export")->required()->type_name("I");
  wit::cli::mark_output(leaves->add_option("-o,--output", leaves_out, "Leaves file to write (- = stdout, not a terminal)"))
      ->required()
      ->type_name("FILE");
  wit::MergeArgs m;
  auto* merge = app.add_subcommand("merge", "Merge shards committed apart into the commitment of all their files, in the order given (docs/commitment.md)");
  merge->add_option("SHARD", m.shards, "Shard commitments (each with its index beside it, NAME.widx)")->required();
  wit::cli::mark_output(merge->add_option("-o,--output", m.out, "Merged commitment JSON to write (- = stdout)"))->default_str("-");
  wit::cli::mark_output(merge->add_option("--index", m.index_path, "Merged index to write (default: beside -o as NAME.widx)"));
  merge->add_flag("--no-index", m.no_index, "Write no index");
  merge->add_option("-j,--threads", m.threads, "Hashing threads (0 = all cores)")->default_str("0");
  merge->add_option("--memory", m.memory, "Memory budget for the merge's read buffers (as wit-commit --memory)")
      ->type_name("SIZE")
      ->default_str("1G");
  merge->add_flag("-q,--quiet", m.quiet, "No summary on stderr");
  app.require_subcommand(0, 1);

  return wit::cli::run(app, argc, argv, [&] {
    if (show->parsed()) return wit::commit_show_cmd(show_commit, show_index);
    if (leaves->parsed()) return wit::commit_leaves_cmd(leaves_index, leaves_out, a.quiet);
    if (merge->parsed()) return wit::commit_merge_cmd(m);
    a.reader_given = reader_opt->count() > 0;
    a.token_bytes_given = token_bytes_opt->count() > 0;
    return wit::commit_cmd(a);
  });
}
