// Usage proofs: which steps of a run trained on a record, with proof.
#include "wit/run/usage.h"

#include <algorithm>

#include "wit/base/error.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/order.h"
#include "wit/proofs/proofs.h"
#include "wit/run/runlog.h"
#include "wit/run/wlog.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr jsonf::Fields F{"invalid proof"};

std::string steps_text(const std::vector<int64_t>& steps) {
  std::string s;
  const size_t shown = std::min<size_t>(steps.size(), 12);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(steps[i]);
  if (steps.size() > shown) s += ", ... (" + std::to_string(steps.size()) + " in all)";
  return s;
}

}  // namespace

void check_run_data(const Commitment& c, const std::string& commit_path, const std::string& run_dir) {
  const RunPaths rp(run_dir);
  const Manifest mf = Manifest::load(rp.manifest());
  if (mf.data_root == c.root && mf.data_n == c.n) return;
  throw Error("the run was not trained on this commitment: " + commit_path + " has root " + c.root.hex() + " (" +
                  std::to_string(c.n) + " records), the run's data (" + rp.manifest() + ") has root " +
                  mf.data_root.hex() + " (" + std::to_string(mf.data_n) + " records)",
              "", "leave out --commit and --index to use the run's own (RUN/data.json)");
}

json usage_document(const Commitment& c, const Index& idx, const std::string& run_dir, const Hash32& leaf,
                    uint64_t position, const std::optional<std::string>& record) {
  const RunPaths rp(run_dir);
  const Manifest mf = Manifest::load(rp.manifest());
  const Hash32 run_id = mf.run_id();
  if (mf.data_root != c.root || mf.data_n != c.n) check_run_data(c, "the commitment", run_dir);
  const auto seed = read_revealed_seed(rp);
  if (!seed) throw Error("the run's seed is not revealed yet: its data order is still secret", rp.seed(),
                         "a usage proof needs RUN/seed, which wit-train writes when training ends");
  if (auto p = seed_problem(mf, *seed)) throw Error(*p, rp.seed());
  const std::vector<TreeHead> heads = read_heads(rp.heads());
  const TreeHead* head = find_head(heads);
  if (!head) throw Error("the run has no signed head", rp.heads());
  const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (head->size > log.size() || log.root(head->size) != head->root)
    throw Error("the newest signed head is not a head of the log", rp.heads(), "run 'wit-log verify' on the run");

  const int64_t last = int64_t(head->size) - 1;
  DataOrder order(run_id, *seed, c.n, uint64_t(mf.batch_size));
  const std::vector<int64_t> steps = order.steps_using(position, last);
  json uses = json::array();
  for (int64_t s : steps) {
    const std::vector<uint64_t> batch = order.batch(s);
    std::vector<Hash32> leaves;
    leaves.reserve(batch.size());
    for (uint64_t i : batch) leaves.push_back(idx.tree().leaves()[i]);
    const uint64_t pos = uint64_t(std::find(batch.begin(), batch.end(), position) - batch.begin());
    MerkleTree bt(kBlake2bTree, leaves.data(), leaves.size(), 0, 1);
    uses.push_back({{"step", s},
                    {"position", pos},
                    {"batch_path", jsonf::hex_array(bt.hashes(inclusion_ranges(pos, leaves.size())))},
                    {"entry", to_hex(log.entry_bytes(uint64_t(s)))},
                    {"entry_path", jsonf::hex_array(log.inclusion_proof(uint64_t(s), head->size))}});
  }
  const InclusionProof inc = prove_inclusion(idx, leaf, position);
  json doc = {{"format", kProofFormat},
              {"version", c.version},
              {"type", "usage"},
              {"hash", kBlake2bTree.name},
              {"commitment", commitment_ref(c)},
              {"inclusion", inclusion_body(inc)},
              {"manifest", mf.to_json()},
              {"seed", to_hex(*seed)},
              {"head", head->to_json()},
              {"steps", steps},
              {"uses", uses}};
  if (record) doc["record"] = *record;
  return doc;
}

