// The training loop with witnesses, crash-safe resume and head signing.
// Torch-free: it drives TrainState and train_step through state.h, and the
// data-parallel step through dist.h (rank 0 writes; see docs/distributed.md).
#include "wit/trainer.h"

#include <sodium.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "dist.h"

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
#include "wit/safetensors.h"
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

// One step: wit's own (single process or data parallel) or a replaced one.
StepOutput do_step(const TrainOptions& opt, Dist* dist, const Manifest& mf, TrainState& state,
                   const BatchRecords& declared, int64_t t) {
  if (opt.step_fn) return opt.step_fn(mf, state, declared, t);
  const int rank = dist ? dist->rank() : 0;
  const auto [lo, hi] = dist ? dist->rows(int64_t(declared.size())) : std::pair<int64_t, int64_t>{0, int64_t(declared.size())};
  BatchRecords tampered;
  if (opt.rows_fn) {
    tampered = declared;
    opt.rows_fn(t, rank, lo, hi, tampered);
  }
  const BatchRecords& batch = opt.rows_fn ? tampered : declared;
  return dist ? dist->step(mf, state, batch) : train_step(mf, state, batch);
}

void finish_summary(const TrainOptions& opt, const Dist* dist, TrainSummary& sum) {
  if (dist) {
    sum.rank = dist->rank();
    sum.world = dist->world();
    const Dist::Traffic& tr = dist->traffic();
    if (tr.steps) {
      sum.grad_bytes = double(tr.grad_bytes) / double(tr.steps);
      sum.witness_bytes = double(tr.witness_bytes) / double(tr.steps);
    }
  }
  if (sum.rank != 0 || opt.stats_path.empty()) return;
  const double n = sum.steps ? double(sum.steps) : 1.0;
  nlohmann::json j = {{"world", sum.world},
                      {"steps", sum.steps},
                      {"seconds", sum.seconds},
                      {"wall_seconds", sum.loop_seconds / n},
                      {"step_seconds", sum.step_seconds / n},
                      {"witness_seconds", sum.witness_seconds / n},
                      {"grad_bytes_per_rank", sum.grad_bytes},
                      {"witness_bytes_per_rank", sum.witness_bytes}};
  write_file_atomic(opt.stats_path, j.dump(1) + "\n");
}

// A rank other than 0 of a data-parallel run: rank 0's manifest, seed and
// state, the same batches, the same steps; it writes nothing.
TrainSummary train_rank(const TrainOptions& opt, Dist& dist, std::chrono::steady_clock::time_point t0) {
  Commitment data = Commitment::load(opt.commit_path);
  Dataset dataset(data, opt.files, 0);
  std::string m, sd, sts;
  dist.broadcast(m);
  dist.broadcast(sd);
  dist.broadcast(sts);
  Manifest mf = Manifest::from_json(nlohmann::json::parse(m), "rank 0's manifest");
  if (mf.data_root != data.root)
    throw Error("rank 0 trains on another data commitment", opt.commit_path);
  Bytes seed(sd.begin(), sd.end());
  Bytes stb(sts.begin(), sts.end());
  Safetensors st = Safetensors::parse(ByteView(stb), "rank 0's state");
  TrainState state = TrainState::from_tensors(mf.model, st.tensors(), "rank 0's state", opt.device);
  if (opt.shard) dist.shard(state);
  else dist.partition(state);
  const RunPaths paths(opt.out_dir);
  if (opt.shard) fs::create_directories(fs::path(opt.out_dir) / "ckpt");  // this rank's shards go there

  TrainSummary sum;
  sum.first_step = state.step() + 1;
  DataOrder order(mf.run_id(), ByteView(seed), dataset.size(), uint64_t(mf.batch_size));
  const int64_t T = mf.steps;
  const int64_t last = opt.stop_after > 0 ? std::min(T, opt.stop_after) : T;
  const auto loop0 = std::chrono::steady_clock::now();
  while (state.step() < last) {
    const int64_t t = state.step() + 1;
    BatchRecords batch;
    for (uint64_t i : order.batch(t)) batch.push_back(dataset.record(i));
    auto ts = std::chrono::steady_clock::now();
    StepOutput out = do_step(opt, &dist, mf, state, batch, t);
    auto tw = std::chrono::steady_clock::now();
    sum.step_seconds += std::chrono::duration<double>(tw - ts).count();
    // This rank's part of the witnesses: its range's sketches (and, sharded, its checkpoint shard).
    if (opt.witnesses) {
      dist.sketches(mf, state);
      // The state root every step (a sharded checkpoint step computes it while writing the shards).
      if (dist.sharded() && (t % mf.checkpoint_every == 0 || t == T))
        dist.checkpoint(state, paths.checkpoint(uint64_t(t)));
      else
        dist.state_root(state);
    }
    sum.witness_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - tw).count();
    sum.final_loss = out.mean_loss;
    sum.steps++;
  }
  sum.loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop0).count();
  sum.last_step = state.step();
  sum.finished = state.step() == T && opt.witnesses;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finish_summary(opt, &dist, sum);
  return sum;
}

}  // namespace

