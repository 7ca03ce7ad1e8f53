// wit-board-check: the board's steps that replay or evaluate (LibTorch), run
// as `wit-board add`, `wit-board evaluate` and `wit-board audit` (wit-board
// hands those subcommands to this tool, so wit-board itself never links LibTorch).
// Logic: lib/torch/wit/cmd/board_check_cmd.cpp and board/recheck.cpp; rules: docs/board.md.
#include <string>

#include "wit/cmd/board_check_cmd.h"
#include "wit/cmd/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"The board's replaying steps: verify a response and file the board's report (add); re-verify them all (audit)"};
  wit::cli::setup(app, "wit-board");
  app.require_subcommand(1);
  wit::BoardCheckArgs common;

  std::string a_bundle, a_response, a_key;
  auto* add = app.add_subcommand("add", "Verify a response bundle by replaying it and file the board's signed report");
  add->add_option("bundle", a_bundle, "The run bundle on the board (DIR/runs/NAME)")->required()->type_name("BUNDLE");
  add->add_option("response", a_response, "The trainer's response bundle (wit-replay respond -o)")->required()->type_name("RESPONSE");
  add->add_option("--key", a_key, "The board's secret key file (kept outside the board folder)")->required()->type_name("KEY");

  std::string e_bundle, e_weights, e_key, e_model;
  auto* evaluate = app.add_subcommand("evaluate", "Score the released weights on the board's benchmark and file the board's signed evaluation");
  evaluate->add_option("bundle", e_bundle, "The run bundle on the board (DIR/runs/NAME)")->required()->type_name("BUNDLE");
  evaluate->add_option("weights", e_weights, "The released weights (wit-sketch export; a checkpoint's parameters are exported), bound exactly to the final state")->required()->type_name("WEIGHTS");
  evaluate->add_option("--key", e_key, "The board's secret key file (kept outside the board folder)")->required()->type_name("KEY");
  evaluate->add_option("--model", e_model, "A TorchScript run's model file (RUN/model.pt), bound by its digest")->type_name("FILE");

  std::string u_dir;
  auto* audit = app.add_subcommand("audit", "Re-verify every stored response; exit 1 naming any verdict that does not reproduce");
  audit->add_option("board", u_dir, "The board folder")->required()->type_name("DIR");

  for (auto* s : {add, evaluate, audit}) {
    s->add_option("-j,--threads", common.threads, "LibTorch threads (0 = all cores)")->type_name("N");
    s->add_option("--device", common.device, "Replay on this device (cpu, cuda, cuda:N)")->type_name("DEV");
    s->add_flag("-q,--quiet", common.quiet, "No progress or summary on stderr");
    s->add_option("--store", common.store, "The evidence store (default: the one the board's definition names)")->type_name("STORE");
    s->add_option("--sealed", common.sealed, "The board's sealed set (kept outside the folder): scored, and checked for overlap")->type_name("PATH");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*add) return wit::board_check_add_cmd(a_bundle, a_response, a_key, common, argv);
    if (*evaluate) return wit::board_check_evaluate_cmd(e_bundle, e_weights, e_model, e_key, common, argv);
    return wit::board_check_audit_cmd(u_dir, common, argv);
  });
}
