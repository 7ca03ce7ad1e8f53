// The subcommands of wit-sketch, one function each: wit-sketch's main parses
// the flags and calls one of these, which print what the user sees (stdout;
// notes on stderr unless `quiet`) and return the exit status. Errors throw
// wit::Error (exit 2). `device` is cpu or cuda; `threads` the LibTorch threads
// (0 = all cores). Formats: docs/fingerprint.md, docs/release.md.
#pragma once
#include <string>

#include "wit/eval/release_model.h"

namespace wit {

// fingerprint: the weight sketch (and, with `probe`, the probe fingerprint) of
// a checkpoint or released model with RUN's spec, to `out`.
int sketch_fingerprint_cmd(const std::string& run, const std::string& model, bool probe, const std::string& out,
                           const std::string& device, unsigned threads);
// distance: between the fingerprints at `a` and `b`, as one JSON line.
int sketch_distance_cmd(const std::string& a, const std::string& b);
// show: a summary of the fingerprint at `path` (- = stdin).
int sketch_show_cmd(const std::string& path);
// match: is `model` exactly RUN's final parameters (exit 1 if not)? `optim_hex`
// (may be empty) stands in for the final checkpoint's optimizer root; the probe
// distance, against `tolerance`, is shown for information only.
int sketch_match_cmd(const std::string& run, const std::string& model, const std::string& optim_hex, double tolerance,
                     bool json, const std::string& device, unsigned threads);
// serve: model-command requests on stdin answered with `model`'s per-token log-probabilities.
int sketch_serve_cmd(const std::string& run, const std::string& model, const std::string& device, unsigned threads);
// probe-check: a black-box model against RUN's final model on fresh probes drawn
// with the nonce (`nonce_hex` or `nonce_file`); the report to `out` (exit 1 if not).
int sketch_probe_check_cmd(ProbeCheckOptions po, const std::string& nonce_hex, const std::string& nonce_file,
                           const std::string& out, bool quiet, const std::string& device, unsigned threads);
// export: a checkpoint's parameters alone, to `out` (the file to publish).
int sketch_export_cmd(const std::string& run, const std::string& checkpoint, const std::string& out,
                      const std::string& device, unsigned threads);

}  // namespace wit
