// Responding to challenges (trainer side), verifying responses by replay
// (verifier side), and calibrating replay noise. Torch-free: it drives the
// shared training step through state.h.
#include "wit/replay/replay.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "wit/train/dist.h"  // load_run_checkpoint

#include "wit/base/check.h"
#include "wit/cmd/cli.h"
#include "wit/data/commitment.h"
#include "wit/model/config_in_effect.h"
#include "wit/base/error.h"
#include "wit/model/fingerprint.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/hash/merkle.h"
#include "wit/run/order.h"
#include "wit/base/progress.h"
#include "wit/proofs/proofs.h"
#include "wit/run/replay_math.h"
#include "wit/run/runlog.h"
#include "wit/run/safetensors.h"
#include "wit/run/sketch.h"
#include "wit/model/state.h"
#include "wit/run/wlog.h"

namespace wit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string member(const char* dir, int64_t step, const char* ext) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s/%06lld.%s", dir, static_cast<long long>(step), ext);
  return buf;
}

// What a challenge needs: log entries, exact states (after step i) and
// batches (of step i). A replayed transition s needs the entries of s - 1
// and s and the batch of s; a segment (from, to] is the transitions
// from + 1 ... to. The transitions a challenge replays: its step
// challenges, then every step of each segment.
std::vector<int64_t> transitions(const Challenge& c) {
  std::vector<int64_t> out = c.steps;
  for (const Segment& g : c.segments)
    for (int64_t s = g.from + 1; s <= g.to; s++) out.push_back(s);
  return out;
}

