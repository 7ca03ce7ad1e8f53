// Responding to challenges (trainer side), verifying responses by replay
// (verifier side), and calibrating replay noise. Torch-free: it drives the
// shared training step through state.h.
#include "wit/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "dist.h"  // load_run_checkpoint

#include "wit/cli.h"
#include "wit/commitment.h"
#include "wit/error.h"
#include "wit/fingerprint.h"
#include "wit/index.h"
#include "wit/io.h"
#include "wit/manifest.h"
#include "wit/model_spec.h"
#include "wit/merkle.h"
#include "wit/order.h"
#include "wit/progress.h"
#include "wit/proofs.h"
#include "wit/replay_math.h"
#include "wit/runlog.h"
#include "wit/safetensors.h"
#include "wit/sketch.h"
#include "wit/state.h"
#include "wit/wlog.h"

namespace wit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string member(const char* dir, int64_t step, const char* ext) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s/%06lld.%s", dir, static_cast<long long>(step), ext);
  return buf;
}


json hashes_json(const std::vector<Hash32>& v) {
  json a = json::array();
  for (const auto& h : v) a.push_back(h.hex());
  return a;
}

// What a challenge needs: log entries, exact states (after step i) and
// batches (of step i). A replayed transition s needs the states after s - 1
// and after s; a segment [from, to] is the transitions from + 1 ... to.
// The transitions a challenge replays: its step challenges, then every step of each segment.
std::vector<int64_t> transitions(const Challenge& c) {
  std::vector<int64_t> out = c.steps;
  for (const Segment& g : c.segments)
    for (int64_t s = g.from + 1; s <= g.to; s++) out.push_back(s);
  return out;
}

