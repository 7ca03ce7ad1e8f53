// wit-eval: certified evaluation. `run` scores a run's checkpoint on a
// committed eval set and commits to the per-example scores; `check`
// re-evaluates the examples a nonce picks and checks their openings; `show`
// prints an eval or a spot-check report for a person.
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/eval_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"Certified evaluation: score a run's checkpoint on a committed eval set; spot-check a claimed eval"};
  wit::cli::setup(app, "wit-eval");
  app.require_subcommand(1);
  wit::EvalArgs a;
  std::string show_path;

  auto* run = app.add_subcommand("run", "Score the run's final checkpoint on the eval set, causal check included; write eval.json and the scores (exit 1: the model reads the future)");
  auto* check = app.add_subcommand("check", "Re-evaluate the examples a nonce picks; exit 0 certified, 1 rejected");
  for (auto* s : {run, check}) {
    s->add_option("--run", a.o.run, "Run directory")->required()->type_name("RUN");
    s->add_option("--commit", a.o.commit_path, "The eval set's commitment (wit-commit)")->required()->type_name("EVAL.commit.json");
    s->add_option("--index", a.o.index_path, "The eval set's index, checked against the commitment")->type_name("EVAL.widx");
    s->add_option("--checkpoint", a.o.checkpoint, "Checkpoint file, or (run) the released parameters-only file of the final state (default: the run's final checkpoint; check: the one at the eval's step)")
        ->type_name("FILE");
    s->add_option("-j,--threads", a.o.threads, "LibTorch threads (0 = all cores)")->type_name("N");
    s->add_option("--device", a.o.device, "cpu or cuda")->default_str("cpu");
    s->add_option("FILE", a.o.files, "The eval set's files (any order)")->required();
    s->add_flag("-q,--quiet", a.quiet, "No summary or progress on stderr");
    s->add_option("--causal-cuts", a.o.causal_cuts, "Cut points of the causal check per record, 1..64")->default_str("1")->type_name("N");
  }
  auto* o_cnonce = run->add_option("--nonce", a.cut_nonce_hex, "Nonce the causal check's cut points are drawn from: 64 hex digits (default: the checkpoint root)")->type_name("HEX");
  auto* o_cnfile = run->add_option("--nonce-file", a.cut_nonce_file, "File holding that nonce as 64 hex digits (- = stdin)")->type_name("FILE");
  o_cnonce->excludes(o_cnfile);
  run->add_option("-o,--output", a.out, "Eval commitment to write (eval.json)")->required()->type_name("FILE");
  wit::cli::mark_output(run->add_option("--scores", a.scores_path, "Per-example scores to write (eval.scores.json)"))->required()->type_name("FILE");

  check->add_option("--eval", a.eval_path, "The eval commitment checked (eval.json)")->required()->type_name("EVAL.json");
  check->add_option("--scores", a.scores_path, "Its per-example scores")->required()->type_name("SCORES.json");
  auto* o_nonce = check->add_option("--nonce", a.nonce_hex, "Nonce the evaluator does not control: 64 hex digits")->type_name("HEX");
  auto* o_nfile = check->add_option("--nonce-file", a.nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("FILE");
  auto* o_k = check->add_option("-k", a.k, "Number of examples to re-evaluate, 1..n")->type_name("N");
  auto* o_conf = check->add_option("--confidence", a.confidence, "Pick the smallest k that catches --fraction with this probability")->type_name("P");
  check->add_option("--fraction", a.fraction, "Fraction of inflated scores the guarantee is for, 0 < F <= 1 (with -k only: 0.05)")->type_name("F");
  check->add_option("-o,--output", a.out, "Spot-check report to write (- = stdout)")->required()->type_name("FILE");
  o_nonce->excludes(o_nfile);
  o_k->excludes(o_conf);

  auto* show_cmd = app.add_subcommand("show", "Print an eval, its scores or a spot-check report for a person");
  show_cmd->add_option("FILE", show_path, "eval.json, eval.scores.json or a check report (- = stdin)")->required();

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*show_cmd) return wit::eval_show_cmd(show_path);
    if (*run) return wit::eval_run_cmd(a);
    return wit::eval_check_cmd(a);
  });
}
