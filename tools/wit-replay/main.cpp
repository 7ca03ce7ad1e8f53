// wit-replay: answer a challenge (respond), check an answer by replaying the
// challenged steps (verify), and measure replay noise (calibrate).
#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>

#include "wit/cli.h"
#include "wit/error.h"
#include "wit/file_kind.h"
#include "wit/io.h"
#include "wit/replay.h"
#include "wit/replay_math.h"
#include "wit/state.h"

int main(int argc, char** argv) {
  CLI::App app{"Respond to replay challenges, verify responses by replaying, calibrate replay noise"};
  wit::cli::setup(app, "wit-replay");
  app.require_subcommand(1);
  std::string run, bundle_path, challenge_path, out = "-", calib_path, device = "cpu";
  unsigned threads = 0, threads_a = 1, threads_b = 2;
  int cal_steps = 2, verify_cal_steps = 0;
  double margin = 10;
  bool quiet = false;
  wit::ResponseOptions ro;

  auto* respond = app.add_subcommand("respond", "Trainer: build the response bundle for a challenge");
  respond->add_option("--run", run, "Run directory")->required();
  respond->add_option("--data", ro.commit_path, "Data commitment (default: from RUN/data.json)");
  respond->add_option("--index", ro.index_path, "Data index (default: from RUN/data.json)");
  respond->add_option("--file", ro.files, "A data file (repeat; default: from RUN/data.json)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  respond->add_option("CHALLENGE", challenge_path, "Challenge JSON")->required();
  respond->add_option("-o,--output", out, "Bundle to write")->required();

  auto* verify = app.add_subcommand("verify", "Verifier: replay the challenged steps; exit 0 certified, 1 rejected");
  auto* src = verify->add_option_group("source", "Where the answer comes from (exactly one)");
  src->add_option("--bundle", bundle_path, "Response bundle from the trainer");
  src->add_option("--run", run, "A run directory: build the response from it first (self-check)");
  src->require_option(1);
  verify->add_option("CHALLENGE", challenge_path, "Challenge JSON")->required();
  verify->add_option("-o,--output", out, "Report JSON to write (- = stdout)");
  verify->add_option("--calibration", calib_path, "Noise measured by 'wit-replay calibrate' (default: measure on this bundle)");
  verify->add_option("--calibration-steps", verify_cal_steps,
                     "Measure noise on the first N transitions only (default 0: on every transition itself)")
      ->default_str("0");
  verify->add_option("--margin", margin, "Threshold = margin x max(measured noise, float32 rounding)")->default_str("10");

  auto* calibrate = app.add_subcommand("calibrate", "Measure replay noise between two thread counts on a bundle's steps");
  calibrate->add_option("--bundle", bundle_path, "Response bundle")->required();
  calibrate->add_option("CHALLENGE", challenge_path, "Challenge JSON")->required();
  calibrate->add_option("--threads-a", threads_a, "First thread count")->default_str("1");
  calibrate->add_option("--threads-b", threads_b, "Second thread count")->default_str("2");
  calibrate->add_option("--steps", cal_steps, "How many challenged steps to replay")->default_str("2");
  calibrate->add_option("-o,--output", out, "Calibration JSON to write (- = stdout)");

  for (auto* s : {respond, verify, calibrate}) {
    s->add_option("--device", device, "cpu or cuda")->default_str("cpu");
    s->add_option("-j,--threads", threads, "LibTorch threads (0 = all cores)");
    s->add_flag("-q,--quiet", quiet, "No summary on stderr");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*verify) wit::check_margin(margin);  // before any response is built
    if (device != "cpu" && !wit::cuda_available())
      throw wit::Error("this LibTorch has no CUDA device", "--device " + device, "use --device cpu");
    wit::expect_args({{"--run", run, wit::FileKind::kRunDir},
                      {"--bundle", bundle_path, wit::FileKind::kBundle},
                      {"CHALLENGE", challenge_path, wit::FileKind::kChallenge}});
    wit::Challenge c = wit::Challenge::load(challenge_path);
    if (*respond) {
      ro.run = run;
      ro.threads = threads;
      ro.device = device;
      ro.quiet = quiet;
      wit::write_response(c, ro, out);
      if (!quiet)
        wit::cli::note("response to " + std::to_string(c.steps.size()) + " step and " +
                       std::to_string(c.segments.size()) + " segment challenges: " + out);
      return wit::cli::kOk;
    }
    std::optional<wit::SpooledBundle> b;
    if (!bundle_path.empty()) {
      b = wit::SpooledBundle::open(bundle_path, wit::response_member_limit());
    } else {
      // Self-check: the response goes through a private file, read back as the trainer's would be.
      ro.run = run;
      ro.threads = threads;
      ro.device = device;
      const wit::TempDir tmp("wit-replay");
      wit::write_response(c, ro, tmp / "response.wbundle");
      b = wit::SpooledBundle::open(tmp / "response.wbundle", wit::response_member_limit());
    }
    if (*calibrate) {
      wit::Calibration cal = wit::calibrate(*b, c, threads_a, threads_b, cal_steps, device);
      wit::write_file_atomic(out, cal.to_json().dump(2) + "\n");
      return wit::cli::kOk;
    }
    wit::VerifyOptions vo;
    vo.threads = threads;
    vo.device = device;
    vo.margin = margin;
    vo.calibration_steps = verify_cal_steps;
    vo.quiet = quiet;
    if (!calib_path.empty()) vo.calibration = wit::Calibration::load(calib_path);
    const wit::ReplayReport r = wit::verify_response(*b, c, vo);
    wit::write_file_atomic(out, r.to_json().dump(2) + "\n");
    if (!quiet) {
      if (r.certified())
        wit::cli::note("certified: " + std::to_string(c.steps.size()) + " challenged steps and " +
                       std::to_string(c.segments.size()) + " segments replayed within the noise; " + c.guarantee.words());
      else
        wit::cli::note("rejected: " + r.reason);
    }
    return r.certified() ? wit::cli::kOk : wit::cli::kNegative;
  });
}
