// wit-train's work (train_cmd.h): what main used to decide.
#include "wit/cmd/train_cmd.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "wit/cmd/cli.h"
#include "wit/data/commitment.h"
#include "wit/model/device.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/run_config.h"
#include "wit/run/run_lock.h"
#include "wit/model/script.h"
#include "wit/run/wlog.h"

namespace fs = std::filesystem;

namespace wit {

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
  const std::string recorded = (fs::path(run) / kRunConfigFile).string();
  std::error_code ec;
  if (!given && fs::exists(recorded, ec))
    return run_under_environment(config_environment(RunConfig::parse(read_file(recorded), recorded)), argv);
  run_under_environment(kernel_set_environment(kernels), argv);
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

int train_describe_cmd(const TrainOptions& o) {
  check_device(o.device);
  std::fputs(describe_training(o.config_path, o.model_path, o.commit_path, o.device).c_str(), stdout);
  return cli::kOk;
}

int train_cmd(TrainArgs a, char** argv) {
  TrainOptions& o = a.o;
  o.shard = a.shard == "zero1";
  o.shard_full = a.shard == "full";
  // The kernels are chosen before LibTorch and OpenBLAS read them: by
  // re-executing this program with the environment set (docs/training.md).
  pin_kernels(o.out_dir, a.kernels, a.kernels_given, argv);
  // Validated before the run directory exists: a refused device leaves nothing behind.
  check_device(o.device);
  // Said here, not as the manifest's "'n' out of range", which blames the config.
  if (Commitment::load(o.commit_path).n == 0)
    throw Error("the training data holds no records", o.commit_path, "commit a dataset with at least batch_size records");
  // What can be checked before RUN exists is checked here: the config, the ranks against the batch, --stats.
  const TrainConfig cfg = TrainConfig::load(o.config_path);
  const nlohmann::json& b = cfg.overrides.contains("batch_size") ? cfg.overrides["batch_size"] : nlohmann::json(Manifest{}.batch_size);
  if (a.nproc > 1 && b.is_number_integer() && b.get<int64_t>() < int64_t(a.nproc))
    throw Error("a batch of " + std::to_string(b.get<int64_t>()) + " records cannot be split over " +
                    std::to_string(a.nproc) + " ranks",
                o.config_path, "use --nproc " + std::to_string(b.get<int64_t>()) + " or fewer, or a larger batch_size");
  if (o.shard_full && a.nproc < 2 && !std::getenv("WORLD_SIZE"))
    throw Error("--shard=full needs several ranks", "--shard", "add --nproc N (or launch with WORLD_SIZE)");
  if (!o.stats_path.empty() && o.stats_path != "-" && inside(o.stats_path, o.out_dir))
    throw Error("--stats names a file inside the run directory", o.stats_path, "write the statistics elsewhere");
  std::optional<FileLock> lock;
  bool created = false;
  if (writes_the_run()) {
    std::error_code ec;
    created = !fs::exists(o.out_dir, ec);
    if (created && !fs::create_directories(o.out_dir, ec) && ec)
      throw Error("cannot create the run directory: " + ec.message(), o.out_dir);
    lock.emplace(lock_run_dir(o.out_dir));
    cli::set_interrupt_note(o.out_dir + " keeps every step up to its last checkpoint; rerun the same command to resume");
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
        entries = WitnessLog::open(o.out_dir + "/run.wlog", TornTail::kLeave).size();
    } catch (const Error&) {
      return;  // unreadable: leave it for a person to look at
    }
    if (entries > 1) return;
    lock.reset();
    fs::remove_all(o.out_dir, ec);
  };
  TrainSummary s;
  try {
    if (auto rc = launch_local_ranks(a.nproc, argv)) {
      if (*rc != 0) forget();
      return *rc;
    }
    o.witnesses = !a.no_witnesses;
    s = train(o);
  } catch (...) {
    forget();
    throw;
  }
  if (!o.quiet && s.rank == 0 && s.resumed && s.steps == 0 && s.finished) {
    cli::note(o.out_dir + " is already complete (" + std::to_string(s.last_step) + " steps); nothing to train");
  } else if (!o.quiet && s.rank == 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s steps %lld..%lld in %.1fs (%.1f steps/s), final loss %.4f; %s",
                  s.resumed ? "resumed," : "trained", static_cast<long long>(s.first_step),
                  static_cast<long long>(s.last_step), s.seconds, s.seconds > 0 ? double(s.steps) / s.seconds : 0.0,
                  double(s.final_loss), s.finished ? ("run complete, seed revealed: " + o.out_dir).c_str()
                                                   : ("stopped early; rerun to resume: " + o.out_dir).c_str());
    cli::note(buf);
    if (s.world > 1 && o.shard_full) {
      std::snprintf(buf, sizeof buf,
                    "%d ranks, fully sharded; per step and rank: %.0f bytes of parameter gathers, %.0f bytes of "
                    "gradients, %.0f bytes of witnesses",
                    s.world, s.param_bytes, s.grad_bytes, s.witness_bytes);
      cli::note(buf);
    } else if (s.world > 1) {
      std::snprintf(buf, sizeof buf, "%d ranks; per step and rank: %.0f bytes of gradients, %.0f bytes of witnesses",
                    s.world, s.grad_bytes, s.witness_bytes);
      cli::note(buf);
    }
  }
  return cli::kOk;
}

}  // namespace wit