TrainSummary train(const TrainOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  set_torch_threads(opt.threads);
  const std::string& run = opt.out_dir;
  const RunPaths paths(run);

  // Data parallel: join the group first, so a missing rank shows early.
  std::unique_ptr<Dist> dist;
  if (DistEnv env = dist_env_from_environment(opt.dist_timeout); env.world > 1) {
    if (opt.step_fn) throw Error("a replaced training step cannot run data parallel", "WORLD_SIZE");
    dist = Dist::connect(env);
  }
  if (dist && dist->rank() != 0) {
    try {
      return train_rank(opt, *dist, t0);
    } catch (...) {
      // Under --nproc, give the launcher a moment to stop this rank when
      // another one failed first (rank 0's error is the one worth reading).
      if (std::getenv("WIT_LOCAL_LAUNCH")) std::this_thread::sleep_for(std::chrono::seconds(1));
      throw;
    }
  }

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
                          {"threads", opt.threads}, {"world", dist ? dist->world() : 1}};
  for (const auto& f : opt.files) where["files"].push_back(fs::absolute(f).string());
  write_file_atomic((fs::path(run) / "data.json").string(), where.dump(2) + "\n");
  const Hash32 run_id = mf.run_id();
  const std::string log_path = paths.log();
  const std::string heads_path = paths.heads();

  WitnessLog log = WitnessLog::open(log_path, TornTail::kCut, IfMissing::kCreate);
  std::vector<TreeHead> heads;
  if (fs::exists(heads_path)) {
    // A head line torn by a crash was never complete, so never published: cut it.
    if (uint64_t cut = cut_torn_heads(heads_path); cut && !opt.quiet)
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
    // Resume from the newest checkpoint that the log vouches for; a missing
    // or damaged one only makes the walk back longer.
    int64_t from = 0;
    for (uint64_t i = log.size() - 1; i >= 1 && from == 0; i--) {
      LogEntry e = log.entry(i);
      if (!e.s.checkpoint) continue;
      if (std::optional<TrainState> s =
              logged_checkpoint(mf.model, paths.checkpoint(i), int64_t(i), e.s.state_root, opt.device)) {
        state = std::move(*s);
        from = int64_t(i);
      } else if (!opt.quiet) {
        cli::note("checkpoint of step " + std::to_string(i) + " is missing or damaged; trying an older one");
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
  if (dist) {
    // The other ranks start from rank 0's manifest, seed and state.
    std::string m = mf.dump(), sd(seed.begin(), seed.end());
    Bytes st = encode_safetensors(state.tensors());
    std::string sts(st.begin(), st.end());
    dist->broadcast(m);
    dist->broadcast(sd);
    dist->broadcast(sts);
    if (opt.shard) dist->shard(state);
    else dist->partition(state);
  }
  const bool sharded = dist && dist->sharded();

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
  const auto loop0 = std::chrono::steady_clock::now();
  while (state.step() < last) {
    const int64_t t = state.step() + 1;
    std::vector<uint64_t> idx = order.batch(t);
    BatchRecords batch;
    std::vector<Hash32> leaves;
    for (uint64_t i : idx) {
      batch.push_back(dataset.record(i));
      leaves.push_back(dataset.leaf(i));
    }
    auto ts = std::chrono::steady_clock::now();
    StepOutput out = do_step(opt, dist.get(), mf, state, batch, t);
    auto tw = std::chrono::steady_clock::now();
    sum.step_seconds += std::chrono::duration<double>(tw - ts).count();
    if (!opt.witnesses) {  // bench only: the same run without witnesses
      sum.final_loss = out.mean_loss;
      sum.steps++;
      progress.add(1);
      continue;
    }
    LogEntry e;
    e.s.step = uint64_t(t);
    e.s.lr = out.lr;
    e.s.mean_loss = out.mean_loss;
    e.s.grad_norm = out.grad_norm;
    e.s.batch_root = merkle_root(kBlake2bTree, leaves, 1);
    e.s.losses = out.losses;
    // Data parallel, the ranks share the sketching (an all-reduce of 3k doubles).
    TrainState::Sketches sk = dist ? dist->sketches(mf, state) : state.sketches(mf);
    e.s.sketch = std::move(sk.w);
    e.s.sketch_m = std::move(sk.m);
    e.s.sketch_v = std::move(sk.v);
    if (t % mf.fp.probe_every == 0 || t == T) e.s.probe = probe_fingerprint(mf, state, probe);
    // The exact root of the whole state, every step; every C steps the state
    // is also written, durable before the entry that says so.
    e.s.checkpoint = t % mf.checkpoint_every == 0 || t == T;
    if (e.s.checkpoint && sharded) {
      e.s.state_root = dist->checkpoint(state, paths.checkpoint(uint64_t(t)));
    } else {
      e.s.state_root = dist ? dist->state_root(state) : state.root();
      if (e.s.checkpoint) state.save(paths.checkpoint(uint64_t(t)));
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
    sum.witness_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - tw).count();
    sum.final_loss = out.mean_loss;
    sum.steps++;
    progress.add(1);
  }
  progress.finish();
  sum.loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop0).count();
  sum.last_step = state.step();
  if (state.step() == T && opt.witnesses) {
    if (log.size() > uint64_t(T) + 1) log.truncate(uint64_t(T) + 1);
    if (log.size() > signed_size) sign_now();
    // The seed is revealed once the log is final.
    write_file_atomic(paths.seed(), to_hex(ByteView(seed)) + "\n");
    fs::remove(paths.seed_secret());
    sum.finished = true;
  }
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finish_summary(opt, dist.get(), sum);
  return sum;
}

}  // namespace wit
