// wit-log's logic over a run directory: entries as JSON, log proof documents
// and their verification, signing heads, and verifying a whole run.
#include "wit/run/runlog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>

#include "wit/base/check.h"
#include "wit/base/cli_base.h"
#include "wit/base/error.h"
#include "wit/base/json_fields.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"
#include "wit/run/shards.h"

namespace wit {

using nlohmann::json;

namespace {

// A float as the shortest decimal that reads back to the same float (so 0.1f
// prints as 0.1, not 0.10000000149011612); NaN and infinities become null.
json num(float f) {
  if (!std::isfinite(f)) return nullptr;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  *r.ptr = 0;
  return std::strtod(buf, nullptr);
}

json floats(const std::vector<float>& v, bool full) {
  if (full) {
    json a = json::array();
    for (float f : v) a.push_back(num(f));
    return a;
  }
  double s = 0;
  for (float f : v) s += double(f) * double(f);
  return {{"n", v.size()}, {"l2", num(float(std::sqrt(s)))}};
}

std::string short_hex(const std::string& hex) { return hex.substr(0, 16); }

// ---- proof document parsing (malformed → wit::Error) ------------------------

constexpr jsonf::Fields F{"invalid log proof"};

// The path of an inclusion or a consistency proof (the longer bound serves both).
std::vector<Hash32> get_path(const json& j, const std::string& where) {
  return F.hashes(j, "path", kMaxConsistencyPath, where);
}

// One end of a consistency proof: a signed head, or an unsigned {size, root}.
struct End {
  uint64_t size = 0;
  Hash32 root;
  std::optional<TreeHead> head;
};

End get_end(const json& doc, const char* key, const std::string& where) {
  const json& v = F.need(doc, key, where);
  if (!v.is_object()) F.bad(std::string("field '") + key + "' is not an object", where);
  End e;
  if (v.contains("sig")) {
    e.head = TreeHead::from_json(v, where + " (" + key + ")");
    e.size = e.head->size;
    e.root = e.head->root;
    return e;
  }
  for (const auto& kv : v.items())
    if (kv.key() != "size" && kv.key() != "root")
      F.bad(std::string("unknown field '") + kv.key() + "' in unsigned '" + key + "'", where);
  e.size = F.u64(v, "size", where);
  e.root = F.hash(v, "root", where);
  return e;
}

}  // namespace

RunPaths::RunPaths(std::string d) : dir(std::move(d)) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) dir = ".";
}

Bytes parse_seed_hex(std::string text, const std::string& where) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.back())) text.pop_back();
  size_t lead = 0;
  while (lead < text.size() && space(text[lead])) lead++;
  text.erase(0, lead);
  Bytes b;
  if (!from_hex(text, b) || b.size() != 32) throw Error("seed is not 64 hex digits", where);
  return b;
}

std::optional<Bytes> read_revealed_seed(const RunPaths& rp) {
  if (!std::filesystem::exists(rp.seed())) return std::nullopt;
  return parse_seed_hex(read_file(rp.seed()), rp.seed());
}

RunDataFiles run_data_files(const std::string& run, RunDataFiles given) {
  if (!given.commit.empty() && !given.index.empty() && !given.files.empty()) return given;
  const std::string dj = (std::filesystem::path(run) / "data.json").string();
  const nlohmann::json d = nlohmann::json::parse(read_file(dj), nullptr, false);
  if (d.is_discarded() || !d.is_object()) throw Error("invalid data.json", dj, "give --data, --index and the files");
  try {
    if (given.commit.empty()) given.commit = d.value("commit", std::string());
    if (given.index.empty()) given.index = d.value("index", std::string());
    if (given.files.empty()) given.files = d.value("files", std::vector<std::string>{});
  } catch (const nlohmann::json::exception&) {
    throw Error("invalid data.json", dj, "give --data, --index and the files");
  }
  return given;
}

