// The training loop with witnesses, crash-safe resume and head signing.
// Torch-free: it drives TrainState and train_step through state.h, and the
// data-parallel step through dist.h (rank 0 writes; see docs/distributed.md).
#include "wit/train/trainer.h"

#include <sodium.h>
#include <sys/stat.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "wit/train/dist.h"

#include "wit/cmd/cli.h"
#include "wit/model/config_in_effect.h"
#include "wit/model/fingerprint.h"
#include "wit/cmd/commit_cmd.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/readers.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/order.h"
#include "wit/base/progress.h"
#include "wit/run/runlog.h"
#include "wit/run/safetensors.h"
#include "wit/model/script.h"
#include "wit/hash/sign.h"
#include "wit/model/state.h"
#include "wit/run/wlog.h"

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

// Before anything is written: a TorchScript module keeps the contract (its
// forward on a trial batch), and the model's vocabulary covers every token
// id of the data.
void check_model_fits(const Manifest& mf, const Dataset& dataset, const TrainOptions& opt) {
  if (!mf.model.scripted()) return;
  check_model(mf.model, opt.device, mf.train_mode);
  const unsigned width = token_mode_bytes(mf.model.tokens);
  if (width == 0) return;
  // The first record (in dataset order) holding an id the model cannot embed.
  for (uint64_t i = 0; i < dataset.size(); i++) {
    const std::string r = dataset.record(i);
    const TokenAt bad = first_token_at_least(ByteView(r), width, uint64_t(mf.model.vocab));
    if (bad.position < token_count(ByteView(r), width))
      throw Error("the data's token " + std::to_string(bad.id) + " is not below the model's vocab " +
                      std::to_string(mf.model.vocab) + " (record " + std::to_string(dataset.first(i)) +
                      " in file order, its token " + std::to_string(bad.position) + ")",
                  opt.commit_path, "declare model.vocab larger than the data's largest token id");
  }
}

// One step: wit's own (single process or data parallel) or a replaced one.
StepOutput do_step(const TrainOptions& opt, Dist* dist, const Manifest& mf, TrainState& state,
                   const BatchRecords& declared, int64_t t, const Bytes& seed) {
  if (opt.step_fn) return opt.step_fn(mf, state, declared, t);
  const int rank = dist ? dist->rank() : 0;
  const auto [lo, hi] = dist ? dist->rows(int64_t(declared.size())) : std::pair<int64_t, int64_t>{0, int64_t(declared.size())};
  BatchRecords tampered;
  if (opt.rows_fn) {
    tampered = declared;
    opt.rows_fn(t, rank, lo, hi, tampered);
  }
  const BatchRecords& batch = opt.rows_fn ? tampered : declared;
  if (dist && opt.shard_rows_fn) {  // attack 24: undeclared rows for this rank's own range only
    BatchRecords own = batch;
    opt.shard_rows_fn(t, rank, lo, hi, own);
    return dist->step(mf, state, batch, ByteView(seed), &own);
  }
  return dist ? dist->step(mf, state, batch, ByteView(seed)) : train_step(mf, state, batch, ByteView(seed));
}

// The peak resident memory of this process (VmHWM), reset at the start of
// the training loop (Linux: "5" to /proc/self/clear_refs), so --stats reports
// the loop's peak apart from the setup's. 0 where /proc says nothing.
void reset_peak_rss() {
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}
uint64_t peak_rss() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %" SCNu64 " kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

