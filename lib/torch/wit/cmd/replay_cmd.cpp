// The subcommands of wit-replay (replay_cmd.h): what main used to decide.
#include "wit/cmd/replay_cmd.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "wit/cmd/cli.h"
#include "wit/cmd/commit_cmd.h"
#include "wit/base/error.h"
#include "wit/cmd/file_kind.h"
#include "wit/base/io.h"
#include "wit/run/replay_math.h"
#include "wit/run/run_config.h"
#include "wit/model/state.h"

namespace wit {

namespace {

// Runs the rest of this command under the kernels a run recorded (exact
// replay and regenerating states need them): re-executes the program with the
// environment set when it differs. A bundle read from standard input cannot
// be read twice, so there the environment must already be right.
void pin(const std::optional<RunConfig>& c, char** argv, bool can_reexec) {
  if (!c) return;
  const EnvVars env = config_environment(*c);
  if (!can_reexec)
    for (const auto& [k, v] : env) {
      const char* now = std::getenv(k.c_str());
      if (v != (now ? now : ""))
        throw Error("a bundle on standard input cannot be replayed under the run's recorded kernels (" + k + "=" + v + ")",
                    "--bundle -", "pass the bundle as a file, or set " + k + "=" + v);
    }
  run_under_environment(env, argv);
}

std::optional<RunConfig> run_config_of(const std::string& run) {
  const std::string path = run + "/" + kRunConfigFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return RunConfig::parse(read_file(path), path);  // its run id is checked when the response is built
}

// What both subcommands check first, in this order: the margin (before any
// response is built), the device, the arguments' kinds; then the run's
// kernels are pinned and the challenge is loaded.
Challenge prepare(const ReplayArgs& a, char** argv) {
  if (a.tolerant) check_margin(a.margin);
  parse_size(a.memory, "--memory");
  check_replay_device(a.device);
  expect_args({{"--run", a.run, FileKind::kRunDir},
               {"--bundle", a.bundle_path, FileKind::kBundle},
               {"CHALLENGE", a.challenge_path, FileKind::kChallenge}});
  // Regenerating states, or replaying exactly, runs under the run's recorded kernels.
  if (!a.run.empty()) pin(run_config_of(a.run), argv, true);
  return Challenge::load(a.challenge_path);
}

}  // namespace

void check_replay_device(const std::string& device) {
  if (device != "cpu" && !cuda_available())
    throw Error("this LibTorch has no CUDA device", "--device " + device, "use --device cpu");
}

int replay_respond(ReplayArgs a, char** argv) {
  const Challenge c = prepare(a, argv);
  a.ro.run = a.run;
  a.ro.data_memory = parse_size(a.memory, "--memory");
  a.ro.threads = a.threads;
  a.ro.device = a.device;
  a.ro.quiet = a.quiet;
  write_response(c, a.ro, a.out);
  if (!a.quiet)
    cli::note("response to " + std::to_string(c.steps.size()) + " step and " + std::to_string(c.segments.size()) +
              " segment challenges: " + a.out);
  return cli::kOk;
}

int replay_verify(ReplayArgs a, char** argv) {
  const Challenge c = prepare(a, argv);
  // The response decoded once and its manifest parsed once, handed on to
  // the kernels' pinning and the verifier. Where pinning re-executes this
  // program under the recorded kernels, the new process decodes it again:
  // once before (to read the configuration) and once after, necessarily.
  std::optional<OpenedResponse> b;
  if (!a.bundle_path.empty()) {
    b = OpenedResponse::open(a.bundle_path);
    const std::optional<RunConfig> rc = bundle_config(*b);
    // Exact replay needs the recorded kernels. A tolerant replay runs under
    // them too where this CPU has them (its noise is measured across thread
    // counts and shares, not across kernel sets: replaying the run's avx2 step
    // with avx512 kernels would differ by more than that noise), and a bundle
    // that records none under wit-train's default (avx2); else natively.
    if (!a.tolerant) pin(rc, argv, a.bundle_path != "-");
    else if (a.bundle_path != "-") {
      if (rc && cpu_has_kernel_set(rc->cpu_capability)) pin(rc, argv, true);
      else if (!rc && cpu_has_kernel_set("avx2")) run_under_environment(kernel_set_environment("avx2"), argv);
    }
  } else {
    // Self-check: the response goes through a private file, read back as the trainer's would be.
    a.ro.run = a.run;
    a.ro.data_memory = parse_size(a.memory, "--memory");
    a.ro.threads = 0;  // the recorded count: the states must come out as logged
    a.ro.device = a.device;
    a.ro.end_states = a.tolerant;
    const TempDir tmp("wit-replay");
    write_response(c, a.ro, tmp / "response.wbundle");
    b = OpenedResponse::open(tmp / "response.wbundle");
  }
  VerifyOptions vo;
  vo.mode = a.tolerant ? ReplayMode::kTolerant : ReplayMode::kExact;
  vo.threads = a.threads;
  vo.device = a.device;
  vo.margin = a.margin;
  vo.quiet = a.quiet;
  const ReplayReport r = verify_response(*b, c, vo);
  write_file_atomic(a.out, r.to_json().dump(2) + "\n");
  if (!a.quiet) {
    if (r.certified())
      cli::note("certified (" + r.mode + "): " + std::to_string(c.steps.size()) + " challenged steps and " +
                std::to_string(c.segments.size()) + " segments replayed" +
                (a.tolerant ? " within each tensor's own noise; " : " bit for bit; ") + c.guarantee.words());
    else
      cli::note("rejected (" + r.mode + "): " + r.reason);
  }
  return r.certified() ? cli::kOk : cli::kNegative;
}

}  // namespace wit