RunSettings run_data_settings(const std::string& run) {
  RunSettings s;
  const std::string dj = (std::filesystem::path(run) / "data.json").string();
  if (!std::filesystem::exists(dj)) return s;
  const nlohmann::json d = nlohmann::json::parse(read_file(dj), nullptr, false);
  if (d.is_discarded() || !d.is_object()) return s;
  auto field = [&](const char* key, int64_t lo, int64_t hi, int64_t dflt) -> int64_t {
    if (!d.contains(key)) return dflt;
    const nlohmann::json& v = d[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)))
      throw Error("invalid data.json: '" + std::string(key) + "' is not an integer in " + std::to_string(lo) + ".." +
                      std::to_string(hi),
                  dj);
    return v.get<int64_t>();
  };
  s.threads = unsigned(field("threads", 0, cli::kMaxThreads, 0));
  s.world = int(field("world", 1, 256, 1));
  return s;
}

std::string RunPaths::checkpoint(uint64_t step) const {
  char name[48];
  std::snprintf(name, sizeof name, "step-%06llu.safetensors", static_cast<unsigned long long>(step));
  return ckpt_dir() + "/" + name;
}

json entry_json(const LogEntry& e, uint64_t index, const Hash32& leaf, bool full) {
  json j = {{"index", index}, {"leaf", leaf.hex()}};
  if (e.genesis) {
    j["kind"] = "genesis";
    j["run_id"] = e.g.run_id.hex();
    j["init_root"] = e.g.init_root.hex();
    j["n_params"] = e.g.n_params;
    return j;
  }
  const StepEntry& s = e.s;
  j["kind"] = "step";
  j["step"] = s.step;
  j["lr"] = num(s.lr);
  j["mean_loss"] = num(s.mean_loss);
  j["grad_norm"] = num(s.grad_norm);
  j["batch_root"] = s.batch_root.hex();
  j["losses"] = floats(s.losses, true);
  j["sketch"] = floats(s.sketch, full);
  j["sketch_m"] = floats(s.sketch_m, full);
  j["sketch_v"] = floats(s.sketch_v, full);
  if (s.probe) j["probe"] = floats(*s.probe, full);
  j["state_root"] = s.state_root.hex();
  if (s.checkpoint) j["checkpoint"] = true;
  return j;
}

const TreeHead* find_head(const std::vector<TreeHead>& heads, std::optional<uint64_t> size) {
  for (auto it = heads.rbegin(); it != heads.rend(); ++it)
    if (!size || it->size == *size) return &*it;
  return nullptr;
}

// ---- log proofs ------------------------------------------------------------

json log_inclusion_document(const WitnessLog& log, const TreeHead& head, uint64_t index) {
  return {{"format", kLogProofFormat},
          {"version", kLogProofVersion},
          {"type", "inclusion"},
          {"hash", "blake2b-256"},
          {"run_id", head.run_id.hex()},
          {"head", head.to_json()},
          {"index", index},
          {"entry", to_hex(log.entry_bytes(index))},
          {"leaf", log.leaves()[index].hex()},
          {"path", jsonf::hex_array(log.inclusion_proof(index, head.size))}};
}

json log_consistency_document(const WitnessLog& log, const Hash32& run_id, uint64_t old_size, uint64_t new_size,
                              const TreeHead* old_head, const TreeHead* new_head) {
  auto end = [&](uint64_t size, const TreeHead* h) -> json {
    if (h) return h->to_json();
    return {{"size", size}, {"root", log.root(size).hex()}};
  };
  return {{"format", kLogProofFormat},
          {"version", kLogProofVersion},
          {"type", "consistency"},
          {"hash", "blake2b-256"},
          {"run_id", run_id.hex()},
          {"old", end(old_size, old_head)},
          {"new", end(new_size, new_head)},
          {"path", jsonf::hex_array(log.consistency_proof(old_size, new_size))}};
}

