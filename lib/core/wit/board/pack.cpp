// What `wit-board pack` puts in a new bundle (docs/run-bundle.md): a
// finished run's directory, the trainer's evaluation, the board's benchmark
// certificate (pack --board) and the released weights (pack --released).
#include "wit/board/board.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "wit/board/gap.h"
#include "wit/run/challenge.h"
#include "wit/base/check.h"
#include "wit/base/json_fields.h"
#include "wit/run/report.h"
#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/run/fingerprint_doc.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/model_spec.h"
#include "wit/proofs/proofs.h"
#include "wit/eval/release.h"
#include "wit/run/runlog.h"
#include "wit/run/sketch.h"
#include "wit/run/state_root.h"

namespace wit {

using nlohmann::json;

namespace {

// pack --board --data-index: the contamination certificate of the board's
// published benchmark records against the run's data commitment, as
// `wit-query contamination` makes it (the n-gram statistic with the
// commitment's training files where they are found).
json benchmark_contamination(const BoardDefinition& board, const PackInput& in) {
  const CommitPair p = load_commit_pair(in.data_commit, in.data_index, IndexUse::kIndexNeeded);
  ContaminationInput ci;
  ci.commitment = &p.commit;
  ci.commit_path = in.data_commit;
  ci.index = p.index.get();
  ci.eval_reader = board.benchmark.reader;
  for (const auto& r : board.records) ci.eval_paths.push_back((std::filesystem::path(in.board_dir) / r.file).string());
  return contamination_certificate(ci);
}

// A certificate as a folder keeps it: its compact form (one multiproof, not
// an audit path per record: docs/proofs.md).
std::string compact_member(const json& cert, const std::string& where) {
  return compact_certificate(cert, where).dump(2) + "\n";
}

}  // namespace

ReleasedWeights export_released(const std::string& run_dir) {
  const RunPaths rp(run_dir);
  const Manifest mf = Manifest::load(rp.manifest());
  const std::string ckpt = rp.checkpoint(uint64_t(mf.steps));
  if (!lexists(ckpt))
    throw Error("the run has no final checkpoint to export the released weights from", ckpt,
                "a run trained across ranks keeps it in shards: wit-sketch export --run RUN -o W CKPT, "
                "wit-sketch match --json --run RUN W >B, then pack --model-binding B");
  ReleasedWeights out{Safetensors::open(ckpt), {}, {}};
  const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  const LoggedFinal fin = final_logged_state(log, rp.log());
  const StateRoot parts = state_root_parts(out.checkpoint.tensors());
  if (fin.step != uint64_t(mf.steps) || parts.root != fin.root)
    throw Error("the final checkpoint is not the state the run logged at its final step", ckpt);
  for (const auto& t : out.checkpoint.tensors())
    if (is_param_tensor(t.name)) out.params.push_back(t);
  const NamedLeaves leaves = tensor_leaves(out.params);
  const ReleaseBinding rb = bind_release(out.params, fin, parts.optim, &leaves);
  if (!rb.match) throw Error("the exported weights do not bind to the final state: " + rb.reason, ckpt);
  out.binding = rb.to_json().dump(2) + "\n";
  return out;
}

RunBundle pack_run_bundle(const PackInput& in, const BoardDefinition* board) {
  if (!run_bundle_name_ok(in.name))
    throw Error("invalid --name (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)", in.name);
  RunBundle b;
  // The run: manifest and heads byte for byte, the final entry's proof under the newest head.
  const RunPaths rp(in.run_dir);
  const Manifest mf = Manifest::load(rp.manifest());
  b.files[member::kManifest] = read_file(rp.manifest());
  b.files[member::kHeads] = read_file(rp.heads());
  const auto heads = read_heads(rp.heads());
  if (heads.empty()) throw Error("the run has no signed heads", rp.heads());
  const TreeHead& head = heads.back();
  const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (head.size != uint64_t(mf.steps) + 1 || log.size() != head.size)
    throw Error("the run is not finished: its newest signed head covers " + std::to_string(head.size) +
                    " entries, its log " + std::to_string(log.size()) + ", the whole run " + std::to_string(mf.steps + 1),
                rp.heads(), "finish training, or sign a head over the whole log (wit-log sign)");
  if (log.root(head.size) != head.root) throw Error("the newest head's root is not the root of the log", rp.heads());
  b.files[member::kFinal] = log_inclusion_document(log, head, uint64_t(mf.steps)).dump(2) + "\n";
  if (in.include_log) b.files[member::kLog] = read_file(rp.log());
  b.files[member::kDataCommit] = read_file(in.data_commit);
  // The trainer's own evaluation, each file when given (the board scores the weights itself).
  const std::pair<const char*, const std::string*> given[] = {{member::kEvalCommit, &in.eval_commit},
                                                              {member::kEval, &in.eval},
                                                              {member::kEvalScores, &in.eval_scores},
                                                              {member::kContamination, &in.contamination}};
  for (const auto& [m, path] : given)
    if (!path->empty()) b.files[m] = read_file(*path);
  if (!in.contamination.empty()) b.files[member::kContamination] =
        compact_member(jsonf::parse(b.files[member::kContamination], "invalid proof", in.contamination), in.contamination);
  if (board) {
    // The benchmark is the eval set: its commitment names it in the bundle.
    const std::string bench = (std::filesystem::path(in.board_dir) / board_path::kBenchmarkCommit).string();
    if (in.eval_commit.empty()) b.files[member::kEvalCommit] = read_file(bench);
    if (in.contamination.empty() && !in.data_index.empty())
      b.files[member::kContamination] = compact_member(benchmark_contamination(*board, in), in.data_index);
  } else if (!in.data_index.empty()) {
    throw Error("--data-index is for --board (the certificate is of the board's benchmark)", in.data_index);
  }
  if (!in.model_fingerprint.empty()) b.files[member::kModelFingerprint] = read_file(in.model_fingerprint);
  if (!in.model_binding_text.empty()) {
    b.files[member::kModelBinding] = in.model_binding_text;
  } else if (!in.model_binding.empty()) {
    const std::string text = read_file(in.model_binding);
    const nlohmann::json j = jsonf::parse(text, "invalid model binding", in.model_binding);
    (void)ReleaseBinding::from_json(j, in.model_binding);
    b.files[member::kModelBinding] = text;
  }
  auto put_named = [&](const std::string& dir, const std::string& name, const std::string& text, const std::string& from) {
    const std::string m = dir + name + ".json";
    auto it = b.files.find(m);
    if (it != b.files.end() && it->second != text) throw Error("two different files for " + m, from);
    b.files[m] = text;
  };
  for (const auto& f : in.challenges) {
    const std::string text = read_file(f);
    const nlohmann::json j = jsonf::parse(text, "invalid challenge", f);
    const Challenge c = Challenge::from_json(j, f);
    put_named(member::kChallenges, challenge_member_name(c.seed), text, f);
  }
  for (const auto& f : in.reports) {
    const std::string text = read_file(f);
    const Verdict answers = match_report(b, text, f);
    if (!answers.ok) throw Error("the report answers none of the --challenge files", f);
    put_named(member::kReports, answers.summary, text, f);
  }
  for (const auto& f : in.eval_checks) {
    const std::string text = read_file(f);
    const nlohmann::json j = jsonf::parse(text, "invalid eval check", f);
    const EvalCheckReport r = EvalCheckReport::from_json(j, f);
    put_named(member::kEvalChecks, challenge_member_name(r.seed), text, f);
  }
  for (const auto& f : in.probe_checks) {
    const std::string text = read_file(f);
    const nlohmann::json j = jsonf::parse(text, "invalid probe check", f);
    const ProbeCheckReport r = ProbeCheckReport::from_json(j, f);
    put_named(member::kProbeChecks, challenge_member_name(r.nonce), text, f);
  }
  b.files[kRunBundleIndex] = b.index_json(in.name);
  return b;
}

}  // namespace wit
