// wit-train's work, what its main used to decide: main parses the flags into
// a TrainArgs and calls one of these, which print the summary note (unless
// quiet) and return the exit status. Errors throw wit::Error (exit 2). `argv`
// is the program's own: the kernels are pinned, and local ranks launched, by
// re-executing it. Docs: docs/training.md, docs/distributed.md. Torch-free header.
#pragma once
#include <string>

#include "wit/train/trainer.h"

namespace wit {

struct TrainArgs {
  TrainOptions o;
  std::string kernels = "avx2";  // --cpu-kernels
  bool kernels_given = false;    // --cpu-kernels was on the command line (else a resumed run keeps its recorded set)
  unsigned nproc = 1;            // --nproc: local ranks
  bool no_witnesses = false;     // hidden --bench-no-witnesses (bench/dist.sh)
  std::string shard;             // --shard: "" (none), "zero1" or "full"
};

// --describe: each parameter's shape, init and weight decay on stdout; writes nothing.
int train_describe_cmd(const TrainOptions& o);
// Train (or resume) the run at o.out_dir: checks what can be checked before
// the run directory exists, holds RUN/train.lock, and removes a run directory
// it created when it fails before its first step is logged.
int train_cmd(TrainArgs a, char** argv);

}  // namespace wit