Verdict verify_log_proof(const json& doc, const LogProofPins& pins, const std::string& where) {
  if (!doc.is_object()) F.bad("not a json object", where);
  if (!doc.contains("format") || !doc["format"].is_string() || doc["format"].get<std::string>() != kLogProofFormat)
    throw Error("not a wit log proof (format is not \"wit.log-proof\")", where);
  if (!doc.contains("version") || !doc["version"].is_number_integer()) F.bad("missing version", where);
  if (doc["version"].get<int64_t>() != kLogProofVersion)
    throw Error("unsupported log proof version " + doc["version"].dump(), where, "this wit reads version 1");
  if (doc.contains("hash") && doc["hash"] != "blake2b-256") F.bad("hash is not \"blake2b-256\"", where);
  const json& type = F.need(doc, "type", where);
  if (!type.is_string()) F.bad("field 'type' is not a string", where);
  const Hash32 run_id = F.hash(doc, "run_id", where);
  const std::vector<Hash32> path = get_path(doc, where);
  const std::string pinned = pins.key ? "" : " (key not pinned: pass --key to check whose it is)";

  if (type == "inclusion") {
    const TreeHead head = TreeHead::from_json(F.need(doc, "head", where), where + " (head)");
    const uint64_t index = F.u64(doc, "index", where);
    const Hash32 leaf = F.hash(doc, "leaf", where);
    const json& ej = F.need(doc, "entry", where);
    Bytes entry;
    if (!ej.is_string() || !from_hex(ej.get<std::string>(), entry)) F.bad("field 'entry' is not hex", where);
    if (pins.run_id && run_id != *pins.run_id) return Verdict::fail("proof is for run " + run_id.hex() + ", not this run");
    if (auto p = head_problem(head, run_id, pins.key, "the head")) return Verdict::fail(*p);
    if (entry_leaf(entry) != leaf) return Verdict::fail("entry bytes do not hash to the leaf");
    if (const ProvedEntry pe = verify_entry_proof(entry, index, head.size, head.root, path, run_id, where + " (entry)"); pe.no)
      return Verdict::fail(*pe.no);
    return Verdict::pass("entry " + std::to_string(index) + (index == 0 ? " (genesis)" : " (step " + std::to_string(index) + ")") +
                " is in the log of run " + short_hex(run_id.hex()) + " under its head of size " +
                std::to_string(head.size) + ", signed by " + short_hex(head.key.hex()) + pinned);
  }
  if (type == "consistency") {
    const End o = get_end(doc, "old", where), n = get_end(doc, "new", where);
    if (pins.run_id && run_id != *pins.run_id) return Verdict::fail("proof is for run " + run_id.hex() + ", not this run");
    if (o.head)
      if (auto p = head_problem(*o.head, run_id, pins.key, "the old head")) return Verdict::fail(*p);
    if (n.head)
      if (auto p = head_problem(*n.head, run_id, pins.key, "the new head")) return Verdict::fail(*p);
    if (o.size == 0) return Verdict::fail("old size is 0");
    if (o.size > n.size) return Verdict::fail("old size " + std::to_string(o.size) + " is larger than new size " +
                                     std::to_string(n.size));
    ProofError pe = verify_consistency(kBlake2bTree, o.size, n.size, o.root, n.root, path);
    if (pe != ProofError::kOk) return Verdict::fail(to_string(pe));
    auto kind = [](const End& e) { return e.head ? std::string("signed head") : std::string("unsigned log root"); };
    return Verdict::pass("the log of run " + short_hex(run_id.hex()) + " at size " + std::to_string(o.size) +
                " is a prefix of the log at size " + std::to_string(n.size) + " (old: " + kind(o) + ", new: " +
                kind(n) + ")" + (o.head || n.head ? pinned : ""));
  }
  throw Error("unknown log proof type '" + type.get<std::string>() + "'", where);
}

// ---- heads -----------------------------------------------------------------

TreeHead sign_run_head(const std::string& run_dir, const SecretKey& key, uint64_t time, TornTail torn) {
  const RunPaths rp(run_dir);
  const Manifest m = Manifest::load(rp.manifest());
  if (key.pub() != m.trainer_key)
    throw Error("key is not the manifest's trainer key", rp.manifest(),
                "the manifest names " + m.trainer_key.hex());
  const WitnessLog log = WitnessLog::open(rp.log(), torn);
  if (torn == TornTail::kCut) cut_torn_heads(rp.heads());
  if (log.size() == 0) throw Error("the log is empty: nothing to sign", rp.log());
  if (auto p = entry_problem(log.entry(0), 0, m.run_id())) throw Error(*p, rp.log());
  if (time == 0) time = uint64_t(std::time(nullptr));
  TreeHead h = sign_head(key, m.run_id(), log.size(), log.root(log.size()), time);
  append_head(rp.heads(), h);
  return h;
}

