// The board's expensive steps: add (verify a response by replay, check its
// batches against the benchmark, store it by digest, sign the board's
// report), evaluate (score the released weights on the benchmark, with the
// causal check) and audit (do all of it again from what is stored, and audit
// the stored leaves). Rules: docs/board.md.
#include "wit/board/recheck.h"

#include <algorithm>
#include <stdexcept>
#include <filesystem>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "wit/board/board.h"
#include "wit/board/gap.h"
#include "wit/board/overlap.h"
#include "wit/base/check.h"
#include "wit/eval/evaluate.h"
#include "wit/eval/release.h"
#include "wit/run/safetensors.h"
#include "wit/model/state.h"
#include "wit/run/state_root.h"
#include "wit/data/tree_audit.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/run_bundle.h"
#include "wit/run/run_config.h"

namespace fs = std::filesystem;

namespace wit {

using nlohmann::json;

namespace {

json parse_text(const std::string& text, const std::string& where) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error("not valid json", where);
  return j;
}

// Every benchmark record the overlap test checks replayed batches against:
// the published records, every revealed epoch's, and the current sealed set
// when the board's holder gives it; each with the name a finding shows (a
// sealed record by its number and salted leaf only: its text stays sealed).
struct BenchmarkRecords {
  std::vector<Hash32> leaves;  // the published records' leaves, sorted (the exact check)
  std::vector<std::string> names;
  std::unique_ptr<OverlapIndex> index;
  bool with_sealed = false;
};
BenchmarkRecords benchmark_records(const std::string& dir, const BoardDefinition& def, const SealedSet* sealed) {
  BenchmarkRecords out;
  std::vector<std::string> texts;
  std::vector<std::string> paths;
  for (const auto& r : def.records) paths.push_back((fs::path(dir) / r.file).string());
  const Dataset ds(def.benchmark, paths, 1);
  for (uint64_t i = 0; i < ds.size(); i++) {
    out.leaves.push_back(ds.leaf(i));
    texts.push_back(ds.record(i));
    out.names.push_back("benchmark record " + std::to_string(i) + " (leaf " + ds.leaf(i).hex().substr(0, 16) + ")");
  }
  std::sort(out.leaves.begin(), out.leaves.end());
  for (const auto& rv : def.revealed) {
    const SealedSet s = SealedSet::load((fs::path(dir) / rv.file).string());
    for (size_t i = 0; i < s.records.size(); i++) {
      texts.push_back(s.records[i].record);
      out.names.push_back("revealed record " + std::to_string(i) + " of epoch " + std::to_string(s.epoch) + " (leaf " +
                          s.records[i].leaf.hex().substr(0, 16) + ")");
    }
  }
  if (sealed) {
    out.with_sealed = true;
    for (size_t i = 0; i < sealed->records.size(); i++) {
      texts.push_back(sealed->records[i].record);
      out.names.push_back("sealed record " + std::to_string(i) + " of epoch " + std::to_string(sealed->epoch) + " (leaf " +
                          sealed->records[i].leaf.hex().substr(0, 16) + ")");
    }
  }
  const uint64_t token = def.benchmark.reader.kind == ReaderKind::kTokens ? def.benchmark.reader.token_bytes : 1;
  out.index = std::make_unique<OverlapIndex>(std::move(texts), def.policy.overlap_window * token);
  return out;
}

// The board's verdict on one response: the replay, then (when it passed) the
// exact check of its batches against the published benchmark and the overlap test.
struct BoardVerdict {
  ReplayReport report;
  nlohmann::json overlap;  // the finding, or null
};
BoardVerdict board_verdict(const OpenedResponse& resp, const Challenge& ch, const BenchmarkRecords& bench,
                           const BoardPolicy& policy, const VerifyOptions& opt) {
  BoardVerdict v;
  std::vector<VerifiedBatch> batches;  // what the replay proved was trained on: nothing else counts
  v.report = verify_response(resp, ch, opt, &batches);
  ReplayReport& r = v.report;
  if (!r.certified()) return v;
  if (const Problem hit = benchmark_hit(batches, bench.leaves)) {
    r.verdict = ReportVerdict::kRejected;
    r.reason = *hit;
    return v;
  }
  if (auto f = overlap_finding(batches, *bench.index, policy.overlap_share)) {
    const size_t at = size_t(f->at("benchmark_index").get<uint64_t>());
    (*f)["benchmark"] = bench.names[at];
    f->erase("benchmark_index");
    (*f)["action"] = policy.overlap_action;
    v.overlap = *f;
    if (policy.overlap_action == "reject") {
      r.verdict = ReportVerdict::kRejected;
      r.reason = overlap_reason(v.overlap);
    }
  }
  return v;
}

// The fields of two documents that differ: "loss 2.31 now 2.29, scores_root differs".
std::string differing_fields(const json& was, const json& now) {
  std::string out;
  for (const auto& [k, v] : was.items()) {
    const json w = now.contains(k) ? now[k] : json(nullptr);
    if (v == w) continue;
    out += (out.empty() ? "" : ", ") + k + (v.is_primitive() && w.is_primitive() ? " " + v.dump() + " now " + w.dump() : " differs");
  }
  return out.empty() ? "fields added" : out;
}

// Whether a replay now reaches the board's stored verdict: nothing, or where it does not.
Problem same_verdict_problem(const ReplayReport& stored, const ReplayReport& now) {
  if (stored.verdict != now.verdict)
    return std::string("the board's verdict ") + verdict_name(stored.verdict) + " does not reproduce: the replay now says " +
           verdict_name(now.verdict) + (now.reason.empty() ? "" : " (" + now.reason + ")");
  if (stored.reason != now.reason) return "the board's reason does not reproduce: the replay now says " + now.reason;
  if (stored.step_checks() != now.step_checks()) return "the board's report checks other steps than the replay";
  for (size_t i = 0; i < stored.checks.size() && i < now.checks.size(); i++)
    if (stored.checks[i].pass != now.checks[i].pass)
      return "the board's check of step " + std::to_string(stored.checks[i].step) + " does not reproduce";
  return std::nullopt;
}

// The board's scores of `weights` (bound exactly to the final state of the
// bundle's run) on its benchmark, each record also checked for causality.
struct Scored {
  EvalCommitment eval;
  std::vector<double> public_losses;
  std::optional<EvalCommitment> sealed;  // the sealed split's scores, when the sealed set was given
  std::optional<GapTest> gap;
  std::string why_not;  // not the run's final state: nothing is filed
  std::string refused;  // the model reads the future: filed, and the run rejected
};
// `sealed`: the sealed set scored (null: score the public split only);
// `joined`: the revealed epochs' sets that joined the public split, in epoch
// order (their records follow the benchmark's, each under its salted leaf, so
// its cut points are the ones it was scored at while sealed).
Scored score_weights(const std::string& dir, const BoardDefinition& def, const RunBundle& b, const std::string& weights,
                     const std::string& model, unsigned threads, const std::string& device,
                     const SealedSet* sealed, const std::vector<const SealedSet*>& joined) {
  BundleFinal fin = bundle_final_state(b);
  if (fin.manifest.model.scripted()) {
    if (model.empty())
      throw Error("a TorchScript run: the board needs its model file to score the weights", b.path, "give --model RUN/model.pt");
    fin.manifest.model.module_path = model;  // its digest is checked against the manifest's when loaded
  } else if (!model.empty()) {
    throw Error("the run trains the built-in GPT: no model file is needed", model);
  }
  if (!b.has(member::kModelBinding))
    throw Error("the bundle has no model.binding.json (wit-sketch match --json): the board needs the final optimizer root",
                b.path, "pack it with --model-binding");
  const ReleaseBinding claimed =
      ReleaseBinding::from_json(parse_text(b.get(member::kModelBinding), member::kModelBinding), member::kModelBinding);
  const Safetensors file = Safetensors::open(weights);
  const TrainState state = TrainState::from_tensors(fin.manifest.model, file.tensors(), weights, device, true);
  const LoggedFinal logged{uint64_t(fin.steps), fin.state_root};
  const ReleaseBinding rb = bind_release(file.tensors(), logged, claimed.optim_root, nullptr);
  Scored out;
  if (!rb.match) {
    out.why_not = "the weights are not the run's final state: " + binding_problem(rb, logged).value_or("");
    return out;
  }
  std::vector<std::string> paths;
  for (const auto& r : def.records) paths.push_back((fs::path(dir) / r.file).string());
  const Dataset ds(def.benchmark, paths, 1);
  // The causal check at cut points drawn from the final state root, as wit-eval run draws
  // them: it hashes the optimizer's moments too, which the model never sees.
  CausalCoverage cov;
  cov.nonce = Bytes(fin.state_root.data(), fin.state_root.data() + 32);
  cov.cuts = 1;
  std::vector<std::pair<std::string, Hash32>> records;  // the public split: (record, leaf)
  for (uint64_t i = 0; i < ds.size(); i++) records.emplace_back(ds.record(i), ds.leaf(i));
  std::vector<uint64_t> epochs;
  for (const SealedSet* j : joined) {
    epochs.push_back(j->epoch);
    for (const SealedRecord& r : j->records) records.emplace_back(r.record, r.leaf);
  }
  cov.records = records.size();
  set_torch_threads(threads);
  EvalScores scores;
  for (uint64_t i = 0; i < records.size(); i++) {
    CausalScore cs = score_record_causal(state, records[i].first, records[i].second, ByteView(cov.nonce), cov.cuts);
    if (cs.failure) {
      cs.failure->example = i;
      out.refused = cs.failure->message();
      return out;
    }
    scores.record_leaves.push_back(records[i].second);
    scores.scores.push_back(cs.score);
    out.public_losses.push_back(cs.score.loss);
  }
  out.eval = commit_scores(fin.run_id, fin.steps, fin.state_root, def.public_split_root(epochs), scores, cov);
  if (!sealed) return out;
  // The sealed records, with the same causal check: the cuts are drawn from
  // the salted leaf, which nobody outside the board knows.
  CausalCoverage scov = cov;
  scov.records = sealed->records.size();
  EvalScores ss;
  std::vector<double> sealed_losses;
  for (uint64_t i = 0; i < sealed->records.size(); i++) {
    const SealedRecord& r = sealed->records[i];
    CausalScore cs = score_record_causal(state, r.record, r.leaf, ByteView(scov.nonce), scov.cuts);
    if (cs.failure) {
      cs.failure->example = i;
      out.refused = "on the sealed split: " + cs.failure->message();
      return out;
    }
    ss.record_leaves.push_back(r.leaf);
    ss.scores.push_back(cs.score);
    sealed_losses.push_back(cs.score.loss);
  }
  out.sealed = commit_scores(fin.run_id, fin.steps, fin.state_root, sealed->root(), ss, scov);
  out.gap = gap_test(out.public_losses, sealed_losses, gap_seed(out.eval.scores_root, out.sealed->scores_root));
  out.gap->detectable = detectable_gap(out.public_losses, sealed_losses, def.policy.gap_threshold);
  return out;
}

// Revealed epoch `epoch`'s sealed set, from the folder, checked against the definition.
SealedSet load_revealed(const std::string& dir, const BoardDefinition& def, uint64_t epoch) {
  for (const auto& r : def.revealed) {
    if (r.commit.epoch != epoch) continue;
    const std::string rp = (fs::path(dir) / r.file).string();
    SealedSet s = SealedSet::load(rp);
    if (auto p = s.problem(def.name, r.commit)) throw Error("the revealed sealed set " + *p, rp);
    return s;
  }
  throw Error("board " + def.name + " has not revealed epoch " + std::to_string(epoch), dir);
}

// The sealed set a command was given (--sealed PATH), checked against the
// definition; nullopt when the board has no sealed split. A board with one
// needs it: it ranks on the sealed score.
std::optional<SealedSet> sealed_for(const BoardDefinition& def, const std::string& sealed_path, bool required) {
  if (!def.sealed) {
    if (!sealed_path.empty()) throw Error("the board has no sealed split (none sealed, or its epoch revealed)", sealed_path);
    // After a reveal, nothing is scored until the next epoch is sealed: a run
    // ranked on public records only would sit beside runs ranked on sealed ones.
    if (required && !def.revealed.empty())
      throw Error("board " + def.name + "'s sealed epoch " + std::to_string(def.revealed.back().commit.epoch) +
                      " is revealed: the board seals the next one before it scores again",
                  "", "wit-board seal DIR --key KEY --sealed NEW.json --sealed-records FILE...");
    return std::nullopt;
  }
  if (sealed_path.empty()) {
    if (required)
      throw Error("board " + def.name + " has a sealed split: the board scores on it too", "",
                  "give --sealed PATH (the file wit-board init or seal wrote, kept outside the folder)");
    return std::nullopt;
  }
  SealedSet s = SealedSet::load(sealed_path);
  if (auto p = s.problem(def.name, *def.sealed)) throw Error("the sealed set " + *p, sealed_path);
  return s;
}

}  // namespace

