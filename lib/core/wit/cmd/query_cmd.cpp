// The subcommands of wit-query (query_cmd.h): what main used to decide.
#include "wit/cmd/query_cmd.h"

#include <iostream>

#include "wit/cmd/cli.h"
#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/cmd/file_kind.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/proofs/proofs.h"
#include "wit/data/readers.h"
#include "wit/run/runlog.h"
#include "wit/data/tree_audit.h"
#include "wit/run/usage.h"

namespace wit {

namespace {

struct Loaded {
  Commitment commit;
  std::unique_ptr<Index> index;
};

// The commitment and its index, checked against it in full (check_matches
// audits the whole index, O(n)): an exclusion or a usage claim rests on it,
// since a gap between two leaves means absence only in a sorted distinct tree.
Loaded load(const std::string& commit_path, const std::string& index_path) {
  CommitPair p = load_commit_pair(commit_path, index_path, IndexUse::kIndexNeeded);
  return Loaded{std::move(p.commit), std::move(p.index)};
}

// "position P of N distinct records (first at FILE, record K)".
std::string position_words(const Loaded& l, uint64_t pos) {
  return "position " + std::to_string(pos) + " of " + std::to_string(l.commit.n) + " distinct records (first at " +
         l.commit.place_of(l.index->first_record(pos)) + ")";
}

void emit(const std::string& out, const nlohmann::json& doc) { write_file_atomic(out, doc.dump(2) + "\n"); }

}  // namespace

Hash32 RecordQuery::resolve(std::optional<std::string>& record) const {
  if (!leaf.empty()) {
    Hash32 h;
    if (!Hash32::from_hex(leaf, h)) throw Error("--leaf is not 64 hex digits", leaf);
    if (embed) throw Error("--embed-record needs --text or --record-file", "--leaf");
    return h;
  }
  record = !record_file.empty() ? read_file(record_file) : text;
  if (embed && !is_utf8(*record))
    throw Error("--embed-record needs a UTF-8 record", record_file.empty() ? "--text" : record_file,
                     "leave out --embed-record; the proof still names the record by its leaf hash");
  return record_leaf(ByteView(*record));
}

int query_audit_leaves(const std::string& commit_path, const std::string& leaves_path, unsigned threads, bool json_out) {
  const Commitment c = Commitment::load(commit_path);
  const LeavesAudit a = audit_leaves_file(leaves_path, c, threads);
  return cli::print_verdict(a, json_out, {{"n", a.n}});
}

int query_prove(bool include, const std::string& commit_path, const std::string& index_path, const RecordQuery& ra,
                const std::string& out, bool quiet) {
  Loaded l = load(commit_path, index_path);
  std::optional<std::string> record;
  Hash32 leaf = ra.resolve(record);
  auto pos = l.index->find(leaf);
  std::optional<std::string> embed = ra.embed ? record : std::nullopt;
  if (include) {
    if (!pos) {
      cli::note("record " + leaf.hex() + " is not in the committed data");
      std::cerr << "hint: 'wit-query exclude' proves its absence\n";
      return cli::kNegative;
    }
    emit(out, inclusion_document(l.commit, prove_inclusion(*l.index, leaf, *pos), embed));
    if (!quiet) cli::note("included: " + position_words(l, *pos));
  } else {
    if (pos) {
      cli::note("record " + leaf.hex() + " is in the committed data (" + position_words(l, *pos) + ")");
      std::cerr << "hint: 'wit-query include' proves its presence\n";
      return cli::kNegative;
    }
    emit(out, exclusion_document(l.commit, prove_exclusion(*l.index, leaf), embed));
    if (!quiet) cli::note("excluded: not among the " + std::to_string(l.commit.n) + " distinct records");
  }
  return cli::kOk;
}

int query_usage(const std::string& run_dir, std::string commit_path, std::string index_path, const RecordQuery& use_args,
                const std::string& out, bool quiet) {
  expect_args({{"--run", run_dir, FileKind::kRunDir}, {"--commit", commit_path, FileKind::kCommitment}});
  if (commit_path.empty() || index_path.empty()) {  // the run's own
    const RunDataFiles d = run_data_files(run_dir, {commit_path, index_path, {"-"}});
    commit_path = d.commit;
    index_path = d.index;
  }
  Loaded l = load(commit_path, index_path);
  check_run_data(l.commit, commit_path, run_dir);
  std::optional<std::string> record;
  const Hash32 leaf = use_args.resolve(record);
  const auto pos = l.index->find(leaf);
  if (!pos) {
    cli::note("record " + leaf.hex() + " is not in the committed data, so no step trained on it");
    std::cerr << "hint: 'wit-query exclude' proves its absence\n";
    return cli::kNegative;
  }
  const nlohmann::json doc =
      usage_document(l.commit, *l.index, run_dir, leaf, *pos, use_args.embed ? record : std::nullopt);
  // Check what we are about to publish: a run whose log or heads are off gives no proof.
  const Verdict v = verify_any_document(doc, l.commit, run_dir);
  if (!v.ok) throw Error("the run cannot prove usage: " + v.reason, run_dir);
  emit(out, doc);
  if (!quiet) cli::note(v.summary);
  return doc["steps"].empty() ? cli::kNegative : cli::kOk;
}

int query_contamination(const ContaminationQuery& q, const std::string& out, bool quiet) {
  Loaded l = load(q.commit_path, q.index_path);
  ContaminationInput in;
  in.commitment = &l.commit;
  in.commit_path = q.commit_path;
  in.index = l.index.get();
  in.eval_reader = l.commit.reader;
  if (!q.reader.empty()) {
    in.eval_reader = ReaderSpec{};
    in.eval_reader.kind = ReaderSpec::parse_kind(q.reader);
    in.eval_reader.field = q.field;
    in.eval_reader.seq_len = q.seq_len;
    // Eval token ids are as wide as the committed ones (docs/records.md).
    if (in.eval_reader.kind == ReaderKind::kTokens && l.commit.reader.kind == ReaderKind::kTokens)
      in.eval_reader.token_bytes = l.commit.reader.token_bytes;
  }
  in.eval_paths = q.eval_files;
  in.train_paths = q.train_files;
  in.ngrams = !q.no_ngrams;
  in.threads = q.threads;
  nlohmann::json cert = contamination_certificate(in);
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
    cli::note(msg);
  }
  return clean ? cli::kOk : cli::kNegative;
}

