// Witness-overhead benchmark of the reference trainer: at three GPT sizes, the
// wall time of a bare training step (train_step) against what wit-train adds
// to witness it, each as a percentage of the bare step, and the weight
// sketch's throughput against a plain memcpy of the same weights.
//
// The witnesses are O(parameters) per step and the step O(parameters x
// tokens), so their share falls as tokens per step grow: --batch and
// --context set the step's shape (real language-model steps: 64 x 512 and up).
//
// With --model FILE.pt it times a TorchScript model instead (docs/model.md):
// the same step and witnesses for that module, with --vocab V (and, past 257,
// uint16 token ids as the `tokens` reader gives them: records of `context`
// pseudo-random ids below V - 1, V - 1 being the pad token).
//
// Usage: bench_train [--threads N] [--reps R] [--sizes LIST] [--dir DIR] [--batch B] [--context L]
//                    [--model FILE.pt --vocab V] [--kv]
//   --threads  LibTorch intra-op threads (default 1; the witness work is
//              single-threaded, so 1 compares like with like)
//   --reps     timed repetitions per measurement, median reported (default 7;
//              the cheap measurements repeat more)
//   --sizes    comma-separated subset of 0.5M,3M,10M (default all three)
//   --dir      where the temporary log and checkpoints go (default: temp dir)
//   --model    a TorchScript model (instead of the built-in GPT's sizes)
//   --vocab    its vocabulary (required with --model; 257 = wit's byte tokens)
//   --kv       print key=value lines (milliseconds, wall and CPU) instead of the table
//   --step-only  time the bare step only (key=value lines)
//   --versus L:H:D  with --model (vocab 257): its bare step against the
//              built-in GPT of that shape, steps alternating in one process
//   --cheap-reps repetitions of the cheap measurements (default max(reps, 15);
//              fewer for large models, where each takes seconds)
// Every time is also taken in process CPU time (all threads): on a shared
// machine the wall time swings with the load, the CPU time much less.
// Prints a markdown table on stdout and progress on stderr. Writes only in a
// temporary directory under DIR, removed before exit.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/model_spec.h"
#include "wit/model/script.h"
#include "wit/hash/sign.h"
#include "wit/run/sketch.h"
#include "wit/model/state.h"
#include "wit/run/wlog.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int64_t kBatch = 8, kContext = 128;  // --batch, --context
int gCheapReps = 0;                  // --cheap-reps (0: max(reps, 15))
bool gStepOnly = false;              // --step-only
// The manifest's defaults for how often the amortized witnesses happen.
constexpr int64_t kProbeEvery = 50, kCheckpointEvery = 100, kHeadEvery = 10;

struct ModelSize {
  const char* label;
  int64_t n_layer, n_head, d_model;
};
// Parameters: L (12 d^2 + 13 d) + (257 + context) d + 2 d.
const ModelSize kSizes[] = {
    {"0.5M", 2, 4, 128},   // 0.45M
    {"3M", 4, 4, 256},     // 3.26M
    {"10M", 6, 6, 384},    // 10.8M
};

// splitmix64: the records only need to look like text of varied length.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

