// The subcommands of wit-replay, one function each: wit-replay's main parses
// the flags into a ReplayArgs and calls one of these, which write the bundle
// or the report (to `out`), print the summary note (unless `quiet`) and
// return the exit status. Errors throw wit::Error (exit 2). `argv` is the
// program's own: exact replay and regenerating states re-execute it under
// the run's recorded kernels (run_config.h). Formats: docs/replay.md.
// Torch-free header.
#pragma once
#include <string>

#include "wit/replay/replay.h"

namespace wit {

struct ReplayArgs {
  std::string run;             // --run: the run directory (respond; verify: the self-check)
  std::string bundle_path;     // --bundle: the trainer's response bundle (verify)
  std::string challenge_path;  // CHALLENGE
  std::string out = "-";       // -o: the bundle (respond) or the report (verify)
  std::string device = "cpu";
  unsigned threads = 0;        // 0 = all cores; exact replay runs the recorded count
  double margin = 10;          // verify --tolerant --margin
  bool quiet = false;
  bool tolerant = false;       // verify --tolerant
  std::string memory = "1G";   // --memory (parse_size): the data's budget (respond; verify --run)
  ResponseOptions ro;          // respond: the data inputs; its --tolerant is ro.end_states
};

// The device check of a command that replays (wit-replay, and wit-board's
// add, evaluate and audit), made before anything is read: anything but "cpu"
// needs a LibTorch with CUDA (wit::Error otherwise).
void check_replay_device(const std::string& device);

// respond: the response bundle for the challenge, built from RUN, to `out`.
int replay_respond(ReplayArgs a, char** argv);
// verify: replay the challenged steps of the bundle (or of a response built
// from RUN first: the self-check); the report to `out`; exit 1 if rejected.
int replay_verify(ReplayArgs a, char** argv);

}  // namespace wit