BoardEvalResult board_evaluate(const std::string& bundle_path, const std::string& weights_path, const std::string& model_path,
                               const SecretKey& key, unsigned threads, const std::string& device,
                               const std::string& sealed_path, const std::string& store_given) {
  BoardFiling f(bundle_path, key, weights_path, "no such weights file", store_given);
  const BoardDefinition& def = f.def;
  const std::string& dir = f.dir;
  RunBundle& b = f.bundle;
  if (b.has(member::kBoardEval))
    throw Error("the board has already scored this run's released weights", bundle_path,
                "'wit-board audit' re-scores the stored weights");
  const std::optional<SealedSet> sealed = sealed_for(def, sealed_path, true);
  // Every epoch revealed before this one joins the public split (all of them: a new epoch is sealed only after a reveal).
  const std::vector<uint64_t> epochs = sealed ? def.public_epochs_before(sealed->epoch) : std::vector<uint64_t>{};
  std::vector<SealedSet> joined_sets;
  for (uint64_t e : epochs) joined_sets.push_back(load_revealed(dir, def, e));
  std::vector<const SealedSet*> joined;
  for (const auto& j : joined_sets) joined.push_back(&j);
  StagedFile given(f.store, board_path::kWeights, weights_path);
  // Released weights only: of a checkpoint (parameters and optimizer moments)
  // the board exports the parameters itself and keeps only them.
  std::optional<StagedFile> exported;
  {
    const Safetensors file = Safetensors::open(given.path());
    std::vector<TensorView> params;
    for (const auto& t : file.tensors())
      if (is_param_tensor(t.name)) params.push_back(t);
    if (params.size() != file.tensors().size()) {
      exported.emplace(f.store, board_path::kWeights, "", ".safetensors");
      write_safetensors(exported->path(), params);
    }
  }
  StagedFile& in = exported ? *exported : given;
  std::optional<StagedFile> in_model;
  if (!model_path.empty()) in_model.emplace(f.store, board_path::kWeights, model_path, ".pt");
  BoardEvalResult out;
  uint64_t bytes = 0;
  const std::string digest = file_digest(in.path(), &bytes);
  const Scored sc = score_weights(dir, def, b, in.path(), in_model ? in_model->path() : "", threads, device,
                                  sealed ? &*sealed : nullptr, joined);
  out.why_not = sc.why_not;
  if (!sc.why_not.empty()) return out;
  out.eval = sc.eval;
  out.refused = sc.refused;
  out.sealed = sc.sealed;
  out.gap = sc.gap;
  BoardEval be;
  be.weights_digest = digest;
  be.weights_bytes = bytes;
  if (in_model) be.model_digest = file_digest(in_model->path());
  be.refused = sc.refused;
  be.public_revealed = epochs;
  if (sc.refused.empty()) be.eval = sc.eval.to_json();
  if (sealed) {
    be.has_sealed = true;
    be.sealed_epoch = sealed->epoch;
    if (sc.refused.empty()) {
      be.sealed_eval = sc.sealed->to_json();
      be.gap = sc.gap->to_json();
    }
  }
  be.sign_with(key);
  out.stored = (fs::path(f.store) / be.weights_path()).string();
  in.keep(out.stored, be.weights_digest);
  if (in_model) in_model->keep((fs::path(f.store) / be.model_path()).string(), be.model_digest);
  b.put_and_save(member::kBoardEval, be.to_json().dump(2) + "\n");
  out.member = member::kBoardEval;
  return out;
}

