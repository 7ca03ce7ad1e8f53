// wit-query: inclusion, exclusion and contamination proofs against a data
// commitment, and verification of any proof with the commitment alone.
#include <iostream>

#include "wit/cli.h"
#include "wit/commitment.h"
#include "wit/contamination.h"
#include "wit/error.h"
#include "wit/file_kind.h"
#include "wit/index.h"
#include "wit/io.h"
#include "wit/proofs.h"
#include "wit/readers.h"
#include "wit/runlog.h"
#include "wit/tree_audit.h"
#include "wit/usage.h"

namespace {

struct RecordArgs {
  std::string text, record_file, leaf;
  bool embed = false;
  void add(CLI::App* sub) {
    auto* g = sub->add_option_group("record", "The record asked about (exactly one)");
    g->add_option("--text", text, "Record given as text (its UTF-8 bytes)");
    g->add_option("--record-file", record_file, "Record given as a file's bytes (- = stdin)");
    g->add_option("--leaf", leaf, "Record given by its leaf hash (hex)");
    g->require_option(1);
    sub->add_flag("--embed-record", embed, "Put the record itself into the proof");
  }
  // The leaf hash asked about, and the record bytes when known.
  wit::Hash32 resolve(std::optional<std::string>& record) const {
    if (!leaf.empty()) {
      wit::Hash32 h;
      if (!wit::Hash32::from_hex(leaf, h)) throw wit::Error("--leaf is not 64 hex digits", leaf);
      if (embed) throw wit::Error("--embed-record needs --text or --record-file", "--leaf");
      return h;
    }
    record = !record_file.empty() ? wit::read_file(record_file) : text;
    if (embed && !wit::is_utf8(*record))
      throw wit::Error("--embed-record needs a UTF-8 record", record_file.empty() ? "--text" : record_file,
                       "leave out --embed-record; the proof still names the record by its leaf hash");
    return wit::record_leaf(wit::ByteView(*record));
  }
};

struct Loaded {
  wit::Commitment commit;
  std::unique_ptr<wit::Index> index;
};

// The commitment and its index, checked against it in full (check_matches
// audits the whole index, O(n)): an exclusion or a usage claim rests on it,
// since a gap between two leaves means absence only in a sorted distinct tree.
Loaded load(const std::string& commit_path, const std::string& index_path) {
  const auto pair_lock = wit::lock_commit_pair(commit_path, false);  // not while wit-commit replaces the pair
  Loaded l{wit::Commitment::load(commit_path), std::make_unique<wit::Index>(index_path)};
  l.index->check_matches(l.commit, commit_path);
  return l;
}

// "position P of N distinct records (first at FILE, record K)".
std::string position_words(const Loaded& l, uint64_t pos) {
  return "position " + std::to_string(pos) + " of " + std::to_string(l.commit.n) + " distinct records (first at " +
         l.commit.place_of(l.index->first_record(pos)) + ")";
}

void emit(const std::string& out, const nlohmann::json& doc) { wit::write_file_atomic(out, doc.dump(2) + "\n"); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Exact data-usage proofs: inclusion, exclusion, contamination; verify any proof"};
  wit::cli::setup(app, "wit-query");
  app.require_subcommand(1);
  std::string commit_path, index_path, out = "-";
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No summary on stderr (before or after the subcommand)");

  RecordArgs inc_args, exc_args;
  auto* inc = app.add_subcommand("include", "Prove a record is in the committed data (exit 1 if it is not)");
  auto* exc = app.add_subcommand("exclude", "Prove a record is not in the committed data (exit 1 if it is)");
  for (auto* sub : {inc, exc}) {
    sub->add_option("--commit", commit_path, "Commitment JSON")->required();
    sub->add_option("--index", index_path, "Data index (.widx)")->required();
    sub->add_option("-o,--output", out, "Proof to write (- = stdout)");
    sub->add_flag("-q,--quiet", quiet, "No summary on stderr");
  }
  inc_args.add(inc);
  exc_args.add(exc);

  RecordArgs use_args;
  std::string run_dir;
  auto* use = app.add_subcommand("usage", "Prove at which steps of a run a record was trained on (exit 1 if at none)");
  use->add_option("--run", run_dir, "Run directory (its seed revealed)")->required();
  use->add_option("--commit", commit_path, "The run's data commitment JSON (default: from RUN/data.json)");
  use->add_option("--index", index_path, "Data index (.widx) (default: from RUN/data.json)");
  use->add_option("-o,--output", out, "Proof to write (- = stdout)");
  use->add_flag("-q,--quiet", quiet, "No summary on stderr");
  use_args.add(use);

  auto* con = app.add_subcommand("contamination", "Certify that no record of an eval set is in the committed data");
  std::string reader, field = "text";
  uint64_t seq_len = 0;
  unsigned threads = 0;
  bool no_ngrams = false;
  std::vector<std::string> eval_files, train_files;
  con->add_option("--commit", commit_path, "Training data commitment JSON")->required();
  con->add_option("--index", index_path, "Training data index (.widx)")->required();
  con->add_option("--reader", reader, "Reader for the eval files (default: the commitment's)")
      ->check(CLI::IsMember(wit::ReaderSpec::kind_names()));
  con->add_option("--field", field, "JSONL field (jsonl reader)");
  con->add_option("--seq-len", seq_len, "Tokens per record (tokens reader)");
  con->add_option("--train-data", train_files, "A training file, checked against the commitment and used for the n-gram statistic (repeat for more; default: the commitment's inputs)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  con->add_flag("-q,--quiet", quiet, "No summary on stderr");
  con->add_flag("--no-ngrams", no_ngrams, "Skip the n-gram overlap statistic");
  con->add_option("-j,--threads", threads, "Hashing threads (0 = all cores)");
  con->add_option("-o,--output", out, "Certificate to write (- = stdout)");
  con->add_option("EVALFILE", eval_files, "Eval set files")->required();

  auto* ver = app.add_subcommand("verify", "Verify a proof or certificate with the commitment alone (exit 1 if invalid)");
  std::string proof_path = "-";
  bool json_out = false;
  ver->add_option("--commit", commit_path, "Commitment JSON")->required();
  ver->add_option("PROOF", proof_path, "Proof or certificate JSON (- = stdin)");
  ver->add_flag("--json", json_out, "Print the verdict as JSON");
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
    if (*aud) {
      const wit::Commitment c = wit::Commitment::load(commit_path);
      const wit::LeavesAudit a = wit::audit_leaves_file(leaves_path, c, threads);
      const std::string summary = a.ok ? "the " + std::to_string(a.n) +
                                             " leaves are strictly increasing and give the commitment's root " + c.root.hex()
                                       : "";
      if (json_out)
        std::cout << nlohmann::json{{"ok", a.ok}, {"reason", a.reason}, {"summary", summary}, {"n", a.n}}.dump() << "\n";
      else
        std::cout << (a.ok ? "ok: " + summary : "failed: " + a.reason) << "\n";
      return a.ok ? wit::cli::kOk : wit::cli::kNegative;
    }
    if (*inc || *exc) {
      const RecordArgs& ra = *inc ? inc_args : exc_args;
      Loaded l = load(commit_path, index_path);
      std::optional<std::string> record;
      wit::Hash32 leaf = ra.resolve(record);
      auto pos = l.index->find(leaf);
      std::optional<std::string> embed = ra.embed ? record : std::nullopt;
      if (*inc) {
        if (!pos) {
          wit::cli::note("record " + leaf.hex() + " is not in the committed data");
          std::cerr << "hint: 'wit-query exclude' proves its absence\n";
          return wit::cli::kNegative;
        }
        emit(out, wit::inclusion_document(l.commit, wit::prove_inclusion(*l.index, leaf, *pos), embed));
        if (!quiet) wit::cli::note("included: " + position_words(l, *pos));
      } else {
        if (pos) {
          wit::cli::note("record " + leaf.hex() + " is in the committed data (" + position_words(l, *pos) + ")");
          std::cerr << "hint: 'wit-query include' proves its presence\n";
          return wit::cli::kNegative;
        }
        emit(out, wit::exclusion_document(l.commit, wit::prove_exclusion(*l.index, leaf), embed));
        if (!quiet) wit::cli::note("excluded: not among the " + std::to_string(l.commit.n) + " distinct records");
      }
      return wit::cli::kOk;
    }
    if (*use) {
      wit::expect_args({{"--run", run_dir, wit::FileKind::kRunDir}, {"--commit", commit_path, wit::FileKind::kCommitment}});
      if (commit_path.empty() || index_path.empty()) {  // the run's own
        const wit::RunDataFiles d = wit::run_data_files(run_dir, {commit_path, index_path, {"-"}});
        commit_path = d.commit;
        index_path = d.index;
      }
      Loaded l = load(commit_path, index_path);
      wit::check_run_data(l.commit, commit_path, run_dir);
      std::optional<std::string> record;
      const wit::Hash32 leaf = use_args.resolve(record);
      const auto pos = l.index->find(leaf);
      if (!pos) {
        wit::cli::note("record " + leaf.hex() + " is not in the committed data, so no step trained on it");
        std::cerr << "hint: 'wit-query exclude' proves its absence\n";
        return wit::cli::kNegative;
      }
      const nlohmann::json doc =
          wit::usage_document(l.commit, *l.index, run_dir, leaf, *pos, use_args.embed ? record : std::nullopt);
      // Check what we are about to publish: a run whose log or heads are off gives no proof.
      const wit::Verdict v = wit::verify_document(doc, l.commit, run_dir);
      if (!v.ok) throw wit::Error("the run cannot prove usage: " + v.reason, run_dir);
      emit(out, doc);
      if (!quiet) wit::cli::note(v.summary);
      return doc["steps"].empty() ? wit::cli::kNegative : wit::cli::kOk;
    }
    if (*con) {
      Loaded l = load(commit_path, index_path);
      wit::ContaminationInput in;
      in.commitment = &l.commit;
      in.commit_path = commit_path;
      in.index = l.index.get();
      in.eval_reader = l.commit.reader;
      if (!reader.empty()) {
        in.eval_reader = wit::ReaderSpec{};
        in.eval_reader.kind = wit::ReaderSpec::parse_kind(reader);
        in.eval_reader.field = field;
        in.eval_reader.seq_len = seq_len;
        // Eval token ids are as wide as the committed ones (docs/records.md).
        if (in.eval_reader.kind == wit::ReaderKind::kTokens && l.commit.reader.kind == wit::ReaderKind::kTokens)
          in.eval_reader.token_bytes = l.commit.reader.token_bytes;
      }
      in.eval_paths = eval_files;
      in.train_paths = train_files;
      in.ngrams = !no_ngrams;
      in.threads = threads;
      nlohmann::json cert = wit::contamination_certificate(in);
      emit(out, cert);
      const bool clean = cert["clean"].get<bool>();
      if (!quiet) {
        std::string msg = clean ? "clean: all " + std::to_string(cert["absent"].size()) +
                                      " distinct eval records proved absent"
                                : "contaminated: " + std::to_string(cert["present"].size()) + " of " +
                                      std::to_string(cert["eval"]["n_distinct"].get<uint64_t>()) +
                                      " distinct eval records are in the training data";
        const auto& ng = cert["ngram_overlap"];
        if (ng["computed"].get<bool>())
          msg += "; 13-gram overlap (statistic): " + std::to_string(ng["eval_records_with_overlap"].get<uint64_t>()) +
                 " records share an n-gram";
        wit::cli::note(msg);
      }
      return clean ? wit::cli::kOk : wit::cli::kNegative;
    }
    // verify
    wit::Commitment c = wit::Commitment::load(commit_path);
    std::string text = wit::read_file(proof_path);
    const std::string where = proof_path == "-" ? "stdin" : proof_path;
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) throw wit::Error("invalid proof: not valid json", where);
    wit::Verdict v = wit::verify_document(doc, c, where);
    if (v.ok && !cover_files.empty()) {
      if (doc.value("format", std::string()) != wit::kContaminationFormat)
        throw wit::Error("--eval applies to contamination certificates only", where);
      wit::ReaderSpec spec = doc.contains("eval") && doc["eval"].contains("reader")
                                 ? wit::ReaderSpec::from_json(doc["eval"]["reader"], where)
                                 : c.reader;
      if (!cover_reader.empty()) {
        spec = wit::ReaderSpec{};
        spec.kind = wit::ReaderSpec::parse_kind(cover_reader);
      }
      v = wit::certificate_covers(doc, wit::hash_records(spec, cover_files, 0).leaves, where);
    }
    if (json_out)
      std::cout << nlohmann::json{{"valid", v.ok}, {"reason", v.reason}, {"summary", v.summary}}.dump() << "\n";
    else
      std::cout << (v.ok ? "valid: " + v.summary : "invalid: " + v.reason) << "\n";
    return v.ok ? wit::cli::kOk : wit::cli::kNegative;
  });
}
