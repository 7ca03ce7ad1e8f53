// wit-train: the reference trainer (byte-level GPT) that leaves witnesses:
// manifest, witness log, signed heads and checkpoints in a run directory.
#include "wit/cli.h"
#include "wit/trainer.h"

int main(int argc, char** argv) {
  CLI::App app{"Train the reference GPT with witnesses into a run directory"};
  wit::cli::setup(app, "wit-train");
  wit::TrainOptions o;
  app.add_option("--config", o.config_path, "Training config (JSON)")->required();
  app.add_option("--data", o.commit_path, "Data commitment (.commit.json)")->required();
  app.add_option("--index", o.index_path, "Data index (.widx)")->required();
  app.add_option("--out", o.out_dir, "Run directory (created; an existing one is resumed)")->required();
  app.add_option("--key", o.key_path, "Trainer's signing key (default: generate RUN/trainer.key)");
  app.add_option("--device", o.device, "cpu or cuda")->default_str("cpu");
  app.add_option("-j,--threads", o.threads, "LibTorch threads (0 = all cores)")->default_str("0");
  app.add_option("--stop-after", o.stop_after, "Stop after this step, resumable later");
  unsigned nproc = 1;
  app.add_option("--nproc", nproc, "Data parallel: run N local ranks (c10d/Gloo); see docs/distributed.md")
      ->default_str("1")->check(CLI::Range(1u, 256u));
  app.add_option("--dist-timeout", o.dist_timeout, "Seconds before a silent rank fails the others")
      ->default_str("60")->check(CLI::Range(1.0, 86400.0));
  app.add_flag("--shard", o.shard, "With several ranks: shard the optimizer state and checkpoints (ZeRO-1)");
  app.add_option("--stats", o.stats_path, "Write per-step timing and traffic as JSON (rank 0)");
  bool no_witnesses = false;  // hidden: bench/dist.sh measures the same run without witnesses
  app.add_flag("--bench-no-witnesses", no_witnesses)->group("");
  app.add_flag("-q,--quiet", o.quiet, "No progress or summary on stderr");
  app.add_option("FILE", o.files, "The committed data files, in commit order")->required();
  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (auto rc = wit::launch_local_ranks(nproc, argv)) return *rc;
    o.witnesses = !no_witnesses;
    wit::TrainSummary s = wit::train(o);
    if (!o.quiet && s.rank == 0) {
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