std::string overlap_reason(const nlohmann::json& f) {
  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", 100 * f.at("share").get<double>());
  return "step " + std::to_string(f.at("step").get<int64_t>()) + " trained on a near-copy of " +
         f.at("benchmark").get<std::string>() + ": record " + f.at("record").dump() + " of the data tree (leaf " +
         f.at("leaf").get<std::string>().substr(0, 16) + ") shares " + share + " of its text in spans of " +
         std::to_string(f.at("window").get<uint64_t>()) + " tokens or more";
}

namespace {

// Calls `f(step, position, record)` for every record of `batches` in order until it returns true.
void for_each_replayed_record(const std::vector<VerifiedBatch>& batches,
                              const std::function<bool(int64_t, uint64_t, const std::string&)>& f) {
  for (const VerifiedBatch& b : batches)
    for (size_t r = 0; r < b.records.size(); r++)
      if (f(b.step, b.positions[r], b.records[r])) return;
}

}  // namespace

std::optional<nlohmann::json> overlap_finding(const std::vector<VerifiedBatch>& batches, const OverlapIndex& index,
                                              double share) {
  std::optional<json> out;
  for_each_replayed_record(batches, [&](int64_t step, uint64_t position, const std::string& rec) {
    const auto hit = index.best(ByteView(rec));
    if (!hit || hit->share() < share) return false;
    out = json{{"step", step},
               {"record", position},
               {"leaf", record_leaf(ByteView(rec)).hex()},
               {"benchmark_index", uint64_t(hit->record)},
               {"share", hit->share()},
               {"window", index.window()}};
    return true;
  });
  return out;
}

