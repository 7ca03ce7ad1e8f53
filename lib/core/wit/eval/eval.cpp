// Certified evaluation without LibTorch: score leaves and their tree, the eval
// commitment and scores documents, spot-check seeds and indices, and the
// spot-check report with its consistency checks. Format: docs/eval.md.
#include "wit/eval/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "wit/base/cli_base.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/hash/merkle.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

namespace wit {

using json = nlohmann::json;

namespace {

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

bool same_bits(double a, double b) { return bits_of(a) == bits_of(b); }

bool fraction_ok(double f) { return f > 0 && f <= 1; }

// A document's fields must be exactly `fields` (no unknown ones), its format
// `format` and its version kEvalVersion.
void check_header(const json& j, const char* kind, const char* format, std::initializer_list<const char*> fields,
                  const std::string& where) {
  if (!j.is_object()) jsonf::bad(kind, "not a json object", where);
  const json& f = jsonf::need(j, "format", kind, where);
  if (!f.is_string()) jsonf::bad(kind, "field 'format' is not a string", where);
  if (f.get<std::string>() != format) jsonf::bad(kind, "not a " + std::string(format) + " document (format '" + f.get<std::string>() + "')", where);
  const json& v = jsonf::need(j, "version", kind, where);
  if (!v.is_number_integer()) jsonf::bad(kind, "field 'version' is not an integer", where);
  if (v.get<int64_t>() != kEvalVersion)
    throw Error("unsupported " + std::string(format) + " version " + std::to_string(v.get<int64_t>()) +
                    " (this wit reads " + std::to_string(kEvalVersion) + ")",
                where);
  jsonf::only_keys(j, fields, kind, where);
}

double finite_number(const json& j, const char* key, const char* kind, const std::string& where,
                     const std::string& name) {
  const json& v = jsonf::need(j, key, kind, where);
  if (!v.is_number()) jsonf::bad(kind, "field '" + name + "' is not a number", where);
  const double d = v.get<double>();
  if (!std::isfinite(d)) jsonf::bad(kind, "field '" + name + "' is not finite", where);
  return d;
}

// A score as the documents hold it: a finite loss >= 0 and an accuracy in [0, 1].
bool score_ok(const Score& s) {
  return std::isfinite(s.loss) && s.loss >= 0 && std::isfinite(s.accuracy) && s.accuracy >= 0 && s.accuracy <= 1;
}

json score_json(const Score& s) { return {{"loss", s.loss}, {"accuracy", s.accuracy}}; }

Score parse_score(const json& j, const char* kind, const std::string& where, const std::string& name) {
  if (!j.is_object()) jsonf::bad(kind, "field '" + name + "' is not an object", where);
  jsonf::only_keys(j, {"loss", "accuracy"}, kind, where, name);
  Score s{finite_number(j, "loss", kind, where, name + ".loss"), finite_number(j, "accuracy", kind, where, name + ".accuracy")};
  if (!score_ok(s)) jsonf::bad(kind, "field '" + name + "' is not a score (loss >= 0, accuracy in [0, 1])", where);
  return s;
}


std::vector<Hash32> score_leaves(const EvalScores& s) {
  std::vector<Hash32> leaves;
  leaves.reserve(s.scores.size());
  for (size_t i = 0; i < s.scores.size(); i++) leaves.push_back(eval_score_leaf(s.record_leaves[i], s.scores[i]));
  return leaves;
}

// Index-order double means of the scores (what the commitment's aggregates are).
Score aggregate(const std::vector<Score>& v) {
  double l = 0, a = 0;
  for (const Score& s : v) {
    l += s.loss;
    a += s.accuracy;
  }
  const double n = double(v.size());
  return {l / n, a / n};
}

std::string num(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

json read_json(const std::string& path, const char* kind) {
  const std::string where = path == "-" ? "stdin" : path;
  return jsonf::parse(read_file(path), kind, where);
}

}  // namespace

Hash32 eval_score_leaf(const Hash32& record_leaf, const Score& s) {
  Blake2b h;
  h.update(tags::kRfc6962LeafHashPrefix);
  h.update_field(ByteView(tags::kEvalScoreLeaf));
  h.update(ByteView(record_leaf.data(), Hash32::size()));
  h.update_le64(bits_of(s.loss));
  h.update_le64(bits_of(s.accuracy));
  return h.final();
}

// ---------------------------------------------------------------- eval.json

json EvalCommitment::to_json() const {
  json j = {{"format", kEvalFormat},
          {"version", kEvalVersion},
          {"run_id", run_id.hex()},
          {"step", step},
          {"checkpoint_root", checkpoint_root.hex()},
          {"eval_root", eval_root.hex()},
          {"n", n},
          {"metric", metric},
          {"loss", loss},
          {"accuracy", accuracy},
          {"scores_root", scores_root.hex()}};
  if (causal) j["causal"] = causal->to_json();
  return j;
}

EvalCommitment EvalCommitment::from_json(const json& j, const std::string& where) {
  static const char* kKind = "invalid eval";
  check_header(j, kKind, kEvalFormat,
               {"format", "version", "run_id", "step", "checkpoint_root", "eval_root", "n", "metric", "loss", "accuracy",
                "scores_root", "causal"},
               where);
  EvalCommitment e;
  e.run_id = jsonf::hash(j, "run_id", kKind, where);
  const uint64_t step = jsonf::u64(j, "step", kKind, where);
  if (step > uint64_t(INT64_MAX)) jsonf::bad(kKind, "field 'step' is too large", where);
  e.step = int64_t(step);
  e.checkpoint_root = jsonf::hash(j, "checkpoint_root", kKind, where);
  e.eval_root = jsonf::hash(j, "eval_root", kKind, where);
  e.n = jsonf::u64(j, "n", kKind, where);
  if (e.n < 1 || e.n > kMaxEvalExamples) jsonf::bad(kKind, "field 'n' is not between 1 and 2^32", where);
  const json& m = jsonf::need(j, "metric", kKind, where);
  if (!m.is_string() || m.get<std::string>() != kEvalMetric)
    jsonf::bad(kKind, std::string("unknown metric (this wit knows '") + kEvalMetric + "')", where);
  e.metric = kEvalMetric;
  e.loss = finite_number(j, "loss", kKind, where, "loss");
  e.accuracy = finite_number(j, "accuracy", kKind, where, "accuracy");
  if (!score_ok({e.loss, e.accuracy})) jsonf::bad(kKind, "the aggregate is not a score (loss >= 0, accuracy in [0, 1])", where);
  e.scores_root = jsonf::hash(j, "scores_root", kKind, where);
  if (j.contains("causal")) {
    e.causal = CausalCoverage::from_json(j["causal"], where);
    if (e.causal->records > e.n) jsonf::bad(kKind, "field 'causal' covers more records than the eval has", where);
  }
  return e;
}

EvalCommitment EvalCommitment::load(const std::string& path) {
  return from_json(read_json(path, "invalid eval"), path == "-" ? "stdin" : path);
}

Hash32 EvalCommitment::id() const { return hash_tagged(tags::kEvalCommitment, ByteView(to_json().dump())); }

// ---------------------------------------------------------------- scores

json EvalScores::to_json() const {
  json a = json::array();
  for (size_t i = 0; i < scores.size(); i++) a.push_back(json::array({record_leaves[i].hex(), scores[i].loss, scores[i].accuracy}));
  return {{"format", kEvalScoresFormat}, {"version", kEvalVersion}, {"eval_id", eval_id.hex()}, {"scores", a}};
}

EvalScores EvalScores::from_json(const json& j, const std::string& where) {
  static const char* kKind = "invalid eval scores";
  check_header(j, kKind, kEvalScoresFormat, {"format", "version", "eval_id", "scores"}, where);
  EvalScores s;
  s.eval_id = jsonf::hash(j, "eval_id", kKind, where);
  const json& a = jsonf::array(j, "scores", kKind, where);
  if (a.empty() || a.size() > kMaxEvalExamples) jsonf::bad(kKind, "field 'scores' does not hold 1 to 2^32 scores", where);
  s.record_leaves.reserve(a.size());
  s.scores.reserve(a.size());
  for (size_t i = 0; i < a.size(); i++) {
    const json& e = a[i];
    const std::string at = "scores[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 3) jsonf::bad(kKind, at + " is not [record_leaf, loss, accuracy]", where);
    Hash32 h;
    if (!e[0].is_string() || !Hash32::from_hex(e[0].get<std::string>(), h))
      jsonf::bad(kKind, at + "'s record leaf is not 64 hex digits", where);
    if (!e[1].is_number() || !e[2].is_number()) jsonf::bad(kKind, at + "'s loss or accuracy is not a number", where);
    const Score sc{e[1].get<double>(), e[2].get<double>()};
    if (!score_ok(sc)) jsonf::bad(kKind, at + " is not a score (loss >= 0, accuracy in [0, 1])", where);
    s.record_leaves.push_back(h);
    s.scores.push_back(sc);
  }
  return s;
}

EvalScores EvalScores::load(const std::string& path) {
  return from_json(read_json(path, "invalid eval scores"), path == "-" ? "stdin" : path);
}

EvalCommitment commit_scores(const Hash32& run_id, int64_t step, const Hash32& checkpoint_root,
                             const Hash32& eval_root, EvalScores& scores,
                             const std::optional<CausalCoverage>& causal) {
  if (scores.scores.empty() || scores.scores.size() != scores.record_leaves.size())
    throw Error("an eval needs one score per record and at least one record",
                std::to_string(scores.scores.size()) + " scores for " + std::to_string(scores.record_leaves.size()) + " records");
  if (scores.scores.size() > kMaxEvalExamples) throw Error("too many eval examples", std::to_string(scores.scores.size()));
  if (step < 0) throw Error("negative checkpoint step", std::to_string(step));
  for (size_t i = 0; i < scores.scores.size(); i++)
    if (!score_ok(scores.scores[i]))
      throw Error("example " + std::to_string(i) + " has no valid score (loss " + num(scores.scores[i].loss) +
                  ", accuracy " + num(scores.scores[i].accuracy) + ")");
  EvalCommitment e;
  e.run_id = run_id;
  e.step = step;
  e.checkpoint_root = checkpoint_root;
  e.eval_root = eval_root;
  e.n = scores.scores.size();
  const Score agg = aggregate(scores.scores);
  e.loss = agg.loss;
  e.accuracy = agg.accuracy;
  e.scores_root = merkle_root(kBlake2bTree, score_leaves(scores));
  if (causal) {
    if (causal->records > e.n || causal->cuts < 1 || causal->cuts > kMaxCausalCuts || causal->nonce.empty() ||
        causal->nonce.size() > kMaxEvalNonceBytes)
      throw Error("the causal check's coverage is out of range", std::to_string(causal->records) + " records");
    e.causal = causal;
  }
  scores.eval_id = e.id();
  return e;
}

Problem check_scores(const EvalCommitment& e, const EvalScores& s) {
  if (s.eval_id != e.id()) return "the scores are of another eval (eval id)";
  if (s.scores.size() != s.record_leaves.size()) return "the scores and record leaves differ in number";
  if (s.scores.size() != e.n)
    return "the scores hold " + std::to_string(s.scores.size()) + " examples, the eval " + std::to_string(e.n);
  if (!is_data_tree_root(s.record_leaves, e.eval_root))
    return "the scores' record leaves are not the eval set (eval_root)";
  if (merkle_root(kBlake2bTree, score_leaves(s)) != e.scores_root)
    return "the scores do not hash to the eval's scores_root";
  const Score agg = aggregate(s.scores);
  if (!same_bits(agg.loss, e.loss))
    return "the eval's loss " + num(e.loss) + " is not the mean of its scores (" + num(agg.loss) + ")";
  if (!same_bits(agg.accuracy, e.accuracy))
    return "the eval's accuracy " + num(e.accuracy) + " is not the mean of its scores (" + num(agg.accuracy) + ")";
  return std::nullopt;
}

// ---------------------------------------------------------------- spot checks

// ---------------------------------------------------------------- causal evaluation

json CausalCoverage::to_json() const {
  return {{"nonce", to_hex(ByteView(nonce))}, {"records", records}, {"cuts", cuts}};
}

CausalCoverage CausalCoverage::from_json(const json& j, const std::string& where) {
  static const char* kKind = "invalid eval";
  if (!j.is_object()) jsonf::bad(kKind, "field 'causal' is not an object", where);
  jsonf::only_keys(j, {"nonce", "records", "cuts"}, kKind, where);
  CausalCoverage c;
  const json& nj = jsonf::need(j, "nonce", kKind, where);
  if (!nj.is_string() || !from_hex(nj.get<std::string>(), c.nonce)) jsonf::bad(kKind, "field 'causal.nonce' is not hex", where);
  if (c.nonce.empty() || c.nonce.size() > kMaxEvalNonceBytes)
    jsonf::bad(kKind, "field 'causal.nonce' is not 1 to " + std::to_string(kMaxEvalNonceBytes) + " bytes", where);
  c.records = jsonf::u64(j, "records", kKind, where);
  c.cuts = jsonf::u64(j, "cuts", kKind, where);
  if (c.cuts < 1 || c.cuts > kMaxCausalCuts)
    jsonf::bad(kKind, "field 'causal.cuts' is not between 1 and " + std::to_string(kMaxCausalCuts), where);
  return c;
}

std::vector<CausalCut> causal_cuts(ByteView nonce, const Hash32& record_leaf, const std::vector<int64_t>& row,
                                   int64_t last_scored, int64_t vocab, uint64_t cuts) {
  if (vocab < 2) throw Error("the causal check needs a vocabulary of at least 2 tokens", std::to_string(vocab));
  for (const int64_t t : row)
    if (t < 0 || t >= vocab)
      throw Error("token " + std::to_string(t) + " is not below the model's vocab " + std::to_string(vocab), "causal check");
  const int64_t T = int64_t(row.size());
  const int64_t eligible = std::max<int64_t>(0, std::min(last_scored, T - 2) + 1);
  const int64_t k = std::min<int64_t>(eligible, int64_t(std::min<uint64_t>(cuts, kMaxCausalCuts)));
  ChaChaStream stream(derive_key(tags::kEvalCausal, {nonce, ByteView(record_leaf.data(), 32)}));
  std::vector<CausalCut> out;
  for (const int64_t v : floyd_sample(stream, eligible, k)) {
    CausalCut c;
    c.cut = v - 1;
    c.tokens.reserve(size_t(T - 1 - c.cut));
    for (int64_t t = c.cut + 1; t < T; t++)
      c.tokens.push_back((row[size_t(t)] + 1 + int64_t(stream.uniform(uint64_t(vocab - 1)))) % vocab);
    out.push_back(std::move(c));
  }
  return out;
}

Hash32 eval_check_seed(const Hash32& eval_id, ByteView nonce) {
  Blake2b h;
  h.update_field(ByteView(tags::kEvalCheck));
  h.update(ByteView(eval_id.data(), Hash32::size()));
  h.update_field(nonce);
  return h.final();
}

std::vector<uint64_t> eval_check_indices(const Hash32& seed, uint64_t n, uint64_t k) {
  if (n < 1 || n > kMaxEvalExamples || k < 1 || k > n || k > kMaxEvalCheck)
    throw Error("a spot check needs 1 <= k <= n (and k <= " + std::to_string(kMaxEvalCheck) + ")",
                "n = " + std::to_string(n) + ", k = " + std::to_string(k));
  ChaChaStream s(seed);
  std::vector<uint64_t> out;
  out.reserve(size_t(k));
  for (int64_t v : floyd_sample(s, int64_t(n), int64_t(k))) out.push_back(uint64_t(v - 1));
  return out;
}

bool score_matches(const Score& claimed, const Score& recomputed) {
  const double lt = kEvalLossTolerance * std::max(1.0, std::fabs(recomputed.loss));
  // Written so that a NaN on either side fails.
  return std::fabs(claimed.loss - recomputed.loss) <= lt &&
         std::fabs(claimed.accuracy - recomputed.accuracy) <= kEvalAccuracyTolerance;
}

std::string eval_guarantee_words(const Guarantee& g) {
  const std::string n_s = cli::count_of(uint64_t(g.steps), "score");
  const std::string bad_s = cli::count_of(uint64_t(g.bad_steps), "example");
  const std::string k_s = g.k == 1 ? "this 1 spot check" : "these " + std::to_string(g.k) + " spot checks";
  std::string s = "an eval that inflated at least " + fraction_percent(g.fraction) + " of its " + n_s + " (" + bad_s +
                  ") is caught by " + k_s;
  if (g.k > g.steps - g.bad_steps)
    s += " with certainty";
  else
    s += " with probability at least " + percent(std::min(g.detection, std::nextafter(1.0, 0.0)));
  s += " (hypergeometric; 1-(1-f)^k = " + percent(g.detection_binomial) + ")";
  return s;
}

Problem eval_item_reason(const EvalCheckItem& it) {
  const std::string ex = "example " + std::to_string(it.index) + ": ";
  if (it.failed == "record") return ex + "the scored record is not the eval set's record there";
  if (it.failed == "opening") return ex + "the claimed score does not open under the eval's scores_root";
  if (it.failed == "loss")
    return ex + "claimed loss " + num(it.claimed.loss) + " but re-evaluation gives " + num(it.recomputed.loss);
  if (it.failed == "accuracy")
    return ex + "claimed accuracy " + num(it.claimed.accuracy) + " but re-evaluation gives " + num(it.recomputed.accuracy);
  return std::nullopt;
}

namespace {

// Which check an item fails first, from what it holds: a "no" naming it
// (record, opening, loss, accuracy), or nothing when the item passes;
// `record_ok` is whether the record leaf is the committed one (known to the
// builder). The report's `failed` field is its name, "" for a pass (failed_field).
Problem item_failure(const EvalCheckItem& it, bool record_ok, bool opening_ok) {
  if (!record_ok) return "record";
  if (!opening_ok) return "opening";
  const double lt = kEvalLossTolerance * std::max(1.0, std::fabs(it.recomputed.loss));
  if (!(std::fabs(it.claimed.loss - it.recomputed.loss) <= lt)) return "loss";
  if (!(std::fabs(it.claimed.accuracy - it.recomputed.accuracy) <= kEvalAccuracyTolerance)) return "accuracy";
  return std::nullopt;
}

// The report format's `failed` field for an item's failure: its name, "" when it passes.
std::string failed_field(const Problem& failure) { return failure.value_or(""); }

bool opening_verifies(const EvalCheckItem& it, uint64_t n, const Hash32& scores_root) {
  return verify_inclusion(kBlake2bTree, it.index, n, eval_score_leaf(it.record_leaf, it.claimed), it.score_path,
                          scores_root) == ProofError::kOk;
}

void finish_verdict(EvalCheckReport& r) {
  r.reason.clear();
  for (const auto& it : r.items)
    if (!it.pass) {
      r.reason = eval_item_reason(it).value_or("");  // a failed item always has one (the parser checks `failed`)
      break;
    }
  r.verdict = r.reason.empty() ? ReportVerdict::kCertified : ReportVerdict::kRejected;
}

}  // namespace

EvalCheckReport make_eval_check_report(const EvalCommitment& e, const EvalScores& s, ByteView nonce, uint64_t k,
                                       double fraction,
                                       const std::function<std::pair<Hash32, Score>(uint64_t)>& reevaluate) {
  if (auto why = check_scores(e, s)) throw Error("the scores do not reproduce the eval commitment", *why);
  if (nonce.size < 1 || nonce.size > kMaxEvalNonceBytes)
    throw Error("the nonce must be 1 to " + std::to_string(kMaxEvalNonceBytes) + " bytes", std::to_string(nonce.size) + " bytes");
  if (!fraction_ok(fraction)) throw Error("fraction must be in (0, 1]", std::to_string(fraction));
  EvalCheckReport r;
  r.eval_id = e.id();
  r.run_id = e.run_id;
  r.checkpoint_root = e.checkpoint_root;
  r.nonce.assign(nonce.data, nonce.data + nonce.size);
  r.seed = eval_check_seed(r.eval_id, nonce);
  r.n = e.n;
  r.k = k;
  r.indices = eval_check_indices(r.seed, e.n, k);
  r.guarantee = make_guarantee(int64_t(e.n), int64_t(k), fraction);
  const std::vector<Hash32> leaves = score_leaves(s);
  const MerkleTree tree(kBlake2bTree, leaves.data(), leaves.size(), MerkleTree::kDefaultCacheLevel, 1);
  for (uint64_t i : r.indices) {
    EvalCheckItem it;
    it.index = i;
    auto [leaf, recomputed] = reevaluate(i);
    it.record_leaf = leaf;
    it.recomputed = recomputed;
    it.claimed = s.scores[size_t(i)];
    it.score_path = tree.hashes(inclusion_ranges(i, e.n));
    it.failed = failed_field(item_failure(it, leaf == s.record_leaves[size_t(i)], opening_verifies(it, e.n, e.scores_root)));
    it.pass = it.failed.empty();
    r.items.push_back(std::move(it));
  }
  finish_verdict(r);
  return r;
}

// ---------------------------------------------------------------- the report

json EvalCheckReport::to_json() const {
  json items_j = json::array();
  for (const auto& it : items)
    items_j.push_back({{"index", it.index},
                       {"record_leaf", it.record_leaf.hex()},
                       {"claimed", score_json(it.claimed)},
                       {"recomputed", score_json(it.recomputed)},
                       {"score_path", jsonf::hex_array(it.score_path)},
                       {"pass", it.pass},
                       {"failed", it.failed}});
  const json gj = guarantee.to_json(eval_guarantee_words(guarantee));
  return {{"format", kEvalCheckFormat},
          {"version", kEvalVersion},
          {"eval_id", eval_id.hex()},
          {"run_id", run_id.hex()},
          {"checkpoint_root", checkpoint_root.hex()},
          {"nonce", to_hex(ByteView(nonce))},
          {"seed", seed.hex()},
          {"n", n},
          {"k", k},
          {"indices", indices},
          {"items", items_j},
          {"verdict", verdict_name(verdict)},
          {"reason", reason},
          {"guarantee", gj}};
}

EvalCheckReport EvalCheckReport::from_json(const json& j, const std::string& where) {
  static const char* kKind = "invalid eval check";
  check_header(j, kKind, kEvalCheckFormat,
               {"format", "version", "eval_id", "run_id", "checkpoint_root", "nonce", "seed", "n", "k", "indices",
                "items", "verdict", "reason", "guarantee"},
               where);
  EvalCheckReport r;
  r.eval_id = jsonf::hash(j, "eval_id", kKind, where);
  r.run_id = jsonf::hash(j, "run_id", kKind, where);
  r.checkpoint_root = jsonf::hash(j, "checkpoint_root", kKind, where);
  const json& nj = jsonf::need(j, "nonce", kKind, where);
  if (!nj.is_string() || !from_hex(nj.get<std::string>(), r.nonce)) jsonf::bad(kKind, "field 'nonce' is not hex", where);
  if (r.nonce.empty() || r.nonce.size() > kMaxEvalNonceBytes)
    jsonf::bad(kKind, "field 'nonce' is not 1 to " + std::to_string(kMaxEvalNonceBytes) + " bytes", where);
  r.seed = jsonf::hash(j, "seed", kKind, where);
  if (r.seed != eval_check_seed(r.eval_id, ByteView(r.nonce))) jsonf::bad(kKind, "the seed is not the one the eval id and nonce give", where);
  r.n = jsonf::u64(j, "n", kKind, where);
  r.k = jsonf::u64(j, "k", kKind, where);
  if (r.n < 1 || r.n > kMaxEvalExamples) jsonf::bad(kKind, "field 'n' is not between 1 and 2^32", where);
  if (r.k < 1 || r.k > r.n || r.k > kMaxEvalCheck) jsonf::bad(kKind, "field 'k' is not between 1 and n", where);
  const json& ij = jsonf::need(j, "indices", kKind, where);
  if (!ij.is_array() || ij.size() != r.k) jsonf::bad(kKind, "field 'indices' is not an array of k indices", where);
  std::vector<uint64_t> idx;
  for (const json& v : ij) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      jsonf::bad(kKind, "an index is not a non-negative integer", where);
    idx.push_back(v.get<uint64_t>());
  }
  r.indices = eval_check_indices(r.seed, r.n, r.k);
  if (idx != r.indices) jsonf::bad(kKind, "the indices are not the ones the seed gives", where);

