// wit-train: the reference trainer (byte-level GPT) that leaves witnesses:
// manifest, witness log, signed heads and checkpoints in a run directory.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <optional>

#include "wit/cli.h"
#include "wit/commitment.h"
#include "wit/device.h"
#include "wit/error.h"
#include "wit/io.h"
#include "wit/manifest.h"
#include "wit/run_config.h"
#include "wit/run_lock.h"
#include "wit/script.h"
#include "wit/trainer.h"
#include "wit/wlog.h"

namespace fs = std::filesystem;

namespace {

// One trainer per run directory: the process that writes the run (not a
// rank a launcher started, nor a torchrun rank other than 0) holds
// RUN/train.lock for the whole run.
bool writes_the_run() {
  const char* rank = std::getenv("RANK");
  return !std::getenv("WIT_LOCAL_LAUNCH") && (!rank || std::strcmp(rank, "0") == 0);
}

// Runs the rest of wit-train under the kernel set `kernels`, or, resuming a
// run without --cpu-kernels, under the one RUN/config.json records.
void pin_kernels(const std::string& run, const std::string& kernels, bool given, char** argv) {
  const std::string recorded = (fs::path(run) / wit::kRunConfigFile).string();
  std::error_code ec;
  if (!given && fs::exists(recorded, ec))
    return wit::run_under_environment(wit::config_environment(wit::RunConfig::parse(wit::read_file(recorded), recorded)),
                                      argv);
  wit::run_under_environment(wit::kernel_set_environment(kernels), argv);
}

// Whether `path` names a file inside directory `dir` (or below it), paths resolved.
bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec), d = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  for (fs::path a = p.parent_path(); !a.empty(); a = a.parent_path()) {
    if (a == d) return true;
    if (a == a.root_path()) break;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train the built-in GPT or a TorchScript model with witnesses into a run directory"};
  wit::cli::setup(app, "wit-train");
  wit::TrainOptions o;
  // --describe needs only --config (and --model, --data when given).
  const bool describe = std::any_of(argv + 1, argv + argc, [](const char* a) { return !std::strcmp(a, "--describe"); });
  app.add_flag("--describe", "Print each parameter's shape, init and weight decay (and their rules), then exit; writes nothing");
  app.add_option("--config", o.config_path, "Training config (JSON)")->required();
  app.add_option("--data", o.commit_path, "Data commitment (.commit.json)")->required(!describe);
  app.add_option("--index", o.index_path, "Data index (.widx)")->required(!describe);
  wit::cli::mark_output(app.add_option("--out", o.out_dir, "Run directory (created; an existing one is resumed)"))->required(!describe);
  app.add_option("--model", o.model_path, "A TorchScript model file (docs/model.md); default: the built-in GPT");
  app.add_option("--key", o.key_path, "Trainer's signing key (default: generate RUN/trainer.key)");
  app.add_option("--device", o.device, "cpu or cuda")->default_str("cpu");
  app.add_option("-j,--threads", o.threads, "LibTorch threads (0 = all cores)")->default_str("0");
  std::string kernels = "avx2";
  auto* kernels_opt = app.add_option("--cpu-kernels", kernels,
                                     "CPU kernel set the steps run on: avx2 (portable), avx512 or native; "
                                     "recorded in RUN/config.json (default: avx2, or the run's recorded set when resuming)")
                          ->default_str("avx2");
  app.add_option("--stop-after", o.stop_after, "Stop after this step, resumable later");
  unsigned nproc = 1;
  app.add_option("--nproc", nproc, "Data parallel: run N local ranks (c10d/Gloo); see docs/distributed.md")
      ->default_str("1")->check(CLI::Range(1u, 256u));
  app.add_option("--dist-timeout", o.dist_timeout, "Seconds before a silent rank fails the others")
      ->default_str("60")->check(CLI::Range(1.0, 86400.0));
  app.add_flag("--shard", o.shard, "With several ranks: shard the optimizer state and checkpoints (ZeRO-1)");
  wit::cli::mark_output(app.add_option("--stats", o.stats_path, "Write per-step timing and traffic as JSON (rank 0)"));
  bool no_witnesses = false;  // hidden: bench/dist.sh measures the same run without witnesses
  app.add_flag("--bench-no-witnesses", no_witnesses)->group("");
  app.add_flag("-q,--quiet", o.quiet, "No progress or summary on stderr");
  app.add_option("FILE", o.files, "The committed data files (any order)")->required(!describe);
  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (describe) {
      wit::check_device(o.device);
      std::fputs(wit::describe_training(o.config_path, o.model_path, o.commit_path, o.device).c_str(), stdout);
      return wit::cli::kOk;
    }
    // The kernels are chosen before LibTorch and OpenBLAS read them: by
    // re-executing this program with the environment set (docs/training.md).
    pin_kernels(o.out_dir, kernels, kernels_opt->count() > 0, argv);
    // Validated before the run directory exists: a refused device leaves nothing behind.
    wit::check_device(o.device);
    // Said here, not as the manifest's "'n' out of range", which blames the config.
    if (wit::Commitment::load(o.commit_path).n == 0)
      throw wit::Error("the training data holds no records", o.commit_path, "commit a dataset with at least batch_size records");
    // What can be checked before RUN exists is checked here: the config, the ranks against the batch, --stats.
    const wit::TrainConfig cfg = wit::TrainConfig::load(o.config_path);
    const nlohmann::json& b = cfg.overrides.contains("batch_size") ? cfg.overrides["batch_size"] : nlohmann::json(wit::Manifest{}.batch_size);
    if (nproc > 1 && b.is_number_integer() && b.get<int64_t>() < int64_t(nproc))
      throw wit::Error("a batch of " + std::to_string(b.get<int64_t>()) + " records cannot be split over " +
                           std::to_string(nproc) + " ranks",
                       o.config_path, "use --nproc " + std::to_string(b.get<int64_t>()) + " or fewer, or a larger batch_size");
    if (!o.stats_path.empty() && o.stats_path != "-" && inside(o.stats_path, o.out_dir))
      throw wit::Error("--stats names a file inside the run directory", o.stats_path, "write the statistics elsewhere");
    std::optional<wit::FileLock> lock;
    bool created = false;
    const std::string lock_path = (fs::path(o.out_dir) / wit::kRunLockFile).string();
    if (writes_the_run()) {
      std::error_code ec;
      created = !fs::exists(o.out_dir, ec);
      if (created && !fs::create_directories(o.out_dir, ec) && ec)
        throw wit::Error("cannot create the run directory: " + ec.message(), o.out_dir);
      lock.emplace(wit::lock_run_dir(o.out_dir));
      wit::cli::set_interrupt_note(o.out_dir + " keeps every step up to its last checkpoint; rerun the same command to resume");
    }
    // A run directory this command created is removed again when it fails
    // before its first step is logged (a late error: out of memory, a
    // refused model): nothing in it was trained or published. A run with
    // logged steps stays, to be resumed.
    auto forget = [&]() {
      if (!created) return;
      std::error_code ec;
      uint64_t entries = 0;
      try {
        if (fs::exists(o.out_dir + "/run.wlog", ec))
          entries = wit::WitnessLog::open(o.out_dir + "/run.wlog", wit::TornTail::kLeave).size();
      } catch (const wit::Error&) {
        return;  // unreadable: leave it for a person to look at
      }
      if (entries > 1) return;
      lock.reset();
      fs::remove_all(o.out_dir, ec);
    };
    wit::TrainSummary s;
    try {
      if (auto rc = wit::launch_local_ranks(nproc, argv)) {
        if (*rc != 0) forget();
        return *rc;
      }
      o.witnesses = !no_witnesses;
      s = wit::train(o);
    } catch (...) {
      forget();
      throw;
    }
    if (!o.quiet && s.rank == 0 && s.resumed && s.steps == 0 && s.finished) {
      wit::cli::note(o.out_dir + " is already complete (" + std::to_string(s.last_step) + " steps); nothing to train");
    } else if (!o.quiet && s.rank == 0) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s steps %lld..%lld in %.1fs (%.1f steps/s), final loss %.4f; %s",
                    s.resumed ? "resumed," : "trained", static_cast<long long>(s.first_step),
                    static_cast<long long>(s.last_step), s.seconds, s.seconds > 0 ? double(s.steps) / s.seconds : 0.0,
                    double(s.final_loss), s.finished ? ("run complete, seed revealed: " + o.out_dir).c_str()
                                                     : ("stopped early; rerun to resume: " + o.out_dir).c_str());
      wit::cli::note(buf);
      if (s.world > 1) {
        std::snprintf(buf, sizeof buf, "%d ranks; per step and rank: %.0f bytes of gradients, %.0f bytes of witnesses",
                      s.world, s.grad_bytes, s.witness_bytes);
        wit::cli::note(buf);
      }
    }
    return wit::cli::kOk;
  });
}