Problem benchmark_hit(const std::vector<VerifiedBatch>& batches, const std::vector<Hash32>& leaves) {
  Problem out;
  for_each_replayed_record(batches, [&](int64_t step, uint64_t position, const std::string& rec) {
    const Hash32 leaf = record_leaf(ByteView(rec));
    if (!std::binary_search(leaves.begin(), leaves.end(), leaf)) return false;
    out = "step " + std::to_string(step) + " trained on a record of the board's benchmark (record " +
          std::to_string(position) + " of the data tree, leaf " + leaf.hex().substr(0, 16) + ")";
    return true;
  });
  return out;
}

namespace {

// The small bundle (or whole response) a board report names, decoded straight
// from the store and hashed in the same pass (open_hashed): the bytes checked
// against the signed digest are the bytes decoded, kept privately (memory and
// an anonymous scratch file), so one read does what a private copy and its
// decoding did (StoredCopy) with the same words: not in the store (pruned or
// not), or other bytes, whether or not they decode. Bytes of the digest that
// do not decode keep their decoder's error (a failure, not NotReVerifiable).
// `pinned`: pin_board_kernels' decoding, taken when it is of this file and of
// these bytes.
OpenedResponse stored_small_bundle(const std::string& store, const BoardReport& br,
                                   const std::map<std::string, std::string>& pruned,
                                   std::optional<DecodedResponse>* pinned) {
  const std::string rel = br.response_path();
  const std::string p = (fs::path(store) / rel).string();
  if (pinned && *pinned && fs::path((*pinned)->path).lexically_normal() == fs::path(p).lexically_normal() &&
      (*pinned)->response.bundle.digest().whole && (*pinned)->response.bundle.digest().hex == br.response_digest) {
    OpenedResponse r = std::move((*pinned)->response);
    pinned->reset();
    return r;
  }
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) throw not_in_store(store, rel, "response", pruned);
  FileDigest seen;
  try {
    OpenedResponse r = OpenedResponse::open(p, true, &seen);
    if (r.bundle.digest().hex != br.response_digest) throw other_bytes_in_store(rel, "response");
    return r;
  } catch (const NotReVerifiable&) {
    throw;
  } catch (const std::exception&) {
    if (seen.whole && seen.hex != br.response_digest) throw other_bytes_in_store(rel, "response");
    if (!seen.whole && seen.bytes == 0) throw not_in_store(store, rel, "response", pruned);  // it could not be opened
    throw;
  }
}

