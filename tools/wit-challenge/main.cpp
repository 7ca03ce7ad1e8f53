// wit-challenge: a signed tree head and a nonce the trainer does not control
// give the steps (and checkpoint intervals) of a run that must be replayed,
// with the detection guarantee; --check re-derives and checks a challenge.
#include <optional>
#include <string>

#include "wit/cmd/challenge_cmd.h"
#include "wit/cmd/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"Challenge a training run: signed head + nonce -> steps to replay, with the detection guarantee"};
  wit::cli::setup(app, "wit-challenge");
  std::string head_path, run, nonce_hex, nonce_file, out = "-", check_path;
  std::optional<int64_t> k, checkpoint_every;
  std::optional<double> confidence, fraction;
  int64_t segments = 0;
  bool quiet = false;

  auto* o_head = app.add_option("--head", head_path, "Signed tree head JSON, as `wit-log head` prints it (- = stdin)")->type_name("HEAD.json");
  auto* o_run = app.add_option("--run", run, "Run directory: challenge its latest signed head (instead of --head)")->type_name("RUN");
  auto* o_nonce = app.add_option("--nonce", nonce_hex, "Nonce the trainer does not control: 64 hex digits")->type_name("HEX");
  auto* o_nfile = app.add_option("--nonce-file", nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("FILE");
  auto* o_k = app.add_option("-k", k, "Number of steps to challenge, 1..T")->type_name("N");
  auto* o_conf = app.add_option("--confidence", confidence, "Pick the smallest k that catches --fraction with this probability, 0 < P < 1")->type_name("P");
  auto* o_frac = app.add_option("--fraction", fraction, "Fraction of tampered steps the guarantee is for, 0 < F <= 1 (with -k only: 0.05)")->type_name("F");
  auto* o_seg = app.add_option("--segments", segments, "Also challenge this many whole checkpoint intervals (default 0)")->type_name("N");
  auto* o_ckpt = app.add_option("--checkpoint-every", checkpoint_every, "Checkpoint interval C for --segments (default with --run: the manifest's)")->type_name("C");
  auto* o_out = app.add_option("-o,--output", out, "Challenge JSON to write (- = stdout)")->type_name("FILE");
  auto* o_check = app.add_option("--check", check_path, "Re-derive CHALLENGE from its head and nonce and check it (- = stdin); with --run, also that the head is the run's")->type_name("CHALLENGE");
  app.add_flag("-q,--quiet", quiet, "No guarantee or summary on stderr");
  o_head->excludes(o_run);
  o_nonce->excludes(o_nfile);
  o_k->excludes(o_conf);
  for (auto* o : {o_head, o_nonce, o_nfile, o_k, o_conf, o_frac, o_seg, o_ckpt, o_out}) o_check->excludes(o);

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (!check_path.empty()) return wit::challenge_check_cmd(check_path, run, quiet);
    return wit::challenge_issue_cmd(head_path, run, nonce_hex, nonce_file,
                                    wit::ChallengeRequest{k, confidence, fraction, segments, checkpoint_every}, out, quiet);
  });
}
