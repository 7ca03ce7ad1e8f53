// wit-board-check: the board's steps that replay or evaluate (LibTorch), run
// as `wit-board add`, `wit-board evaluate` and `wit-board audit` (wit-board
// hands those subcommands to this tool, so wit-board itself never links LibTorch).
// Logic: lib/torch/src/board_check.cpp; rules: docs/board.md.
#include <cstdio>
#include <iostream>

#include "wit/board_check.h"
#include "wit/cli.h"
#include "wit/error.h"
#include "wit/sign.h"
#include "wit/state.h"

int main(int argc, char** argv) {
  CLI::App app{"The board's replaying steps: verify a response and file the board's report (add); re-verify them all (audit)"};
  wit::cli::setup(app, "wit-board");
  app.require_subcommand(1);
  bool quiet = false;
  unsigned threads = 0;
  std::string device = "cpu";

  std::string a_bundle, a_response, a_key;
  auto* add = app.add_subcommand("add", "Verify a response bundle by replaying it and file the board's signed report");
  add->add_option("bundle", a_bundle, "The run bundle on the board (DIR/runs/NAME)")->required()->type_name("BUNDLE");
  add->add_option("response", a_response, "The trainer's response bundle (wit-replay respond -o)")->required()->type_name("RESPONSE");
  add->add_option("--key", a_key, "The board's secret key file (kept outside the board folder)")->required()->type_name("KEY");

  std::string e_bundle, e_weights, e_key, e_model;
  auto* evaluate = app.add_subcommand("evaluate", "Score the released weights on the board's benchmark and file the board's signed evaluation");
  evaluate->add_option("bundle", e_bundle, "The run bundle on the board (DIR/runs/NAME)")->required()->type_name("BUNDLE");
  evaluate->add_option("weights", e_weights, "The released weights (wit-sketch export), bound exactly to the final state")->required()->type_name("WEIGHTS");
  evaluate->add_option("--key", e_key, "The board's secret key file (kept outside the board folder)")->required()->type_name("KEY");
  evaluate->add_option("--model", e_model, "A TorchScript run's model file (RUN/model.pt), bound by its digest")->type_name("FILE");

  std::string u_dir;
  auto* audit = app.add_subcommand("audit", "Re-verify every stored response; exit 1 naming any verdict that does not reproduce");
  audit->add_option("board", u_dir, "The board folder")->required()->type_name("DIR");

  for (auto* s : {add, evaluate, audit}) {
    s->add_option("-j,--threads", threads, "LibTorch threads (0 = all cores)")->type_name("N");
    s->add_option("--device", device, "Replay on this device (cpu, cuda, cuda:N)")->type_name("DEV");
    s->add_flag("-q,--quiet", quiet, "No progress or summary on stderr");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (device != "cpu" && !wit::cuda_available())
      throw wit::Error("this LibTorch has no CUDA device", "--device " + device, "use --device cpu");
    wit::VerifyOptions vo;
    vo.threads = threads;
    vo.device = device;
    vo.quiet = quiet;
    if (*add) {
      wit::pin_response_kernels(a_response, argv);  // exact replay runs under the run's recorded kernels
      const wit::SecretKey key = wit::load_key(a_key);
      const wit::BoardAddResult r = wit::board_add(a_bundle, a_response, key, vo);
      std::cout << a_bundle << "/" << r.member << "\n";
      if (!quiet)
        wit::cli::note(std::string("the board replayed the response: ") + (r.report.certified() ? "certified" : "rejected: " + r.report.reason) +
                       "; stored as " + r.stored + "; its signed report: " + r.member);
      return r.report.certified() ? wit::cli::kOk : wit::cli::kNegative;
    }
    if (*evaluate) {
      const wit::SecretKey key = wit::load_key(e_key);
      const wit::BoardEvalResult r = wit::board_evaluate(e_bundle, e_weights, e_model, key, threads, device);
      if (!r.why_not.empty()) {
        std::cerr << "wit-board: refused: " << r.why_not << "\n";
        return wit::cli::kNegative;
      }
      std::cout << e_bundle << "/" << r.member << "\n";
      if (!r.refused.empty()) {
        std::cerr << "wit-board: the board refused the released model: " << r.refused << "\n";
        return wit::cli::kNegative;
      }
      if (!quiet) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "the board scored the released weights on its benchmark: loss %.4f, accuracy %.2f%% over %llu records",
                      r.eval.loss, 100 * r.eval.accuracy, static_cast<unsigned long long>(r.eval.n));
        wit::cli::note(std::string(buf) + "; stored as " + r.stored);
      }
      return wit::cli::kOk;
    }
    wit::pin_board_kernels(u_dir, argv);
    const wit::AuditResult r = wit::audit_board(u_dir, vo);
    for (const auto& f : r.failures) std::cout << "does not reproduce: " << f << "\n";
    if (!quiet)
      wit::cli::note(std::to_string(r.checked) + " board reports re-verified, " + std::to_string(r.failures.size()) +
                     " do not reproduce");
    return r.failures.empty() ? wit::cli::kOk : wit::cli::kNegative;
  });
}