// The response a board report names, every stored byte checked against its
// signed digest before use: the whole file, or (a report with parts) the
// small bundle's members in memory and each part read once from its own
// stored file, one at a time, into the assembled bundle's private scratch
// file, hashed as it goes in: the digest compared is of the bytes the member
// holds (no private copy first, as StoredCopy makes for what is read twice).
// The manifest's one parse is the small bundle's.
OpenedResponse stored_response(const std::string& store, const BoardReport& br,
                               const std::map<std::string, std::string>& pruned,
                               std::optional<DecodedResponse>* pinned) {
  OpenedResponse small = stored_small_bundle(store, br, pruned, pinned);
  if (br.parts.empty()) return small;
  SpooledBundle out = SpooledBundle::assemble(br.response_path() + " with its parts");
  for (const std::string& name : small.bundle.names()) out.add(name, small.bundle.get(name));
  for (const ResponsePart& p : br.parts) {
    const std::string what = "response's part " + p.name + " at";
    const Fd in = open_stored(store, p.path(), what.c_str(), pruned);
    if (out.add_file(p.name, in.get(), (fs::path(store) / p.path()).string()).hex != p.digest)
      throw other_bytes_in_store(p.path(), what.c_str());
  }
  return OpenedResponse{std::move(out), std::move(small.manifest)};
}

}  // namespace