int query_verify(const std::string& commit_path, const std::string& proof_path, const std::vector<std::string>& cover_files,
                 const std::string& cover_reader, bool json_out, bool strict) {
  Commitment c = Commitment::load(commit_path);
  std::string text = read_file(proof_path);
  const std::string where = proof_path == "-" ? "stdin" : proof_path;
  // A certificate in its compact form (wit-board pack) is verified as the full one it gives.
  const nlohmann::json doc = expand_certificate(jsonf::parse(text, "invalid proof", where), where);
  Verdict v = verify_any_document(doc, c, where, strict);
  if (v.ok && !cover_files.empty()) {
    if (doc.value("format", std::string()) != kContaminationFormat)
      throw Error("--eval applies to contamination certificates only", where);
    ReaderSpec spec = doc.contains("eval") && doc["eval"].contains("reader")
                          ? ReaderSpec::from_json(doc["eval"]["reader"], where)
                          : c.reader;
    if (!cover_reader.empty()) {
      spec = ReaderSpec{};
      spec.kind = ReaderSpec::parse_kind(cover_reader);
    }
    const bool rests_on_order = v.summary.find(kUnrangedExclusionCaveat) != std::string::npos;
    v = certificate_covers(doc, hash_records(spec, cover_files, 0).leaves, where);
    if (v.ok && rests_on_order) v.summary += " (" + std::string(kUnrangedExclusionCaveat) + ")";
  }
  return cli::print_verdict(v, json_out);
}

}  // namespace wit
