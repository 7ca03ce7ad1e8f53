// wit-query: inclusion, exclusion and contamination proofs against a data
// commitment, and verification of any proof with the commitment alone.
#include "wit/cmd/cli.h"
#include "wit/cmd/query_cmd.h"
#include "wit/data/readers.h"

namespace {

// The record options of include, exclude and usage.
void add_record_options(CLI::App* sub, wit::RecordQuery& r) {
  auto* g = sub->add_option_group("record", "The record asked about (exactly one)");
  g->add_option("--text", r.text, "Record given as text (its UTF-8 bytes)");
  g->add_option("--record-file", r.record_file, "Record given as a file's bytes (- = stdin)");
  g->add_option("--leaf", r.leaf, "Record given by its leaf hash (hex)");
  g->require_option(1);
  sub->add_flag("--embed-record", r.embed, "Put the record itself into the proof");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Exact data-usage proofs: inclusion, exclusion, contamination; verify any proof"};
  wit::cli::setup(app, "wit-query");
  app.require_subcommand(1);
  std::string commit_path, index_path, out = "-";
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No summary on stderr (before or after the subcommand)");

  wit::RecordQuery inc_args, exc_args;
  auto* inc = app.add_subcommand("include", "Prove a record is in the committed data (exit 1 if it is not)");
  auto* exc = app.add_subcommand("exclude", "Prove a record is not in the committed data (exit 1 if it is)");
  for (auto* sub : {inc, exc}) {
    sub->add_option("--commit", commit_path, "Commitment JSON")->required();
    sub->add_option("--index", index_path, "Data index (.widx)")->required();
    sub->add_option("-o,--output", out, "Proof to write (- = stdout)");
    sub->add_flag("-q,--quiet", quiet, "No summary on stderr");
  }
  add_record_options(inc, inc_args);
  add_record_options(exc, exc_args);

  wit::RecordQuery use_args;
  std::string run_dir;
  auto* use = app.add_subcommand("usage", "Prove at which steps of a run a record was trained on (exit 1 if at none)");
  use->add_option("--run", run_dir, "Run directory (its seed revealed)")->required();
  use->add_option("--commit", commit_path, "The run's data commitment JSON (default: from RUN/data.json)");
  use->add_option("--index", index_path, "Data index (.widx) (default: from RUN/data.json)");
  use->add_option("-o,--output", out, "Proof to write (- = stdout)");
  use->add_flag("-q,--quiet", quiet, "No summary on stderr");
  add_record_options(use, use_args);

  auto* con = app.add_subcommand("contamination", "Certify that no record of an eval set is in the committed data");
  wit::ContaminationQuery cq;
  unsigned threads = 0;
  con->add_option("--commit", commit_path, "Training data commitment JSON")->required();
  con->add_option("--index", index_path, "Training data index (.widx)")->required();
  con->add_option("--reader", cq.reader, "Reader for the eval files (default: the commitment's)")
      ->check(CLI::IsMember(wit::ReaderSpec::kind_names()));
  con->add_option("--field", cq.field, "JSONL field (jsonl reader)");
  con->add_option("--seq-len", cq.seq_len, "Tokens per record (tokens reader)");
  con->add_option("--train-data", cq.train_files, "A training file, checked against the commitment and used for the n-gram statistic (repeat for more; default: the commitment's inputs)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  con->add_flag("-q,--quiet", quiet, "No summary on stderr");
  con->add_flag("--no-ngrams", cq.no_ngrams, "Skip the n-gram overlap statistic");
  con->add_option("-j,--threads", cq.threads, "Hashing threads (0 = all cores)");
  con->add_option("-o,--output", out, "Certificate to write (- = stdout)");
  con->add_option("EVALFILE", cq.eval_files, "Eval set files")->required();

  auto* ver = app.add_subcommand("verify", "Verify a proof or certificate with the commitment alone (exit 1 if invalid)");
  std::string proof_path = "-";
  bool json_out = false;
  ver->add_option("--commit", commit_path, "Commitment JSON")->required();
  ver->add_option("PROOF", proof_path, "Proof or certificate JSON (- = stdin)");
  ver->add_flag("--json", json_out, "Print the verdict as JSON");
  bool strict = false;
  ver->add_flag("--strict", strict,
                "Refuse what holds only if the committed tree is sorted: version 2 exclusions and certificates");
  std::vector<std::string> cover_files;
  std::string cover_reader;
  ver->add_option("--eval", cover_files, "With a certificate: an eval file it must cover (repeat for more)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  ver->add_option("--reader", cover_reader, "Reader for --eval files (default: the certificate's)")
      ->check(CLI::IsMember(wit::ReaderSpec::kind_names()));

  auto* aud = app.add_subcommand("audit-leaves", "Audit a leaves file (wit-commit leaves) against a commitment: strictly increasing, giving its root (exit 1 if not)");
  std::string leaves_path = "-";
  aud->add_option("--commit", commit_path, "Commitment JSON")->required();
  aud->add_option("LEAVES", leaves_path, "Leaves file (- = stdin)");
  aud->add_option("-j,--threads", threads, "Hashing threads (0 = all cores)");
  aud->add_flag("--json", json_out, "Print the verdict as JSON");

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*aud) return wit::query_audit_leaves(commit_path, leaves_path, threads, json_out);
    if (*inc || *exc) return wit::query_prove(bool(*inc), commit_path, index_path, *inc ? inc_args : exc_args, out, quiet);
    if (*use) return wit::query_usage(run_dir, commit_path, index_path, use_args, out, quiet);
    if (*con) {
      cq.commit_path = commit_path;
      cq.index_path = index_path;
      return wit::query_contamination(cq, out, quiet);
    }
    return wit::query_verify(commit_path, proof_path, cover_files, cover_reader, json_out, strict);
  });
}