BoardAddResult board_add(const std::string& bundle_path, const std::string& response_path, const SecretKey& key,
                         const VerifyOptions& opt, const std::string& sealed_path, const std::string& store_given,
                         const OpenedResponse* response) {
  BoardFiling f(bundle_path, key, response_path, "no such response bundle", store_given);
  const BoardDefinition& def = f.def;
  const std::string& dir = f.dir;
  RunBundle& b = f.bundle;
  const TreeHead head = newest_signed_head(b);  // the manifest and its heads still agree

  // The response verified: the caller's decoding, or (none given) decoded here.
  std::optional<OpenedResponse> own;
  if (!response) own = OpenedResponse::open(response_path, true);
  const OpenedResponse& opened = response ? *response : *own;
  const SpooledBundle& resp = opened.bundle;
  const ResponseManifest& parsed = opened.manifest;
  // Which run and challenge the response is for: another's is a usage error, never a rejection.
  const std::string rwhere = response_path + ":challenge.json";
  const Challenge rch = Challenge::from_json(parse_text(resp.get_text("challenge.json"), rwhere), rwhere);
  // The manifest's one parse; where it is none, a usage error in add's words
  // (the member read again only to word it: a missing member, not JSON, not a manifest).
  if (!parsed.manifest) {
    const std::string mwhere = response_path + ":manifest.json";
    (void)Manifest::from_json(parse_text(resp.get_text("manifest.json"), mwhere), mwhere);
    parsed.get();  // not reached: the same text parses the same way
  }
  const Manifest& rmf = *parsed.manifest;
  if (rmf.run_id() != head.run_id || rch.head.run_id != head.run_id)
    throw Error("the response is for another run (" + rmf.run_id().hex().substr(0, 16) + "), not this bundle's (" +
                    head.run_id.hex().substr(0, 16) + "); nothing was filed",
                response_path);
  const std::string name = challenge_member_name(rch.seed);
  const std::string cm = std::string(member::kChallenges) + name + ".json";
  if (!b.has(cm))
    throw Error("the response answers no challenge of this run on the board (its challenge " + name +
                    " is not in the bundle); nothing was filed",
                response_path);
  const Challenge ch = Challenge::from_json(parse_text(b.get(cm), cm), cm);
  if (ch.seed != rch.seed) throw Error("the response answers another challenge than " + cm, response_path);
  const std::string rm = std::string(member::kBoardReports) + name + ".json";
  if (b.has(rm))
    throw Error("the board has already filed its report on challenge " + name, bundle_path,
                "a challenge is answered once; 'wit-board audit' re-verifies the stored response");

  BoardAddResult out;
  const std::optional<SealedSet> sealed = sealed_for(def, sealed_path, true);
  const BoardVerdict v =
      board_verdict(opened, ch, benchmark_records(dir, def, sealed ? &*sealed : nullptr), def.policy, opt);
  out.report = v.report;
  out.overlap = v.overlap;
  BoardReport br;
  br.overlap = v.overlap;
  br.challenge = name;
  // Stored in parts: each state (and a TorchScript module) its own file by
  // digest, so a state two responses hold is stored once; the rest a small bundle.
  // These are written from the verified members; a response with no part is
  // stored as the file itself: a copy whose digest is the one the verified
  // decoding hashed (open_hashed), so the copy is the bytes verified without
  // being decoded again (the copy is hashed, which it had to be for its name;
  // decoding the copy and verifying that instead would move the decoding
  // after the kernels were pinned with it, into the board's lock).
  StagedResponse parts = stage_response(f.store, resp);
  std::optional<StagedFile> in;
  std::string digest;
  uint64_t bytes = 0;
  if (parts.parts.empty()) {
    if (!resp.digest().whole)  // a caller's bug: open_response hashes what it decodes
      throw std::logic_error("board_add: the response was decoded without its digest (use open_response)");
    in.emplace(f.store, board_path::kResponses, response_path);
    digest = file_digest(in->path(), &bytes);
    if (digest != resp.digest().hex)
      throw Error("the response changed while the board read it; nothing was filed", response_path);
  }
  br.response_digest = parts.parts.empty() ? digest : parts.digest;
  br.response_bytes = parts.parts.empty() ? bytes : parts.bytes;
  br.parts = parts.parts;
  br.report = out.report.to_json();
  br.sign_with(key);
  out.stored = (fs::path(f.store) / br.response_path()).string();
  if (br.parts.empty()) in->keep(out.stored, digest);
  else parts.keep(f.store);
  b.put_and_save(rm, br.to_json().dump(2) + "\n");
  out.member = rm;
  return out;
}

