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
#include "wit/merkle.h"
#include "wit/order.h"
#include "wit/proofs.h"
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

// What each challenge needs: entries, states (after step i), batches (of step i).
struct Needs {
  std::set<int64_t> entries{0}, states, batches;
  explicit Needs(const Challenge& c) {
    for (int64_t s : c.steps) {
      entries.insert({s - 1, s});
      states.insert(s - 1);
      batches.insert(s);
    }
    for (const Segment& g : c.segments) {
      states.insert(g.from);
      for (int64_t s = g.from; s <= g.to; s++) entries.insert(s);
      for (int64_t s = g.from + 1; s <= g.to; s++) batches.insert(s);
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- respond

Bundle build_response(const Challenge& c, const ResponseOptions& opt) {
  set_torch_threads(opt.threads);
  const RunPaths paths(opt.run);
  const std::string mf_text = read_file(paths.manifest());
  Manifest mf = Manifest::load(paths.manifest());
  const Hash32 run_id = mf.run_id();
  if (c.head.run_id != run_id) throw Error("the challenge is for another run", opt.run);
  bool have_head = false;
  for (const auto& h : read_heads(paths.heads()))
    have_head |= h.size == c.head.size && h.root == c.head.root && h.sig == c.head.sig;
  if (!have_head) throw Error("the challenged head is not one of this run's signed heads", paths.heads());
  WitnessLog log = WitnessLog::open(paths.log(), false);
  if (log.size() < c.head.size || log.root(c.head.size) != c.head.root)
    throw Error("the log does not match the challenged head", paths.log());
  if (!fs::exists(paths.seed())) throw Error("the seed is not revealed yet (training has not finished)", opt.run);
  const Bytes seed = parse_seed_hex(read_file(paths.seed()), paths.seed());

  std::string commit_path = opt.commit_path, index_path = opt.index_path;
  std::vector<std::string> files = opt.files;
  if (commit_path.empty() || index_path.empty() || files.empty()) {
    const std::string dj = (fs::path(opt.run) / "data.json").string();
    json d = json::parse(read_file(dj), nullptr, false);
    if (d.is_discarded() || !d.is_object()) throw Error("invalid data.json", dj, "give --data, --index and the files");
    if (commit_path.empty()) commit_path = d.value("commit", std::string());
    if (index_path.empty()) index_path = d.value("index", std::string());
    if (files.empty()) files = d.value("files", std::vector<std::string>{});
  }
  if (opt.threads == 0) {
    // Regenerate states with the trainer's thread count, so they come out bit-identical.
    json d = json::parse(read_file((fs::path(opt.run) / "data.json").string()), nullptr, false);
    if (!d.is_discarded() && d.is_object()) set_torch_threads(d.value("threads", 0u));
  }
  Commitment data = Commitment::load(commit_path);
  Index index(index_path);
  index.check_matches(data, commit_path);
  if (data.root != mf.data_root) throw Error("the data commitment is not the run's", commit_path);
  Dataset dataset(data, files, 0);
  DataOrder order(run_id, ByteView(seed), dataset.size(), uint64_t(mf.batch_size));

  Bundle b;
  b.put("manifest.json", mf_text);
  b.put("challenge.json", c.to_json().dump(2) + "\n");
  b.put("seed", to_hex(ByteView(seed)) + "\n");
  b.put("probe.json", read_file((fs::path(opt.run) / "probe.json").string()));
  const Needs need(c);
  for (int64_t i : need.entries) {
    json e = {{"index", i}, {"entry_hex", to_hex(ByteView(log.entry_bytes(uint64_t(i))))},
              {"path", hashes_json(log.inclusion_proof(uint64_t(i), c.head.size))}};
    b.put(member("log", i, "json"), e.dump() + "\n");
  }
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
    b.put(member("batch", s, "json"), json{{"step", s}, {"records", recs}}.dump() + "\n");
  }

  // States: from the newest checkpoint at or before each target, replaying
  // forward with the shared training step (continuing when no newer checkpoint lies between).
  std::optional<TrainState> cur;
  auto checkpoint_at = [&](int64_t i) -> std::optional<TrainState> {
    if (i == 0) return TrainState::initial(mf.model, ByteView(seed), opt.device);
    const std::string p = paths.checkpoint(uint64_t(i));
    LogEntry e = log.entry(uint64_t(i));
    if (!e.s.ckpt_root) return std::nullopt;
    // Whole, or assembled from a sharded run's per-rank shards (docs/distributed.md).
    std::optional<TrainState> st = load_run_checkpoint(mf.model, p, opt.device);
    if (!st || st->step() != i || st->root() != *e.s.ckpt_root) return std::nullopt;
    return st;
  };
  for (int64_t target : need.states) {
    int64_t start = target;
    std::optional<TrainState> ck;
    for (; start >= 0; start--) {
      if (cur && cur->step() == start) break;  // continuing is as good as a checkpoint here
      if ((ck = checkpoint_at(start))) break;
    }
    if (ck) cur = std::move(ck);
    if (!cur) throw Error("no checkpoint or initial state to regenerate step " + std::to_string(target) + " from", opt.run);
    while (cur->step() < target) train_step(mf, *cur, batch_records(cur->step() + 1));
    b.put(member("state", target, "safetensors"), encode_safetensors(cur->tensors()));
  }
  return b;
}

// ---------------------------------------------------------------- verify

namespace {

double rel(double num, double den) {
  if (num == 0) return 0;
  return den > 0 ? num / den : INFINITY;
}

double vec_sub_norm(const std::vector<float>& a, const std::vector<float>& b) { return l2_distance(a, b); }

double max_rel_elementwise(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < got.size(); i++)
    m = std::max(m, rel(std::fabs(double(got[i]) - want[i]), std::max(std::fabs(double(want[i])), 1e-12)));
  return m;
}

// One replayed step compared with its logged entry; `before` is the state the
// step started from. Distances of sketches are relative to the logged update.
json step_distances(const Manifest& mf, const TrainState::Sketches& before, const TrainState& after,
                    const StepOutput& out, const LogEntry& logged, const std::vector<float>* probe_now) {
  TrainState::Sketches sk = after.sketches(mf);
  json d;
  d["losses"] = max_rel_elementwise(out.losses, logged.s.losses);
  d["grad_norm"] = rel(std::fabs(double(out.grad_norm) - logged.s.grad_norm), std::fabs(double(logged.s.grad_norm)));
  d["weights"] = rel(vec_sub_norm(sk.w, logged.s.sketch), vec_sub_norm(logged.s.sketch, before.w));
  d["adam_m"] = rel(vec_sub_norm(sk.m, logged.s.sketch_m), vec_sub_norm(logged.s.sketch_m, before.m));
  d["adam_v"] = rel(vec_sub_norm(sk.v, logged.s.sketch_v), vec_sub_norm(logged.s.sketch_v, before.v));
  if (logged.s.probe && probe_now)
    d["probe"] = rel(vec_sub_norm(*probe_now, *logged.s.probe), l2_norm(*logged.s.probe));
  return d;
}

// The smallest relative difference float32 storage can make, per field: one
// rounding of each stored value, seen against the update (sketches) or the value.
json rounding_floor(const TrainState::Sketches& before, const LogEntry& logged) {
  const double eps = std::ldexp(1.0, -24);
  auto sk = [&](const std::vector<float>& now, const std::vector<float>& was) {
    return rel(eps * l2_norm(now), vec_sub_norm(now, was));
  };
  return {{"state", sk(logged.s.sketch, before.w)}, {"losses", eps}, {"grad_norm", eps},
          {"weights", sk(logged.s.sketch, before.w)}, {"adam_m", sk(logged.s.sketch_m, before.m)},
          {"adam_v", sk(logged.s.sketch_v, before.v)}, {"probe", eps}};
}

struct Verifier {
  const Bundle& b;
  const Challenge& c;
  const VerifyOptions& opt;
  Manifest mf;
  Hash32 run_id;
  Bytes seed;
  std::map<int64_t, LogEntry> entries;
  std::optional<ProbeSet> probe;
  std::unique_ptr<DataOrder> order;

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
    if (!(c.head.key == mf.trainer_key)) throw Reject{"head", "the head is not signed by the run's trainer key"};
    if (!c.head.signature_ok()) throw Reject{"head", "the head's signature does not verify"};
    seed = parse_seed_hex(b.get_text("seed"), "seed");
    if (seed_commitment(ByteView(seed)) != mf.seed_commitment)
      throw Reject{"seed", "the revealed seed does not match the manifest's seed commitment"};
    for (const auto& [name, bytes] : b.members()) {
      if (name.rfind("log/", 0) != 0) continue;
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
      if (!le.genesis && le.s.step != p.index)
        throw Reject{"log", "log entry " + std::to_string(p.index) + " claims step " + std::to_string(le.s.step)};
      entries[int64_t(p.index)] = std::move(le);
    }
    const LogEntry& g = entry(0);
    if (!g.genesis || g.g.run_id != run_id) throw Reject{"genesis", "entry 0 is not this run's genesis"};
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

  // The state after step i, checked exactly against a root where the log has
  // one (genesis, checkpoints) and otherwise against the logged sketches of W,
  // m and v, relative to the size of the next step's logged update.
  // `sk` (optional) receives the state's sketches, so a replay need not compute them again.
  TrainState state(int64_t i, json& d, TrainState::Sketches* sk_out = nullptr) {
    const std::string name = member("state", i, "safetensors");
    if (!b.has(name)) throw Reject{"state", "bundle lacks the state after step " + std::to_string(i)};
    TrainState st;
    try {
      const Bytes& bytes = b.get(name);
      Safetensors f = Safetensors::parse(ByteView(bytes), name);
      st = TrainState::from_tensors(mf.model, f.tensors(), name, opt.device);
    } catch (const Error& err) {
      throw Reject{"state", err.what()};
    }
    if (st.step() != i) throw Reject{"state", name + " holds step " + std::to_string(st.step())};
    const LogEntry& e = entry(i);
    d["state"] = 0.0;
    if (i == 0) {
      if (st.root() != e.g.init_root) throw Reject{"state_root", "the initial state differs from the genesis root"};
      return st;
    }
    if (e.s.ckpt_root && st.root() != *e.s.ckpt_root)
      throw Reject{"state_root", "the state after step " + std::to_string(i) + " differs from its logged checkpoint root"};
    const LogEntry& next = entry(i + 1);
    TrainState::Sketches sk = st.sketches(mf);
    if (sk_out) *sk_out = sk;
    d["state"] = std::max({rel(vec_sub_norm(sk.w, e.s.sketch), vec_sub_norm(next.s.sketch, e.s.sketch)),
                           rel(vec_sub_norm(sk.m, e.s.sketch_m), vec_sub_norm(next.s.sketch_m, e.s.sketch_m)),
                           rel(vec_sub_norm(sk.v, e.s.sketch_v), vec_sub_norm(next.s.sketch_v, e.s.sketch_v))});
    return st;
  }
};

const char* kFields[] = {"state", "losses", "grad_norm", "weights", "adam_m", "adam_v", "probe"};

}  // namespace

Calibration calibrate(const Bundle& b, const Challenge& c, unsigned threads_a, unsigned threads_b, int max_steps,
                      const std::string& device) {
  VerifyOptions vo;
  vo.device = device;
  Verifier v{b, c, vo, {}, {}, {}, {}, {}, {}};
  try {
    v.load_common();
  } catch (const Verifier::Reject& r) {
    throw Error("cannot calibrate on this bundle: " + r.reason, b.where);
  }
  Calibration cal;
  cal.run_id = v.run_id.hex();
  cal.threads = {threads_a, threads_b};
  for (const char* f : kFields) cal.noise[f] = 0.0;
  std::string last_reason;
  for (int64_t s : c.steps) {
    if (int(cal.steps.size()) >= max_steps) break;
    try {
      json d0;
      BatchRecords batch = v.batch(s);
      TrainState a = v.state(s - 1, d0);
      TrainState bb = a.clone();
      TrainState::Sketches before = a.sketches(v.mf);
      set_torch_threads(threads_a);
      StepOutput oa = train_step(v.mf, a, batch);
      set_torch_threads(threads_b);
      StepOutput ob = train_step(v.mf, bb, batch);
      // Replay b measured against replay a, as if a were the logged entry.
      LogEntry as_logged;
      TrainState::Sketches ska = a.sketches(v.mf);
      as_logged.s.losses = oa.losses;
      as_logged.s.grad_norm = oa.grad_norm;
      as_logged.s.sketch = ska.w;
      as_logged.s.sketch_m = ska.m;
      as_logged.s.sketch_v = ska.v;
      json d = step_distances(v.mf, before, bb, ob, as_logged, nullptr);
      // Noise in units of the step's float32 rounding floor: the floor scales
      // with the update size, so the ratio carries over to steps with smaller updates.
      json floor = rounding_floor(before, as_logged);
      for (auto it = d.begin(); it != d.end(); ++it) {
        const double f = floor.value(it.key(), 0.0);
        const double ratio = f > 0 && std::isfinite(f) ? it->get<double>() / f : 0.0;
        cal.noise[it.key()] = std::max(cal.noise[it.key()].get<double>(), ratio);
      }
      cal.steps.push_back(s);
    } catch (const Verifier::Reject& r) {
      // A step the bundle cannot answer is skipped here; verification rejects it.
      last_reason = r.reason;
    }
  }
  if (cal.steps.empty())
    throw Error("no challenged step to calibrate on" + (last_reason.empty() ? "" : " (" + last_reason + ")"), b.where);
  return cal;
}

json Calibration::to_json() const {
  return {{"format", "wit.calibration"}, {"version", 1}, {"run_id", run_id}, {"threads", threads},
          {"steps", steps}, {"noise", noise}};
}

Calibration Calibration::from_json(const json& j, const std::string& where) {
  try {
    return from_json_checked(j, where);
  } catch (const json::exception&) {
    throw Error("invalid calibration: a field has the wrong type", where);
  }
}

Calibration Calibration::from_json_checked(const json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", std::string()) != "wit.calibration") throw Error("not a wit calibration", where);
  if (j.value("version", 0) != 1) throw Error("unsupported calibration version", where);
  Calibration c;
  c.run_id = j.value("run_id", std::string());
  c.threads = j.value("threads", std::vector<unsigned>{});
  c.steps = j.value("steps", std::vector<int64_t>{});
  if (!j.contains("noise") || !j["noise"].is_object()) throw Error("invalid calibration: missing noise", where);
  for (const char* f : kFields) {
    if (j["noise"].contains(f) && !j["noise"][f].is_number()) throw Error(std::string("invalid calibration: noise.") + f, where);
    c.noise[f] = j["noise"].value(f, 0.0);
  }
  return c;
}

Calibration Calibration::load(const std::string& path) {
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw Error("invalid calibration: not valid json", path);
  return from_json(j, path);
}

Report verify_response(const Bundle& b, const Challenge& c, const VerifyOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  Verifier v{b, c, opt, {}, {}, {}, {}, {}, {}};
  Report rep;
  json checks = json::array();
  std::string verdict_reason;
  Calibration cal;
  try {
    v.load_common();
  } catch (const Verifier::Reject& r) {
    verdict_reason = r.reason;
  }
  if (verdict_reason.empty()) {
    if (opt.calibration) {
      cal = *opt.calibration;
      if (!cal.run_id.empty() && cal.run_id != v.run_id.hex() && !opt.quiet)
        cli::note("calibration was measured on another run; using it anyway");
    } else {
      const unsigned n = opt.threads ? opt.threads : 2;
      try {
        cal = calibrate(b, c, 1, n == 1 ? 2 : n, opt.calibration_steps, opt.device);
      } catch (const Error& e) {
        verdict_reason = std::string("cannot measure replay noise: ") + e.what();
      }
    }
  }
  set_torch_threads(opt.threads);
  double replay_seconds = 0;
  // Replays step s from `st` (advancing it) and compares with the log. The
  // start state's own deviation is `start_dev` (relative to the update), and
  // `carried` counts the replayed steps before this one whose noise it may carry.
  auto replay_compare = [&](TrainState& st, int64_t s, double start_dev, int64_t carried, json& d, json& thr,
                            const TrainState::Sketches* known_before) {
    BatchRecords batch = v.batch(s);
    const LogEntry& logged = v.entry(s);
    const float lr_want = float(v.mf.lr_at(s));
    if (std::fabs(double(logged.s.lr) - lr_want) > 1e-6 * std::fabs(double(lr_want)))
      throw Verifier::Reject{"lr", "step " + std::to_string(s) + " logs learning rate " + std::to_string(logged.s.lr) +
                                       ", the schedule says " + std::to_string(lr_want)};
    const TrainState::Sketches before = known_before ? *known_before : st.sketches(v.mf);
    StepOutput out = train_step(v.mf, st, batch);
    std::optional<std::vector<float>> probe_now;
    if (logged.s.probe && v.probe) probe_now = probe_fingerprint(v.mf, st, v.probe->records);
    d.update(step_distances(v.mf, before, st, out, logged, probe_now ? &*probe_now : nullptr));
    json floor = rounding_floor(before, logged);
    // threshold = margin x max(1, measured noise in floors) x this step's floor,
    // scaled by the steps whose noise the start state may carry (noise in m or
    // v feeds into later weights, so the largest of the three, accumulated
    // linearly); replayed W, m, v also inherit the start state's deviation.
    const double carry = std::max({1.0, cal.noise.value("weights", 0.0), cal.noise.value("adam_m", 0.0),
                                   cal.noise.value("adam_v", 0.0)});
    const double grow = double(1 + carried);
    json noise = cal.noise;
    noise["state"] = carry * double(std::max<int64_t>(1, carried));
    for (auto it = d.begin(); it != d.end(); ++it) {
      if (std::find(std::begin(kFields), std::end(kFields), it.key()) == std::end(kFields)) continue;
      const bool st_field = it.key() == "state";
      double t = opt.margin * std::max(1.0, noise.value(it.key(), 0.0)) * floor.value(it.key(), 0.0) *
                 (st_field ? 1.0 : grow);
      if (it.key() == "weights" || it.key() == "adam_m" || it.key() == "adam_v") t += start_dev;
      thr[it.key()] = t;
    }
    for (const char* f : kFields) {
      if (!d.contains(f)) continue;
      // Infinite: the log claims no update at all where the replay makes one.
      const double df = d[f].get<double>();
      if (!(std::isfinite(df) && df <= thr[f].get<double>()))
        throw Verifier::Reject{f, std::string(f) + " differs beyond the replay noise at step " + std::to_string(s)};
    }
  };
  auto finish_check = [&](json& chk, json& d, json& thr, std::chrono::steady_clock::time_point ts) {
    for (json* m : {&d, &thr})
      for (auto it = m->begin(); it != m->end(); ++it)
        if (it->is_number() && !std::isfinite(it->get<double>())) *it = "inf";
    chk["distances"] = d;
    chk["thresholds"] = thr;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
    chk["seconds"] = secs;
    replay_seconds += secs;
    checks.push_back(chk);
  };
  auto reject = [&](json& chk, const Verifier::Reject& r) {
    chk["pass"] = false;
    chk["failed"] = r.field;
    chk["reason"] = r.reason;
    if (verdict_reason.empty()) verdict_reason = r.reason;
  };
  const bool go = verdict_reason.empty();
  for (int64_t s : go ? c.steps : std::vector<int64_t>{}) {
    auto ts = std::chrono::steady_clock::now();
    json chk = {{"kind", "step"}, {"step", s}};
    json d = json::object(), thr = json::object();
    try {
      TrainState::Sketches sk;
      sk.w.clear();
      TrainState st = v.state(s - 1, d, &sk);
      // A state regenerated from a checkpoint may carry the noise of every step since it.
      const int64_t since = v.mf.checkpoint_every ? (s - 1) % v.mf.checkpoint_every : s - 1;
      replay_compare(st, s, d.value("state", 0.0), since, d, thr, sk.w.empty() ? nullptr : &sk);
      chk["pass"] = true;
      chk["failed"] = nullptr;
    } catch (const Verifier::Reject& r) {
      reject(chk, r);
    }
    finish_check(chk, d, thr, ts);
  }
  // Segments: from the exact state of checkpoint `from`, replay every step to
  // `to`, each compared with its entry; the report keeps the worst step.
  for (const Segment& g : go ? c.segments : std::vector<Segment>{}) {
    auto ts = std::chrono::steady_clock::now();
    json chk = {{"kind", "segment"}, {"from", g.from}, {"to", g.to}};
    json worst_d = json::object(), worst_thr = json::object();
    double worst = -1;
    try {
      json d0 = json::object();
      TrainState st = v.state(g.from, d0);
      if (g.from > 0 && !v.entry(g.from).s.ckpt_root)
        throw Verifier::Reject{"segment", "segment start " + std::to_string(g.from) + " is not a logged checkpoint"};
      for (int64_t s = g.from + 1; s <= g.to; s++) {
        json d = json::object(), thr = json::object();
        // How far the replay has drifted from the log before this step (float
        // noise compounds through Adam's moments); the step may inherit it.
        double drift = 0;
        const TrainState::Sketches sk = st.sketches(v.mf);
        if (s > g.from + 1) {
          const LogEntry &prev = v.entry(s - 1), &cur = v.entry(s);
          drift = std::max({rel(vec_sub_norm(sk.w, prev.s.sketch), vec_sub_norm(cur.s.sketch, prev.s.sketch)),
                            rel(vec_sub_norm(sk.m, prev.s.sketch_m), vec_sub_norm(cur.s.sketch_m, prev.s.sketch_m)),
                            rel(vec_sub_norm(sk.v, prev.s.sketch_v), vec_sub_norm(cur.s.sketch_v, prev.s.sketch_v))});
          d["drift"] = drift;
        }
        try {
          replay_compare(st, s, drift, s - g.from - 1, d, thr, &sk);
        } catch (const Verifier::Reject&) {
          worst_d = d;
          worst_thr = thr;
          worst_d["step"] = s;
          throw;
        }
        double ratio = 0;
        for (auto it = d.begin(); it != d.end(); ++it)
          if (thr.contains(it.key()) && thr.value(it.key(), 0.0) > 0) ratio = std::max(ratio, it->get<double>() / thr[it.key()].get<double>());
        if (ratio > worst) {
          worst = ratio;
          worst_d = d;
          worst_thr = thr;
          worst_d["step"] = s;
        }
      }
      chk["pass"] = true;
      chk["failed"] = nullptr;
    } catch (const Verifier::Reject& r) {
      reject(chk, r);
    }
    finish_check(chk, worst_d, worst_thr, ts);
  }
  rep.certified = verdict_reason.empty();
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.doc = {{"format", "wit.report"}, {"version", 1}, {"run_id", c.head.run_id.hex()},
             {"head", {{"size", c.head.size}, {"root", c.head.root.hex()}}}, {"challenge_seed", c.seed.hex()},
             {"verdict", rep.certified ? "certified" : "rejected"},
             {"reason", rep.certified ? json(nullptr) : json(verdict_reason)},
             {"guarantee", {{"words", c.guarantee.words()}, {"k", c.guarantee.k}, {"steps", c.guarantee.steps},
                            {"fraction", c.guarantee.fraction}, {"detection", c.guarantee.detection}}},
             {"calibration", cal.to_json()}, {"margin", opt.margin}, {"checks", checks},
             {"cost", {{"replay_seconds", replay_seconds}, {"total_seconds", total}}}};
  return rep;
}

}  // namespace wit