// ---- a run's rules on plain values ------------------------------------------

Problem model_file_problem(const Manifest& m, const std::string& path) {
  if (!m.model.scripted()) return std::nullopt;
  if (!exists(path)) return "the run's TorchScript model file is missing";
  if (model_file_digest(path) != m.model.file)
    return "the model file is not the one the manifest binds (digest " + m.model.file.hex() + ")";
  return std::nullopt;
}

// ---- verifying a run -------------------------------------------------------

json RunVerdict::details() const {
  return {{"run_id", run_id.hex()},
          {"entries", entries},
          {"heads", heads},
          {"checkpoints", checkpoints},
          {"sharded_checkpoints", sharded},
          {"seed", seed_revealed ? "checked" : "not revealed"},
          {"warnings", warnings}};
}

namespace {

// The one line for a run that passed.
std::string run_summary(const RunVerdict& v) {
  std::string s = "run " + v.run_id.hex() + ": " + std::to_string(v.entries) + " entries";
  if (v.entries > 1) s += " (steps 1.." + std::to_string(v.entries - 1) + ")";
  s += ", " + cli::count_of(v.heads, "signed head");
  s += v.seed_revealed ? ", seed and initial state checked" : ", seed not revealed";
  s += ", " + cli::count_of(v.checkpoints, "checkpoint") + " checked";
  if (v.sharded) s += " (" + std::to_string(v.sharded) + " sharded)";
  return s;
}

// What verify_run's checks share: the run, the log, and what the entries bound.
struct RunCtx {
  const RunPaths& rp;
  const RunCheckOptions& opt;
  RunVerdict& v;
  Manifest m;
  WitnessLog log;
  GenesisEntry genesis;
  std::map<uint64_t, Hash32> state_roots;  // entry i's state root
  std::optional<Bytes> seed;               // the revealed seed, once it opened the commitment
  std::map<uint64_t, std::string> ckpts;   // step -> checkpoint file (whole) or shard index
};

// 1. The run is there: the manifest loads and the log file exists (else an error: nothing to judge).
void load_run(RunCtx& c) {
  c.m = Manifest::load(c.rp.manifest());
  c.v.run_id = c.m.run_id();
  if (!exists(c.rp.log())) throw Error("cannot open: no such file or directory", c.rp.log());
}

// 2. The log reads whole (no torn tail, no corruption) and is not empty.
void read_log(RunCtx& c) {
  c.log = WitnessLog::open(c.rp.log(), TornTail::kRefuse);
  c.v.entries = c.log.size();
  if (c.log.size() == 0) reject("the log is empty (no genesis entry): " + c.rp.log());
}

// An entry of the log, decoded (a malformed one is evidence against the run: the row is kNo).
LogEntry entry_at(const RunCtx& c, uint64_t i) {
  LogEntry e = decode_entry(c.log.entry_bytes(i), "entry " + std::to_string(i));
  reject_if(entry_problem(e, i, c.v.run_id));
  return e;
}

// 3. Entry 0 is a genesis naming this run, with the model's parameter count.
void check_genesis(RunCtx& c) {
  const LogEntry e = entry_at(c, 0);
  const uint64_t np = param_count(c.m.model);
  if (e.g.n_params != np)
    reject("entry 0: genesis says " + std::to_string(e.g.n_params) + " parameters, the model has " + std::to_string(np));
  c.genesis = e.g;
}

// 4. Entries 1, 2, 3, ...: steps shaped as the manifest says. Only the state roots are kept.
void check_entries(RunCtx& c) {
  const Manifest& m = c.m;
  const WitnessLog& log = c.log;
  for (uint64_t i = 1; i < log.size(); i++) {
    const std::string at = "entry " + std::to_string(i) + ": ";
    const LogEntry e = entry_at(c, i);
    if (e.s.step > uint64_t(m.steps)) reject(at + "beyond the manifest's " + std::to_string(m.steps) + " steps");
    const uint64_t k = uint64_t(m.fp.sketch_k);
    if (e.s.sketch.size() != k || e.s.sketch_m.size() != k || e.s.sketch_v.size() != k)
      reject(at + "a sketch does not have the manifest's " + std::to_string(k) + " buckets");
    if (e.s.losses.size() != uint64_t(m.batch_size))
      reject(at + std::to_string(e.s.losses.size()) + " per-example losses, the batch size is " +
             std::to_string(m.batch_size));
    if (e.s.probe && e.s.probe->size() != uint64_t(m.fp.probe_dim))
      reject(at + "probe fingerprint has " + std::to_string(e.s.probe->size()) + " values, the manifest says " +
             std::to_string(m.fp.probe_dim));
    c.state_roots[i] = e.s.state_root;
  }
  if (log.size() - 1 < uint64_t(m.steps))
    c.v.warnings.push_back("the log has " + std::to_string(log.size() - 1) + " of the manifest's " +
                           std::to_string(m.steps) + " steps (training unfinished?)");
}

// 5. Heads: signed by the trainer, for this run, growing, each matching the log, consecutive ones consistent.
void check_heads(RunCtx& c) {
  const RunPaths& rp = c.rp;
  RunVerdict& v = c.v;
  const WitnessLog& log = c.log;
  if (!exists(rp.heads())) reject("no signed tree heads: " + rp.heads() + " is missing");
  uint64_t torn = 0;
  const std::vector<TreeHead> heads = read_heads(rp.heads(), TornLine::kIgnore, &torn);
  if (torn)
    v.warnings.push_back(rp.heads() + ":" + std::to_string(heads.size() + 1) + ": torn last line ignored (" +
                         std::to_string(torn) + " bytes)");
  v.heads = heads.size();
  if (heads.empty()) reject("no signed tree heads in " + rp.heads());
  for (size_t i = 0; i < heads.size(); i++) {
    const TreeHead& h = heads[i];
    const std::string at = rp.heads() + ":" + std::to_string(i + 1) + ": ";
    if (auto p = head_problem(h, v.run_id, c.m.trainer_key, at + "the head")) reject(*p);
    if (h.size > log.size())
      reject(at + "head covers " + std::to_string(h.size) + " entries, the log has " + std::to_string(log.size()));
    if (log.root(h.size) != h.root) reject(at + "root does not match the log at size " + std::to_string(h.size));
    if (i > 0) {
      const TreeHead& p = heads[i - 1];
      if (h.size < p.size)
        reject(at + "size " + std::to_string(h.size) + " is smaller than the previous head's " + std::to_string(p.size));
      if (h.time < p.time) v.warnings.push_back(at + "time goes backwards");
      if (p.size > 0) {
        ProofError pe = verify_consistency(kBlake2bTree, p.size, h.size, p.root, h.root,
                                           log.consistency_proof(p.size, h.size));
        if (pe != ProofError::kOk) reject(at + "not consistent with the previous head: " + to_string(pe));
      }
    }
  }
  if (heads.back().size != log.size())
    reject(rp.heads() + ":" + std::to_string(heads.size()) + ": the last head covers " +
           std::to_string(heads.back().size) + " of " + std::to_string(log.size()) + " entries (the rest are unsigned)");
}

// 6. The seed, once revealed, is 64 hex digits that open the manifest's seed commitment.
void check_seed(RunCtx& c) {
  const RunPaths& rp = c.rp;
  if (!exists(rp.seed())) {
    c.v.warnings.push_back("seed not revealed yet (" + rp.seed() + " is missing): the initial state is not checked");
    return;
  }
  Bytes seed = parse_seed_hex(read_file(rp.seed()), rp.seed());
  if (auto p = seed_problem(c.m, seed)) reject(rp.seed() + ": " + *p);
  c.seed = std::move(seed);
}

// 7. The revealed seed generates the genesis state (skipped with --no-init).
void check_init_state(RunCtx& c) {
  if (!c.seed) return;
  if (c.opt.init && initial_state_root(c.m.model, *c.seed) != c.genesis.init_root)
    reject("entry 0: init_root is not the initial state generated from the revealed seed");
  c.v.seed_revealed = true;
  if (!c.opt.init) c.v.warnings.push_back("initial state not regenerated (--no-init)");
}

// 8. A TorchScript run's model file is the one the manifest binds.
void check_model_file(RunCtx& c) {
  const std::string path = c.rp.model();
  if (const Problem p = model_file_problem(c.m, path)) reject(path + ": " + *p);
}

// 9. The checkpoint files in RUN/ckpt (unless --no-checkpoints): whole ones
// (step-NNNNNN.safetensors) and sharded ones (their index
// step-NNNNNN.index.json, which names the shard files), one of each step.
void list_checkpoints(RunCtx& c) {
  const RunPaths& rp = c.rp;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!c.opt.checkpoints || !fs::is_directory(rp.ckpt_dir(), ec)) return;
  for (const auto& de : fs::directory_iterator(rp.ckpt_dir(), ec)) {
    const std::string name = de.path().filename().string();
    const std::string pre = "step-";
    uint64_t step = 0;
    bool ok = false;
    for (const std::string suf : {".safetensors", ".index.json"}) {
      if (ok || name.size() <= pre.size() + suf.size() || name.compare(0, pre.size(), pre) != 0 ||
          name.compare(name.size() - suf.size(), suf.size(), suf) != 0)
        continue;
      const char* b = name.data() + pre.size();
      const char* e = name.data() + name.size() - suf.size();
      auto r = std::from_chars(b, e, step);
      const std::string whole = rp.checkpoint(step);
      ok = r.ec == std::errc() && r.ptr == e &&
           (suf == ".safetensors" ? whole : shard_index_path(whole)) == rp.ckpt_dir() + "/" + name;
    }
    if (!ok) {
      // Shard files are read through their index.
      if (name.find(".tmp.") == std::string::npos && name.find(".shard-") == std::string::npos)
        c.v.warnings.push_back("ignored " + de.path().string());
      continue;
    }
    auto [it, fresh] = c.ckpts.emplace(step, de.path().string());
    if (!fresh) reject(rp.checkpoint(step) + ": both a whole and a sharded checkpoint of step " + std::to_string(step));
  }
  if (ec) throw Error("cannot list: " + ec.message(), rp.ckpt_dir());
}