struct Needs {
  std::set<int64_t> entries{0}, states, batches;
  explicit Needs(const Challenge& c) {
    for (int64_t s : transitions(c)) {
      entries.insert({s - 1, s});
      states.insert({s - 1, s});
      batches.insert(s);
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- respond

MemberLimit response_member_limit() {
  return [](const std::string& name, const Bundle& before) -> uint64_t {
    constexpr uint64_t kSmall = uint64_t(64) << 20;
    if (name.rfind("log/", 0) == 0)  // hex of the largest entry a log may hold, and its audit path
      return 2 * (96 + 5 * (4 + 4 * uint64_t(kMaxEntryFloats))) + (uint64_t(1) << 20);
    if (name.rfind("state/", 0) == 0) {
      if (!before.has("manifest.json")) return kSmall;  // no manifest: nothing can be a state
      try {
        const Manifest mf = Manifest::from_json(json::parse(before.get_text("manifest.json")), "manifest.json");
        const uint64_t params = param_count(mf.model), tensors = 3 * model_params(mf.model).size() + 1;
        return 12 * params + 8 + tensors * 512 + (uint64_t(1) << 16);
      } catch (const std::exception&) {
        return kSmall;
      }
    }
    if (name.rfind("batch/", 0) == 0) return uint64_t(1) << 30;
    if (name == kModelFileName) {  // a TorchScript file: its code, and parameter values at most float32-sized
      if (!before.has("manifest.json")) return kSmall;
      try {
        const Manifest mf = Manifest::from_json(json::parse(before.get_text("manifest.json")), "manifest.json");
        return 8 * param_count(mf.model) + kSmall;
      } catch (const std::exception&) {
        return kSmall;
      }
    }
    return kSmall;
  };
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
  const RunSettings settings = run_data_settings(opt.run);  // threads and world checked in range
  if (opt.threads == 0) set_torch_threads(settings.threads);
  const int world = settings.world;
  Commitment data = Commitment::load(commit_path);
  Index index(index_path);
  index.check_matches(data, commit_path);
  if (data.root != mf.data_root) throw Error("the data commitment is not the run's", commit_path);
  Dataset dataset(data, files, 0);
  DataOrder order(run_id, ByteView(seed), dataset.size(), uint64_t(mf.batch_size));

  const Needs need(c);
  // Members are written in name order: batch/, challenge.json, log/,
  // manifest.json, model.pt (a TorchScript run's module, once), probe.json,
  // seed, state/; the count comes first (add a member here, count it here).
  const bool scripted = mf.model.scripted();
  BundleWriter b(path, uint32_t(need.batches.size() + 1 + need.entries.size() + 3 + (scripted ? 1 : 0) +
                                need.states.size()));
  auto batch_records = [&](int64_t s) {
    BatchRecords out;
    for (uint64_t i : order.batch(s)) out.push_back(dataset.record(i));
    return out;
  };
  for (int64_t s : need.batches) {
    json recs = json::array();
    for (uint64_t i : order.batch(s))
      recs.push_back({{"index", i}, {"record_hex", to_hex(ByteView(dataset.record(i)))},
                      {"path", hashes_json(prove_inclusion(index, dataset.leaf(i), i).path)}});
    b.add(member("batch", s, "json"), json{{"step", s}, {"records", recs}}.dump() + "\n");
  }
  b.add("challenge.json", c.to_json().dump(2) + "\n");
  for (int64_t i : need.entries) {
    json e = {{"index", i}, {"entry_hex", to_hex(ByteView(log.entry_bytes(uint64_t(i))))},
              {"path", hashes_json(log.inclusion_proof(uint64_t(i), c.head.size))}};
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
      else train_step_emulating(mf, *cur, batch_records(s), world);
    }
    if (cur->root() != logged_root(target))
      throw Error("the regenerated state after step " + std::to_string(target) + " does not match its logged state root",
                  opt.run, "regenerate with the thread count and device training used (--threads)");
    const std::string name = member("state", target, "safetensors");
    b.add(name, safetensors_pieces(cur->tensors(), {}, name).all());
    progress.add(1);
  }
  progress.finish();
  b.finish();
}

// ---------------------------------------------------------------- verify

namespace {

// Fields of a replayed transition; noise is calibrated for each (docs/replay.md).
// The logged sketches are of the logged state, computed from the same floats:
// they agree up to the rounding of their double accumulators.
constexpr double kSketchTolerance = 1e-5;

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
  // Exact states decoded so far (each is used as the end of one transition
  // and the start of the next); dropped once no later transition needs them.
  std::map<int64_t, TrainState> states;
  // A TorchScript run's model.pt, written out for LibTorch to load; removed with the verifier.
  std::unique_ptr<TempFile> model_file;

  // A failed check: the field and the reason, reported, never thrown past verify.
  struct Reject {
    std::string field, reason;
  };

  const LogEntry& entry(int64_t i) {
    auto it = entries.find(i);
    if (it == entries.end()) throw Reject{"log", "bundle lacks log entry " + std::to_string(i)};
    return it->second;
  }

  void load_common() {
    try {
      load_common_members();
    } catch (const Error& e) {
      // Anything the trainer's bundle lacks or gets wrong rejects the run.
      throw Reject{"bundle", e.what()};
    }
  }

  void load_common_members() {
    const std::string mf_text = b.get_text("manifest.json");
    json mj = json::parse(mf_text, nullptr, false);
    if (mj.is_discarded()) throw Reject{"manifest", "manifest is not valid json"};
    mf = Manifest::from_json(mj, "manifest.json");
    if (mf.dump() != mf_text) throw Reject{"manifest", "manifest is not in canonical form"};
    run_id = mf.run_id();
    if (run_id != c.head.run_id) throw Reject{"manifest", "the bundle is for another run than the challenged head"};
    if (auto p = head_problem(c.head, run_id, mf.trainer_key)) throw Reject{"head", *p};
    seed = parse_seed_hex(b.get_text("seed"), "seed");
    if (auto why = seed_problem(mf, ByteView(seed))) throw Reject{"seed", *why};
    if (mf.model.scripted()) {
      if (!b.has(kModelFileName)) throw Reject{"model", std::string("the bundle lacks the run's model (") + kModelFileName + ")"};
      model_file = std::make_unique<TempFile>("wit-model");
      const Bytes module = b.get(kModelFileName);
      write_file_atomic(model_file->path, std::string(module.begin(), module.end()), true);
      if (model_file_digest(model_file->path) != mf.model.file)
        throw Reject{"model", std::string("the bundle's ") + kModelFileName + " is not the model the manifest binds"};
      mf.model.module_path = model_file->path;
    }
    for (const std::string& name : b.names()) {
      if (name.rfind("log/", 0) != 0) continue;
      const Bytes bytes = b.get(name);
      json e = json::parse(std::string(bytes.begin(), bytes.end()), nullptr, false);
      if (e.is_discarded() || !e.is_object()) throw Reject{"log", name + " is not valid json"};
      InclusionProof p;
      Bytes enc;
      if (!e.contains("entry_hex") || !e["entry_hex"].is_string() || !from_hex(e["entry_hex"].get<std::string>(), enc))
        throw Reject{"log", name + " has no entry bytes"};
      json body = {{"leaf", entry_leaf(ByteView(enc)).hex()}, {"index", e.value("index", json(-1))},
                   {"size", c.head.size}, {"path", e.value("path", json::array())}};
      try {
        p = parse_inclusion_body(body, name);
      } catch (const Error& err) {
        throw Reject{"log", err.what()};
      }
      ProofError pe = verify_inclusion(kBlake2bTree, p.index, p.size, p.leaf, p.path, c.head.root);
      if (pe != ProofError::kOk)
        throw Reject{"log", "log entry " + std::to_string(p.index) + " is not in the signed log: " + to_string(pe)};
      LogEntry le;
      try {
        le = decode_entry(ByteView(enc), name);
      } catch (const Error& err) {
        throw Reject{"log", err.what()};
      }
      if (auto why = entry_problem(le, p.index, run_id)) throw Reject{p.index == 0 ? "genesis" : "log", *why};
      entries[int64_t(p.index)] = std::move(le);
    }
    const LogEntry& g = entry(0);  // a genesis of this run: entry_problem above
    if (g.g.init_root != initial_state_root(mf.model, ByteView(seed)))
      throw Reject{"genesis", "the initial state is not the one generated from the committed seed"};
    order = std::make_unique<DataOrder>(run_id, ByteView(seed), mf.data_n, uint64_t(mf.batch_size));
    if (b.has("probe.json")) {
      json pj = json::parse(b.get_text("probe.json"), nullptr, false);
      try {
        probe = ProbeSet::from_json(pj, mf, seed, "probe.json");
      } catch (const Error& err) {
        throw Reject{"probe", err.what()};
      }
    }
  }

  // The records of step s, each proved to be committed data at the position
  // the data order gives, and together matching the logged batch root.
  BatchRecords batch(int64_t s) {
    const std::string name = member("batch", s, "json");
    if (!b.has(name)) throw Reject{"batch", "bundle lacks the batch of step " + std::to_string(s)};
    json j = json::parse(b.get_text(name), nullptr, false);
    if (j.is_discarded() || !j.contains("records") || !j["records"].is_array())
      throw Reject{"batch", name + " is malformed"};
    const std::vector<uint64_t> want = order->batch(s);
    if (j["records"].size() != want.size()) throw Reject{"batch", "step " + std::to_string(s) + " has the wrong number of records"};
    BatchRecords out;
    std::vector<Hash32> leaves;
    for (size_t r = 0; r < want.size(); r++) {
      const json& e = j["records"][r];
      Bytes rec;
      if (!e.is_object() || !e.contains("record_hex") || !e["record_hex"].is_string() ||
          !from_hex(e["record_hex"].get<std::string>(), rec))
        throw Reject{"batch", name + " has a malformed record"};
      InclusionProof p;
      try {
        p = parse_inclusion_body({{"leaf", record_leaf(ByteView(rec)).hex()}, {"index", want[r]}, {"size", mf.data_n},
                                  {"path", e.value("path", json::array())}}, name);
      } catch (const Error& err) {
        throw Reject{"batch", err.what()};
      }
      if (verify_inclusion(kBlake2bTree, p.index, p.size, p.leaf, p.path, mf.data_root) != ProofError::kOk)
        throw Reject{"batch", "record " + std::to_string(want[r]) + " of step " + std::to_string(s) +
                                  " is not the committed record at that position"};
      leaves.push_back(p.leaf);
      out.emplace_back(rec.begin(), rec.end());
    }
    if (merkle_root(kBlake2bTree, leaves, 1) != entry(s).s.batch_root)
      throw Reject{"batch", "the batch of step " + std::to_string(s) + " is not the one logged"};
    return out;
  }

  // The exact state after step i: the bundle's member, of step i, whose root
  // is the one the log has (the genesis root for i = 0).
  const TrainState& state(int64_t i) {
    if (auto it = states.find(i); it != states.end()) return it->second;
    const std::string name = member("state", i, "safetensors");
    if (!b.has(name)) throw Reject{"state", "bundle lacks the state after step " + std::to_string(i)};
    TrainState st;
    try {
      const SpooledBundle::View bytes = b.view(name);  // no copy: the tensors are its only one
      Safetensors f = Safetensors::parse(bytes.bytes(), name);
      st = TrainState::from_tensors(mf.model, f.tensors(), name, opt.device);
    } catch (const Error& err) {
      throw Reject{"state", err.what()};
    }
    if (st.step() != i) throw Reject{"state", name + " holds step " + std::to_string(st.step())};
    const LogEntry& e = entry(i);
    const Hash32& want = i == 0 ? e.g.init_root : e.s.state_root;
    if (st.root() != want)
      throw Reject{"state_root", i == 0 ? std::string("the initial state differs from the genesis root")
                                        : "the state after step " + std::to_string(i) + " differs from its logged state root"};
    return states.emplace(i, std::move(st)).first->second;
  }
  void forget_before(int64_t i) { states.erase(states.begin(), states.lower_bound(i)); }

  void check_lr(int64_t s) {
    const LogEntry& logged = entry(s);
    const float lr_want = float(mf.lr_at(s));
    if (std::fabs(double(logged.s.lr) - lr_want) > 1e-6 * std::fabs(double(lr_want)))
      throw Reject{"lr", "step " + std::to_string(s) + " logs learning rate " + std::to_string(logged.s.lr) +
                             ", the schedule says " + std::to_string(lr_want)};
  }
};

// One replay of transition s from the exact state before it.
struct Replayed {
  TrainState after;
  StepOutput out;
  std::optional<std::vector<float>> probe;
};
Replayed replay_from(Verifier& v, int64_t s, const BatchRecords& batch, int shares = 1) {
  Replayed r{v.state(s - 1).clone(), {}, {}};
  r.out = train_step_emulating(v.mf, r.after, batch, shares);
  if (v.entry(s).s.probe && v.probe) r.probe = probe_fingerprint(v.mf, r.after, v.probe->records);
  return r;
}

// Distances of a replay `r` against a reference (the logged state and entry,
// or, calibrating, another replay), per field: state fields in floors of the
// worst tensor, scalar fields relative (their floor is one rounding).
struct Distances {
  std::map<std::string, FieldDistance> state;
  std::map<std::string, double> scalar;
};
Distances distances(const TrainState& before, const TrainState& ref_state, const std::vector<float>& ref_losses,
                    double ref_grad_norm, const std::optional<std::vector<float>>& ref_probe, const Replayed& r) {
  Distances d;
  d.state = worst_by_field(compare_states(before.tensors(), ref_state.tensors(), r.after.tensors()));
  d.scalar["losses"] = losses_distance(r.out.losses, ref_losses);
  d.scalar["grad_norm"] = scalar_distance(r.out.grad_norm, ref_grad_norm);
  if (ref_probe && r.probe) d.scalar["probe"] = vector_distance(*r.probe, *ref_probe);
  return d;
}

// The replay noise of transition s, folded into `cal` (largest so far per
// field): replay A with threads_a, and two other orders of the same sums,
// each measured against A as if A were the logged state: another thread
// count, and the batch's gradient summed from two shares (as two
// data-parallel ranks, or a BLAS that blocks the batch dimension, would).
// Parameters whose true gradient is zero (an attention key's bias) turn such
// rounding into Adam updates of their own; this is where it shows, and it
// varies from step to step, which is why verify measures every transition.
// Returns replay A, which a verifier measuring every transition judges too.
Replayed measure_noise(Verifier& v, int64_t s, const BatchRecords& batch, unsigned threads_a, unsigned threads_b,
                       Calibration& cal) {
  set_torch_threads(threads_a);
  Replayed a = replay_from(v, s, batch);
  auto note = [&](const std::string& f, double floors) {
    cal.noise[f] = std::max(cal.noise_of(f), std::isfinite(floors) ? floors : 0.0);
  };
  // One other replay at a time, measured and dropped: one state beside A.
  auto measure = [&](unsigned threads, int shares) {
    set_torch_threads(threads);
    const Replayed o = replay_from(v, s, batch, shares);
    Distances d = distances(v.state(s - 1), a.after, a.out.losses, a.out.grad_norm, a.probe, o);
    for (const auto& [f, fd] : d.state) note(f, fd.floors);
    for (const auto& [f, x] : d.scalar) note(f, x / kRoundingEps);
  };
  measure(threads_b, 1);
  if (batch.size() >= 2) measure(threads_a, 2);
  return a;
}

}  // namespace

Calibration calibrate(const SpooledBundle& b, const Challenge& c, unsigned threads_a, unsigned threads_b, int max_steps,
                      const std::string& device) {
  VerifyOptions vo;
  vo.device = device;
  Verifier v{b, c, vo, {}, {}, {}, {}, {}, {}, {}, {}};
  try {
    v.load_common();
  } catch (const Verifier::Reject& r) {
    throw Error("cannot calibrate on this bundle: " + r.reason, b.where);
  }
  Calibration cal;
  cal.run_id = v.run_id.hex();
  cal.threads = {threads_a, threads_b};
  for (const char* f : kReplayFields) cal.noise[f] = 0.0;
  std::string last_reason;
  for (int64_t s : transitions(c)) {
    if (int(cal.steps.size()) >= max_steps) break;
    try {
      v.forget_before(s - 1);  // what the last step left, unless this one starts there
      measure_noise(v, s, v.batch(s), threads_a, threads_b, cal);
      cal.steps.push_back(s);
      v.forget_before(s);
    } catch (const Verifier::Reject& r) {
      // A step the bundle cannot answer is skipped here; verification rejects it.
      last_reason = r.reason;
    }
  }
  if (cal.steps.empty())
    throw Error("no challenged step to calibrate on" + (last_reason.empty() ? "" : " (" + last_reason + ")"), b.where);
  return cal;
}

namespace {

// How verify measures the replay noise: on every transition, just before it
// is judged (the default), or once before the transitions (--calibration,
// --calibration-steps).
struct NoisePlan {
  bool per_step = true;
  unsigned other_threads = 2;  // a measurement's second thread count
};

// Checks 1 to 6, of the whole bundle: "" when they pass, else the reason.
std::string check_bundle(Verifier& v) {
  try {
    v.load_common();
  } catch (const Verifier::Reject& r) {
    return r.reason;
  }
  return "";
}

// The noise the thresholds scale: the --calibration file, a measurement on
// the first --calibration-steps transitions, or none yet (each transition
// adds its own). "" or the reason the run is rejected.
std::string set_up_noise(Verifier& v, const NoisePlan& plan, Calibration& cal) {
  const VerifyOptions& opt = v.opt;
  std::string reason;
  if (opt.calibration) {
    cal = *opt.calibration;
    if (!cal.run_id.empty() && cal.run_id != v.run_id.hex() && !opt.quiet)
      cli::note("calibration was measured on another run; using it anyway");
  } else if (opt.calibration_steps > 0) {
    try {
      cal = calibrate(v.b, v.c, 1, plan.other_threads, opt.calibration_steps, opt.device);
    } catch (const Error& e) {
      reason = std::string("cannot measure replay noise: ") + e.what();
    }
    v.states.clear();
  } else {
    // Every transition is measured on itself, just before it is judged.
    cal.run_id = v.run_id.hex();
    cal.threads = {1, plan.other_threads};
    for (const char* f : kReplayFields) cal.noise[f] = 0.0;
  }
  return reason;
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

// Check 9: the exact states after s and after s - 1, each holding its step
// and hitting its logged root.
const TrainState& check_states(Verifier& v, int64_t s) {
  const TrainState& after = v.state(s);
  v.state(s - 1);
  return after;
}

// Measuring every transition on itself: its first replay (one thread) is the
// one judged, so the transition costs three replays, not four.
std::optional<Replayed> measure_on_itself(Verifier& v, int64_t s, const BatchRecords& batch, const NoisePlan& plan,
                                          Calibration& cal) {
  if (!plan.per_step) return std::nullopt;
  std::optional<Replayed> a = measure_noise(v, s, batch, 1, plan.other_threads, cal);
  cal.steps.push_back(s);
  set_torch_threads(v.opt.threads);
  return a;
}

// Check 10: the logged sketches must be those of the logged state (they are
// witnesses for plots and cheap distances; the verdict never rests on them).
void check_sketches(Verifier& v, int64_t s, const TrainState& after, ReportCheck& chk) {
  const LogEntry& logged = v.entry(s);
  TrainState::Sketches sk = after.sketches(v.mf);
  chk.distances["sketch"] = std::max({vector_distance(sk.w, logged.s.sketch), vector_distance(sk.m, logged.s.sketch_m),
                                      vector_distance(sk.v, logged.s.sketch_v)});
  chk.thresholds["sketch"] = kSketchTolerance;
  if (!(chk.distances["sketch"] <= kSketchTolerance))
    throw Verifier::Reject{"sketch", "the logged sketches of step " + std::to_string(s) + " are not those of its state"};
}

// Check 11: step s replayed from the exact state before it (the measured
// replay when there is one) ends at step s.
Replayed check_replay(Verifier& v, int64_t s, const BatchRecords& batch, std::optional<Replayed> measured) {
  Replayed r = measured ? std::move(*measured) : replay_from(v, s, batch);
  if (r.after.step() != s) throw Verifier::Reject{"state", "the replay of step " + std::to_string(s) + " ends at another step"};
  return r;
}

// For information, what the old fingerprint-only check saw: the replay's
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

// Check 12: the replay compared in full with the exact state after s, field
// by field in the order weights, adam_m, adam_v (the worst tensor of each,
// in rounding floors), losses, grad_norm, probe, each within margin x
// max(1, noise); the first field beyond its threshold fails the transition.
void compare_in_full(Verifier& v, int64_t s, const TrainState& after, const Replayed& r, const Calibration& cal,
                     ReportCheck& chk) {
  const double margin = v.opt.margin;
  const LogEntry& logged = v.entry(s);
  Distances dd = distances(v.state(s - 1), after, logged.s.losses, logged.s.grad_norm, logged.s.probe, r);
  chk.distances["sketch_replay"] = sketch_replay_distance(v, s, r);
  std::string failed;
  for (const char* f : kStateFields) {
    const FieldDistance& fd = dd.state[f];
    const double tf = threshold_floors(margin, cal.noise_of(f));
    chk.distances[f] = fd.distance;
    chk.thresholds[f] = tf * fd.floor;  // the same test, relative to the update: distance <= threshold
    chk.worst_tensors[f] = WorstTensor{fd.tensor, fd.floors, tf};
    if (failed.empty() && !within(fd.floors, tf)) failed = f;
  }
  for (const char* f : kScalarFields) {
    if (!dd.scalar.count(f)) continue;
    const double tf = threshold_floors(margin, cal.noise_of(f));
    chk.distances[f] = dd.scalar[f];
    chk.thresholds[f] = tf * kRoundingEps;
    if (failed.empty() && !within(dd.scalar[f] / kRoundingEps, tf)) failed = f;
  }
  if (!failed.empty()) {
    auto w = chk.worst_tensors.find(failed);
    const std::string where = w != chk.worst_tensors.end() ? " (tensor " + w->second.tensor + ")" : "";
    throw Verifier::Reject{failed, failed + " differs beyond the replay noise at step " + std::to_string(s) + where};
  }
}

// Transition s, checks 7 to 12: the exact state after s - 1 (root checked),
// replayed with the shared step on the batch the committed order gives,
// compared in full with the exact state after s (root checked): every tensor
// of W, m and v. The first failure is thrown.
void check_transition(Verifier& v, const NoisePlan& plan, Calibration& cal, ReportCheck& chk) {
  const int64_t s = chk.step;
  v.forget_before(s - 1);  // the last transition's states, unless this one starts where it ended
  v.check_lr(s);                                                        // 7
  const BatchRecords batch = v.batch(s);                                // 8
  const TrainState& after = check_states(v, s);                         // 9
  std::optional<Replayed> measured = measure_on_itself(v, s, batch, plan, cal);
  check_sketches(v, s, after, chk);                                     // 10
  const Replayed r = check_replay(v, s, batch, std::move(measured));    // 11
  compare_in_full(v, s, after, r, cal, chk);                            // 12
}

// A transition checked and added to the report, pass or fail (a failure is
// recorded, never thrown past verify): "" or the reason it failed.
std::string record_transition(Verifier& v, const NoisePlan& plan, ReplayReport& rep, ReportCheck chk) {
  auto ts = std::chrono::steady_clock::now();
  try {
    check_transition(v, plan, rep.calibration, chk);
    chk.pass = true;
  } catch (const Verifier::Reject& r) {
    chk.pass = false;
    chk.failed = r.field;
    chk.reason = r.reason;
  }
  chk.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
  rep.replay_seconds += chk.seconds;
  rep.checks.push_back(chk);
  v.forget_before(chk.step);
  return chk.reason;
}

}  // namespace

// The checks of docs/replay.md ("Verify: the checks, in order").
ReplayReport verify_response(const SpooledBundle& b, const Challenge& c, const VerifyOptions& opt) {
  check_margin(opt.margin);
  auto t0 = std::chrono::steady_clock::now();
  Verifier v{b, c, opt, {}, {}, {}, {}, {}, {}, {}, {}};
  ReplayReport rep = ReplayReport::answering(c);
  rep.margin = opt.margin;
  const NoisePlan plan{!opt.calibration && opt.calibration_steps <= 0, opt.threads > 1 ? opt.threads : 2};
  std::string verdict_reason = check_bundle(v);                                      // 1 to 6
  if (verdict_reason.empty()) verdict_reason = set_up_noise(v, plan, rep.calibration);  // calibration
  set_torch_threads(opt.threads);
  const std::vector<ReportCheck> todo = verdict_reason.empty() ? planned_checks(c) : std::vector<ReportCheck>{};
  Progress progress("replaying", uint64_t(todo.size()), "steps", opt.quiet);
  for (const ReportCheck& chk : todo) {                                              // 7 to 12
    const std::string why = record_transition(v, plan, rep, chk);
    if (verdict_reason.empty()) verdict_reason = why;
    progress.add(1);
  }
  progress.finish();
  rep.verdict = verdict_reason.empty() ? ReportVerdict::kCertified : ReportVerdict::kRejected;
  rep.reason = verdict_reason;
  rep.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace wit
