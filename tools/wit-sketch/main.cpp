// wit-sketch: fingerprints of checkpoints and released models (weight sketch,
// probe fingerprint), distances between them, matching a released weights
// file to a run (exact), and checking a black-box model with fresh probes.
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/sketch_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"Fingerprint checkpoints and released models; compare fingerprints; match a model to a run"};
  wit::cli::setup(app, "wit-sketch");
  app.require_subcommand(1);
  std::string run, model, out = "-", device = "cpu";
  bool no_probe = false, json_out = false;
  double tolerance = 1e-3;
  unsigned threads = 0;

  auto* fp = app.add_subcommand("fingerprint", "Fingerprint a checkpoint or released model with a run's spec");
  fp->add_option("--run", run, "Run directory (manifest, probe set)")->required();
  fp->add_option("MODEL", model, "Checkpoint or released model (.safetensors)")->required();
  fp->add_flag("--no-probe", no_probe, "Weight sketch only");
  fp->add_option("-o,--output", out, "Fingerprint JSON to write (- = stdout)");
  auto* dist = app.add_subcommand("distance", "Distance between two fingerprints");
  std::string a, b;
  dist->add_option("A", a, "Fingerprint JSON")->required();
  dist->add_option("B", b, "Fingerprint JSON")->required();
  auto* show = app.add_subcommand("show", "Summarise a fingerprint");
  show->add_option("FINGERPRINT", a, "Fingerprint JSON (- = stdin)")->required();
  auto* match = app.add_subcommand("match", "Is a released weights file exactly the run's final parameters? (exit 1 if not)");
  std::string optim_hex;
  match->add_option("--run", run, "Run directory")->required();
  match->add_option("MODEL", model, "Released model (.safetensors, parameters only)")->required();
  match->add_option("--optim-root", optim_hex, "The final state's optimizer root (64 hex, from a match report) when the run's final checkpoint is not at hand")->type_name("HEX");
  match->add_option("--tolerance", tolerance, "Probe distance shown for information: the old threshold it is compared with")->default_str("1e-3");
  match->add_flag("--json", json_out, "Print the verdict as JSON");

  auto* serve = app.add_subcommand("serve", "Answer model-command requests (stdin) with a model's per-token log-probabilities (stdout)");
  serve->add_option("--run", run, "Run directory (the model's shape)")->required();
  serve->add_option("MODEL", model, "Checkpoint or released model (.safetensors)")->required();

  auto* pc = app.add_subcommand("probe-check", "Check a black-box model against the run's final model on fresh probes (exit 1 if not)");
  wit::ProbeCheckOptions po;
  std::string nonce_hex, nonce_file;
  pc->add_option("--run", po.run, "Run directory (its final checkpoint and data)")->required();
  auto* o_nonce = pc->add_option("--nonce", nonce_hex, "Nonce the trainer does not control: 64 hex digits")->type_name("HEX");
  auto* o_nfile = pc->add_option("--nonce-file", nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("FILE");
  o_nonce->excludes(o_nfile);
  pc->add_option("--model-cmd", po.model_cmd, "Command that scores texts for the model (sh -c; JSONL requests on stdin, answers on stdout)")->required()->type_name("CMD");
  pc->add_option("--records", po.records, "Committed records to draw")->default_str("48");
  pc->add_option("--random", po.random, "Random byte strings to draw")->default_str("16");
  pc->add_option("--timeout", po.timeout_s, "Seconds the model command may take")->default_str("300");
  pc->add_option("--floor", po.floor, "Smallest tolerance, nats per token")->default_str("1e-3");
  pc->add_option("--margin", po.margin, "Tolerance = max(floor, margin x measured noise)")->default_str("10");
  pc->add_option("--fraction", po.fraction, "Fraction of deviating inputs the guarantee is for")->default_str("0.05");
  pc->add_option("--data", po.data.commit, "Data commitment (default: from RUN/data.json)");
  pc->add_option("--index", po.data.index, "Data index (default: from RUN/data.json)");
  pc->add_option("--file", po.data.files, "A data file (repeat; default: from RUN/data.json)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  pc->add_option("-o,--output", out, "Probe-check report to write (- = stdout)");
  pc->add_option("--threads-b", po.threads_b, "The checker's second thread count for the noise (default: all cores, at least 2)");
  bool quiet = false;
  pc->add_flag("-q,--quiet", quiet, "No verdict on stderr");
  auto* ex = app.add_subcommand("export", "Write a checkpoint's parameters alone: the file to publish as the released model");
  ex->add_option("--run", run, "Run directory (the model's shape)")->required();
  ex->add_option("CHECKPOINT", model, "Checkpoint (.safetensors)")->required();
  wit::cli::mark_output(ex->add_option("-o,--output", out, "Parameters-only .safetensors to write"))->required();
  for (auto* s : {fp, match, serve, pc, ex}) {
    s->add_option("--device", device, "cpu or cuda")->default_str("cpu");
    s->add_option("-j,--threads", threads, "LibTorch threads (0 = all cores)");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*fp) return wit::sketch_fingerprint_cmd(run, model, !no_probe, out, device, threads);
    if (*dist) return wit::sketch_distance_cmd(a, b);
    if (*show) return wit::sketch_show_cmd(a);
    if (*match) return wit::sketch_match_cmd(run, model, optim_hex, tolerance, json_out, device, threads);
    if (*serve) return wit::sketch_serve_cmd(run, model, device, threads);
    if (*pc) return wit::sketch_probe_check_cmd(po, nonce_hex, nonce_file, out, quiet, device, threads);
    return wit::sketch_export_cmd(run, model, out, device, threads);
  });
}
