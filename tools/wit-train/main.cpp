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
  app.add_flag("-q,--quiet", o.quiet, "No progress or summary on stderr");
  app.add_option("FILE", o.files, "The committed data files, in commit order")->required();
  return wit::cli::run(app, argc, argv, [&] {
    wit::TrainSummary s = wit::train(o);
    if (!o.quiet) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s steps %lld..%lld in %.1fs (%.1f steps/s), final loss %.4f; %s",
                    s.resumed ? "resumed," : "trained", static_cast<long long>(s.first_step),
                    static_cast<long long>(s.last_step), s.seconds, s.seconds > 0 ? double(s.steps) / s.seconds : 0.0,
                    double(s.final_loss), s.finished ? ("run complete, seed revealed: " + o.out_dir).c_str()
                                                     : ("stopped early; rerun to resume: " + o.out_dir).c_str());
      wit::cli::note(buf);
    }
    return wit::cli::kOk;
  });
}
