// wit-forge (test-only, never installed): builds dishonest runs whose logs and
// signed heads look valid — each attack of docs/design.md section 9 built for real
// with wit's own trainer loop and a deviant training step — and tampers with
// response bundles, so the attack suite can check that wit-replay rejects them;
// forges eval commitments with an inflated score (eval inflate); and fine-tunes
// a run's final model while keeping its public probe fingerprint (release
// probe-preserving).
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "wit/run/bundle.h"
#include "wit/cmd/cli.h"
#include "wit/data/commitment.h"
#include "wit/model/config_in_effect.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/base/io.h"
#include "wit/run/order.h"
#include "wit/replay/replay.h"
#include "wit/run/replay_math.h"
#include "wit/hash/rng.h"
#include "wit/run/run_config.h"
#include "wit/run/runlog.h"
#include "wit/run/safetensors.h"
#include "wit/run/sketch.h"
#include "wit/train/trainer.h"
#include "wit/run/wlog.h"

#include "model_forge.h"
#include "probe_preserving.h"

using namespace wit;
using nlohmann::json;

namespace {

// The run's seed (secret while training, revealed at the end).
Bytes run_seed(const std::string& run) {
  Bytes seed;
  const std::string secret = run + "/seed.secret";
  const std::string text = read_file(std::filesystem::exists(secret) ? secret : run + "/seed");
  from_hex(text.substr(0, 64), seed);
  return seed;
}

std::set<int64_t> choose_tampered(int64_t T, double f, uint64_t attack_seed) {
  uint8_t b[8];
  put_le64(b, attack_seed);
  auto perm = random_permutation(derive_key("wit-forge/tampered", {ByteView(b, 8)}), uint64_t(T));
  std::set<int64_t> out;
  const int64_t n = std::max<int64_t>(1, int64_t(std::llround(f * double(T))));
  for (int64_t i = 0; i < n && i < T; i++) out.insert(int64_t(perm[size_t(i)]) + 1);
  return out;
}

// Copies of the state's W and m (name order), to edit and put back.
struct Editable {
  std::vector<std::vector<float>> w, m;
};
Editable editable(const TrainState& st) {
  Editable e;
  for (const auto& t : st.tensors()) {
    const float* f = reinterpret_cast<const float*>(t.data.data);
    if (t.name.rfind("adam.m.", 0) == 0) e.m.emplace_back(f, f + t.numel());
    else if (t.name != kStepTensor && t.name.rfind("adam.", 0) != 0) e.w.emplace_back(f, f + t.numel());
  }
  return e;
}
TrainState with_edits(const Manifest& mf, const TrainState& st, const Editable& e) {
  std::vector<TensorView> ts = st.tensors();
  size_t w = 0, m = 0;
  for (auto& t : ts) {
    const std::vector<float>* v = nullptr;
    if (t.name.rfind("adam.m.", 0) == 0) v = &e.m[m++];
    else if (t.name != kStepTensor && t.name.rfind("adam.", 0) != 0) v = &e.w[w++];
    if (v) t.data = ByteView(reinterpret_cast<const uint8_t*>(v->data()), 4 * v->size());
  }
  return TrainState::from_tensors(mf.model, ts, "forged state");
}

// The state with some tensors changed: `edit(name, values)` sees every
// float32 tensor (weights, adam.m.*, adam.v.*) as a copy it may change.
TrainState edited(const Manifest& mf, const TrainState& st,
                  const std::function<void(const std::string&, std::vector<float>&)>& edit) {
  std::vector<TensorView> ts = st.tensors();
  std::vector<std::vector<float>> keep;
  keep.reserve(ts.size());
  for (auto& t : ts) {
    if (t.name == kStepTensor) continue;
    const float* f = reinterpret_cast<const float*>(t.data.data);
    keep.emplace_back(f, f + t.numel());
    edit(t.name, keep.back());
    t.data = ByteView(reinterpret_cast<const uint8_t*>(keep.back().data()), 4 * keep.back().size());
  }
  return TrainState::from_tensors(mf.model, ts, "forged state");
}

std::vector<float> values(const TrainState& st, const std::string& name) {
  for (const auto& t : st.tensors())
    if (t.name == name) {
      const float* f = reinterpret_cast<const float*>(t.data.data);
      return std::vector<float>(f, f + t.numel());
    }
  throw Error("no tensor " + name, "forged state");
}

// Projects `d` (the tensors of one sketched vector, global index in name
// order) onto the null space of that public count-sketch: each bucket's rows
// are disjoint +-1 vectors, so removing s_i * (sum_b s_j d_j) / n_b from every
// member i of bucket b leaves a vector that sketches to exactly zero.
void project_off_sketch(const SketchSpec& spec, std::vector<std::vector<float>>& d) {
  std::vector<double> sum(spec.k, 0.0);
  std::vector<uint64_t> count(spec.k, 0);
  auto each = [&](auto&& f) {
    uint64_t g = 0;
    for (auto& t : d)
      for (float& x : t) {
        uint64_t b;
        int s;
        sketch_slot(spec, g++, b, s);
        f(x, b, s);
      }
  };
  each([&](float& x, uint64_t b, int s) {
    sum[b] += s * double(x);
    count[b]++;
  });
  each([&](float& x, uint64_t b, int s) { x = float(double(x) - s * sum[b] / double(count[b])); });
}

// Undeclared records the forger wants its model to learn.
BatchRecords undeclared(size_t n, int64_t t) {
  BatchRecords out;
  for (size_t i = 0; i < n; i++)
    out.push_back("SECRET " + std::to_string((t + int64_t(i)) % 8) + ": undeclared text the forger's model memorises, never committed");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Build attacked runs and tampered bundles for the attack suite (test-only)"};
  cli::setup(app, "wit-forge");
  app.require_subcommand(1);
  TrainOptions o;
  std::string attack, final_ckpt, in, out;
  double fraction = 0.2;
  uint64_t attack_seed = 1;
  int64_t step = 0;
  auto* train = app.add_subcommand("train", "Train a run with an attack on a fraction of its steps");
  train->add_option("ATTACK", attack,
                    "honest, add-data, skip, lr, reorder, interpolate, foreign-init, rank-add-data, nullspace, "
                    "state-jump, spend (attack 14), poison (attack 15), ulp, dropout-seed (attack 20), "
                    "shard-own-data, shard-skew-gather (attack 24, --shard=full)")
      ->required()
      ->check(CLI::IsMember({"honest", "add-data", "skip", "lr", "reorder", "interpolate", "foreign-init",
                             "rank-add-data", "nullspace", "state-jump", "spend", "poison", "ulp",
                             "dropout-seed", "shard-own-data", "shard-skew-gather"}));
  double scale = 1;
  train->add_option("--scale", scale,
                    "nullspace: share of the undeclared data's difference kept; state-jump: the nudge as a share "
                    "of the step's own update; spend: the share of each tensor's tolerant threshold spent; "
                    "poison: the factor on the poisoned second moments");
  unsigned nproc = 1;  // rank-add-data: local data-parallel ranks (wit-train --nproc)
  train->add_option("--nproc", nproc);
  train->add_option("--fraction", fraction, "Fraction of steps tampered with");
  train->add_option("--attack-seed", attack_seed, "Chooses the tampered steps");
  train->add_option("--final", final_ckpt, "An honest run's final checkpoint (interpolate, foreign-init)");
  train->add_option("--config", o.config_path)->required();
  train->add_option("--model", o.model_path, "A TorchScript model (wit-train --model)");
  train->add_option("--data", o.commit_path)->required();
  train->add_option("--index", o.index_path)->required();
  train->add_option("--out", o.out_dir)->required();
  train->add_option("--key", o.key_path);
  train->add_option("-j,--threads", o.threads);
  train->add_option("FILE", o.files)->required();
  // The forger answers challenges with the states it logged: it regenerates
  // them from its checkpoints with its own deviant step (RUN/tampered.json).
  auto* rs = app.add_subcommand("respond", "Answer a challenge to an attacked run with its own states");
  std::string challenge_path;
  rs->add_option("--run", o.out_dir)->required();
  rs->add_option("CHALLENGE", challenge_path)->required();
  rs->add_option("-o,--output", out)->required();
  rs->add_option("-j,--threads", o.threads);
  bool end_states = false;
  rs->add_flag("--tolerant", end_states, "The end states too (wit-replay respond --tolerant)");
  // The loss of RUN's final state on the undeclared records the forgers teach.
  auto* sl = app.add_subcommand("secret-loss", "Mean loss of a run's final state on the undeclared records");
  std::string sl_run;
  sl->add_option("--run", sl_run)->required();
  auto* ts = app.add_subcommand("tamper-state", "Change one weight of a state in a response bundle");
  auto* rw = app.add_subcommand("rewrite-entry", "Rewrite a log entry in a response bundle, keeping its old proof");
  auto* dr = app.add_subcommand("drop-state", "Leave a state out of a response bundle");
  auto* sw = app.add_subcommand("swap-state", "Answer the state after STEP with the state after STEP - 1");
  auto* pd = app.add_subcommand("pad-state", "Make the state after STEP 1 MiB larger than any state of the model");
  auto* dm = app.add_subcommand("drop-member", "Leave any member out of a response bundle");
  std::string member_name;
  dm->add_option("--bundle", in)->required();
  dm->add_option("--member", member_name)->required();
  dm->add_option("-o,--output", out)->required();
  auto* pm = app.add_subcommand("put-member", "Put a file's bytes into a response bundle as a member (added or replaced)");
  std::string member_file;
  pm->add_option("--bundle", in)->required();
  pm->add_option("--member", member_name)->required();
  pm->add_option("--file", member_file)->required();
  pm->add_option("-o,--output", out)->required();
  auto* gm = app.add_subcommand("get-member", "Print a member of a bundle (its bytes as they are)");
  gm->add_option("--bundle", in)->required();
  gm->add_option("--member", member_name)->required();
  auto* lm = app.add_subcommand("members", "Print a bundle's member names, one a line");
  lm->add_option("--bundle", in)->required();
  for (auto* s : {ts, rw, dr, sw, pd}) {
    s->add_option("--bundle", in)->required();
    s->add_option("--step", step)->required();
    s->add_option("-o,--output", out)->required();
  }

  // Attack 14: module files, and a response bundle answered with another module.
  auto* mdl = app.add_subcommand("model", "Write a TorchScript module: plain, stored, hidden, swapped or table");
  std::string model_kind, model_file;
  int64_t model_vocab = 257, model_d = 16;
  mdl->add_option("KIND", model_kind)->required();
  mdl->add_option("--vocab", model_vocab);
  mdl->add_option("--d", model_d);
  mdl->add_option("-o,--output", out)->required();
  // Attack 20: a module carrying the public benchmark's answers (kind "table").
  std::string table_records;
  int64_t table_context = 32;
  mdl->add_option("--records", table_records, "table: the records whose next bytes the module carries (one a line)");
  mdl->add_option("--context", table_context);
  auto* swm = app.add_subcommand("swap-model", "Replace a response bundle's model.pt with another file");
  swm->add_option("--bundle", in)->required();
  swm->add_option("--model", model_file)->required();
  swm->add_option("-o,--output", out)->required();

  // An inflated eval: one example's loss lowered, then recommitted with
  // commit_scores so that eval.json and its scores are consistent (only a
  // spot check that re-evaluates that example can catch it).
  auto* ev = app.add_subcommand("eval", "Forge eval commitments");
  ev->require_subcommand(1);
  auto* inflate = ev->add_subcommand("inflate", "Lower one example's loss and recommit the eval consistently");
  std::string eval_in, scores_in, scores_out;
  uint64_t example = 0;
  double factor = 0.5;
  inflate->add_option("--index", example, "The example (0-based) whose loss is lowered")->required();
  inflate->add_option("--factor", factor, "Its loss is multiplied by this (default 0.5)");
  inflate->add_option("--eval", eval_in, "The honest eval.json")->required();
  inflate->add_option("--scores", scores_in, "Its scores")->required();
  inflate->add_option("-o,--output", out, "The forged eval.json")->required();
  inflate->add_option("--scores-out", scores_out, "The forged scores")->required();

  auto* rel = app.add_subcommand("release", "Forge released models");
  rel->require_subcommand(1);
  auto* pp = rel->add_subcommand("probe-preserving",
                                 "Fine-tune the final model on held-out records, keeping the public probe fingerprint");
  std::string pp_run, heldout_path;
  int pp_steps = 40;
  double pp_lr = 3e-3;
  pp->add_option("--run", pp_run, "Run directory")->required();
  pp->add_option("--heldout", heldout_path, "Held-out records to learn, one per line")->required();
  pp->add_option("--steps", pp_steps, "Fine-tuning steps (default 40)");
  pp->add_option("--lr", pp_lr, "Adam learning rate (default 3e-3)");
  pp->add_option("-o,--output", out, "The forged parameters-only file")->required();

  return cli::run(app, argc, argv, [&]() -> int {
    // Like wit-train and wit-replay: training pins the portable kernel set,
    // regenerating states runs under the run's recorded one.
    if (*train) run_under_environment(kernel_set_environment("avx2"), argv);
    if (*rs) {
      const std::string cfg = o.out_dir + "/" + kRunConfigFile;
      run_under_environment(config_environment(RunConfig::parse(read_file(cfg), cfg)), argv);
    }
    if (*sl) {
      const Manifest mf = Manifest::load(RunPaths(sl_run).manifest());
      TrainState st = TrainState::load(mf.model, RunPaths(sl_run).checkpoint(uint64_t(mf.steps)));
      double sum = 0;
      const BatchRecords secret = undeclared(8, 0);
      const StepOutput out = train_step(mf, st, secret);  // the losses are those before the update
      for (float l : out.losses) sum += l;
      std::cout << json{{"secret_loss", sum / double(out.losses.size())}}.dump() << "\n";
      return 0;
    }
    if (*mdl) {
      if (model_kind == "table") forge_table_model(out, table_records, model_vocab, model_d, table_context);
      else forge_model_file(model_kind, out, model_vocab, model_d);
      return 0;
    }
    if (*swm) {
      Bundle b = Bundle::load(in);
      const std::string bytes = read_file(model_file);
      b.put(kModelFileName, Bytes(bytes.begin(), bytes.end()));
      b.save(out);
      return 0;
    }
    if (*pp) {
      BatchRecords held;
      std::string line;
      std::istringstream lines(read_file(heldout_path));
      while (std::getline(lines, line))
        if (!line.empty()) held.push_back(line);
      if (held.empty()) throw Error("no held-out records", heldout_path);
      const ProbePreservingResult r = probe_preserving_finetune(pp_run, held, pp_steps, pp_lr, out);
      std::cout << json{{"heldout_before", r.heldout_before}, {"heldout_after", r.heldout_after}, {"probe_rel", r.probe_rel}}.dump()
                << "\n";
      return 0;
    }
    if (*inflate) {
      const EvalCommitment e = EvalCommitment::load(eval_in);
      EvalScores s = EvalScores::load(scores_in);
      if (auto why = check_scores(e, s)) throw Error("the honest eval does not check: " + *why, eval_in);
      if (example >= s.scores.size()) throw Error("no such example", std::to_string(example));
      s.scores[size_t(example)].loss *= factor;
      const EvalCommitment forged = commit_scores(e.run_id, e.step, e.checkpoint_root, e.eval_root, s);
      write_file_atomic(scores_out, s.to_json().dump() + "\n");
      write_file_atomic(out, forged.to_json().dump(2) + "\n");
      return 0;
    }
    if (*lm) {
      const Bundle b = Bundle::load(in);
      for (const auto& [n, bytes] : b.members()) std::cout << n << "\n";
      return 0;
    }
    if (*dm) {
      Bundle b = Bundle::load(in), kept;
      if (!b.has(member_name)) throw Error("the bundle has no member " + member_name, in);
      for (const auto& [n, bytes] : b.members())
        if (n != member_name) kept.put(n, bytes);
      kept.save(out);
      return 0;
    }
    if (*gm) {
      const Bundle b = Bundle::load(in);
      if (!b.has(member_name)) throw Error("the bundle has no member " + member_name, in);
      std::cout << b.get_text(member_name);
      return 0;
    }
    if (*pm) {
      Bundle b = Bundle::load(in);
      const std::string text = read_file(member_file);
      b.put(member_name, Bytes(text.begin(), text.end()));
      b.save(out);
      return 0;
    }
    if (*ts || *rw || *dr || *sw || *pd) {
      Bundle b = Bundle::load(in);
      char name[64];
      if (*pd) {
        std::snprintf(name, sizeof name, "state/%06lld.safetensors", static_cast<long long>(step));
        Bytes bytes = b.get(name);
        bytes.resize(bytes.size() + (size_t(1) << 20), 0);
        b.put(name, bytes);
      } else if (*sw) {
        char prev[64];
        std::snprintf(name, sizeof name, "state/%06lld.safetensors", static_cast<long long>(step));
        std::snprintf(prev, sizeof prev, "state/%06lld.safetensors", static_cast<long long>(step - 1));
        b.put(name, b.get(prev));
      } else if (*dr) {
        std::snprintf(name, sizeof name, "state/%06lld.safetensors", static_cast<long long>(step));
        Bundle kept;
        for (const auto& [n, bytes] : b.members())
          if (n != name) kept.put(n, bytes);
        b = kept;
      } else if (*ts) {
        std::snprintf(name, sizeof name, "state/%06lld.safetensors", static_cast<long long>(step));
        Bytes bytes = b.get(name);
        Safetensors f = Safetensors::parse(ByteView(bytes), name);
        std::vector<TensorView> tensors = f.tensors();
        std::vector<float> changed;
        for (auto& t : tensors)
          if (t.name == "wte") {
            const float* v = reinterpret_cast<const float*>(t.data.data);
            changed.assign(v, v + t.numel());
            changed[7] += 0.05f;  // one weight of the embedding
            t.data = ByteView(reinterpret_cast<const uint8_t*>(changed.data()), 4 * changed.size());
          }
        b.put(name, encode_safetensors(tensors));
      } else {
        std::snprintf(name, sizeof name, "log/%06lld.json", static_cast<long long>(step));
        json e = json::parse(b.get_text(name));
        Bytes enc;
        from_hex(e["entry_hex"].get<std::string>(), enc);
        LogEntry le = decode_entry(ByteView(enc), name);
        le.s.losses[0] += 0.5f;  // a nicer-looking loss, after the head was signed
        e["entry_hex"] = to_hex(ByteView(encode_entry(le)));
        b.put(name, e.dump() + "\n");
      }
      b.save(out);
      return 0;
    }
    // A training attack: wit's own loop, a deviant step on the tampered steps.
    std::set<int64_t> bad;
    if (*rs) {
      const json tj = json::parse(read_file(o.out_dir + "/tampered.json"));
      attack = tj.at("attack").get<std::string>();
      scale = tj.at("scale").get<double>();
      final_ckpt = tj.at("final").get<std::string>();
      for (const auto& s : tj.at("steps")) bad.insert(s.get<int64_t>());
      const json dj = json::parse(read_file(o.out_dir + "/data.json"));
      o.commit_path = dj.at("commit").get<std::string>();
      o.files = dj.at("files").get<std::vector<std::string>>();
    } else {
      if (auto rc = launch_local_ranks(nproc, argv)) return *rc;
      TrainConfig cfg = TrainConfig::load(o.config_path);
      const int64_t T = cfg.overrides.value("steps", int64_t(100));
      if (attack != "honest") bad = choose_tampered(T, fraction, attack_seed);
    }
    Commitment data = Commitment::load(o.commit_path);
    auto dataset = std::make_shared<Dataset>(data, o.files, 0);
    std::shared_ptr<DataOrder> order;
    std::optional<TrainState> final_state, init_state;

    auto declared_lr = [](const Manifest& mf, int64_t t) { return float(mf.lr_at(t)); };
    if (attack == "rank-add-data") {
      // Data parallel: on the tampered steps rank 1 trains on an undeclared
      // record in place of its first row; rank 0 logs the committed batch.
      o.rows_fn = [&](int64_t t, int rank, int64_t lo, int64_t, BatchRecords& rows) {
        if (rank == 1 && bad.count(t))
          rows[size_t(lo)] = "an undeclared record, trained on by rank 1 at step " + std::to_string(t);
      };
    } else if (attack == "shard-own-data") {
      // Attack 24, fully sharded: on the tampered steps rank 1 updates its own
      // range with the gradient of an undeclared record in place of its first
      // row; what it sends the other owners is honest, so only its range changes.
      o.shard_full = true;
      o.shard_rows_fn = [&](int64_t t, int rank, int64_t lo, int64_t, BatchRecords& rows) {
        if (rank == 1 && bad.count(t))
          rows[size_t(lo)] = "an undeclared record, trained on by rank 1 for its own shard at step " + std::to_string(t);
      };
    } else if (attack == "shard-skew-gather") {
      // Attack 24, fully sharded: on the tampered steps rank 1 serves the
      // others parameters that are not the ones it holds and commits (every
      // 97th value moved by 1e-3), so they compute their gradients on a model
      // other than the logged state.
      o.shard_full = true;
      o.serve_fn = [&](int64_t t, int rank, float* data, size_t n) {
        if (rank == 1 && bad.count(t))
          for (size_t i = 0; i < n; i += 97) data[i] += 1e-3f;
      };
    } else if (attack == "add-data") {
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        BatchRecords used = batch;
        used[0] = "an undeclared record, trained on at step " + std::to_string(t) + " but never committed";
        return train_step(mf, st, used);
      };
    } else if (attack == "skip" || attack == "lr") {
      const double scale = attack == "skip" ? 0.0 : 3.0;
      o.step_fn = [&, scale](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        Manifest other = mf;
        other.opt.lr *= scale;  // skip: the step is logged but nothing is learned
        StepOutput out = train_step(other, st, batch);
        out.lr = declared_lr(mf, t);
        return out;
      };
    } else if (attack == "dropout-seed") {
      // Attack 20 (docs/training.md#dropout): the tampered steps draw their
      // dropout masks from another seed (a forger picking masks that suit
      // it); the other steps are honest, with the run's own seed.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        Bytes seed = run_seed(o.out_dir);
        if (bad.count(t)) seed[0] ^= 1;
        return train_step(mf, st, batch, ByteView(seed));
      };
    } else if (attack == "reorder") {
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        if (!order) {
          const Bytes seed = run_seed(o.out_dir);
          order = std::make_shared<DataOrder>(mf.run_id(), ByteView(seed), dataset->size(), uint64_t(mf.batch_size));
        }
        BatchRecords other;
        for (uint64_t i : order->batch(t == mf.steps ? t - 1 : t + 1)) other.push_back(dataset->record(i));
        return train_step(mf, st, other);  // another step's committed batch, trained out of order
      };
    } else if (attack == "interpolate") {
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!final_state) final_state = TrainState::load(mf.model, final_ckpt);
        if (!init_state) init_state = st.clone();
        TrainState probe = st.clone();
        StepOutput out = train_step(mf, probe, batch);  // losses and moments look real
        Editable a = editable(probe);
        const Editable from = editable(*init_state), z = editable(*final_state);
        const float w = float(t) / float(mf.steps);
        for (size_t p = 0; p < a.w.size(); p++)
          for (size_t i = 0; i < a.w[p].size(); i++) a.w[p][i] = from.w[p][i] + w * (z.w[p][i] - from.w[p][i]);
        st = with_edits(mf, probe, a);  // m from the real step: only the weights are interpolated
        return out;
      };
    } else if (attack == "nullspace") {
      // The adaptive forger: the honest step's W and m plus the difference
      // that training on undeclared records makes, projected onto the null
      // space of the public W and m sketches (v stays honest). Every logged
      // witness is what an honest replay from the logged state reproduces:
      // losses, grad norm and batch root of the declared batch, and sketches
      // (the hidden part sketches to zero). Only the exact state roots and the
      // full comparison of states can see it.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        TrainState honest = st.clone(), other = st.clone();
        StepOutput out = train_step(mf, honest, batch);
        train_step(mf, other, undeclared(batch.size(), t));
        Editable h = editable(honest), u = editable(other);
        const std::pair<std::vector<std::vector<float>>*, const char*> parts[] = {{&h.w, "weights"}, {&h.m, "adam.m"}};
        for (const auto& [hp, use] : parts) {
          const std::vector<std::vector<float>>& up = hp == &h.w ? u.w : u.m;
          std::vector<std::vector<float>> d = up;
          for (size_t i = 0; i < d.size(); i++)
            for (size_t j = 0; j < d[i].size(); j++) d[i][j] = float(scale) * (d[i][j] - (*hp)[i][j]);
          const SketchSpec spec{uint64_t(mf.fp.sketch_k), sketch_seed(mf.fp.sketch_seed, use)};
          project_off_sketch(spec, d);
          for (size_t i = 0; i < d.size(); i++)
            for (size_t j = 0; j < d[i].size(); j++) (*hp)[i][j] += d[i][j];
        }
        st = with_edits(mf, honest, h);
        return out;
      };
    } else if (attack == "state-jump") {
      // A logged state that is not the declared step from the previous one:
      // the weights moved by `scale` times the step's own update beyond it.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        Editable before = editable(st);
        StepOutput out = train_step(mf, st, batch);
        Editable e = editable(st);
        for (size_t i = 0; i < e.w.size(); i++)
          for (size_t j = 0; j < e.w[i].size(); j++) e.w[i][j] += float(scale) * (e.w[i][j] - before.w[i][j]);
        st = with_edits(mf, st, e);
        return out;
      };
    } else if (attack == "spend") {
      // Attack 14, the slack forger: on every tampered step it measures, as a
      // tolerant verifier would, each tensor's own replay noise on this very
      // transition, then moves every weight and first-moment tensor `scale`
      // of its threshold (margin 10 x max(1, noise) rounding floors) toward
      // where a step on undeclared records would have taken it.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        if (!bad.count(t)) return train_step(mf, st, batch);
        const TrainState before = st.clone();
        TrainState other = st.clone();
        const unsigned threads = current_run_config("cpu", 1).threads;  // the step's own, restored below
        const TransitionNoise noise = measure_transition_noise(mf, before, batch, 1, 2, std::nullopt);
        set_torch_threads(threads);
        StepOutput out = train_step(mf, st, batch);
        train_step(mf, other, undeclared(batch.size(), t));
        st = edited(mf, st, [&](const std::string& name, std::vector<float>& h) {
          if (name.rfind("adam.v.", 0) == 0) return;
          const std::vector<float> u = values(other, name);
          double dn = 0, hn = 0;
          for (size_t j = 0; j < h.size(); j++) {
            dn += (double(u[j]) - h[j]) * (double(u[j]) - h[j]);
            hn += double(h[j]) * h[j];
          }
          if (dn == 0) return;
          auto it = noise.floors.find(name);
          const double floors = scale * 10 * std::max(1.0, it == noise.floors.end() ? 0.0 : it->second);
          const double a = floors * kRoundingEps * std::sqrt(hn) / std::sqrt(dn);
          for (size_t j = 0; j < h.size(); j++) h[j] = float(h[j] + a * (double(u[j]) - h[j]));
        });
        return out;
      };
    } else if (attack == "poison") {
      // Attack 15, calibration poisoning: the second moments of every bias and
      // gain (one-dimensional tensors) scaled by `scale` (default 1e-6), so the
      // next updates of those tensors are driven by rounding and the noise a
      // tolerant verifier measures grows.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        StepOutput out = train_step(mf, st, batch);
        if (!bad.count(t)) return out;
        const float f = scale == 1 ? 1e-6f : float(scale);
        std::map<std::string, size_t> dims;
        for (const auto& tv : st.tensors()) dims[tv.name] = tv.shape.size();
        st = edited(mf, st, [&](const std::string& name, std::vector<float>& v) {
          if (name.rfind("adam.v.", 0) == 0 && dims[name] == 1)
            for (float& x : v) x *= f;
        });
        return out;
      };
    } else if (attack == "ulp") {
      // The smallest change there is: one element of one tensor, one ulp, on the tampered steps.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        StepOutput out = train_step(mf, st, batch);
        if (!bad.count(t)) return out;
        st = edited(mf, st, [&](const std::string& name, std::vector<float>& v) {
          if (name == "wte") v[7] = std::nextafter(v[7], INFINITY);
        });
        return out;
      };
    } else if (attack == "foreign-init") {
      o.init_fn = [&](const Manifest& mf, ByteView seed) {
        TrainState fresh = TrainState::initial(mf.model, seed);
        if (final_ckpt.empty()) {
          Bytes other(seed.data, seed.data + seed.size);
          other[0] ^= 1;
          return TrainState::initial(mf.model, ByteView(other));
        }
        // Someone else's trained weights passed off as a fresh init (step 0, zero moments).
        Editable e = editable(fresh);
        e.w = editable(TrainState::load(mf.model, final_ckpt)).w;
        return with_edits(mf, fresh, e);
      };
    }
    if (*rs && attack == "rank-add-data") {
      // The forger regenerates its two ranks' steps in one process, rank 1's
      // first row replaced as in training.
      o.step_fn = [&](const Manifest& mf, TrainState& st, const BatchRecords& batch, int64_t t) {
        BatchRecords rows = batch;
        const size_t B = rows.size(), rank1_lo = B / 2 + B % 2;
        if (bad.count(t)) o.rows_fn(t, 1, int64_t(rank1_lo), int64_t(B), rows);
        return train_step_emulating(mf, st, rows, 2);
      };
    }
    if (*rs) {
      ResponseOptions ro;
      ro.run = o.out_dir;
      ro.threads = o.threads;
      ro.quiet = true;
      ro.step_fn = o.step_fn;
      ro.init_fn = o.init_fn;
      ro.end_states = end_states;
      const Challenge c = Challenge::load(challenge_path);
      write_response(c, ro, out);
      return 0;
    }
    o.quiet = true;
    if (wit::train(o).rank != 0) return 0;  // rank 0 writes the run (and tampered.json)
    json t = json::array();
    for (int64_t s : bad) t.push_back(s);
    write_file_atomic(o.out_dir + "/tampered.json",
                      json{{"attack", attack}, {"steps", t}, {"scale", scale}, {"final", final_ckpt}}.dump() + "\n");
    return 0;
  });
}