AuditResult audit_board(const std::string& dir, const VerifyOptions& opt, const std::string& sealed_path,
                        const std::string& store_given, const BoardDefinition* def_given,
                        std::optional<DecodedResponse>* pinned) {
  std::optional<BoardDefinition> loaded;
  if (!def_given) loaded = BoardDefinition::load(dir);
  const BoardDefinition& def = def_given ? *def_given : *loaded;
  const std::string store = board_store(dir, def, store_given);
  const std::map<std::string, std::string> pruned = pruned_evidence(dir);
  // The sealed sets the audit can open: every revealed epoch's (in the
  // folder), and the current one's when the board's holder gives it.
  std::map<uint64_t, SealedSet> sealed_sets;
  for (const auto& r : def.revealed) sealed_sets.emplace(r.commit.epoch, load_revealed(dir, def, r.commit.epoch));
  if (auto cur = sealed_for(def, sealed_path, false)) sealed_sets.emplace(cur->epoch, std::move(*cur));
  const SealedSet* current = def.sealed && sealed_sets.count(def.sealed->epoch) ? &sealed_sets.at(def.sealed->epoch) : nullptr;
  const BenchmarkRecords bench = benchmark_records(dir, def, current);

  std::vector<std::string> runs;
  std::error_code ec;
  for (const auto& x : fs::directory_iterator(fs::path(dir) / board_path::kRuns, ec)) runs.push_back(x.path().string());
  if (ec) throw Error("cannot read the board's runs: " + ec.message(), dir);
  std::sort(runs.begin(), runs.end());
  AuditResult out;
  for (const auto& f : unexpected_board_files(dir, def)) out.unexpected.push_back((fs::path(dir) / f).string());
  std::error_code ec_store;
  if (!fs::equivalent(store, dir, ec_store))
    for (const auto& f : unexpected_store_files(store)) out.unexpected.push_back((fs::path(store) / f).string());
  // One line per document: why it does not reproduce, or why it cannot be re-verified.
  auto failed = [&](const std::string& where, const std::exception& x) {
    std::string m = x.what();
    m = where + ": " + m.substr(0, m.find('\n'));
    (dynamic_cast<const NotReVerifiable*>(&x) ? out.unverifiable : out.failures).push_back(m);
  };
  for (const auto& run : runs) {
    const std::string rel = std::string(board_path::kRuns) + fs::path(run).filename().string();
    RunBundle b;
    try {
      b = RunBundle::load(run);
    } catch (const std::exception& x) {
      out.failures.push_back(rel + ": cannot be read: " + x.what());
      continue;
    }
    for (const std::string& name : b.names_under(member::kBoardReports)) {
      const std::string where = rel + "/" + member::kBoardReports + name + ".json";
      out.checked++;
      try {
        const BoardReport br = BoardReport::from_json(parse_text(b.get(std::string(member::kBoardReports) + name + ".json"), where), where);
        if (auto p = br.problem(def.key)) throw Error(*p);
        const std::string cm = std::string(member::kChallenges) + name + ".json";
        if (!b.has(cm)) throw Error("answers no challenge in the bundle");
        const Challenge ch = Challenge::from_json(parse_text(b.get(cm), cm), cm);
        const OpenedResponse resp = stored_response(store, br, pruned, pinned);
        const ReplayReport was = ReplayReport::from_json(br.report, where);
        // A finding on a sealed record is re-checked only with the sealed set (revealed, or given).
        const bool sealed_finding = br.overlap.is_object() && br.overlap.value("benchmark", "").rfind("sealed record", 0) == 0;
        if (sealed_finding && !bench.with_sealed) {
          out.sealed_unverified++;
          continue;
        }
        const BoardVerdict now = board_verdict(resp, ch, bench, def.policy, opt);
        if (const Problem p = same_verdict_problem(was, now.report)) throw Error(*p);
        if (now.overlap != br.overlap) throw Error("the board's overlap finding does not reproduce");
      } catch (const std::exception& x) {
        failed(where, x);
      }
    }
    if (b.has(member::kBoardLeaves)) {
      const std::string where = rel + "/" + member::kBoardLeaves;
      out.checked++;
      try {
        const BoardLeaves bl = BoardLeaves::from_json(parse_text(b.get(member::kBoardLeaves), where), where);
        if (auto p = bl.problem(def.key)) throw Error(*p);
        const StoredCopy stored(store, bl.leaves_path(), bl.leaves_digest, "leaves file", pruned);
        const Commitment data = Commitment::from_json(parse_text(b.get(member::kDataCommit), where), member::kDataCommit);
        // One hashing thread: the audit's threaded path crashed once under wit-board (see docs/board.md).
        const LeavesAudit a = audit_leaves_file(stored.path(), data, 1);
        if ((a.ok ? std::string() : a.reason) != bl.refused) throw Error("the board's audit of the tree does not reproduce");
      } catch (const std::exception& x) {
        failed(where, x);
      }
    }
    if (b.has(member::kStoredLog)) {  // the run's log in the store: check 4 on it, and its curve re-derived
      const std::string where = rel + "/" + member::kStoredLog;
      out.checked++;
      try {
        audit_stored_log(b, store, pruned, where);
      } catch (const std::exception& x) {
        failed(where, x);
      }
    }
    if (!b.has(member::kBoardEval)) continue;
    const std::string where = rel + "/" + member::kBoardEval;
    out.checked++;
    try {
      const BoardEval be = BoardEval::from_json(parse_text(b.get(member::kBoardEval), where), where);
      if (auto p = be.problem(def.key)) throw Error(*p);
      const StoredCopy stored(store, be.weights_path(), be.weights_digest, "weights", pruned);
      std::optional<StoredCopy> model;
      if (!be.model_digest.empty()) model.emplace(store, be.model_path(), be.model_digest, "model file", pruned);
      const SealedSet* sealed = nullptr;
      if (be.has_sealed) {
        auto it = sealed_sets.find(be.sealed_epoch);
        if (it != sealed_sets.end()) sealed = &it->second;
        else out.sealed_unverified++;
      }
      // The public split it was scored on: the benchmark and the revealed epochs it names (all in the folder).
      std::vector<const SealedSet*> joined;
      for (uint64_t e : be.public_revealed) {
        const auto it = sealed_sets.find(e);  // the revealed sets, and the current one when given
        if (it == sealed_sets.end() || (def.sealed && def.sealed->epoch == e))
          throw Error("it names epoch " + std::to_string(e) + " in its public split, which the board has not revealed");
        joined.push_back(&it->second);
      }
      const Scored sc = score_weights(dir, def, b, stored.path(), model ? model->path() : "", opt.threads, opt.device, sealed, joined);
      if (!sc.why_not.empty()) throw Error(sc.why_not);
      // Without the sealed set (not revealed yet) the public half is checked; a refusal on the sealed split
      // then shows as a public pass.
      const bool unseen_sealed_refusal = sc.refused.empty() && !sealed && be.refused.rfind("on the sealed split: ", 0) == 0;
      if (sc.refused != be.refused && !unseen_sealed_refusal)
        throw Error("the board's causal check does not reproduce: " + (sc.refused.empty() ? "the model now passes" : sc.refused));
      if (be.refused.empty() && sc.eval.to_json() != be.eval)
        throw Error("the board's score does not reproduce from the stored weights (" + differing_fields(be.eval, sc.eval.to_json()) +
                    ")");
      if (be.refused.empty() && sealed) {
        if (!sc.sealed || sc.sealed->to_json() != be.sealed_eval)
          throw Error("the board's sealed score does not reproduce from the stored weights and the sealed set of epoch " +
                      std::to_string(be.sealed_epoch) +
                      (sc.sealed ? " (" + differing_fields(be.sealed_eval, sc.sealed->to_json()) + ")" : std::string()));
        if (sc.gap->to_json() != be.gap) throw Error("the board's gap test does not reproduce");
      }
    } catch (const std::exception& x) {
      failed(where, x);
    }
  }
  return out;
}