// 10. Each checkpoint is within the log and is the state its entry binds (init_root for step 0).
void check_checkpoints(RunCtx& c) {
  for (const auto& [step, path] : c.ckpts) {
    if (step >= c.log.size()) reject(path + ": step " + std::to_string(step) + " is beyond the log");
    const Hash32& want = step == 0 ? c.genesis.init_root : c.state_roots.at(step);
    Hash32 got;
    if (path.size() > 11 && path.compare(path.size() - 11, 11, ".index.json") == 0) {
      const ShardedCheckpoint sc = ShardedCheckpoint::open(path);
      if (sc.step != int64_t(step)) reject(path + ": the index is of step " + std::to_string(sc.step));
      got = sc.root_of_tensors();
      if (got != sc.root) reject(path + ": the shards do not add up to the index's root");
      c.v.sharded++;
    } else {
      got = state_root(Safetensors::open(path).tensors());
    }
    if (got != want)
      reject(path + ": the checkpoint's state root does not match entry " + std::to_string(step) +
             (step == 0 ? " (init_root)" : ""));
    c.v.checkpoints++;
  }
}

}  // namespace

RunVerdict verify_run(const std::string& run_dir, const RunCheckOptions& opt) {
  const RunPaths rp(run_dir);
  RunVerdict v;
  RunCtx c{rp, opt, v, {}, {}, {}, {}, {}, {}};
  // The checks of docs/witness-log.md ("Verifying a run"), row for row (cli_test_check_tables compares them). A
  // kNo row reads the run's own files: what is malformed there is evidence against the run, not a tool error.
  const std::optional<Rejection> no = run_checks<RunCtx>(c, {
      load_run,                          // 1
      {read_log, OnError::kNo},          // 2
      {check_genesis, OnError::kNo},     // 3
      {check_entries, OnError::kNo},     // 4
      {check_heads, OnError::kNo},       // 5
      {check_seed, OnError::kNo},        // 6
      check_init_state,                  // 7
      {check_model_file, OnError::kNo},  // 8
      list_checkpoints,                  // 9
      {check_checkpoints, OnError::kNo}, // 10
  });
  if (no) {
    v.reason = no->reason;
    return v;
  }
  v.ok = true;
  v.summary = run_summary(v);
  return v;
}

}  // namespace wit
