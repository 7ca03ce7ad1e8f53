// wit-replay: answer a challenge (respond), check an answer by replaying the
// challenged steps (verify: exactly under the run's recorded configuration,
// or --tolerant).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "wit/cli.h"
#include "wit/error.h"
#include "wit/file_kind.h"
#include "wit/io.h"
#include "wit/replay.h"
#include "wit/replay_math.h"
#include "wit/run_config.h"
#include "wit/state.h"

namespace {

// Runs the rest of this command under the kernels a run recorded (exact
// replay and regenerating states need them): re-executes the program with the
// environment set when it differs. A bundle read from standard input cannot
// be read twice, so there the environment must already be right.
void pin(const std::optional<wit::RunConfig>& c, char** argv, bool can_reexec) {
  if (!c) return;
  const wit::EnvVars env = wit::config_environment(*c);
  if (!can_reexec)
    for (const auto& [k, v] : env) {
      const char* now = std::getenv(k.c_str());
      if (v != (now ? now : ""))
        throw wit::Error("a bundle on standard input cannot be replayed under the run's recorded kernels (" + k + "=" + v + ")",
                         "--bundle -", "pass the bundle as a file, or set " + k + "=" + v);
    }
  wit::run_under_environment(env, argv);
}

std::optional<wit::RunConfig> run_config_of(const std::string& run) {
  const std::string path = run + "/" + wit::kRunConfigFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return wit::RunConfig::parse(wit::read_file(path), path);  // its run id is checked when the response is built
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Respond to replay challenges and verify responses by replaying (exactly, or --tolerant)"};
  wit::cli::setup(app, "wit-replay");
  app.require_subcommand(1);
  std::string run, bundle_path, challenge_path, out = "-", device = "cpu";
  unsigned threads = 0;
  double margin = 10;
  bool quiet = false, tolerant = false;
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
  respond->add_flag("--tolerant", ro.end_states, "Answer a tolerant verifier: the end states of the steps too");

  auto* verify = app.add_subcommand("verify", "Verifier: replay the challenged steps; exit 0 certified, 1 rejected");
  auto* src = verify->add_option_group("source", "Where the answer comes from (exactly one)");
  src->add_option("--bundle", bundle_path, "Response bundle from the trainer");
  src->add_option("--run", run, "A run directory: build the response from it first (self-check)");
  src->require_option(1);
  verify->add_option("CHALLENGE", challenge_path, "Challenge JSON")->required();
  verify->add_option("-o,--output", out, "Report JSON to write (- = stdout)");
  auto* tol = verify->add_flag("--tolerant", tolerant,
                               "Judge each tensor against its own replay noise on the same step (where the run's "
                               "configuration cannot be reproduced); default: exact replay");
  verify->add_option("--margin", margin, "--tolerant: threshold = margin x max(the tensor's noise, one rounding)")
      ->default_str("10")
      ->needs(tol);

  for (auto* s : {respond, verify}) {
    s->add_option("--device", device, "cpu or cuda")->default_str("cpu");
    s->add_option("-j,--threads", threads, "LibTorch threads (0 = all cores; exact replay runs the recorded count)");
    s->add_flag("-q,--quiet", quiet, "No summary on stderr");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (tolerant) wit::check_margin(margin);  // before any response is built
    if (device != "cpu" && !wit::cuda_available())
      throw wit::Error("this LibTorch has no CUDA device", "--device " + device, "use --device cpu");
    wit::expect_args({{"--run", run, wit::FileKind::kRunDir},
                      {"--bundle", bundle_path, wit::FileKind::kBundle},
                      {"CHALLENGE", challenge_path, wit::FileKind::kChallenge}});
    // Regenerating states, or replaying exactly, runs under the run's recorded kernels.
    if (!run.empty()) pin(run_config_of(run), argv, true);
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
      if (!tolerant) pin(wit::bundle_config(*b), argv, bundle_path != "-");
    } else {
      // Self-check: the response goes through a private file, read back as the trainer's would be.
      ro.run = run;
      ro.threads = 0;  // the recorded count: the states must come out as logged
      ro.device = device;
      ro.end_states = tolerant;
      const wit::TempDir tmp("wit-replay");
      wit::write_response(c, ro, tmp / "response.wbundle");
      b = wit::SpooledBundle::open(tmp / "response.wbundle", wit::response_member_limit());
    }
    wit::VerifyOptions vo;
    vo.mode = tolerant ? wit::ReplayMode::kTolerant : wit::ReplayMode::kExact;
    vo.threads = threads;
    vo.device = device;
    vo.margin = margin;
    vo.quiet = quiet;
    const wit::ReplayReport r = wit::verify_response(*b, c, vo);
    wit::write_file_atomic(out, r.to_json().dump(2) + "\n");
    if (!quiet) {
      if (r.certified())
        wit::cli::note("certified (" + r.mode + "): " + std::to_string(c.steps.size()) + " challenged steps and " +
                       std::to_string(c.segments.size()) + " segments replayed" +
                       (tolerant ? " within each tensor's own noise; " : " bit for bit; ") + c.guarantee.words());
      else
        wit::cli::note("rejected (" + r.mode + "): " + r.reason);
    }
    return r.certified() ? wit::cli::kOk : wit::cli::kNegative;
  });
}