std::optional<OpenedResponse> open_response(const std::string& response_path) {
  if (!fs::is_regular_file(response_path)) return std::nullopt;  // board_add says what is wrong with it
  return OpenedResponse::open(response_path, true);
}

void pin_response_kernels(const std::optional<OpenedResponse>& response, char** argv) {
  if (response) pin_recorded_kernels(*response, argv);
}

std::optional<BoardDefinition> board_definition_if_any(const std::string& dir) {
  try {
    return BoardDefinition::load(dir);
  } catch (const std::exception&) {
    return std::nullopt;  // not a board: the command itself says so
  }
}

std::optional<DecodedResponse> pin_board_kernels(const std::string& dir, char** argv, const std::string& store_given) {
  return pin_board_kernels(dir, board_definition_if_any(dir), argv, store_given);
}

std::optional<DecodedResponse> pin_board_kernels(const std::string& dir, const std::optional<BoardDefinition>& def,
                                                 char** argv, const std::string& store_given) {
  std::vector<std::string> stored;
  std::error_code ec;
  const std::string store = def ? board_store(dir, *def, store_given) : dir;
  for (const auto& x : fs::directory_iterator(fs::path(store) / board_path::kResponses, ec))
    if (x.path().extension() == ".wbundle") stored.push_back(x.path().string());
  std::sort(stored.begin(), stored.end());
  for (const auto& p : stored) {
    try {
      // Hashed as it is decoded: audit_board uses this decoding for the report whose digest it bears.
      OpenedResponse r = OpenedResponse::open(p, true);
      if (!r.bundle.has(kRunConfigFile)) continue;
      pin_recorded_kernels(r, argv);
      return DecodedResponse{p, std::move(r)};
    } catch (const std::exception&) {
      // a damaged stored response: the audit itself names it
    }
  }
  return std::nullopt;
}

}  // namespace wit
