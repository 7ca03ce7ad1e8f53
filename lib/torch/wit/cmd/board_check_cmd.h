// The subcommands of wit-board-check (the board's replaying steps, run as
// `wit-board add`, `evaluate` and `audit`), one function each: the main
// parses the flags and calls one of these, which print what the user sees
// (the filed member on stdout; notes on stderr unless quiet) and return the
// exit status. Errors throw wit::Error (exit 2). `argv` is the program's own:
// exact replay re-executes it under the run's recorded kernels. Logic:
// board/recheck.h; rules: docs/board.md. Torch-free header.
#pragma once
#include <string>

namespace wit {

// What every subcommand takes: LibTorch threads (0 = all cores), the device, --quiet.
struct BoardCheckArgs {
  unsigned threads = 0;
  std::string device = "cpu";
  bool quiet = false;
  std::string sealed;  // --sealed PATH: the current epoch's sealed set, kept outside the folder
  std::string store;   // --store STORE: the evidence store ("" : the definition's)
};

// add: verify `response_path` against the bundle's challenge and file the
// board's signed report (exit 1 if the board rejects the response).
int board_check_add_cmd(const std::string& bundle_path, const std::string& response_path, const std::string& key_path,
                        const BoardCheckArgs& a, char** argv);
// evaluate: score the released weights on the board's benchmark and file the
// board's signed evaluation (exit 1: refused, or the model reads the future).
int board_check_evaluate_cmd(const std::string& bundle_path, const std::string& weights_path,
                             const std::string& model_path, const std::string& key_path, const BoardCheckArgs& a,
                             char** argv);
// audit: re-verify every stored response of the board at `dir` (exit 1 if any does not reproduce).
int board_check_audit_cmd(const std::string& dir, const BoardCheckArgs& a, char** argv);

}  // namespace wit