Verdict verify_usage(const json& doc, const Commitment& c, const std::string& where) {
  F.only_keys(doc, {"format", "version", "type", "hash", "commitment", "inclusion", "manifest", "seed", "head", "steps",
                    "uses", "record"},
              where);
  // The record is in the data at a position.
  const InclusionProof inc = parse_inclusion_body(F.need(doc, "inclusion", where), where);
  if (doc.contains("record")) {
    if (!doc["record"].is_string()) F.bad("field 'record' is not a string", where);
    if (record_leaf(ByteView(doc["record"].get<std::string>())) != inc.leaf)
      return {false, "embedded record does not hash to the proved leaf", ""};
  }
  if (inc.size != c.n) return {false, "the record's inclusion proof is for a tree of another size", ""};
  if (const Verdict v = verify_inclusion_in(inc, c); !v.ok)
    return {false, "the record is not at its position in the data: " + v.reason, ""};

  // The run: a manifest trained on this data, its revealed seed, its signed head.
  const Manifest mf = Manifest::from_json(F.need(doc, "manifest", where), where + ": manifest");
  const Hash32 run_id = mf.run_id();
  if (mf.data_root != c.root || mf.data_n != c.n) return {false, "the run was not trained on this commitment", ""};
  const json& seed_j = F.need(doc, "seed", where);
  Bytes seed;
  if (!seed_j.is_string() || !from_hex(seed_j.get<std::string>(), seed) || seed.size() != 32) F.bad("'seed' is not 64 hex digits", where);
  if (auto p = seed_problem(mf, seed)) return {false, *p, ""};
  const TreeHead head = TreeHead::from_json(F.need(doc, "head", where), where + ": head");
  if (auto p = head_problem(head, run_id, mf.trainer_key)) return {false, *p, ""};
  if (head.size < 1) return {false, "the head covers no entries", ""};
  if (mf.batch_size < 1) F.bad("the manifest's batch size is not positive", where);

  // The steps are complete: exactly those the committed order gives.
  const int64_t last = int64_t(head.size) - 1;
  DataOrder order(run_id, seed, c.n, uint64_t(mf.batch_size));
  const std::vector<int64_t> expect = order.steps_using(inc.index, last);
  const json& steps_j = F.need(doc, "steps", where);
  if (!steps_j.is_array()) F.bad("'steps' is not an array", where);
  std::vector<int64_t> steps;
  for (const auto& s : steps_j) {
    if (!s.is_number_integer()) F.bad("a step is not an integer", where);
    steps.push_back(s.get<int64_t>());
  }
  if (steps != expect)
    return {false, "the steps are not the ones the committed data order gives (" + std::to_string(expect.size()) +
                       " steps expected, " + std::to_string(steps.size()) + " listed)",
            ""};

  // Each step: its logged entry under the head, and the record in its batch root.
  const json& uses = F.need(doc, "uses", where);
  if (!uses.is_array() || uses.size() != steps.size()) F.bad("'uses' must have one element per step", where);
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& u = uses[i];
    const std::string w = where + ": uses[" + std::to_string(i) + "]";
    if (!u.is_object()) F.bad("not an object", w);
    F.only_keys(u, {"step", "position", "batch_path", "entry", "entry_path"}, w);
    if (!F.need(u, "step", w).is_number_integer() || u["step"].get<int64_t>() != steps[i]) return {false, "uses[" + std::to_string(i) + "] is not for step " + std::to_string(steps[i]), ""};
    const int64_t s = steps[i];
    const std::vector<uint64_t> batch = order.batch(s);
    const uint64_t pos = F.u64(u, "position", w);
    if (pos >= batch.size() || batch[pos] != inc.index)
      return {false, "step " + std::to_string(s) + ": the record is not at that position of the batch", ""};
    const json& ej = F.need(u, "entry", w);
    Bytes entry_bytes;
    if (!ej.is_string() || !from_hex(ej.get<std::string>(), entry_bytes)) F.bad("'entry' is not hex", w);
    const LogEntry e = decode_entry(entry_bytes, w + ": entry");
    if (e.genesis || int64_t(e.s.step) != s) return {false, "step " + std::to_string(s) + ": the entry is not that step's", ""};
    const std::vector<Hash32> entry_path = F.hashes(u, "entry_path", kMaxInclusionPath, w);
    if (verify_inclusion(kBlake2bTree, uint64_t(s), head.size, entry_leaf(entry_bytes), entry_path, head.root) != ProofError::kOk)
      return {false, "step " + std::to_string(s) + ": the entry is not in the log under the signed head", ""};
    const std::vector<Hash32> batch_path = F.hashes(u, "batch_path", kMaxInclusionPath, w);
    if (verify_inclusion(kBlake2bTree, pos, batch.size(), inc.leaf, batch_path, e.s.batch_root) != ProofError::kOk)
      return {false, "step " + std::to_string(s) + ": the record is not in the logged batch root", ""};
  }
  std::string summary = "record at position " + std::to_string(inc.index) + " of " + std::to_string(c.n) + " (leaf " +
                        inc.leaf.hex().substr(0, 16) + ") ";
  summary += steps.empty() ? "was in no batch of the " + std::to_string(last) + " steps of run " + run_id.hex().substr(0, 16)
                           : "was trained on at " + std::to_string(steps.size()) + " of the " + std::to_string(last) +
                                 " steps of run " + run_id.hex().substr(0, 16) + ": step" + (steps.size() > 1 ? "s " : " ") +
                                 steps_text(steps);
  return {true, "", summary};
}

Verdict verify_any_document(const json& doc, const Commitment& c, const std::string& where, bool strict) {
  const bool usage = doc.is_object() && doc.contains("format") && doc["format"] == kProofFormat &&
                     doc.contains("type") && doc["type"] == "usage";
  if (!usage) return verify_document(doc, c, where, strict);
  if (const Problem p = check_proof_head(doc, c, where)) return Verdict::fail(*p);
  return verify_usage(doc, c, where);
}

}  // namespace wit