// States, each once: the start of every run of consecutive replayed
// transitions (the state after t - 1 for a transition t whose t - 1 is not
// itself replayed: an exact verifier replays in step order, and a replay of
// t - 1 that matched its logged root is the start of t); with end_states
// (for a tolerant verifier, which takes no replay as exact) the start and
// the end of every transition.
struct Needs {
  std::set<int64_t> entries{0}, states, batches;
  Needs(const Challenge& c, bool end_states) {
    const std::vector<int64_t> ts = transitions(c);
    const std::set<int64_t> replayed(ts.begin(), ts.end());
    for (int64_t s : ts) {
      entries.insert({s - 1, s});
      batches.insert(s);
      if (end_states) states.insert({s - 1, s});
      else if (!replayed.count(s - 1)) states.insert(s - 1);
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- respond

namespace {

// What the decode's member limit learns of the manifest: its text, its one
// parse, and the model size read from it (its parameter and tensor counts;
// nothing when it is not a valid manifest: then nothing can be a state).
struct ManifestSeen {
  std::string text;
  ResponseManifest parsed;
  std::optional<std::pair<uint64_t, uint64_t>> counts;
};

// What each member of a response bundle can hold, so a bundle declaring a
// huge member is refused before anything is allocated: a state by the
// manifest's parameter count (12 bytes each, plus its header), a log entry by
// its format, anything else by a fixed cap. It tells `seen` the manifest it
// parsed: read once per manifest text (every state member asks).
MemberLimit member_limit_seeing(std::shared_ptr<std::optional<ManifestSeen>> seen) {
  auto model_size = [seen](const Bundle& before) -> std::optional<std::pair<uint64_t, uint64_t>> {
    if (!before.has("manifest.json")) return std::nullopt;
    std::string text = before.get_text("manifest.json");
    if (*seen && (*seen)->text == text) return (*seen)->counts;
    ManifestSeen m{std::move(text), {}, std::nullopt};
    m.parsed = ResponseManifest::parse(m.text);
    if (m.parsed.manifest) {
      try {
        const Manifest& mf = *m.parsed.manifest;
        m.counts = std::make_pair(param_count(mf.model), uint64_t(3 * model_params(mf.model).size() + 1));
      } catch (const std::exception&) {
        // no model size: the fixed cap
      }
    }
    *seen = std::move(m);
    return (*seen)->counts;
  };
  return [model_size](const std::string& name, const Bundle& before) -> uint64_t {
    constexpr uint64_t kSmall = uint64_t(64) << 20;
    if (name.rfind("log/", 0) == 0)  // hex of the largest entry a log may hold, and its audit path
      return 2 * (96 + 5 * (4 + 4 * uint64_t(kMaxEntryFloats))) + (uint64_t(1) << 20);
    if (name.rfind("state/", 0) == 0) {
      const auto counts = model_size(before);
      if (!counts) return kSmall;
      const auto [params, tensors] = *counts;
      return 12 * params + 8 + tensors * 512 + (uint64_t(1) << 16);
    }
    if (name.rfind("batch/", 0) == 0) return uint64_t(1) << 30;
    if (name == kModelFileName) {  // a TorchScript file: its code, and parameter values at most float32-sized
      const auto counts = model_size(before);
      return counts ? 8 * counts->first + kSmall : kSmall;
    }
    return kSmall;
  };
}

}  // namespace

ResponseManifest ResponseManifest::parse(const std::string& text) {
  ResponseManifest out;
  const json mj = json::parse(text, nullptr, false);
  if (mj.is_discarded()) {
    out.error = std::make_exception_ptr(Error("manifest is not valid json"));
    return out;
  }
  try {
    out.manifest = Manifest::from_json(mj, "manifest.json");
  } catch (...) {
    out.error = std::current_exception();
  }
  return out;
}

const Manifest& ResponseManifest::get() const {
  if (!manifest && !error) throw Error("the bundle has no manifest.json");
  if (!manifest) std::rethrow_exception(error);
  return *manifest;
}

OpenedResponse OpenedResponse::open(const std::string& path, bool hashed, FileDigest* read) {
  auto seen = std::make_shared<std::optional<ManifestSeen>>();
  OpenedResponse r{hashed ? SpooledBundle::open_hashed(path, member_limit_seeing(seen), SpooledBundle::kKeep, read)
                          : SpooledBundle::open(path, member_limit_seeing(seen)),
                   {}};
  if (r.bundle.has("manifest.json")) {
    // The limit's parse, when it parsed this member (a state or model.pt
    // followed it); else (no such member) the one parse is here.
    std::string text = r.bundle.get_text("manifest.json");
    r.manifest = *seen && (*seen)->text == text ? std::move((*seen)->parsed) : ResponseManifest::parse(text);
  }
  return r;
}

void write_response(const Challenge& c, const ResponseOptions& opt, const std::string& path) {
  set_torch_threads(opt.threads);
  const RunPaths paths(opt.run);
  const std::string mf_text = read_file(paths.manifest());
  Manifest mf = Manifest::load(paths.manifest());
  const Hash32 run_id = mf.run_id();
  if (c.head.run_id != run_id) throw Error("the challenge is for another run", opt.run);
  bool have_head = false;
  for (const auto& h : read_heads(paths.heads()))
    have_head |= h == c.head;
  if (!have_head) throw Error("the challenged head is not one of this run's signed heads", paths.heads());
  WitnessLog log = WitnessLog::open(paths.log(), TornTail::kRefuse);
  if (log.size() < c.head.size || log.root(c.head.size) != c.head.root)
    throw Error("the log does not match the challenged head", paths.log());
  if (!fs::exists(paths.seed())) throw Error("the seed is not revealed yet (training has not finished)", opt.run);
  const Bytes seed = parse_seed_hex(read_file(paths.seed()), paths.seed());

  const RunDataFiles df = run_data_files(opt.run, {opt.commit_path, opt.index_path, opt.files});
  const std::string& commit_path = df.commit;
  const std::string& index_path = df.index;
  const std::vector<std::string>& files = df.files;
  // Regenerate states as training computed them, so they come out bit-identical:
  // the trainer's thread count, and a data-parallel run's ranks emulated in one process.
  // The recorded configuration's (RUN/config.json; wit-replay has already
  // re-executed itself under its kernels), or for a run that predates it RUN/data.json's.
  // RUN/data.json is read (and its threads and world range-checked) either way.
  const RunSettings settings = run_data_settings(opt.run);
  int world = settings.world;
  const std::optional<RunConfig> config = load_run_config(opt.run, run_id.hex());
  if (config) {
    if (opt.threads == 0) set_torch_threads(config->threads);
    world = config->world;
  } else if (opt.threads == 0) {
    set_torch_threads(settings.threads);
  }
  CommitPair pair = load_commit_pair(commit_path, index_path, IndexUse::kIndexNeeded);
  const Commitment& data = pair.commit;
  const Index& index = *pair.index;
  if (data.root != mf.data_root) throw Error("the data commitment is not the run's", commit_path);
  CommitLimits data_limits;
  data_limits.memory = opt.data_memory;
  Dataset dataset(data, index, files, 0, data_limits);
  DataOrder order(run_id, ByteView(seed), dataset.size(), uint64_t(mf.batch_size));

  const Needs need(c, opt.end_states);
  // Members are written in name order: batch/, challenge.json, config.json
  // (when the run records one), log/, manifest.json, model.pt (a TorchScript
  // run's module, once), probe.json, seed, state/; the count comes first (add
  // a member here, count it here).
  const bool scripted = mf.model.scripted();
  BundleWriter b(path, uint32_t(need.batches.size() + 1 + (config ? 1 : 0) + need.entries.size() + 3 +
                                (scripted ? 1 : 0) + need.states.size()));
  auto batch_records = [&](int64_t s) {
    BatchRecords out;
    for (uint64_t i : order.batch(s)) out.push_back(dataset.record(i));
    return out;
  };
  for (int64_t s : need.batches) {
    json recs = json::array();
    for (uint64_t i : order.batch(s)) {
      json rec = {{"index", i}, {"record_hex", to_hex(ByteView(dataset.record(i)))}};
      rec.update(path_fields(prove_inclusion(index, dataset.leaf(i), i)));
      recs.push_back(std::move(rec));
    }
    b.add(member("batch", s, "json"), json{{"step", s}, {"records", recs}}.dump() + "\n");
  }
  b.add("challenge.json", c.to_json().dump(2) + "\n");
  if (config) b.add(kRunConfigFile, config->to_json().dump(2) + "\n");
  for (int64_t i : need.entries) {
    json e = {{"index", i}, {"entry_hex", to_hex(ByteView(log.entry_bytes(uint64_t(i))))},
              {"path", jsonf::hex_array(log.inclusion_proof(uint64_t(i), c.head.size))}};
    b.add(member("log", i, "json"), e.dump() + "\n");
  }
  b.add("manifest.json", mf_text);
  if (scripted) b.add_file(kModelFileName, paths.model());  // the verifier replays with exactly this module
  b.add_file("probe.json", (fs::path(opt.run) / "probe.json").string());
  b.add("seed", to_hex(ByteView(seed)) + "\n");

  // States: from the newest checkpoint at or before each target, replaying
  // forward with the shared training step (continuing when no newer
  // checkpoint lies between); each must come out with its logged root.
  auto logged_root = [&](int64_t i) {
    LogEntry e = log.entry(uint64_t(i));
    return i == 0 ? e.g.init_root : e.s.state_root;
  };
  std::optional<TrainState> cur;
  auto checkpoint_at = [&](int64_t i) -> std::optional<TrainState> {
    if (i == 0) return opt.init_fn ? opt.init_fn(mf, ByteView(seed)) : TrainState::initial(mf.model, ByteView(seed), opt.device);
    if (!log.entry(uint64_t(i)).s.checkpoint) return std::nullopt;
    // Whole or sharded; a missing or damaged one only makes the walk longer.
    return logged_checkpoint(mf.model, paths.checkpoint(uint64_t(i)), i, logged_root(i), opt.device);
  };
  Progress progress("regenerating states", uint64_t(need.states.size()), "states", opt.quiet);
  for (int64_t target : need.states) {
    int64_t start = target;
    std::optional<TrainState> ck;
    for (; start >= 0; start--) {
      if (cur && cur->step() == start) break;  // continuing is as good as a checkpoint here
      if ((ck = checkpoint_at(start))) break;
    }
    if (ck) cur = std::move(ck);
    if (!cur) throw Error("no checkpoint or initial state to regenerate step " + std::to_string(target) + " from", opt.run);
    while (cur->step() < target) {
      const int64_t s = cur->step() + 1;
      if (opt.step_fn) opt.step_fn(mf, *cur, batch_records(s), s);
      else train_step_emulating(mf, *cur, batch_records(s), world, ByteView(seed));
    }
    if (cur->root() != logged_root(target))
      throw Error("the regenerated state after step " + std::to_string(target) + " does not match its logged state root",
                  opt.run, "regenerate with the thread count, kernel set and device training used (RUN/config.json)");
    const std::string name = member("state", target, "safetensors");
    b.add(name, safetensors_pieces(cur->tensors(), {}, name).all());
    progress.add(1);
  }
  progress.finish();
  b.finish();
}

// ---------------------------------------------------------------- verify

namespace {

// The logged sketches are of the logged state, computed from the same floats:
// they agree up to the rounding of their double accumulators.
constexpr double kSketchTolerance = 1e-5;

// The bundle's config.json (NotAnAnswer when it is not a valid configuration).
RunConfig parse_bundle_config(const SpooledBundle& b) {
  try {
    return RunConfig::parse(b.get_text(kRunConfigFile), b.where + ": " + kRunConfigFile);
  } catch (const Error& e) {
    throw NotAnAnswer(e.what());
  }
}

// Whether the bundle answers challenge `c` at all (throws NotAnAnswer): it
// has a manifest and a seed, and its challenge.json is `c`.
void check_answers(const SpooledBundle& b, const Challenge& c) {
  for (const char* m : {"manifest.json", "seed", "challenge.json"})
    if (!b.has(m)) throw NotAnAnswer(std::string("the bundle has no ") + m + ", so it answers no challenge", b.where);
  const json answered = json::parse(b.get_text("challenge.json"), nullptr, false);
  const json given = c.to_json();
  if (answered.is_object() && answered.contains("run_id") && answered["run_id"] != given["run_id"])
    throw NotAnAnswer("the bundle answers a challenge of another run", b.where,
                      "verify the bundle with the challenge it answers");
  if (answered != given)
    throw NotAnAnswer("the bundle answers another challenge (its challenge.json is not the one given)", b.where,
                      "verify the bundle with the challenge it answers");
}

struct Verifier {
  const SpooledBundle& b;
  const Challenge& c;
  const VerifyOptions& opt;
  Manifest mf;
  Hash32 run_id;
  Bytes seed;
  std::map<int64_t, LogEntry> entries;
  std::optional<ProbeSet> probe;
  std::unique_ptr<DataOrder> order;
  // Exact states held, by the step they follow: the bundle's members decoded
  // so far (roots checked), and (exact mode) replays that reproduced their
  // logged root. Dropped once the next transition does not start from them.
  std::map<int64_t, TrainState> states, replays;
  // A TorchScript run's model.pt, written out for LibTorch to load; removed with the verifier.
  std::unique_ptr<TempFile> model_file;
  std::optional<RunConfig> config;  // the bundle's config.json
  int world = 1;                    // data-parallel ranks the replay emulates
  const ResponseManifest& parsed;  // the bundle's manifest.json, parsed once
  // The batches check 8 proved, by member name (when the caller asks for them).
  std::map<std::string, VerifiedBatch>* proven = nullptr;

  const LogEntry& entry(int64_t i) {
    auto it = entries.find(i);
    if (it == entries.end()) reject_at("log", "bundle lacks log entry " + std::to_string(i));
    return it->second;
  }

  // The records of step s, each proved to be committed data at the position
  // the data order gives, and together matching the logged batch root.
  BatchRecords batch(int64_t s) {
    const std::string name = member("batch", s, "json");
    if (!b.has(name)) reject_at("batch", "bundle lacks the batch of step " + std::to_string(s));
    json j = json::parse(b.get_text(name), nullptr, false);
    if (j.is_discarded() || !j.contains("records") || !j["records"].is_array())
      reject_at("batch", name + " is malformed");
    const std::vector<uint64_t> want = order->batch(s);
    if (j["records"].size() != want.size()) reject_at("batch", "step " + std::to_string(s) + " has the wrong number of records");
    BatchRecords out;
    std::vector<Hash32> leaves;
    for (size_t r = 0; r < want.size(); r++) {
      const json& e = j["records"][r];
      Bytes rec;
      if (!e.is_object() || !e.contains("record_hex") || !e["record_hex"].is_string() ||
          !from_hex(e["record_hex"].get<std::string>(), rec))
        reject_at("batch", name + " has a malformed record");
      // The record's leaf, the position the order gives and the tree's size
      // are the verifier's; only the path is the trainer's (absent: the
      // empty path). A malformed path is a "no" of check 8 (its row is evidence).
      InclusionProof p;
      p.leaf = record_leaf(ByteView(rec));
      p.index = want[r];
      p.size = mf.data_n;
      ProofPath pp = parse_proof_path(e, name, PathField::kOptional);
      p.path = std::move(pp.path);
      p.ranges = std::move(pp.ranges);
      if (verify_data_inclusion(p, mf.data_root) != ProofError::kOk)
        reject_at("batch", "record " + std::to_string(want[r]) + " of step " + std::to_string(s) +
                                  " is not the committed record at that position");
      leaves.push_back(p.leaf);
      out.emplace_back(rec.begin(), rec.end());
    }
    if (merkle_root(kBlake2bTree, leaves, 1) != entry(s).s.batch_root)
      reject_at("batch", "the batch of step " + std::to_string(s) + " is not the one logged");
    if (proven && !proven->count(name)) proven->emplace(name, VerifiedBatch{s, want, out});
    return out;
  }

  // The exact state after step i: the bundle's member, of step i, whose root
  // is the one the log has (the genesis root for i = 0); or, when the bundle
  // has none, this verifier's exact replay of step i that reproduced the
  // logged root (an exact response omits the states it can replay). A member
  // the bundle has is always checked, even where a replay could stand in.
  const TrainState& state(int64_t i) {
    if (auto it = states.find(i); it != states.end()) return it->second;
    const std::string name = member("state", i, "safetensors");
    if (!b.has(name)) {
      if (auto it = replays.find(i); it != replays.end()) return it->second;
      reject_at("state", "bundle lacks the state after step " + std::to_string(i));
    }
    replays.erase(i);
    // A member that does not read as this model's state is a "no" of the
    // row asking for it (each such row is evidence, failing as "state").
    TrainState st;
    {
      const SpooledBundle::View bytes = b.view(name);  // no copy: the tensors are its only one
      Safetensors f = Safetensors::parse(bytes.bytes(), name);
      st = TrainState::from_tensors(mf.model, f.tensors(), name, opt.device);
    }
    if (st.step() != i) reject_at("state", name + " holds step " + std::to_string(st.step()));
    const LogEntry& e = entry(i);
    const Hash32& want = i == 0 ? e.g.init_root : e.s.state_root;
    if (st.root() != want)
      reject_at("state_root", i == 0 ? std::string("the initial state differs from the genesis root")
                                        : "the state after step " + std::to_string(i) + " differs from its logged state root");
    return states.emplace(i, std::move(st)).first->second;
  }
  // Before a transition: only its start (the state after step i) can serve
  // again, so at most one state is held between transitions.
  void keep_only(int64_t i) {
    for (auto* held : {&states, &replays})
      for (auto it = held->begin(); it != held->end();) it = it->first == i ? std::next(it) : held->erase(it);
  }

  void check_lr(int64_t s) {
    const LogEntry& logged = entry(s);
    const float lr_want = float(mf.lr_at(s));
    if (std::fabs(double(logged.s.lr) - lr_want) > 1e-6 * std::fabs(double(lr_want)))
      reject_at("lr", "step " + std::to_string(s) + " logs learning rate " + std::to_string(logged.s.lr) +
                             ", the schedule says " + std::to_string(lr_want));
  }
};


// ---- the checks of the whole bundle (docs/replay.md, 1 to 6)

// 1. manifest.json is valid JSON, a valid manifest (its one parse, handed
// in: ResponseManifest), in canonical form.
void check_manifest(Verifier& v) {
  const std::string mf_text = v.b.get_text("manifest.json");
  v.mf = v.parsed.get();  // its reason when it is none, a "no" of this row
  if (const Problem p = manifest_form_problem(v.mf, mf_text)) reject_at("manifest", *p);
  v.run_id = v.mf.run_id();
}

// 1b. Its run id is the challenged head's, else the bundle answers nothing (NotAnAnswer).
void check_answers_run(Verifier& v) {
  if (v.run_id != v.c.head.run_id)
    throw NotAnAnswer("the bundle answers another run than the challenged head", v.b.where,
                      "verify the bundle with the challenge it answers");
}

// 2. The challenged head is signed by the manifest's trainer key.
void check_head(Verifier& v) {
  if (auto p = head_problem(v.c.head, v.run_id, v.mf.trainer_key)) reject_at("head", *p);
}

// The configuration a bundle records, bound to run `run_id` when it is known
// (NotAnAnswer when the member is invalid or another run's).
std::optional<RunConfig> recorded_config(const SpooledBundle& b, const std::optional<Hash32>& run_id) {
  if (!b.has(kRunConfigFile)) return std::nullopt;
  std::optional<RunConfig> c = parse_bundle_config(b);
  if (run_id && c->run_id != run_id->hex()) throw NotAnAnswer("the bundle's configuration is another run's", b.where);
  return c;
}

// 2b. config.json, when present, is this run's (else the bundle answers
// nothing); its world is the one the replay emulates.
void read_config(Verifier& v) {
  v.config = recorded_config(v.b, v.run_id);
  if (v.config) v.world = v.config->world;
}

// 3. The revealed seed opens the manifest's seed commitment.
void check_seed(Verifier& v) {
  v.seed = parse_seed_hex(v.b.get_text("seed"), "seed");
  if (auto why = seed_problem(v.mf, ByteView(v.seed))) reject_at("seed", *why);
}

// 3b. A TorchScript run's model.pt is the module the manifest binds.
void check_model_file(Verifier& v) {
  if (!v.mf.model.scripted()) return;
  if (!v.b.has(kModelFileName)) reject_at("model", std::string("the bundle lacks the run's model (") + kModelFileName + ")");
  v.model_file = std::make_unique<TempFile>("wit-model");
  const Bytes module = v.b.get(kModelFileName);
  write_file_atomic(v.model_file->path, std::string(module.begin(), module.end()), true);
  if (model_file_problem(v.mf, v.model_file->path))
    reject_at("model", std::string("the bundle's ") + kModelFileName + " is not the model the manifest binds");
  v.mf.model.module_path = v.model_file->path;
}

// 4. Every log/ member, in name order: an entry proved into the head's root,
// decoded strictly, in its place (verify_entry_proof, the one verification
// of a log entry's proof). A malformed member is a "no" (the row is evidence).
void check_log_entries(Verifier& v) {
  constexpr jsonf::Fields F{"invalid proof"};
  for (const std::string& name : v.b.names()) {
    if (name.rfind("log/", 0) != 0) continue;
    const Bytes bytes = v.b.get(name);
    json e = json::parse(std::string(bytes.begin(), bytes.end()), nullptr, false);
    if (e.is_discarded() || !e.is_object()) reject_at("log", name + " is not valid json");
    Bytes enc;
    if (!e.contains("entry_hex") || !e["entry_hex"].is_string() || !from_hex(e["entry_hex"].get<std::string>(), enc))
      reject_at("log", name + " has no entry bytes");
    // Its place and its audit path (none: the empty path).
    if (!e.contains("index")) F.bad("field 'index' is not a non-negative integer", name);
    const uint64_t index = F.u64(e, "index", name);
    const std::vector<Hash32> path = e.contains("path") ? F.hashes(e, "path", kMaxInclusionPath, name) : std::vector<Hash32>{};
    ProvedEntry pe = verify_entry_proof(ByteView(enc), index, v.c.head.size, v.c.head.root, path, v.run_id, name);
    if (pe.no) reject_at(pe.decoded && index == 0 ? "genesis" : "log", *pe.no);
    v.entries[int64_t(index)] = std::move(pe.entry);
  }
}

// 5. Entry 0 is present (a genesis of this run: entry_problem in 4), and its
// initial root that of the state generated from the revealed seed.
void check_genesis(Verifier& v) {
  const LogEntry& g = v.entry(0);
  if (g.g.init_root != initial_state_root(v.mf.model, ByteView(v.seed)))
    reject_at("genesis", "the initial state is not the one generated from the committed seed");
}

// 5b. The data order the seed gives (whose batches check 8 proves).
void derive_data_order(Verifier& v) {
  v.order = std::make_unique<DataOrder>(v.run_id, ByteView(v.seed), v.mf.data_n, uint64_t(v.mf.batch_size));
}

// 6. probe.json, when present, is the probe set the seed chooses.
void check_probe(Verifier& v) {
  if (!v.b.has("probe.json")) return;
  json pj = json::parse(v.b.get_text("probe.json"), nullptr, false);
  v.probe = ProbeSet::from_json(pj, v.mf, v.seed, "probe.json");
}

// Checks 1 to 6, in the order of docs/replay.md, after the bundle is found
// to answer the challenge at all (check_answers). The engine draws the line:
// an evidence row (OnError::kNo) reads the trainer's bundle, so what is
// missing or malformed there (a member, a reader's message) is a "no" of
// that row; in the other rows an error stays an error (NotAnAnswer: the
// bundle answers nothing).
std::optional<Rejection> check_bundle(Verifier& v) {
  check_answers(v.b, v.c);
  return run_checks<Verifier>(v, {
      {check_manifest, OnError::kNo, "manifest"},      // 1
      check_answers_run,                               // 1b
      {check_head, OnError::kNo, "head"},              // 2
      read_config,                                     // 2b
      {check_seed, OnError::kNo, "seed"},              // 3
      {check_model_file, OnError::kNo, "model"},       // 3b
      {check_log_entries, OnError::kNo, "log"},        // 4
      {check_genesis, OnError::kNo, "genesis"},        // 5
      {derive_data_order, OnError::kNo, "batch"},      // 5b
      {check_probe, OnError::kNo, "probe"},            // 6
  });
}

// One replay of transition s from the exact state before it, on `shares`
// emulated data-parallel ranks.
struct Replayed {
  TrainState after;
  StepOutput out;
  std::optional<std::vector<float>> probe;
};
Replayed replay_from(Verifier& v, int64_t s, const BatchRecords& batch, int shares) {
  Replayed r{v.state(s - 1).clone(), {}, {}};
  r.out = train_step_emulating(v.mf, r.after, batch, shares, ByteView(v.seed));
  if (v.entry(s).s.probe && v.probe) r.probe = probe_fingerprint(v.mf, r.after, v.probe->records);
  return r;
}

// The transitions to check, as empty checks: the step challenges in
// challenge order (the board matches them to the challenge), then every
// transition of every segment.
std::vector<ReportCheck> planned_checks(const Challenge& c) {
  std::vector<ReportCheck> out;
  for (int64_t s : c.steps) {
    ReportCheck chk;
    chk.step = s;
    out.push_back(chk);
  }
  for (const Segment& g : c.segments)
    for (int64_t s = g.from + 1; s <= g.to; s++) {
      ReportCheck chk;
      chk.kind = CheckKind::kSegment;
      chk.step = s;
      chk.segment_from = g.from;
      chk.segment_to = g.to;
      out.push_back(chk);
    }
  return out;
}

// Check 10: the logged sketches must be those of the state after s (they are
// witnesses for plots and cheap distances; the verdict never rests on them).
void check_sketches(Verifier& v, int64_t s, const TrainState& after, ReportCheck& chk) {
  const LogEntry& logged = v.entry(s);
  TrainState::Sketches sk = after.sketches(v.mf);
  chk.distances["sketch"] = std::max({vector_distance(sk.w, logged.s.sketch), vector_distance(sk.m, logged.s.sketch_m),
                                      vector_distance(sk.v, logged.s.sketch_v)});
  chk.thresholds["sketch"] = kSketchTolerance;
  if (!(chk.distances["sketch"] <= kSketchTolerance))
    reject_at("sketch", "the logged sketches of step " + std::to_string(s) + " are not those of its state");
}

// For information, what a fingerprint-only check would see: the replay's
// sketches against the logged ones, relative to the logged sketch update.
// A forger hiding an update in the sketches' null space keeps this at
// the noise level; it is never a verdict.
double sketch_replay_distance(Verifier& v, int64_t s, const Replayed& r) {
  const LogEntry& logged = v.entry(s);
  const TrainState::Sketches rs = r.after.sketches(v.mf);
  const TrainState::Sketches prev = s == 1 ? v.state(0).sketches(v.mf) : [&] {
    const LogEntry& p = v.entry(s - 1);
    return TrainState::Sketches{p.s.sketch, p.s.sketch_m, p.s.sketch_v};
  }();
  auto rel = [](double num, double den) { return num == 0 ? 0.0 : den > 0 ? num / den : INFINITY; };
  return std::max({rel(l2_distance(rs.w, logged.s.sketch), l2_distance(logged.s.sketch, prev.w)),
                   rel(l2_distance(rs.m, logged.s.sketch_m), l2_distance(logged.s.sketch_m, prev.m)),
                   rel(l2_distance(rs.v, logged.s.sketch_v), l2_distance(logged.s.sketch_v, prev.v))});
}

// The first tensor in which two states of one model differ bit for bit:
// its name, how many of its elements differ, and the largest difference in
// units in the last place; nullopt when they are identical.
struct FirstDifference {
  std::string tensor;
  uint64_t elements = 0, numel = 0, max_ulp = 0;
};
std::optional<FirstDifference> first_difference(const TrainState& a, const TrainState& b) {
  const std::vector<TensorView> ta = a.tensors(), tb = b.tensors();
  for (size_t i = 0; i < ta.size() && i < tb.size(); i++) {
    if (ta[i].data.size == tb[i].data.size && std::memcmp(ta[i].data.data, tb[i].data.data, ta[i].data.size) == 0) continue;
    FirstDifference d;
    d.tensor = ta[i].name;
    if (ta[i].dtype == DType::kF32 && ta[i].data.size == tb[i].data.size) {
      d.numel = ta[i].data.size / 4;
      for (uint64_t j = 0; j < d.numel; j++) {
        int32_t x, y;
        std::memcpy(&x, ta[i].data.data + 4 * j, 4);
        std::memcpy(&y, tb[i].data.data + 4 * j, 4);
        if (x == y) continue;
        d.elements++;
        // Ordered integer images of the floats: their distance counts the floats between.
        const int64_t ox = x < 0 ? int64_t(INT32_MIN) - x : x, oy = y < 0 ? int64_t(INT32_MIN) - y : y;
        d.max_ulp = std::max<uint64_t>(d.max_ulp, uint64_t(ox > oy ? ox - oy : oy - ox));
      }
    }
    return d;
  }
  return std::nullopt;
}

// ---- the checks of each replayed transition s (docs/replay.md, 7 to 12)

// What the checks of transition s share: its report entry (filled as they
// pass), the batch check 8 proves, and the replay check 11 makes.
struct Transition {
  Verifier& v;
  ReportCheck& chk;
  Calibration& cal;        // tolerant: the noise measured, run-wide
  unsigned other_threads;  // tolerant: the second replay's thread count
  int64_t s;
  BatchRecords batch;
  Replayed r;              // exact: on the recorded world; tolerant: one thread, one rank
  TransitionNoise noise;   // tolerant: this transition's own noise
  bool exact_end = false;  // exact: r.after reproduced the logged root, so it is the exact state after s
};

// 7. L_s's learning rate is the schedule's.
void check_lr(Transition& t) { t.v.check_lr(t.s); }

// 8. The batch of step s: committed records at the positions the order gives, the logged batch root.
void check_batch(Transition& t) { t.batch = t.v.batch(t.s); }

// 11. (its last part) The replay ends at step s.
void check_replay_step(const Transition& t) {
  if (t.r.after.step() != t.s)
    reject_at("state", "the replay of step " + std::to_string(t.s) + " ends at another step");
}

// -- exact mode

// 9 (exact). The exact state after s - 1: the bundle's, root checked, or
// (when the bundle has none) this verifier's replay of s - 1 that reproduced
// its logged root. A replay of s - 1 that failed leaves s without a start.
void check_start_state(Transition& t) { t.v.state(t.s - 1); }

// 11 (exact). One replay under the recorded configuration, on the recorded world.
void replay_once(Transition& t) {
  t.r = replay_from(t.v, t.s, t.batch, t.v.world);
  check_replay_step(t);
  t.chk.distances["sketch_replay"] = sketch_replay_distance(t.v, t.s, t.r);
}

// 12 (exact). The replay is the logged state after s: its root. When the
// bundle holds the end state too, a failure names the first tensor that differs.
void check_replayed_root(Transition& t) {
  Verifier& v = t.v;
  const int64_t s = t.s;
  if (t.r.after.root() != v.entry(s).s.state_root) {
    std::string why = "the replay of step " + std::to_string(s) + " does not reproduce its logged state root";
    std::string failed = "state_root";
    if (v.b.has(member("state", s, "safetensors"))) {
      const TrainState& after = v.state(s);  // its root is the logged one, or this throws
      if (auto d = first_difference(after, t.r.after)) {
        failed = state_field(d->tensor) ? state_field(d->tensor) : "state";
        why += "; first differing tensor " + d->tensor + " (" + std::to_string(d->elements) + " of " +
               std::to_string(d->numel) + " elements, up to " + std::to_string(d->max_ulp) + " ulp)";
        const std::vector<TensorDistance> dist = compare_states(v.state(s - 1).tensors(), after.tensors(), t.r.after.tensors());
        for (const TensorDistance& d2 : dist)
          if (d2.name == d->tensor) t.chk.worst_tensors[d2.field] = WorstTensor{d2.name, d2.floors, 0};
      }
    }
    reject_at(failed, why);
  }
  t.exact_end = true;
  t.chk.distances["state_root"] = 0;
  t.chk.thresholds["state_root"] = 0;
}

// 10 (exact). The logged sketches are the replay's.
void check_replayed_sketches(Transition& t) { check_sketches(t.v, t.s, t.r.after, t.chk); }

// 12 (exact). The logged losses, gradient norm and probe are the replay's, bit for bit.
void check_replayed_outputs(Transition& t) {
  const LogEntry& logged = t.v.entry(t.s);
  auto same = [&](const char* field, bool eq) {
    t.chk.distances[field] = eq ? 0.0 : INFINITY;
    t.chk.thresholds[field] = 0;
    if (!eq)
      reject_at(field, std::string("the logged ") + field + " of step " + std::to_string(t.s) +
                           " are not the replay's, bit for bit");
  };
  same("losses", t.r.out.losses == logged.s.losses);
  same("grad_norm", float(t.r.out.grad_norm) == float(logged.s.grad_norm));
  if (logged.s.probe && t.r.probe) same("probe", *t.r.probe == *logged.s.probe);
}

// -- tolerant mode

// 9 (tolerant). The bundle's exact states after s and after s - 1, both roots checked.
void check_both_states(Transition& t) {
  t.v.state(t.s);
  t.v.state(t.s - 1);
}

// 11 (tolerant). The transition replayed three ways (one thread; the
// verifier's other thread count; the gradient from two shares): the
// one-thread replay, and the noise of every tensor measured on this
// transition alone.
void replay_measuring_noise(Transition& t) {
  Verifier& v = t.v;
  const std::optional<BatchRecords> probe =
      v.entry(t.s).s.probe && v.probe ? std::optional<BatchRecords>(v.probe->records) : std::nullopt;
  t.noise = measure_transition_noise(v.mf, v.state(t.s - 1), t.batch, 1, t.other_threads, probe, &t.r.after, &t.r.out,
                                     &t.r.probe, ByteView(v.seed));
  t.cal.steps.push_back(t.s);
  check_replay_step(t);
}

// 10 (tolerant). The logged sketches are those of the bundle's state after s.
void check_logged_sketches(Transition& t) { check_sketches(t.v, t.s, t.v.state(t.s), t.chk); }

// 12 (tolerant). Each tensor of the one-thread replay within margin x max(1,
// its own noise) floors of the logged state after s, and each scalar field
// likewise; the first failing tensor in state order decides the field.
void compare_tolerantly(Transition& t) {
  Verifier& v = t.v;
  ReportCheck& chk = t.chk;
  Calibration& cal = t.cal;
  const int64_t s = t.s;
  const Replayed& a = t.r;
  const TrainState& after = v.state(s);
  chk.distances["sketch_replay"] = sketch_replay_distance(v, s, a);
  const double margin = v.opt.margin;
  auto noise_of = [&](const std::string& k) {
    auto it = t.noise.floors.find(k);
    return it == t.noise.floors.end() ? 0.0 : it->second;
  };
  std::string failed, where;
  // Each field's report entry: the tensor closest to its own threshold, and the loosest threshold (the slack).
  std::map<std::string, double> worst_ratio;
  for (const TensorDistance& d : compare_states(v.state(s - 1).tensors(), after.tensors(), a.after.tensors())) {
    const double tf = threshold_floors(margin, noise_of(d.name));
    const double ratio = std::isnan(d.floors) ? INFINITY : d.floors / tf;
    cal.noise[d.field] = std::max(cal.noise_of(d.field), noise_of(d.name));
    if (!worst_ratio.count(d.field) || ratio > worst_ratio[d.field]) {
      worst_ratio[d.field] = ratio;
      chk.worst_tensors[d.field] = WorstTensor{d.name, d.floors, tf};
      chk.distances[d.field] = d.distance;
      chk.thresholds[d.field] = tf * d.floor;
    }
    if (!chk.slack.count(d.field) || tf > chk.slack[d.field].threshold_floors)
      chk.slack[d.field] = WorstTensor{d.name, d.floors, tf};
    if (failed.empty() && !within(d.floors, tf)) {
      failed = d.field;
      where = d.name;
    }
  }
  const LogEntry& logged = v.entry(s);
  std::map<std::string, double> scalar = {{"losses", losses_distance(a.out.losses, logged.s.losses)},
                                          {"grad_norm", scalar_distance(a.out.grad_norm, logged.s.grad_norm)}};
  if (logged.s.probe && a.probe) scalar["probe"] = vector_distance(*a.probe, *logged.s.probe);
  for (const char* f : kScalarFields) {
    if (!scalar.count(f)) continue;
    const double tf = threshold_floors(margin, noise_of(f));
    cal.noise[f] = std::max(cal.noise_of(f), noise_of(f));
    chk.distances[f] = scalar[f];
    chk.thresholds[f] = tf * kRoundingEps;
    if (failed.empty() && !within(scalar[f] / kRoundingEps, tf)) failed = f;
  }
  if (!failed.empty())
    reject_at(failed, failed + " differs beyond its own replay noise at step " + std::to_string(s) +
                          (where.empty() ? "" : " (tensor " + where + ")"));
}

// Checks 7 to 12 of transition s, in the order of docs/replay.md's table for
// the mode; the first that fails is the transition's. The evidence rows
// (OnError::kNo) read the bundle's batch and states: a malformed one is a
// "no" of that row, named as its `failed` field. An exact replay that
// reproduced its logged root is kept as the start of transition s + 1.
std::optional<Rejection> check_transition(Transition& t) {
  t.v.keep_only(t.s - 1);
  if (t.v.opt.mode == ReplayMode::kTolerant)
    return run_checks<Transition>(t, {
        check_lr,                                      // 7
        {check_batch, OnError::kNo, "batch"},          // 8
        {check_both_states, OnError::kNo, "state"},    // 9
        replay_measuring_noise,                        // 11
        check_logged_sketches,                         // 10
        compare_tolerantly,                            // 12
    });
  std::optional<Rejection> no = run_checks<Transition>(t, {
      check_lr,                                        // 7
      {check_batch, OnError::kNo, "batch"},            // 8
      {check_start_state, OnError::kNo, "state"},      // 9
      replay_once,                                     // 11
      {check_replayed_root, OnError::kNo, "state"},    // 12
      check_replayed_sketches,                         // 10
      check_replayed_outputs,                          // 12
  });
  if (t.exact_end) t.v.replays.emplace(t.s, std::move(t.r.after));
  return no;
}

// A transition checked, pass or fail (a failure is recorded in it, never
// thrown past verify).
ReportCheck checked_transition(Verifier& v, Calibration& cal, ReportCheck chk, unsigned other_threads) {
  auto ts = std::chrono::steady_clock::now();
  Transition t{v, chk, cal, other_threads, chk.step, {}, {}, {}};
  const std::optional<Rejection> no = check_transition(t);
  chk.pass = !no;
  if (no) {
    chk.failed = no->check;
    chk.reason = no->reason;
  }
  chk.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
  return chk;
}

// The order transitions are checked in (indices into `planned`). Exact: in
// step order (stable: a step challenge before a segment's transition of the
// same step), so that a replay of s - 1 is at hand as the start of s where the
// response omits that state. Tolerant: as planned (it takes every state from
// the bundle, and its calibration lists the transitions in that order).
std::vector<size_t> check_order(const std::vector<ReportCheck>& planned, ReplayMode mode) {
  std::vector<size_t> order(planned.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  if (mode == ReplayMode::kExact)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return planned[a].step < planned[b].step; });
  return order;
}

// Exact mode: this process must compute under the bundle's recorded
// configuration (wit-replay re-executed itself under its kernels); the
// recorded thread count is set here, whatever -j asked for.
void reproduce_configuration(Verifier& v) {
  if (!v.config)
    throw Error("the bundle records no configuration (config.json), so it cannot be replayed exactly", v.b.where,
                "verify it with --tolerant");
  if (v.config->device != v.opt.device)
    throw Error("the run was trained on device " + v.config->device + ", not " + v.opt.device, v.b.where,
                "verify with --device " + v.config->device + ", or with --tolerant");
  set_torch_threads(v.config->threads);
  if (const Problem diff = config_problem(*v.config, current_run_config(v.opt.device, v.config->world)))
    throw Error("this verifier does not run under the run's recorded configuration (" + *diff + ")", v.b.where,
                "run wit-replay verify (it re-executes itself under the recorded kernels), or verify with --tolerant");
}

}  // namespace

const char* replay_mode_name(ReplayMode m) { return m == ReplayMode::kExact ? "exact" : "tolerant"; }

namespace {

// bundle_config of bundle `b` whose manifest.json parsed as `m`.
std::optional<RunConfig> config_bound_by(const SpooledBundle& b, const ResponseManifest& m) {
  if (!b.has(kRunConfigFile)) return std::nullopt;
  // The run it is bound to: the manifest's, when that is a valid one (an
  // invalid manifest is the verifier's to reject; an invalid config.json
  // answers nothing whatever the manifest).
  std::optional<Hash32> run_id;
  if (m.manifest) {
    run_id = m.manifest->run_id();
  } else if (m.error) {
    try {
      std::rethrow_exception(m.error);
    } catch (const Error&) {
      // not a valid manifest: the config is bound to no run here
    }
  }
  return recorded_config(b, run_id);
}

}  // namespace

std::optional<RunConfig> bundle_config(const OpenedResponse& r) { return config_bound_by(r.bundle, r.manifest); }

void pin_recorded_kernels(const OpenedResponse& r, char** argv) {
  if (auto c = bundle_config(r)) run_under_environment(config_environment(*c), argv);
}

TransitionNoise measure_transition_noise(const Manifest& mf, const TrainState& before, const BatchRecords& batch,
                                         unsigned threads_a, unsigned threads_b, const std::optional<BatchRecords>& probe,
                                         TrainState* replay_a, StepOutput* out_a,
                                         std::optional<std::vector<float>>* probe_a, ByteView seed) {
  set_torch_threads(threads_a);
  TrainState a = before.clone();
  const StepOutput oa = train_step(mf, a, batch, seed);
  std::optional<std::vector<float>> pa;
  if (probe) pa = probe_fingerprint(mf, a, *probe);
  TransitionNoise n;
  auto note = [&](const std::string& k, double floors) {
    n.floors[k] = std::max(n.floors.count(k) ? n.floors[k] : 0.0, std::isfinite(floors) ? floors : 0.0);
  };
  // One other replay at a time, measured against A and dropped.
  auto measure = [&](unsigned threads, int shares) {
    set_torch_threads(threads);
    TrainState o = before.clone();
    const StepOutput oo = train_step_emulating(mf, o, batch, shares, seed);
    for (const TensorDistance& t : compare_states(before.tensors(), a.tensors(), o.tensors())) note(t.name, t.floors);
    note("losses", losses_distance(oo.losses, oa.losses) / kRoundingEps);
    note("grad_norm", scalar_distance(oo.grad_norm, oa.grad_norm) / kRoundingEps);
    if (probe) note("probe", vector_distance(probe_fingerprint(mf, o, *probe), *pa) / kRoundingEps);
  };
  measure(threads_b, 1);
  // Two shares draw other dropout masks (keyed by each share's first row):
  // that would be a difference of masks, not of rounding.
  if (batch.size() >= 2 && !mf.random_step()) measure(threads_a, 2);
  set_torch_threads(threads_a);
  if (replay_a) *replay_a = std::move(a);
  if (out_a) *out_a = oa;
  if (probe_a) *probe_a = std::move(pa);
  return n;
}

// The checks of docs/replay.md ("Verify: the checks, in order").
ReplayReport verify_response(const OpenedResponse& r, const Challenge& c, const VerifyOptions& opt,
                             std::vector<VerifiedBatch>* batches) {
  const SpooledBundle& b = r.bundle;
  const ResponseManifest& m = r.manifest;
  if (opt.mode == ReplayMode::kTolerant) check_margin(opt.margin);
  auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, VerifiedBatch> proven;
  Verifier v{b, c, opt, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, 1, m, batches ? &proven : nullptr};
  ReplayReport rep = ReplayReport::answering(c);
  rep.mode = replay_mode_name(opt.mode);
  rep.margin = opt.mode == ReplayMode::kTolerant ? opt.margin : 0;
  Problem verdict;  // the first "no": of the bundle, else of a transition in the report's order
  if (const std::optional<Rejection> no = check_bundle(v)) verdict = no->reason;  // 1 to 6
  if (v.config) rep.configuration = v.config->to_json();
  const unsigned other_threads = opt.threads > 1 ? opt.threads : 2;
  if (opt.mode == ReplayMode::kExact) {
    if (!verdict) reproduce_configuration(v);
  } else {
    rep.calibration.run_id = v.run_id.hex();
    rep.calibration.threads = {1, other_threads};
    for (const char* f : kReplayFields) rep.calibration.noise[f] = 0.0;
  }
  // 7 to 12: checked in check_order, reported as planned (the board matches
  // the step checks to the challenge's steps); the reason is the first
  // failure in the report's order.
  std::vector<ReportCheck> todo = verdict ? std::vector<ReportCheck>{} : planned_checks(c);
  const std::vector<size_t> order = check_order(todo, opt.mode);
  Progress progress("replaying", uint64_t(todo.size()), "steps", opt.quiet);
  for (size_t k : order) {
    todo[k] = checked_transition(v, rep.calibration, todo[k], other_threads);
    progress.add(1);
  }
  progress.finish();
  for (const ReportCheck& chk : todo) {
    rep.replay_seconds += chk.seconds;
    if (!verdict && !chk.pass) verdict = chk.reason;
    rep.checks.push_back(chk);
  }
  rep.verdict = verdict ? ReportVerdict::kRejected : ReportVerdict::kCertified;
  rep.reason = verdict.value_or("");
  rep.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (batches) {
    batches->clear();
    for (auto& [name, vb] : proven) batches->push_back(std::move(vb));
  }
  return rep;
}

}  // namespace wit
