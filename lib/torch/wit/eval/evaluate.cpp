// Certified evaluation with the model: per-example scores (one row per
// record), the checkpoint bound by the run's log, wit-eval run and the
// re-evaluation of a spot check. Format: docs/eval.md.
#include "wit/eval/evaluate.h"

#include <cstring>
#include <filesystem>

#include "wit/train/dist.h"  // load_run_checkpoint
#include "wit/model/model.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/base/progress.h"
#include "wit/eval/release_model.h"
#include "wit/run/runlog.h"
#include "wit/run/wlog.h"

namespace wit {

namespace fs = std::filesystem;

namespace {

// The score of a record's row from the forward pass's logits.
Score score_of(const torch::Tensor& logits, const Rows& rows) {
  // The log-probabilities training uses (target_logp), and the argmax of the
  // same forward pass's logits for the accuracy: one forward pass.
  const std::vector<float> lp = to_vector(target_logp_of(logits, rows));
  const torch::Tensor hit = logits.argmax(-1).eq(rows.targets).to(torch::kCPU);
  const std::vector<float> mask = to_vector(rows.mask);
  const auto H = hit.accessor<bool, 2>();
  double sum = 0, hits = 0, count = 0;
  for (size_t t = 0; t < mask.size(); t++)
    if (mask[t] != 0) {
      sum += double(lp[t]);
      hits += H[0][int64_t(t)] ? 1 : 0;
      count += 1;
    }
  // make_rows always counts the end-of-record target, so count >= 1.
  return {-sum / count, hits / count};
}

// The first position in 0..cut whose outputs differ in any bit between two
// forward passes' logits [1, T, V], or -1.
int64_t first_changed(const torch::Tensor& a, const torch::Tensor& b, int64_t cut) {
  const torch::Tensor x = a.slice(1, 0, cut + 1).to(torch::kCPU).contiguous();
  const torch::Tensor y = b.slice(1, 0, cut + 1).to(torch::kCPU).contiguous();
  if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return 0;
  const size_t row = size_t(x.numel() / (cut + 1)) * x.element_size();
  const auto* p = static_cast<const uint8_t*>(x.data_ptr());
  const auto* q = static_cast<const uint8_t*>(y.data_ptr());
  for (int64_t t = 0; t <= cut; t++)
    if (std::memcmp(p + size_t(t) * row, q + size_t(t) * row, row) != 0) return t;
  return -1;
}

}  // namespace

std::string CausalFailure::message() const {
  return "the model reads the future: example " + std::to_string(example) + " (record leaf " + record_leaf.hex() +
         "): its output at position " + std::to_string(position) + " changed when the tokens after position " +
         std::to_string(cut) + " were replaced";
}

Score score_record(const TrainState& state, const std::string& record) {
  const TrainState::Impl& s = state.impl();
  torch::NoGradGuard no_grad;
  const Rows rows = make_rows(BatchRecords{record}, s.cfg, s.device);
  return score_of(forward(s, rows.idx), rows);
}

CausalScore score_record_causal(const TrainState& state, const std::string& record, const Hash32& record_leaf,
                                ByteView nonce, uint64_t cuts) {
  if (nonce.size < 1 || nonce.size > kMaxEvalNonceBytes)
    throw Error("the causal check's nonce must be 1 to " + std::to_string(kMaxEvalNonceBytes) + " bytes",
                std::to_string(nonce.size) + " bytes");
  if (cuts < 1 || cuts > kMaxCausalCuts)
    throw Error("the causal check takes 1 to " + std::to_string(kMaxCausalCuts) + " cuts per record", std::to_string(cuts));
  const TrainState::Impl& s = state.impl();
  torch::NoGradGuard no_grad;
  const Rows rows = make_rows(BatchRecords{record}, s.cfg, s.device);
  const torch::Tensor logits = forward(s, rows.idx);
  CausalScore out;
  out.score = score_of(logits, rows);
  const torch::Tensor idx_cpu = rows.idx.to(torch::kCPU).contiguous();
  const std::vector<int64_t> row(idx_cpu.data_ptr<int64_t>(), idx_cpu.data_ptr<int64_t>() + idx_cpu.numel());
  // The scored positions are 0..L (make_rows' mask), L = the tokens the row holds.
  const int64_t last_scored = int64_t(rows.mask.sum().item<double>()) - 1;
  const int64_t vocab = s.cfg.vocab;
  for (const CausalCut& c : causal_cuts(nonce, record_leaf, row, last_scored, vocab, cuts)) {
    torch::Tensor idx = idx_cpu.clone();
    auto I = idx.accessor<int64_t, 2>();
    for (size_t j = 0; j < c.tokens.size(); j++) I[0][c.cut + 1 + int64_t(j)] = c.tokens[j];
    const torch::Tensor other = forward(s, idx.to(rows.idx.device()));
    const int64_t changed = first_changed(logits, other, c.cut);
    if (changed >= 0) {
      out.failure = CausalFailure{0, record_leaf, c.cut, changed};
      break;
    }
  }
  return out;
}

std::vector<Score> score_records(const Manifest& mf, const TrainState& state, const std::vector<std::string>& records,
                                 unsigned threads, const std::function<void()>& on_done) {
  (void)mf;  // the state carries the model config; the manifest names the run it belongs to
  set_torch_threads(threads);
  std::vector<Score> out;
  out.reserve(records.size());
  for (const std::string& r : records) {
    out.push_back(score_record(state, r));
    if (on_done) on_done();
  }
  return out;
}

// ---------------------------------------------------------------- the checkpoint

namespace {

// The root the log of run `run_id` binds at `step`: the genesis' init root
// at 0, else the step entry's state root; nothing if that entry is not in place.
std::optional<Hash32> logged_root(const WitnessLog& log, int64_t step, const Hash32& run_id) {
  if (step < 0 || uint64_t(step) >= log.size()) return std::nullopt;
  const LogEntry e = log.entry(uint64_t(step));
  if (entry_problem(e, uint64_t(step), run_id)) return std::nullopt;
  return step == 0 ? e.g.init_root : e.s.state_root;
}

}  // namespace

EvalTarget load_eval_target(const std::string& run, const std::string& checkpoint, std::optional<int64_t> step,
                            const std::string& device) {
  const RunPaths rp(run);
  EvalTarget t;
  t.mf = Manifest::load(rp.manifest());
  t.run_id = t.mf.run_id();
  const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (log.size() < 2) throw Error("the run's log has no training steps", rp.log());
  if (auto why = entry_problem(log.entry(0), 0, t.run_id)) throw Error(*why, rp.log());
  std::string path = checkpoint;
  // The step the checkpoint must be of: the one asked for, else (the run's
  // own checkpoint) the log's final step.
  std::optional<int64_t> want = step;
  if (path.empty()) {
    if (!want) want = int64_t(log.size()) - 1;
    path = rp.checkpoint(uint64_t(std::max<int64_t>(*want, 0)));
    // Whole, or assembled from a sharded run's shards (docs/distributed.md).
    std::optional<TrainState> st = load_run_checkpoint(t.mf.model, path, device);
    if (!st)
      throw Error("no checkpoint of step " + std::to_string(*want) + " in the run", path,
                  step ? "" : "the run may not have finished; pass --checkpoint FILE");
    t.state = std::move(*st);
  } else if (!want && !Safetensors::open(path).find(kStepTensor)) {
    // A released parameters-only file: bound exactly to the final logged
    // state (docs/release.md), it is evaluated as that state.
    ReleasedModel rel = load_released_model(run, path, std::nullopt, device);
    if (!rel.binding.match)
      throw Error("the released model is not the run's final state: " + rel.binding.reason, path,
                  "evaluate the run's final parameters, or a checkpoint the log binds");
    t.state = std::move(rel.state);
    t.step = int64_t(rel.binding.step);
    t.root = rel.binding.state_root;
    return t;
  } else {
    t.state = TrainState::load(t.mf.model, path, device);
  }
  t.step = t.state.step();
  if (want && t.step != *want)
    throw Error("the checkpoint is of step " + std::to_string(t.step) + ", not " + std::to_string(*want), path);
  t.root = t.state.root();
  const std::optional<Hash32> logged = logged_root(log, t.step, t.run_id);
  if (!logged)
    throw Error("the run's log has no checkpoint root at step " + std::to_string(t.step), path,
                "evaluate a checkpoint the log binds (every checkpoint_every steps and the last)");
  if (*logged != t.root)
    throw Error("the checkpoint's root is not the one the run's log has at step " + std::to_string(t.step), path);
  return t;
}

// ---------------------------------------------------------------- the eval set

namespace {

struct EvalSet {
  Commitment commit;
  std::unique_ptr<Dataset> data;
};

EvalSet open_eval_set(const EvalOptions& o) {
  if (o.commit_path.empty()) throw Error("missing --commit EVAL.commit.json", "", "the eval set's commitment from wit-commit");
  if (o.files.empty()) throw Error("missing the eval set's files", "", "give the files the eval commitment was made from");
  EvalSet s;
  s.commit = load_commit_pair(o.commit_path, o.index_path, IndexUse::kIndexOptional).commit;
  if (s.commit.n < 1) throw Error("the eval set is empty", o.commit_path);
  if (s.commit.n > kMaxEvalExamples) throw Error("the eval set has too many records", o.commit_path);
  s.data = std::make_unique<Dataset>(s.commit, o.files, o.threads);
  return s;
}

}  // namespace

EvalRun run_eval(const EvalOptions& opt) {
  if (opt.causal_cuts < 1 || opt.causal_cuts > kMaxCausalCuts)
    throw Error("--causal-cuts must be 1 to " + std::to_string(kMaxCausalCuts), std::to_string(opt.causal_cuts));
  EvalTarget t = load_eval_target(opt.run, opt.checkpoint, std::nullopt, opt.device);
  EvalSet set = open_eval_set(opt);
  const uint64_t n = set.data->size();
  // The default nonce is the checkpoint root: it hashes the optimizer's
  // moments too, which the model never sees, so no model can compute the
  // cuts it will be checked at (docs/eval.md).
  CausalCoverage cov;
  cov.nonce = opt.causal_nonce.empty() ? Bytes(t.root.data(), t.root.data() + 32) : opt.causal_nonce;
  cov.cuts = opt.causal_cuts;
  cov.records = n;
  set_torch_threads(opt.threads);
  EvalScores scores;
  scores.record_leaves.reserve(size_t(n));
  scores.scores.reserve(size_t(n));
  EvalRun r;
  Progress progress("evaluating", n, "records", opt.quiet);
  for (uint64_t i = 0; i < n; i++) {
    const Hash32& leaf = set.data->leaf(i);
    CausalScore cs = score_record_causal(t.state, set.data->record(i), leaf, ByteView(cov.nonce), cov.cuts);
    if (cs.failure) {
      cs.failure->example = i;
      r.refused = cs.failure;
      return r;
    }
    scores.record_leaves.push_back(leaf);
    scores.scores.push_back(cs.score);
    progress.add(1);
  }
  progress.finish();
  r.eval = commit_scores(t.run_id, t.step, t.root, set.commit.root, scores, cov);
  r.scores = std::move(scores);
  return r;
}

std::string dump_eval_scores(const EvalScores& s) {
  const nlohmann::json j = s.to_json();
  std::string out = "{\n  \"eval_id\": " + j["eval_id"].dump() + ",\n  \"format\": " + j["format"].dump() +
                    ",\n  \"scores\": [";
  const auto& a = j["scores"];
  for (size_t i = 0; i < a.size(); i++) out += (i ? ",\n    " : "\n    ") + a[i].dump();
  out += "\n  ],\n  \"version\": " + j["version"].dump() + "\n}\n";
  return out;
}

EvalCheck check_eval(const EvalCommitment& e, const EvalScores& s, const EvalCheckOptions& opt) {
  const EvalOptions& o = opt.data;
  // The request first: a bad one is bad input whatever the eval holds.
  if (opt.nonce.empty() || opt.nonce.size() > kMaxEvalNonceBytes)
    throw Error("the nonce must be 1 to " + std::to_string(kMaxEvalNonceBytes) + " bytes of hex",
                std::to_string(opt.nonce.size()) + " bytes");
  ChallengeRequest req;
  if (opt.k) req.k = *opt.k > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(*opt.k);
  req.confidence = opt.confidence;
  req.fraction = opt.fraction;
  const double fraction = opt.fraction.value_or(0.05);
  const uint64_t k = uint64_t(request_count(req, int64_t(e.n), "examples of the eval", int64_t(kMaxEvalCheck)));

  const RunPaths rp(o.run);
  const Manifest mf = Manifest::load(rp.manifest());
  if (e.run_id != mf.run_id()) throw Error("the eval is of another run", o.run);
  EvalSet set = open_eval_set(o);
  if (set.commit.root != e.eval_root)
    throw Error("the eval set commitment is not the one the eval is of (eval_root)", o.commit_path);

  EvalCheck out;
  if (auto why = check_scores(e, s)) {
    out.rejected = "the scores do not reproduce the eval commitment: " + *why;
    return out;
  }
  {
    const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
    const std::optional<Hash32> logged = logged_root(log, e.step, e.run_id);
    if (!logged || *logged != e.checkpoint_root) {
      out.rejected = "the eval's checkpoint is not the one the run's log has at step " + std::to_string(e.step);
      return out;
    }
  }
  EvalTarget t = load_eval_target(o.run, o.checkpoint, e.step, o.device);
  set_torch_threads(o.threads);
  // Each re-evaluated example is also checked for causality, at cuts the
  // spot check's nonce draws (the verifier's, not the trainer's).
  if (o.causal_cuts < 1 || o.causal_cuts > kMaxCausalCuts)
    throw Error("--causal-cuts must be 1 to " + std::to_string(kMaxCausalCuts), std::to_string(o.causal_cuts));
  std::optional<CausalFailure> failure;
  out.report = make_eval_check_report(e, s, ByteView(opt.nonce), k, fraction, [&](uint64_t i) {
    const Hash32& leaf = set.data->leaf(i);
    CausalScore cs = score_record_causal(t.state, set.data->record(i), leaf, ByteView(opt.nonce), o.causal_cuts);
    if (cs.failure && !failure) {
      failure = cs.failure;
      failure->example = i;
    }
    return std::make_pair(leaf, cs.score);
  });
  if (failure) {
    out.report.reset();
    out.rejected = failure->message();
  }
  return out;
}

}  // namespace wit