// Records of 100-299 bytes of words, so most rows fill the 128-byte context.
std::vector<std::string> make_records(size_t n, uint64_t seed) {
  static const char* words[] = {"the", "of", "training", "witness", "a", "log", "model", "step", "batch",
                                "weights", "sketch", "replay", "proof", "data", "and", "to", "in", "is",
                                "verifier", "trainer", "seed", "order", "Merkle", "root", "checkpoint"};
  Rng r{seed};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i++) {
    const size_t want = 100 + r.next() % 200;
    std::string s;
    while (s.size() < want) {
      if (!s.empty()) s += ' ';
      s += words[r.next() % (sizeof words / sizeof *words)];
    }
    s.resize(want);
    out.push_back(std::move(s));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double cpu_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

// The median process CPU time (all threads) of the last time_ms call, ms.
double g_last_cpu_ms = 0;

// Median wall time of fn() in milliseconds over `reps` runs (and its median
// CPU time in g_last_cpu_ms).
double time_ms(int reps, const std::function<void()>& fn) {
  std::vector<double> t, c;
  for (int i = 0; i < reps; i++) {
    const double c0 = cpu_now_ms();
    auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    c.push_back(cpu_now_ms() - c0);
  }
  g_last_cpu_ms = median(c);
  return median(t);
}

// Median time of one fn() in milliseconds, timing `inner` calls at a time
// (for operations too short to time one by one).
double time_ms_batched(int reps, int inner, const std::function<void()>& fn) {
  const double wall = time_ms(reps, [&] {
                       for (int i = 0; i < inner; i++) fn();
                     }) /
                     inner;
  g_last_cpu_ms /= inner;
  return wall;
}

// The built-in GPT of size `sz`, or (sz == nullptr) the TorchScript model `model`.
wit::Manifest make_manifest(const ModelSize* sz, const wit::ModelConfig* model = nullptr) {
  wit::Manifest mf;
  if (sz) {
    mf.model.n_layer = sz->n_layer;
    mf.model.n_head = sz->n_head;
    mf.model.d_model = sz->d_model;
  } else {
    mf.model = *model;
  }
  mf.model.context = kContext;
  mf.batch_size = kBatch;
  mf.steps = 100000;  // so the schedule is in its cosine part, as in most of a run
  mf.checkpoint_every = kCheckpointEvery;
  mf.head_every = kHeadEvery;
  mf.fp.probe_every = kProbeEvery;
  // sketch_k, probe_records and probe_dim: the manifest defaults (512, 8, 64).
  for (size_t i = 0; i < 32; i++) mf.fp.sketch_seed.b[i] = uint8_t(0xa5 ^ i);
  return mf;
}

struct Result {
  std::string label;
  uint64_t params = 0;
  double step = 0;                      // bare train_step
  double step_cpu = 0;                  // its process CPU time (all threads)
  double sketches = 0;                  // w, m, v: three sketches of k floats
  double batch_root = 0;                // B leaf hashes + the tree
  double entry = 0;                     // encode_entry + WitnessLog::append
  double head = 0;                      // sync + sign + append_head, per head
  double probe = 0;                     // probe_fingerprint, per probe
  double state_root = 0;                // every step: the exact root of W, m, v, step
  double ckpt_write = 0;                // per checkpoint
  double sketch_one = 0, memcpy_one = 0; // one pass over the weights
  // The same in process CPU time (all threads), milliseconds.
  double sketches_cpu = 0, batch_root_cpu = 0, entry_cpu = 0, head_cpu = 0, probe_cpu = 0, state_root_cpu = 0,
         ckpt_write_cpu = 0;
};

// uint16 token records as the `tokens` reader gives them: `context` ids
// below vocab - 1 each (vocab - 1 is the pad), little-endian.
std::vector<std::string> make_token_records(size_t n, int64_t vocab, uint64_t seed) {
  Rng r{seed};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i++) {
    std::string s;
    for (int64_t j = 0; j < kContext; j++) {
      const uint64_t id = r.next() % uint64_t(vocab - 1);
      s += char(id & 0xff);
      s += char(id >> 8);
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result bench_manifest(const std::string& label, const wit::Manifest& mf, const std::vector<std::string>& records,
                      int reps, const std::string& dir);

Result bench_size(const ModelSize& sz, int reps, const std::string& dir) {
  const wit::Manifest mf = make_manifest(&sz);
  std::fprintf(stderr, "bench_train: %s: n_layer %lld, d_model %lld, n_head %lld, context %lld\n", sz.label,
               (long long)sz.n_layer, (long long)sz.d_model, (long long)sz.n_head, (long long)kContext);
  return bench_manifest(sz.label, mf, make_records(64, 1234 + uint64_t(sz.d_model)), reps, dir);
}

// The manifest of a TorchScript model with vocabulary `vocab`: byte tokens
// at 257, else uint16 ids; the module loaded and checked.
wit::Manifest script_manifest(const std::string& path, int64_t vocab) {
  wit::ModelConfig c = wit::describe_module(path);
  c.vocab = vocab;
  c.context = kContext;
  if (vocab != wit::ModelConfig::kPad + 1) {
    c.tokens = wit::TokenMode::kU16;
    c.pad = vocab - 1;
  }
  const wit::Manifest mf = make_manifest(nullptr, &c);
  wit::check_model(mf.model);
  std::fprintf(stderr, "bench_train: %s: TorchScript, vocab %lld (%s tokens), context %lld\n", path.c_str(),
               (long long)vocab, c.tokens == wit::TokenMode::kU16 ? "uint16" : "byte", (long long)kContext);
  return mf;
}

std::vector<std::string> records_for(const wit::Manifest& mf) {
  return mf.model.tokens == wit::TokenMode::kU16 ? make_token_records(64, mf.model.vocab, 4321)
                                                 : make_records(64, 1234 + uint64_t(kContext));
}

Result bench_script(const std::string& path, int64_t vocab, int reps, const std::string& dir) {
  const wit::Manifest mf = script_manifest(path, vocab);
  return bench_manifest(fs::path(path).filename().string(), mf, records_for(mf), reps, dir);
}

// --versus L:H:D: the bare step of the TorchScript model against the built-in
// GPT of n_layer L, n_head H, d_model D (vocab 257), in one process, steps
// alternating (A B, B A, A B, ...) so that the machine's load hits both
// alike; prints key=value lines: each one's median wall and CPU time, and the
// median over pairs of the TorchScript step / the built-in step.
void versus(const std::string& path, const std::string& gpt, int reps) {
  ModelSize sz{"built-in", 0, 0, 0};
  if (std::sscanf(gpt.c_str(), "%lld:%lld:%lld", reinterpret_cast<long long*>(&sz.n_layer),
                  reinterpret_cast<long long*>(&sz.n_head), reinterpret_cast<long long*>(&sz.d_model)) != 3)
    throw wit::Error("--versus wants n_layer:n_head:d_model", gpt);
  const wit::Manifest ma = make_manifest(&sz), mb = script_manifest(path, wit::ModelConfig::kPad + 1);
  if (wit::param_count(ma.model) != wit::param_count(mb.model))
    std::fprintf(stderr, "bench_train: warning: %llu parameters built-in, %llu in %s\n",
                 (unsigned long long)wit::param_count(ma.model), (unsigned long long)wit::param_count(mb.model),
                 path.c_str());
  const std::vector<std::string> records = make_records(64, 1234 + uint64_t(kContext));
  std::vector<wit::BatchRecords> batches;
  for (size_t b = 0; b + kBatch <= records.size(); b += kBatch)
    batches.emplace_back(records.begin() + int64_t(b), records.begin() + int64_t(b + kBatch));
  uint8_t seed[32];
  for (int i = 0; i < 32; i++) seed[i] = uint8_t(i * 7 + 1);
  wit::TrainState sa = wit::TrainState::initial(ma.model, wit::ByteView(seed, 32));
  wit::TrainState sb = wit::TrainState::initial(mb.model, wit::ByteView(seed, 32));
  size_t na = 0, nb = 0;
  // One timed step of A (builtin) or B: wall and CPU milliseconds.
  auto step = [&](bool script, double& wall, double& cpu) {
    const double c0 = cpu_now_ms();
    auto t0 = Clock::now();
    if (script) wit::train_step(mb, sb, batches[nb++ % batches.size()]);
    else wit::train_step(ma, sa, batches[na++ % batches.size()]);
    wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    cpu = cpu_now_ms() - c0;
  };
  double w, c;
  for (int i = 0; i < 2; i++) {  // warm-up: allocator, BLAS, autograd, the TorchScript executor
    step(false, w, c);
    step(true, w, c);
  }
  std::vector<double> aw, ac, bw, bc, rw, rc;
  for (int i = 0; i < reps; i++) {
    double w1, c1, w2, c2;
    const bool script_first = i % 2 == 1;
    step(script_first, w1, c1);
    step(!script_first, w2, c2);
    const double wa = script_first ? w2 : w1, ca = script_first ? c2 : c1;
    const double wb = script_first ? w1 : w2, cb = script_first ? c1 : c2;
    aw.push_back(wa), ac.push_back(ca), bw.push_back(wb), bc.push_back(cb);
    rw.push_back(wb / wa), rc.push_back(cb / ca);
    std::fprintf(stderr, "bench_train: pair %d: built-in %.1f ms (%.1f CPU), TorchScript %.1f ms (%.1f CPU)\n", i, wa, ca,
                 wb, cb);
  }
  std::printf("params=%llu\nbatch=%lld\ncontext=%lld\nreps=%d\n", (unsigned long long)wit::param_count(ma.model),
              (long long)kBatch, (long long)kContext, reps);
  std::printf("builtin_step_ms=%.4f\nbuiltin_step_cpu_ms=%.4f\nscript_step_ms=%.4f\nscript_step_cpu_ms=%.4f\n",
              median(aw), median(ac), median(bw), median(bc));
  std::printf("ratio_wall=%.4f\nratio_cpu=%.4f\n", median(rw), median(rc));
}

Result bench_manifest(const std::string& label, const wit::Manifest& mf, const std::vector<std::string>& records,
                      int reps, const std::string& dir) {
  Result r;
  r.label = label;
  const char* lbl = r.label.c_str();
  r.params = wit::param_count(mf.model);
  std::fprintf(stderr, "bench_train: %s: %llu parameters, batch %lld x context %lld\n", lbl,
               (unsigned long long)r.params, (long long)kBatch, (long long)kContext);

  std::vector<wit::BatchRecords> batches;
  for (size_t b = 0; b + kBatch <= records.size(); b += kBatch)
    batches.emplace_back(records.begin() + int64_t(b), records.begin() + int64_t(b + kBatch));
  const wit::BatchRecords probe(records.begin(), records.begin() + mf.fp.probe_records);

  uint8_t seed_bytes[32];
  for (int i = 0; i < 32; i++) seed_bytes[i] = uint8_t(i * 7 + 1);
  wit::TrainState state = wit::TrainState::initial(mf.model, wit::ByteView(seed_bytes, 32));

  // (a) The bare step. Two untimed steps first: allocator, BLAS and autograd warm-up.
  size_t next_batch = 0;
  wit::StepOutput out;
  auto step = [&] {
    out = wit::train_step(mf, state, batches[next_batch]);
    next_batch = (next_batch + 1) % batches.size();
  };
  step();
  step();
  r.step = time_ms(reps, step);
  r.step_cpu = g_last_cpu_ms;
  std::fprintf(stderr, "bench_train: %s: bare step %.2f ms, %.2f ms CPU (medians of %d), loss %.3f\n", lbl, r.step,
               r.step_cpu, reps, double(out.mean_loss));

  if (gStepOnly) return r;

  // (b) Witnesses of every step. The sketches read the state after real steps,
  // so the moments are non-zero, as in training.
  const int cheap = gCheapReps > 0 ? gCheapReps : std::max(reps, 15);
  wit::TrainState::Sketches sk;
  r.sketches = time_ms(cheap, [&] { sk = state.sketches(mf); });
  r.sketches_cpu = g_last_cpu_ms;

  const wit::BatchRecords& batch = batches[0];
  wit::Hash32 broot;
  r.batch_root = time_ms_batched(cheap, 200, [&] {
    std::vector<wit::Hash32> leaves;
    leaves.reserve(batch.size());
    for (const auto& rec : batch) leaves.push_back(wit::record_leaf(wit::ByteView(rec)));
    broot = wit::merkle_root(wit::kBlake2bTree, leaves, 1);
  });
  r.batch_root_cpu = g_last_cpu_ms;

  const std::string log_path = dir + "/run-" + r.label + ".wlog";
  const std::string heads_path = dir + "/run-" + r.label + ".heads";
  wit::WitnessLog log = wit::WitnessLog::open(log_path, wit::TornTail::kCut, wit::IfMissing::kCreate);
  {
    wit::LogEntry g;
    g.genesis = true;
    g.g.n_params = r.params;
    log.append(wit::encode_entry(g));
  }
  wit::LogEntry e;
  e.s.lr = out.lr;
  e.s.mean_loss = out.mean_loss;
  e.s.grad_norm = out.grad_norm;
  e.s.batch_root = broot;
  e.s.losses = out.losses;
  e.s.sketch = sk.w;
  e.s.sketch_m = sk.m;
  e.s.sketch_v = sk.v;
  uint64_t t = 0;
  r.entry = time_ms_batched(cheap, 50, [&] {
    e.s.step = ++t;
    log.append(wit::encode_entry(e));
  });
  r.entry_cpu = g_last_cpu_ms;

  const wit::SecretKey key = wit::generate_key();
  const wit::Hash32 run_id = mf.run_id();
  r.head = time_ms(reps, [&] {
    log.sync();
    wit::TreeHead h = wit::sign_head(key, run_id, log.size(), log.root(log.size()), 0);
    wit::append_head(heads_path, h);
  });
  r.head_cpu = g_last_cpu_ms;

  // (c) Amortized witnesses.
  std::vector<float> fp;
  r.probe = time_ms(reps, [&] { fp = wit::probe_fingerprint(mf, state, probe); });
  r.probe_cpu = g_last_cpu_ms;
  std::fprintf(stderr, "bench_train: %s: probe fingerprint %.2f ms\n", lbl, r.probe);
  wit::Hash32 croot;
  const int ckpt_reps = gCheapReps > 0 ? std::min(gCheapReps, std::max(3, reps / 2)) : std::max(3, reps / 2);
  r.state_root = time_ms(cheap, [&] { croot = state.root(); });
  r.state_root_cpu = g_last_cpu_ms;
  const std::string ckpt = dir + "/step-" + r.label + ".safetensors";
  r.ckpt_write = time_ms(ckpt_reps, [&] { state.save(ckpt); });
  r.ckpt_write_cpu = g_last_cpu_ms;
  fs::remove(ckpt);

  // (d) One sketch pass over the weights against memcpy of the same bytes.
  std::vector<wit::TensorView> params;
  uint64_t n = 0;
  for (const auto& tv : state.tensors())
    if (tv.dtype == wit::DType::kF32 && tv.name.rfind("adam.", 0) != 0) {
      params.push_back(tv);
      n += tv.numel();
    }
  if (n != r.params) throw wit::Error("parameter count mismatch in the benchmark");
  const wit::SketchSpec spec{uint64_t(mf.fp.sketch_k), wit::sketch_seed(mf.fp.sketch_seed, "weights")};
  std::vector<double> acc(spec.k);
  std::vector<uint8_t> dst(4 * n, 1);  // touched, so memcpy pays no page faults
  const int passes = gCheapReps > 0 ? gCheapReps : std::max(21, reps * 3);
  r.sketch_one = time_ms(passes, [&] {
    std::fill(acc.begin(), acc.end(), 0.0);
    uint64_t off = 0;
    for (const auto& tv : params) {
      wit::sketch_add(spec, reinterpret_cast<const float*>(tv.data.data), tv.numel(), off, acc.data());
      off += tv.numel();
    }
  });
  r.memcpy_one = time_ms(passes, [&] {
    uint8_t* d = dst.data();
    for (const auto& tv : params) {
      std::memcpy(d, tv.data.data, tv.data.size);
      d += tv.data.size;
    }
  });
  // The same pass must give the sketch the state reports; reading dst keeps the copy observable.
  if (std::vector<float>(acc.begin(), acc.end()) != state.sketches(mf).w)
    throw wit::Error("the benchmark's sketch differs from TrainState::sketches");
  volatile uint8_t sink = dst[4 * n - 1];
  (void)sink;
  std::fprintf(stderr, "bench_train: %s: done\n", lbl);
  return r;
}

std::string pct(double part_ms, double step_ms) {
  char b[96];
  std::snprintf(b, sizeof b, "%.3f%% (%.3g ms)", 100.0 * part_ms / step_ms, part_ms);
  return b;
}

std::string num(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

void print_table(const std::vector<Result>& rs, unsigned threads, int reps) {
  auto row = [&](const std::string& metric, const std::function<std::string(const Result&)>& cell,
                 const std::string& target) {
    std::string line = "| " + metric + " |";
    for (const auto& r : rs) line += " " + cell(r) + " |";
    std::printf("%s %s |\n", line.c_str(), target.c_str());
  };
  std::string head = "| metric |", rule = "|---|";
  for (const auto& r : rs) {
    head += " " + r.label + " |";
    rule += "---|";
  }
  std::printf("%s target |\n%s---|\n", head.c_str(), rule.c_str());
  auto gbs = [](double ms, uint64_t params) { return 4.0 * double(params) / (ms * 1e-3) / 1e9; };
  row("parameters", [](const Result& r) { return num("%.0f", double(r.params)); }, "");
  row("bare step (train_step), ms", [](const Result& r) { return num("%.1f", r.step); }, "");
  row("weight + moment sketches (3 x k=512)", [](const Result& r) { return pct(r.sketches, r.step); }, "<= 1%");
  row("per-example losses", [](const Result&) { return std::string("free (returned by the step)"); }, "<= 1%");
  row("batch root (B=8 leaf hashes + tree)", [](const Result& r) { return pct(r.batch_root, r.step); }, "<= 1%");
  row("entry encode + log append", [](const Result& r) { return pct(r.entry, r.step); }, "<= 1%");
  row("signed head: fsync + sign (every 10)", [](const Result& r) { return pct(r.head / kHeadEvery, r.step); },
      "<= 1%");
  row("probe fingerprint (every 50)", [](const Result& r) { return pct(r.probe / kProbeEvery, r.step); }, "<= 1%");
  row("state root of W, m, v (every step, all cores)", [](const Result& r) { return pct(r.state_root, r.step); },
      "");
  row("checkpoint write + fsync (every 100)", [](const Result& r) { return pct(r.ckpt_write / kCheckpointEvery, r.step); },
      "<= 1%");
  row("all witnesses, amortized",
      [](const Result& r) {
        return pct(r.sketches + r.state_root + r.batch_root + r.entry + r.head / kHeadEvery + r.probe / kProbeEvery +
                       r.ckpt_write / kCheckpointEvery,
                   r.step);
      },
      "<= 1% at >= 32k tokens/step");
  row("state hashing, GB/s (12 bytes/parameter)",
      [&](const Result& r) { return num("%.2f", 3 * gbs(r.state_root, r.params)); }, ">= 2 GB/s");
  row("one sketch pass over the weights, GB/s",
      [&](const Result& r) { return num("%.2f", gbs(r.sketch_one, r.params)) + num(" (%.3g ms)", r.sketch_one); }, "");
  row("memcpy of the weights, GB/s",
      [&](const Result& r) { return num("%.2f", gbs(r.memcpy_one, r.params)) + num(" (%.3g ms)", r.memcpy_one); }, "");
  row("sketch throughput / memcpy", [](const Result& r) { return num("%.0f%%", 100.0 * r.memcpy_one / r.sketch_one); },
      ">= 50%");
  std::printf("\nBatch %lld, context %lld (%lld tokens/step), %u LibTorch thread(s), CPU; medians of %d runs (cheap items: more). "
              "Percentages are of the bare step; amortized items are divided by their interval. "
              "Sketch GB/s counts the 4-byte weights read once.\n",
              (long long)kBatch, (long long)kContext, (long long)(kBatch * kContext), threads, reps);
}

// key=value lines, one result: times in milliseconds (per event, not
// amortized), wall and process CPU (all threads).
void print_kv(const Result& r, unsigned threads, int reps) {
  std::printf("label=%s\nparams=%llu\nbatch=%lld\ncontext=%lld\ntokens=%lld\nthreads=%u\nreps=%d\n", r.label.c_str(),
              (unsigned long long)r.params, (long long)kBatch, (long long)kContext, (long long)(kBatch * kContext),
              threads, reps);
  const struct {
    const char* key;
    double wall, cpu;
  } items[] = {{"step", r.step, r.step_cpu},           {"sketches", r.sketches, r.sketches_cpu},
               {"batch_root", r.batch_root, r.batch_root_cpu}, {"entry", r.entry, r.entry_cpu},
               {"head", r.head, r.head_cpu},           {"probe", r.probe, r.probe_cpu},
               {"state_root", r.state_root, r.state_root_cpu}, {"checkpoint", r.ckpt_write, r.ckpt_write_cpu}};
  for (const auto& it : items)
    if (!gStepOnly || std::strcmp(it.key, "step") == 0)
      std::printf("%s_ms=%.4f\n%s_cpu_ms=%.4f\n", it.key, it.wall, it.key, it.cpu);
  if (!gStepOnly) std::printf("sketch_pass_ms=%.4f\nmemcpy_ms=%.4f\n", r.sketch_one, r.memcpy_one);
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_train [--threads N] [--reps R] [--sizes 0.5M,3M,10M] [--dir DIR] [--batch B] [--context L]\n"
               "                   [--model FILE.pt --vocab V] [--kv] [--step-only] [--cheap-reps N]\n"
               "       bench_train --model FILE.pt --versus N_LAYER:N_HEAD:D_MODEL [--threads N] [--reps R] [--batch B] [--context L]\n");
  std::exit(2);
}

int run(int argc, char** argv) {
  unsigned threads = 1;
  int reps = 7;
  std::string sizes = "0.5M,3M,10M";
  std::string dir = fs::temp_directory_path().string();
  std::string model, versus_gpt;
  int64_t vocab = 0;
  bool kv = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--kv" || a == "--step-only") {
      (a == "--kv" ? kv : gStepOnly) = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    if (a == "--threads") threads = unsigned(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--reps") reps = std::atoi(argv[++i]);
    else if (a == "--sizes") sizes = argv[++i];
    else if (a == "--dir") dir = argv[++i];
    else if (a == "--batch") kBatch = std::atoll(argv[++i]);
    else if (a == "--context") kContext = std::atoll(argv[++i]);
    else if (a == "--model") model = argv[++i];
    else if (a == "--vocab") vocab = std::atoll(argv[++i]);
    else if (a == "--versus") versus_gpt = argv[++i];
    else if (a == "--cheap-reps") gCheapReps = std::atoi(argv[++i]);
    else usage();
  }
  if (reps < 1 || threads < 1 || kBatch < 1 || kContext < 1) usage();
  if (!model.empty() && versus_gpt.empty() && (vocab <= wit::ModelConfig::kPad || vocab > 65536)) usage();
  if (!versus_gpt.empty() && model.empty()) usage();
  wit::set_torch_threads(threads);

  std::string tmpl = dir + "/wit-bench-train.XXXXXX";
  if (!mkdtemp(tmpl.data())) throw wit::Error("cannot create a temporary directory", dir);
  struct Remove {
    std::string p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove_dir{tmpl};

  std::string cpu;
  {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("model name", 0) == 0) {
        cpu = line.substr(line.find(':') + 2);
        break;
      }
  }
  std::fprintf(stderr, "bench_train: libtorch %s, %u thread(s), %ld cores online, %s\n", wit::torch_version().c_str(),
               threads, sysconf(_SC_NPROCESSORS_ONLN), cpu.c_str());

  if (!versus_gpt.empty()) {
    versus(model, versus_gpt, reps);
    return 0;
  }
  std::vector<Result> results;
  if (!model.empty()) {
    results.push_back(bench_script(model, vocab, reps, tmpl));
  } else {
    for (const auto& sz : kSizes)
      if (("," + sizes + ",").find(std::string(",") + sz.label + ",") != std::string::npos)
        results.push_back(bench_size(sz, reps, tmpl));
  }
  if (results.empty()) usage();
  if (kv || gStepOnly) {
    for (const auto& r : results) print_kv(r, threads, reps);
  } else {
    print_table(results, threads, reps);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: error: %s\n", e.what());
    return 2;
  }
}
