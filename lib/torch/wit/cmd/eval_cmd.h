// The subcommands of wit-eval, one function each: wit-eval's main parses the
// flags into an EvalArgs and calls one of these, which write the outputs,
// print the summary note (unless `quiet`) or the document (show) and return
// the exit status. Errors throw wit::Error (exit 2). Formats: docs/eval.md.
// Torch-free header.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "wit/eval/evaluate.h"

namespace wit {

struct EvalArgs {
  EvalOptions o;                            // run and check: the run, the eval set, device, threads
  std::string out;                          // -o: eval.json (run) or the spot-check report (check)
  std::string scores_path;                  // --scores: written (run) or read (check)
  std::string cut_nonce_hex, cut_nonce_file;  // run --nonce / --nonce-file: the causal check's cuts
  std::string eval_path;                    // check --eval
  std::string nonce_hex, nonce_file;        // check --nonce / --nonce-file
  std::optional<uint64_t> k;                // check -k
  std::optional<double> confidence, fraction;
  bool quiet = false;
};

// run: score the run's checkpoint on the eval set, causal check included;
// eval.json and its scores written together, or neither (exit 1: the model
// reads the future, nothing written).
int eval_run_cmd(EvalArgs a);
// check: re-evaluate the examples the nonce picks; the report to `out` (exit 1 if rejected).
int eval_check_cmd(EvalArgs a);
// show: an eval, its scores or a spot-check report at `path` (- = stdin), for a
// person (exit 1 for a rejected report).
int eval_show_cmd(const std::string& path);

}  // namespace wit
