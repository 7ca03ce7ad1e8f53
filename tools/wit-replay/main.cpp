// wit-replay: answer a challenge (respond), check an answer by replaying the
// challenged steps (verify: exactly under the run's recorded configuration,
// or --tolerant).
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/replay_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"Respond to replay challenges and verify responses by replaying (exactly, or --tolerant)"};
  wit::cli::setup(app, "wit-replay");
  app.require_subcommand(1);
  wit::ReplayArgs a;

  auto* respond = app.add_subcommand("respond", "Trainer: build the response bundle for a challenge");
  respond->add_option("--run", a.run, "Run directory")->required();
  respond->add_option("--data", a.ro.commit_path, "Data commitment (default: from RUN/data.json)");
  respond->add_option("--index", a.ro.index_path, "Data index (default: from RUN/data.json)");
  respond->add_option("--file", a.ro.files, "A data file (repeat; default: from RUN/data.json)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  respond->add_option("CHALLENGE", a.challenge_path, "Challenge JSON")->required();
  respond->add_option("-o,--output", a.out, "Bundle to write")->required();
  respond->add_flag("--tolerant", a.ro.end_states, "Answer a tolerant verifier: the end states of the steps too");

  auto* verify = app.add_subcommand("verify", "Verifier: replay the challenged steps; exit 0 certified, 1 rejected");
  auto* src = verify->add_option_group("source", "Where the answer comes from (exactly one)");
  src->add_option("--bundle", a.bundle_path, "Response bundle from the trainer");
  src->add_option("--run", a.run, "A run directory: build the response from it first (self-check)");
  src->require_option(1);
  verify->add_option("CHALLENGE", a.challenge_path, "Challenge JSON")->required();
  verify->add_option("-o,--output", a.out, "Report JSON to write (- = stdout)");
  auto* tol = verify->add_flag("--tolerant", a.tolerant,
                               "Judge each tensor against its own replay noise on the same step (where the run's "
                               "configuration cannot be reproduced); default: exact replay");
  verify->add_option("--margin", a.margin, "--tolerant: threshold = margin x max(the tensor's noise, one rounding)")
      ->default_str("10")
      ->needs(tol);

  for (auto* s : {respond, verify}) {
    s->add_option("--memory", a.memory,
                  "Memory for the data (SIZE as wit-commit's): its check spills past it, and files past an "
                  "eighth of it are read a record at a time")
        ->default_str("1G");
    s->add_option("--device", a.device, "cpu or cuda")->default_str("cpu");
    s->add_option("-j,--threads", a.threads, "LibTorch threads (0 = all cores; exact replay runs the recorded count)");
    s->add_flag("-q,--quiet", a.quiet, "No summary on stderr");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*respond) return wit::replay_respond(a, argv);
    return wit::replay_verify(a, argv);
  });
}