void finish_summary(const TrainOptions& opt, Dist* dist, TrainSummary& sum) {
  std::vector<uint64_t> peaks{sum.loop_peak_rss}, params, grads;
  // Every rank's loop peak and traffic, for rank 0's --stats (each rank has the same arguments).
  if (dist && !opt.stats_path.empty()) {
    const Dist::Traffic& tr = dist->traffic();
    const uint64_t n = tr.steps ? tr.steps : 1;
    peaks = dist->gather_u64(sum.loop_peak_rss);
    params = dist->gather_u64(tr.param_bytes / n);
    grads = dist->gather_u64(tr.grad_bytes / n);
  }
  if (dist) {
    sum.rank = dist->rank();
    sum.world = dist->world();
    const Dist::Traffic& tr = dist->traffic();
    if (tr.steps) {
      sum.grad_bytes = double(tr.grad_bytes) / double(tr.steps);
      sum.witness_bytes = double(tr.witness_bytes) / double(tr.steps);
      sum.param_bytes = double(tr.param_bytes) / double(tr.steps);
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
                      {"witness_bytes_per_rank", sum.witness_bytes},
                      {"param_bytes_per_rank", sum.param_bytes},
                      {"loop_peak_rss_per_rank", peaks},
                      {"param_bytes_each_rank", params},
                      {"grad_bytes_each_rank", grads}};
  write_file_atomic(opt.stats_path, j.dump(1) + "\n");
}

// Each rank's part of the state: fully sharded as the manifest plans it,
// ZeRO-1 (--shard), or data parallel (ranges for the sketches only).
void shard_state(const TrainOptions& opt, const Manifest& mf, Dist& dist, TrainState& state) {
  if (mf.sharding) dist.full_shard(state, *mf.sharding);
  else if (opt.shard) dist.shard(state);
  else dist.partition(state);
}

// The data's budget (--memory): scratch files in the temporary directory.
CommitLimits data_limits(const TrainOptions& opt) {
  CommitLimits l;
  l.memory = parse_size(opt.data_memory, "--memory");
  return l;
}

// A rank other than 0 of a data-parallel run: rank 0's manifest, seed and
// state, the same batches, the same steps; it writes nothing.
TrainSummary train_rank(const TrainOptions& opt, Dist& dist, std::chrono::steady_clock::time_point t0) {
  // The bounded way, as rank 0's (docs/commitment.md, "reader of a corpus").
  CommitPair pair = load_commit_pair(opt.commit_path, opt.index_path, IndexUse::kIndexNeeded);
  const Commitment& data = pair.commit;
  Dataset dataset(data, *pair.index, opt.files, 0, data_limits(opt));
  std::string m, sd, sts;
  dist.broadcast(m);
  dist.broadcast(sd);
  dist.broadcast(sts);
  Manifest mf = Manifest::from_json(jsonf::parse(m, "invalid manifest", "rank 0's manifest"), "rank 0's manifest");
  if (mf.data_root != data.root)
    throw Error("rank 0 trains on another data commitment", opt.commit_path);
  // Every rank loads the module from its own --model; the digest must be rank 0's.
  if (mf.model.scripted()) {
    if (opt.model_path.empty()) throw Error("rank 0 trains a TorchScript model; this rank was given no --model", "--model");
    mf.model.module_path = opt.model_path;
  }
  Bytes seed(sd.begin(), sd.end());
  // Rank 0's state, parsed in place; its bytes are freed before the loop
  // (a fully sharded rank then holds only its range).
  TrainState state = [&] {
    const Safetensors st = Safetensors::parse(ByteView(reinterpret_cast<const uint8_t*>(sts.data()), sts.size()),
                                              "rank 0's state");
    return TrainState::from_tensors(mf.model, st.tensors(), "rank 0's state", opt.device);
  }();
  std::string().swap(sts);
  shard_state(opt, mf, dist, state);
  const RunPaths paths(opt.out_dir);
  if (dist.sharded()) fs::create_directories(fs::path(opt.out_dir) / "ckpt");  // this rank's shards go there

  TrainSummary sum;
  sum.first_step = state.step() + 1;
  DataOrder order(mf.run_id(), ByteView(seed), dataset.size(), uint64_t(mf.batch_size));
  const int64_t T = mf.steps;
  const int64_t last = opt.stop_after > 0 ? std::min(T, opt.stop_after) : T;
  reset_peak_rss();
  const auto loop0 = std::chrono::steady_clock::now();
  while (state.step() < last) {
    const int64_t t = state.step() + 1;
    BatchRecords batch;
    for (uint64_t i : order.batch(t)) batch.push_back(dataset.record(i));
    auto ts = std::chrono::steady_clock::now();
    StepOutput out = do_step(opt, &dist, mf, state, batch, t, seed);
    auto tw = std::chrono::steady_clock::now();
    sum.step_seconds += std::chrono::duration<double>(tw - ts).count();
    // This rank's part of the witnesses: its range's sketches (and, sharded, its checkpoint shard).
    if (opt.witnesses) {
      dist.sketches(mf, state);
      if (t % mf.fp.probe_every == 0 || t == T) dist.probe(mf, state, {});  // collective when fully sharded
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
  sum.loop_peak_rss = peak_rss();
  sum.last_step = state.step();
  sum.finished = state.step() == T && opt.witnesses;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finish_summary(opt, &dist, sum);
  return sum;
}

// The signed heads of the run being written: signs the log's current size
// and remembers the largest size signed (a resumed step below it must re-derive exactly).
struct HeadSigner {
  const SecretKey& key;
  Hash32 run_id;
  std::string path;
  uint64_t signed_size = 0;

  // Reads RUN/run.heads, cutting a head line a crash tore (it was never complete, so never published).
  void read_existing(bool quiet) {
    if (!fs::exists(path)) return;
    if (uint64_t cut = cut_torn_heads(path); cut && !quiet)
      cli::note("cut a torn head line (" + std::to_string(cut) + " bytes) from " + path);
    for (const auto& h : read_heads(path)) signed_size = std::max(signed_size, h.size);
  }
  void sign(WitnessLog& log) {
    log.sync();
    TreeHead h = sign_head(key, run_id, log.size(), log.root(log.size()), now_seconds());
    append_head(path, h);
    signed_size = std::max(signed_size, h.size);
  }
};

// A resume must never sign a head that does not extend the signed ones: a
// witness log shorter than the newest signed head (deleted, truncated, or a
// torn tail cut below it) is an error naming both sizes, never a retrain.
Error log_lost(const RunPaths& paths, uint64_t entries, uint64_t signed_size) {
  return Error("the witness log has " + std::to_string(entries) + (entries == 1 ? " entry" : " entries") +
                   " but the run's newest signed head covers " + std::to_string(signed_size) +
                   "; the log was lost or cut, and resuming would break the signed heads",
               paths.log(),
               "restore " + paths.log() + " from a copy (docs/training.md, \"A lost log\"); a new --out starts a new run");
}

void check_log_keeps_heads(const RunPaths& paths) {
  if (!fs::exists(paths.heads())) return;
  uint64_t signed_size = 0;
  for (const auto& h : read_heads(paths.heads(), TornLine::kIgnore)) signed_size = std::max(signed_size, h.size);
  if (signed_size == 0) return;
  if (!fs::exists(paths.log())) throw log_lost(paths, 0, signed_size);
  // Its complete frames, a torn tail left as it is: nothing is changed before this check.
  const uint64_t entries = WitnessLog::open(paths.log(), TornTail::kLeave).size();
  if (entries < signed_size) throw log_lost(paths, entries, signed_size);
}

// The run's manifest from the config, the data, the key, the seed and the
// model, checked against a run directory that already holds one; nothing is written.
Manifest plan_run(const TrainOptions& opt, const TrainConfig& cfg, const Commitment& data, const Dataset& dataset,
                  const SecretKey& key, const Bytes& seed, int world) {
  nlohmann::json software = {{"wit", WIT_VERSION}, {"libtorch", torch_version()}};
  std::optional<ModelConfig> scripted;
  if (!opt.model_path.empty()) scripted = describe_module(opt.model_path);
  Manifest mf = make_manifest(cfg, data, key.pub(), seed_commitment(ByteView(seed)), software, opt.config_path,
                              scripted ? &*scripted : nullptr);
  if (opt.shard_full) {
    if (world < 2) throw Error("--shard=full needs several ranks", "--shard", "add --nproc N (or launch with WORLD_SIZE)");
    if (mf.batch_size < world)
      throw Error("a batch of " + std::to_string(mf.batch_size) + " records cannot be split over " +
                      std::to_string(world) + " ranks",
                  "batch_size");
    mf.sharding = plan_shards(mf.model, world);
  }
  const std::string manifest_path = RunPaths(opt.out_dir).manifest();
  std::optional<Manifest> existing;
  if (fs::exists(manifest_path)) {
    try {
      existing = Manifest::load(manifest_path);
    } catch (const Error&) {
      // unreadable or of another version: refused below as a different run
    }
  }
  if (existing) {
    // Fully sharded or not is part of the run (its sums' order): say so rather than "a different run".
    const Manifest& old = *existing;
    if (old.sharding && !mf.sharding)
      throw Error("the run is fully sharded over " + std::to_string(old.sharding->world) + " ranks", opt.out_dir,
                  "resume it with --shard=full --nproc " + std::to_string(old.sharding->world));
    if (!old.sharding && mf.sharding)
      throw Error("the run is not fully sharded; --shard=full would change its arithmetic", opt.out_dir,
                  "resume it without --shard=full");
    if (old.sharding && mf.sharding && old.sharding->world != mf.sharding->world)
      throw Error("the run is fully sharded over " + std::to_string(old.sharding->world) + " ranks, not " +
                      std::to_string(mf.sharding->world),
                  opt.out_dir, "resume it with --nproc " + std::to_string(old.sharding->world));
  }
  if (fs::exists(manifest_path) && read_file(manifest_path) != mf.dump())
    throw Error("the run directory holds a different run (config, data, model, key or software differ)", opt.out_dir,
                "use a new --out directory");
  check_model_fits(mf, dataset, opt);
  return mf;
}

// The run directory's fixed files: key, model, secret seed, manifest, and
// where the data is. A TorchScript run's model is copied before run.json
// (no manifest is ever without its model) and used from the copy.
void write_run_dir(const TrainOptions& opt, Manifest& mf, const Bytes& seed, const SecretKey& key,
                   const std::string& key_path, bool new_key, int world) {
  const std::string& run = opt.out_dir;
  const RunPaths paths(run);
  const bool existing = fs::exists(paths.manifest());
  fs::create_directories(fs::path(run) / "ckpt");
  // Stale temporaries of an interrupted atomic write are never needed.
  for (const auto& e : fs::directory_iterator(fs::path(run) / "ckpt"))
    if (e.path().string().find(".tmp.") != std::string::npos) fs::remove(e.path());
  if (new_key) {
    save_key(key_path, key);
    if (!opt.quiet) cli::note("generated signing key " + key_path + " (keep it out of published bundles)");
  }
  if (mf.model.scripted()) {
    if (!fs::exists(paths.model())) copy_file_atomic(opt.model_path, paths.model());
    mf.model.module_path = paths.model();
    check_model(mf.model, opt.device, mf.train_mode);
  }
  if (!existing) {
    if (!fs::exists(paths.seed())) write_secret(paths.seed_secret(), to_hex(ByteView(seed)) + "\n");
    write_file_atomic(paths.manifest(), mf.dump());
  }
  // Where the trainer's data lives, so 'wit-replay respond' can find it later
  // (trainer-local: absolute paths, never part of a bundle).
  nlohmann::json where = {{"commit", fs::absolute(opt.commit_path).string()},
                          {"index", fs::absolute(opt.index_path).string()}, {"files", nlohmann::json::array()},
                          {"threads", opt.threads}, {"world", world}};
  for (const auto& f : opt.files) where["files"].push_back(fs::absolute(f).string());
  write_file_atomic((fs::path(run) / "data.json").string(), where.dump(2) + "\n");
  // The configuration the steps are computed under (docs/manifest.md), which
  // an exact verifier reproduces; a resume under another one is refused.
  RunConfig config = current_run_config(opt.device, world);
  config.run_id = mf.run_id().hex();
  record_run_config(run, config);
}

// The state training starts from: the seeded initial state and a signed
// genesis for a new log, or the newest checkpoint the log vouches for.
TrainState start_state(const TrainOptions& opt, const Manifest& mf, const Bytes& seed, WitnessLog& log,
                       HeadSigner& heads, TrainSummary& sum) {
  const RunPaths paths(opt.out_dir);
  const Hash32 run_id = mf.run_id();
  if (log.size() == 0) {
    TrainState state = opt.init_fn ? opt.init_fn(mf, ByteView(seed)) : TrainState::initial(mf.model, ByteView(seed), opt.device);
    LogEntry g;
    g.genesis = true;
    g.g.run_id = run_id;
    g.g.init_root = state.root();
    g.g.n_params = param_count(mf.model);
    log.append(encode_entry(g));
    heads.sign(log);
    return state;
  }
  LogEntry g = log.entry(0);
  if (auto why = entry_problem(g, 0, run_id)) throw Error("the witness log belongs to another run: " + *why, paths.log());
  // Resume from the newest checkpoint that the log vouches for; a missing
  // or damaged one only makes the walk back longer.
  std::optional<TrainState> state;
  int64_t from = 0;
  for (uint64_t i = log.size() - 1; i >= 1 && !state; i--) {
    LogEntry e = log.entry(i);
    if (!e.s.checkpoint) continue;
    state = logged_checkpoint(mf.model, paths.checkpoint(i), int64_t(i), e.s.state_root, opt.device);
    if (state) from = int64_t(i);
    else if (!opt.quiet) cli::note("checkpoint of step " + std::to_string(i) + " is missing or damaged; trying an older one");
  }
  if (!state) {
    state = TrainState::initial(mf.model, ByteView(seed), opt.device);
    if (state->root() != g.g.init_root) throw Error("genesis does not match the initial state from the seed", paths.log());
  }
  sum.resumed = true;
  if (!opt.quiet)
    cli::note("resuming " + opt.out_dir + " from step " + std::to_string(from) + " (log has " +
              std::to_string(log.size() - 1) + " steps)");
  return std::move(*state);
}

// The probe set, with proofs that its records are committed data, so anyone
// can fingerprint a released model against this run (RUN/probe.json).
ProbeSet write_probe_set(const std::string& run, const Manifest& mf, const Bytes& seed, const Dataset& dataset,
                         const Index& index) {
  ProbeSet probe_set;
  for (uint64_t i : probe_indices(mf.run_id(), ByteView(seed), dataset.size(), uint64_t(mf.fp.probe_records))) {
    probe_set.indices.push_back(i);
    probe_set.records.push_back(dataset.record(i));
    probe_set.proofs.push_back(prove_inclusion(index, dataset.leaf(i), i));
  }
  write_file_atomic((fs::path(run) / "probe.json").string(), probe_set.to_json(mf).dump(1) + "\n");
  return probe_set;
}

// Step t's witnesses: losses, sketches, batch root, probe every M steps, the
// exact state root every step and, every C steps, the checkpoint (durable
// before the entry that says so).
LogEntry witness_step(const Manifest& mf, TrainState& state, const StepOutput& out, const std::vector<Hash32>& leaves,
                      int64_t t, const BatchRecords& probe, Dist* dist, const RunPaths& paths) {
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
  if (t % mf.fp.probe_every == 0 || t == mf.steps)
    e.s.probe = dist ? dist->probe(mf, state, probe) : probe_fingerprint(mf, state, probe);
  e.s.checkpoint = t % mf.checkpoint_every == 0 || t == mf.steps;
  if (e.s.checkpoint && dist && dist->sharded()) {
    e.s.state_root = dist->checkpoint(state, paths.checkpoint(uint64_t(t)));
  } else {
    e.s.state_root = dist ? dist->state_root(state) : state.root();
    if (e.s.checkpoint) state.save(paths.checkpoint(uint64_t(t)));
  }
  return e;
}

// Appends step t's entry, or, re-deriving a step the log already holds
// (after a resume), checks it comes out identical: below a signed head a
// difference is fatal, above one the log is cut there.
void log_step(WitnessLog& log, const Bytes& enc, int64_t t, uint64_t signed_size, const std::string& log_path) {
  if (uint64_t(t) >= log.size()) {
    log.append(enc);
    return;
  }
  if (log.entry_bytes(uint64_t(t)) == enc) return;
  if (uint64_t(t) < signed_size)
    throw Error("resumed training diverged from the signed log at step " + std::to_string(t) +
                    " (different thread count, BLAS or device?)",
                log_path);
  log.truncate(uint64_t(t));
  log.append(enc);
}

}  // namespace

TrainSummary train(const TrainOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  set_torch_threads(opt.threads);
  const std::string& run = opt.out_dir;
  const RunPaths paths(run);
  allow_run_writes(run);  // the one writer of this run (io.h: no other tool writes in it)

  // Data parallel: join the group first, so a missing rank shows early.
  std::unique_ptr<Dist> dist;
  if (DistEnv env = dist_env_from_environment(opt.dist_timeout); env.world > 1) {
    if (opt.step_fn) throw Error("a replaced training step cannot run data parallel", "WORLD_SIZE");
    dist = Dist::connect(env);
    if (opt.serve_fn) dist->set_serve_fn(opt.serve_fn);
  }
  if (dist && dist->rank() != 0) {
    try {
      return train_rank(opt, *dist, t0);
    } catch (...) {
      // Under --nproc, give the launcher time to stop this rank when another
      // one failed first (rank 0's error is the one worth reading): a rank
      // that fails because rank 0 went away must not print its own error
      // first. 1 s was too short under load (a second error line was seen);
      // the wait costs nothing when rank 0 failed, and delays by 5 s only
      // the report of a failure that began on this rank.
      if (std::getenv("WIT_LOCAL_LAUNCH")) std::this_thread::sleep_for(std::chrono::seconds(5));
      throw;
    }
  }

  CommitPair pair = load_commit_pair(opt.commit_path, opt.index_path, IndexUse::kIndexNeeded);
  const Commitment& data = pair.commit;
  const Index& index = *pair.index;
  // Checked within wit-commit's default budget, positions from the index
  // (docs/commitment.md, "reader of a corpus").
  Dataset dataset(data, index, opt.files, 0, data_limits(opt));
  TrainConfig cfg = TrainConfig::load(opt.config_path);

  // Everything is validated before anything is written into the run directory.
  std::string key_path = opt.key_path;
  bool new_key = false;
  if (key_path.empty()) {
    key_path = (fs::path(run) / "trainer.key").string();
    new_key = !fs::exists(key_path);
  }
  const SecretKey key = new_key ? generate_key() : load_key(key_path);
  const Bytes seed = load_or_make_seed(cfg, run);
  Manifest mf = plan_run(opt, cfg, data, dataset, key, seed, dist ? dist->world() : 1);
  check_log_keeps_heads(paths);
  write_run_dir(opt, mf, seed, key, key_path, new_key, dist ? dist->world() : 1);
  const Hash32 run_id = mf.run_id();

  WitnessLog log = WitnessLog::open(paths.log(), TornTail::kCut, IfMissing::kCreate);
  HeadSigner heads{key, run_id, paths.heads()};
  heads.read_existing(opt.quiet);
  if (log.size() < heads.signed_size) throw log_lost(paths, log.size(), heads.signed_size);
  TrainSummary sum;
  TrainState state = start_state(opt, mf, seed, log, heads, sum);
  sum.first_step = state.step() + 1;
  if (dist) {
    // The other ranks start from rank 0's manifest, seed and state.
    std::string m = mf.dump(), sd(seed.begin(), seed.end());
    Bytes st = encode_safetensors(state.tensors());
    std::string sts(st.begin(), st.end());
    dist->broadcast(m);
    dist->broadcast(sd);
    dist->broadcast(sts);
    shard_state(opt, mf, *dist, state);
  }

  DataOrder order(run_id, ByteView(seed), dataset.size(), uint64_t(mf.batch_size));
  const ProbeSet probe_set = write_probe_set(run, mf, seed, dataset, index);
  const int64_t T = mf.steps;
  const int64_t last = opt.stop_after > 0 ? std::min(T, opt.stop_after) : T;
  Progress progress("training", uint64_t(last - state.step()), "steps", opt.quiet);
  reset_peak_rss();
  const auto loop0 = std::chrono::steady_clock::now();
  while (state.step() < last) {
    const int64_t t = state.step() + 1;
    BatchRecords batch;
    std::vector<Hash32> leaves;
    for (uint64_t i : order.batch(t)) {
      batch.push_back(dataset.record(i));
      leaves.push_back(dataset.leaf(i));
    }
    auto ts = std::chrono::steady_clock::now();
    StepOutput out = do_step(opt, dist.get(), mf, state, batch, t, seed);
    auto tw = std::chrono::steady_clock::now();
    sum.step_seconds += std::chrono::duration<double>(tw - ts).count();
    if (opt.witnesses) {  // without: bench only, the same run without witnesses
      const LogEntry e = witness_step(mf, state, out, leaves, t, probe_set.records, dist.get(), paths);
      log_step(log, encode_entry(e), t, heads.signed_size, paths.log());
      // Sign only once the log ends at this step (not while re-deriving older entries).
      if ((t % mf.head_every == 0 || t == T) && log.size() == uint64_t(t) + 1 && log.size() > heads.signed_size)
        heads.sign(log);
      sum.witness_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - tw).count();
    }
    sum.final_loss = out.mean_loss;
    sum.steps++;
    progress.add(1);
  }
  progress.finish();
  sum.loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop0).count();
  sum.loop_peak_rss = peak_rss();
  sum.last_step = state.step();
  if (state.step() == T && opt.witnesses) {
    if (log.size() > uint64_t(T) + 1) log.truncate(uint64_t(T) + 1);
    if (log.size() > heads.signed_size) heads.sign(log);
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