  const json& items = jsonf::need(j, "items", kKind, where);
  if (!items.is_array() || items.size() != r.k) jsonf::bad(kKind, "field 'items' is not an array of k items", where);
  size_t pos = 0;
  for (const json& ji : items) {
    const std::string at = "items[" + std::to_string(pos) + "]";
    if (!ji.is_object()) jsonf::bad(kKind, at + " is not an object", where);
    jsonf::only_keys(ji, {"index", "record_leaf", "claimed", "recomputed", "score_path", "pass", "failed"}, kKind, where, at);
    EvalCheckItem it;
    it.index = jsonf::u64(ji, "index", kKind, where);
    if (it.index != r.indices[pos]) jsonf::bad(kKind, at + " is not of index " + std::to_string(r.indices[pos]), where);
    it.record_leaf = jsonf::hash(ji, "record_leaf", kKind, where);
    it.claimed = parse_score(jsonf::need(ji, "claimed", kKind, where), kKind, where, at + ".claimed");
    it.recomputed = parse_score(jsonf::need(ji, "recomputed", kKind, where), kKind, where, at + ".recomputed");
    it.score_path = jsonf::hashes(ji, "score_path", kMaxInclusionPath, kKind, where);
    const json& p = jsonf::need(ji, "pass", kKind, where);
    if (!p.is_boolean()) jsonf::bad(kKind, "field '" + at + ".pass' is not a boolean", where);
    it.pass = p.get<bool>();
    const json& f = jsonf::need(ji, "failed", kKind, where);
    if (!f.is_string()) jsonf::bad(kKind, "field '" + at + ".failed' is not a string", where);
    it.failed = f.get<std::string>();
    if (it.failed != "" && it.failed != "record" && it.failed != "opening" && it.failed != "loss" && it.failed != "accuracy")
      jsonf::bad(kKind, "field '" + at + ".failed' is not one of record, opening, loss, accuracy", where);
    if (it.pass != it.failed.empty()) jsonf::bad(kKind, at + " passes and fails at once", where);
    // What the item itself shows: a score failure must be one, a pass must match.
    if (it.failed == "" || it.failed == "loss" || it.failed == "accuracy")
      if (failed_field(item_failure(it, true, true)) != it.failed)
        jsonf::bad(kKind, at + "'s verdict is not the one its claimed and recomputed scores give", where);
    r.items.push_back(std::move(it));
    pos++;
  }

