// wit-train: the reference trainer (byte-level GPT) that leaves witnesses:
// manifest, witness log, signed heads and checkpoints in a run directory.
#include <algorithm>
#include <cstring>
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/train_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"Train the built-in GPT or a TorchScript model with witnesses into a run directory"};
  wit::cli::setup(app, "wit-train");
  wit::TrainArgs a;
  // --describe needs only --config (and --model, --data when given).
  const bool describe = std::any_of(argv + 1, argv + argc, [](const char* s) { return !std::strcmp(s, "--describe"); });
  app.add_flag("--describe", "Print each parameter's shape, init and weight decay (and their rules), then exit; writes nothing");
  app.add_option("--config", a.o.config_path, "Training config (JSON)")->required();
  app.add_option("--data", a.o.commit_path, "Data commitment (.commit.json)")->required(!describe);
  app.add_option("--index", a.o.index_path, "Data index (.widx)")->required(!describe);
  wit::cli::mark_output(app.add_option("--out", a.o.out_dir, "Run directory (created; an existing one is resumed)"))->required(!describe);
  app.add_option("--model", a.o.model_path, "A TorchScript model file (docs/model.md); default: the built-in GPT");
  app.add_option("--memory", a.o.data_memory,
                 "Memory for the data (SIZE as wit-commit's): its check spills past it, and files past an "
                 "eighth of it are read a record at a time")
      ->default_str("1G");
  app.add_option("--key", a.o.key_path, "Trainer's signing key (default: generate RUN/trainer.key)");
  app.add_option("--device", a.o.device, "cpu or cuda")->default_str("cpu");
  app.add_option("-j,--threads", a.o.threads, "LibTorch threads (0 = all cores)")->default_str("0");
  auto* kernels_opt = app.add_option("--cpu-kernels", a.kernels,
                                     "CPU kernel set the steps run on: avx2 (portable), avx512 or native; "
                                     "recorded in RUN/config.json (default: avx2, or the run's recorded set when resuming)")
                          ->default_str("avx2");
  app.add_option("--stop-after", a.o.stop_after, "Stop after this step, resumable later");
  app.add_option("--nproc", a.nproc, "Data parallel: run N local ranks (c10d/Gloo); see docs/distributed.md")
      ->default_str("1")->check(CLI::Range(1u, 256u));
  app.add_option("--dist-timeout", a.o.dist_timeout, "Seconds before a silent rank fails the others")
      ->default_str("60")->check(CLI::Range(1.0, 86400.0));
  // --shard alone is ZeRO-1; --shard=full is FSDP's FULL_SHARD (the "=" is
  // needed: --shard takes no value of its own, so a data file after it stays a file).
  app.add_flag("--shard{zero1}", a.shard,
               "With several ranks: --shard shards the optimizer state and checkpoints (ZeRO-1); "
               "--shard=full also the parameters and gradients (FSDP)")
      ->check(CLI::IsMember({"zero1", "full"}));
  wit::cli::mark_output(app.add_option("--stats", a.o.stats_path, "Write per-step timing and traffic as JSON (rank 0)"));
  // hidden: bench/dist.sh measures the same run without witnesses
  app.add_flag("--bench-no-witnesses", a.no_witnesses)->group("");
  app.add_flag("-q,--quiet", a.o.quiet, "No progress or summary on stderr");
  app.add_option("FILE", a.o.files, "The committed data files (any order)")->required(!describe);
  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (describe) return wit::train_describe_cmd(a.o);
    a.kernels_given = kernels_opt->count() > 0;
    return wit::train_cmd(a, argv);
  });
}
