// The training loop with witnesses, crash-safe resume and head signing.
// Torch-free: it drives TrainState and train_step through state.h.
#include "wit/trainer.h"

#include <sodium.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "wit/cli.h"
#include "wit/fingerprint.h"
#include "wit/commitment.h"
#include "wit/error.h"
#include "wit/index.h"
#include "wit/io.h"
#include "wit/manifest.h"
#include "wit/merkle.h"
#include "wit/order.h"
#include "wit/progress.h"
#include "wit/runlog.h"
#include "wit/sign.h"
#include "wit/state.h"
#include "wit/wlog.h"

namespace wit {

namespace fs = std::filesystem;

namespace {

Bytes load_or_make_seed(const TrainConfig& cfg, const std::string& run) {
  const std::string secret = (fs::path(run) / "seed.secret").string();
  const std::string revealed = (fs::path(run) / "seed").string();
  for (const std::string& p : {secret, revealed}) {
    if (!fs::exists(p)) continue;
    Bytes b = parse_seed_hex(read_file(p), p);
    if (cfg.seed && *cfg.seed != b) throw Error("the config's seed differs from the run's", p);
    return b;
  }
  if (cfg.seed) return *cfg.seed;
  Bytes b(32);
  randombytes_buf(b.data(), b.size());
  return b;
}

void write_secret(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
  ::chmod(path.c_str(), 0600);
}

uint64_t now_seconds() { return uint64_t(std::time(nullptr)); }

}  // namespace

TrainSummary train(const TrainOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  set_torch_threads(opt.threads);
  const std::string& run = opt.out_dir;
  const RunPaths paths(run);

  Commitment data = Commitment::load(opt.commit_path);
  Index index(opt.index_path);
  index.check_matches(data, opt.commit_path);
  Dataset dataset(data, opt.files, 0);
  TrainConfig cfg = TrainConfig::load(opt.config_path);

  // Everything is validated before anything is written into the run directory.
  std::string key_path = opt.key_path;
  bool new_key = false;
  SecretKey key;
  if (key_path.empty()) {
    key_path = (fs::path(run) / "trainer.key").string();
    new_key = !fs::exists(key_path);
  }
  key = new_key ? generate_key() : load_key(key_path);
  Bytes seed = load_or_make_seed(cfg, run);
  nlohmann::json software = {{"wit", WIT_VERSION}, {"libtorch", torch_version()}};
  Manifest mf = make_manifest(cfg, data, key.pub(), seed_commitment(ByteView(seed)), software, opt.config_path);
  const std::string manifest_path = paths.manifest();
  const bool existing = fs::exists(manifest_path);
  if (existing && read_file(manifest_path) != mf.dump())
    throw Error("the run directory holds a different run (config, data, key or software differ)", run,
                "use a new --out directory");

  fs::create_directories(fs::path(run) / "ckpt");
  // Stale temporaries of an interrupted atomic write are never needed.
  for (const auto& e : fs::directory_iterator(fs::path(run) / "ckpt"))
    if (e.path().string().find(".tmp.") != std::string::npos) fs::remove(e.path());
  if (new_key) {
    save_key(key_path, key);
    if (!opt.quiet) cli::note("generated signing key " + key_path + " (keep it out of published bundles)");
  }
  if (!existing) {
    if (!fs::exists(paths.seed())) write_secret(paths.seed_secret(), to_hex(ByteView(seed)) + "\n");
    write_file_atomic(manifest_path, mf.dump());
  }
  // Where the trainer's data lives, so 'wit-replay respond' can find it later
  // (trainer-local: absolute paths, never part of a bundle).
  nlohmann::json where = {{"commit", fs::absolute(opt.commit_path).string()},
                          {"index", fs::absolute(opt.index_path).string()}, {"files", nlohmann::json::array()},
                          {"threads", opt.threads}};
  for (const auto& f : opt.files) where["files"].push_back(fs::absolute(f).string());
  write_file_atomic((fs::path(run) / "data.json").string(), where.dump(2) + "\n");
  const Hash32 run_id = mf.run_id();
  const std::string log_path = paths.log();
  const std::string heads_path = paths.heads();

  WitnessLog log = WitnessLog::open(log_path, true, true);
  std::vector<TreeHead> heads;
  if (fs::exists(heads_path)) {
    // A head line torn by a crash was never complete, so never published: cut it.
    if (uint64_t cut = repair_heads(heads_path); cut && !opt.quiet)
      cli::note("cut a torn head line (" + std::to_string(cut) + " bytes) from " + heads_path);
    heads = read_heads(heads_path);
  }
  uint64_t signed_size = 0;
  for (const auto& h : heads) signed_size = std::max(signed_size, h.size);

  auto sign_now = [&]() {
    log.sync();
    TreeHead h = sign_head(key, run_id, log.size(), log.root(log.size()), now_seconds());
    append_head(heads_path, h);
    signed_size = std::max(signed_size, h.size);
  };

  TrainSummary sum;
  TrainState state;
  if (log.size() == 0) {
    state = opt.init_fn ? opt.init_fn(mf, ByteView(seed)) : TrainState::initial(mf.model, ByteView(seed), opt.device);
    LogEntry g;
    g.genesis = true;
    g.g.run_id = run_id;
    g.g.init_root = state.root();
    g.g.n_params = param_count(mf.model);
    log.append(encode_entry(g));
    sign_now();
  } else {
    LogEntry g = log.entry(0);
    if (!g.genesis || g.g.run_id != run_id) throw Error("the witness log belongs to another run", log_path);
    // Resume from the newest checkpoint that the log vouches for.
    int64_t from = 0;
    for (uint64_t i = log.size() - 1; i >= 1 && from == 0; i--) {
      LogEntry e = log.entry(i);
      if (!e.s.ckpt_root) continue;
      const std::string p = paths.checkpoint(i);
      if (!fs::exists(p)) continue;
      TrainState s = TrainState::load(mf.model, p, opt.device);
      if (s.step() == int64_t(i) && s.root() == *e.s.ckpt_root) {
        state = std::move(s);
        from = int64_t(i);
      }
    }
    if (from == 0) {
      state = TrainState::initial(mf.model, ByteView(seed), opt.device);
      if (state.root() != g.g.init_root) throw Error("genesis does not match the initial state from the seed", log_path);
    }
    sum.resumed = true;
    if (!opt.quiet)
      cli::note("resuming " + run + " from step " + std::to_string(from) + " (log has " +
                std::to_string(log.size() - 1) + " steps)");
  }
  sum.first_step = state.step() + 1;

  DataOrder order(run_id, ByteView(seed), dataset.size(), uint64_t(mf.batch_size));
  // The probe set, with proofs that its records are committed data, so anyone
  // can fingerprint a released model against this run.
  ProbeSet probe_set;
  for (uint64_t i : probe_indices(run_id, ByteView(seed), dataset.size(), uint64_t(mf.fp.probe_records))) {
    probe_set.indices.push_back(i);
    probe_set.records.push_back(dataset.record(i));
    probe_set.proofs.push_back(prove_inclusion(index, dataset.leaf(i), i));
  }
  write_file_atomic((fs::path(run) / "probe.json").string(), probe_set.to_json(mf).dump(1) + "\n");
  const BatchRecords& probe = probe_set.records;

  const int64_t T = mf.steps;
  const int64_t last = opt.stop_after > 0 ? std::min(T, opt.stop_after) : T;
  Progress progress("training", uint64_t(last - state.step()), "steps", opt.quiet);
  while (state.step() < last) {
    const int64_t t = state.step() + 1;
    std::vector<uint64_t> idx = order.batch(t);
    BatchRecords batch;
    std::vector<Hash32> leaves;
    for (uint64_t i : idx) {
      batch.push_back(dataset.record(i));
      leaves.push_back(dataset.leaf(i));
    }
    StepOutput out = opt.step_fn ? opt.step_fn(mf, state, batch, t) : train_step(mf, state, batch);
    LogEntry e;
    e.s.step = uint64_t(t);
    e.s.lr = out.lr;
    e.s.mean_loss = out.mean_loss;
    e.s.grad_norm = out.grad_norm;
    e.s.batch_root = merkle_root(kBlake2bTree, leaves, 1);
    e.s.losses = out.losses;
    TrainState::Sketches sk = state.sketches(mf);
    e.s.sketch = std::move(sk.w);
    e.s.sketch_m = std::move(sk.m);
    e.s.sketch_v = std::move(sk.v);
    if (t % mf.fp.probe_every == 0 || t == T) e.s.probe = probe_fingerprint(mf, state, probe);
    if (t % mf.checkpoint_every == 0 || t == T) {
      // The checkpoint is durable before the entry that names its root.
      state.save(paths.checkpoint(uint64_t(t)));
      e.s.ckpt_root = state.root();
    }
    Bytes enc = encode_entry(e);
    if (uint64_t(t) < log.size()) {
      // Re-deriving a step that the log already holds (after a resume): it must
      // come out identical; below a signed head, a difference is fatal.
      if (log.entry_bytes(uint64_t(t)) != enc) {
        if (uint64_t(t) < signed_size)
          throw Error("resumed training diverged from the signed log at step " + std::to_string(t) +
                          " (different thread count, BLAS or device?)", log_path);
        log.truncate(uint64_t(t));
        log.append(enc);
      }
    } else {
      log.append(enc);
    }
    // Sign only once the log ends at this step (not while re-deriving older entries).
    if ((t % mf.head_every == 0 || t == T) && log.size() == uint64_t(t) + 1 && log.size() > signed_size) sign_now();
    sum.final_loss = out.mean_loss;
    sum.steps++;
    progress.add(1);
  }
  progress.finish();
  sum.last_step = state.step();
  if (state.step() == T) {
    if (log.size() > uint64_t(T) + 1) log.truncate(uint64_t(T) + 1);
    if (log.size() > signed_size) sign_now();
    // The seed is revealed once the log is final.
    write_file_atomic(paths.seed(), to_hex(ByteView(seed)) + "\n");
    fs::remove(paths.seed_secret());
    sum.finished = true;
  }
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace wit