  const json& vj = jsonf::need(j, "verdict", kKind, where);
  const json& rj = jsonf::need(j, "reason", kKind, where);
  if (!vj.is_string() || !rj.is_string()) jsonf::bad(kKind, "fields 'verdict' and 'reason' must be strings", where);
  const ReportVerdict verdict = parse_verdict(vj.get<std::string>(), kKind, where);
  EvalCheckReport want = r;
  finish_verdict(want);
  if (verdict != want.verdict || rj.get<std::string>() != want.reason)
    jsonf::bad(kKind, "the verdict or reason is not the one its items give", where);
  r.verdict = want.verdict;
  r.reason = want.reason;

  const json& gj = jsonf::need(j, "guarantee", kKind, where);
  if (!gj.is_object()) jsonf::bad(kKind, "field 'guarantee' is not an object", where);
  jsonf::only_keys(gj, {"steps", "k", "fraction", "bad_steps", "detection", "detection_binomial", "statement"}, kKind,
                   where, "guarantee");
  const double fraction = finite_number(gj, "fraction", kKind, where, "guarantee.fraction");
  if (!fraction_ok(fraction)) jsonf::bad(kKind, "field 'guarantee.fraction' is not in (0, 1]", where);
  Guarantee g = make_guarantee(int64_t(r.n), int64_t(r.k), fraction);
  if (jsonf::u64(gj, "steps", kKind, where) != uint64_t(g.steps) || jsonf::u64(gj, "k", kKind, where) != uint64_t(g.k) ||
      jsonf::u64(gj, "bad_steps", kKind, where) != uint64_t(g.bad_steps))
    jsonf::bad(kKind, "the guarantee does not match n and k", where);
  const double det = finite_number(gj, "detection", kKind, where, "guarantee.detection");
  const double bin = finite_number(gj, "detection_binomial", kKind, where, "guarantee.detection_binomial");
  if (!(std::fabs(det - g.detection) <= 1e-9) || !(std::fabs(bin - g.detection_binomial) <= 1e-9))
    jsonf::bad(kKind, "the guarantee's probabilities are not the ones n and k give", where);
  g.detection = det;
  g.detection_binomial = bin;
  const json& st = jsonf::need(gj, "statement", kKind, where);
  if (!st.is_string() || st.get<std::string>() != eval_guarantee_words(g))
    jsonf::bad(kKind, "the guarantee's statement does not match it", where);
  r.guarantee = g;
  return r;
}

EvalCheckReport EvalCheckReport::load(const std::string& path) {
  return from_json(read_json(path, "invalid eval check"), path == "-" ? "stdin" : path);
}

Problem check_eval_report(const EvalCheckReport& r, const EvalCommitment& e, const EvalScores* scores) {
  if (r.eval_id != e.id()) return "the report checks another eval (eval id)";
  if (r.run_id != e.run_id) return "the report names another run than the eval";
  if (r.checkpoint_root != e.checkpoint_root) return "the report names another checkpoint than the eval";
  if (r.n != e.n) return "the report's n is not the eval's";
  if (r.k < 1 || r.k > r.n || r.k > kMaxEvalCheck || r.nonce.empty() || r.nonce.size() > kMaxEvalNonceBytes)
    return "the report's k or nonce is out of range";
  if (r.seed != eval_check_seed(r.eval_id, ByteView(r.nonce))) return "the report's seed is not its nonce's";
  if (r.indices != eval_check_indices(r.seed, r.n, r.k)) return "the report's indices are not its seed's";
  if (r.items.size() != r.indices.size()) return "the report does not hold one item per index";
  if (scores)
    if (auto why = check_scores(e, *scores)) return "the scores do not reproduce the eval: " + *why;
  for (size_t i = 0; i < r.items.size(); i++) {
    const EvalCheckItem& it = r.items[i];
    const std::string at = "item " + std::to_string(i) + " (example " + std::to_string(it.index) + ")";
    if (it.index != r.indices[i]) return at + " is not of its index";
    bool record_ok = true;
    if (scores) {
      const Score& c = scores->scores[size_t(it.index)];
      if (!same_bits(c.loss, it.claimed.loss) || !same_bits(c.accuracy, it.claimed.accuracy))
        return at + ": the claimed score is not the one in the scores";
      record_ok = scores->record_leaves[size_t(it.index)] == it.record_leaf;
    } else if (it.failed == "record") {
      continue;  // only the scores can confirm a record mismatch, and it rejects anyway
    }
    const bool opening_ok = opening_verifies(it, r.n, e.scores_root);
    if (failed_field(item_failure(it, record_ok, opening_ok)) != it.failed || it.pass != it.failed.empty())
      return at + ": its verdict is not the one its record, opening and scores give";
  }
  EvalCheckReport want = r;
  finish_verdict(want);
  if (want.verdict != r.verdict || want.reason != r.reason) return "the report's verdict is not its items'";
  return std::nullopt;
}

}  // namespace wit
