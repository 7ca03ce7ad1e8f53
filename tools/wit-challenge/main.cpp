// wit-challenge: a signed tree head and a nonce the trainer does not control
// give the steps (and checkpoint intervals) of a run that must be replayed,
// with the detection guarantee; --check re-derives and checks a challenge.
#include <iostream>
#include <optional>

#include "wit/challenge.h"
#include "wit/cli.h"
#include "wit/error.h"
#include "wit/io.h"
#include "wit/manifest.h"
#include "wit/runlog.h"
#include "wit/wlog.h"

namespace {

std::string count(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

wit::TreeHead read_head_file(const std::string& path) {
  const std::string where = path == "-" ? "stdin" : path;
  const nlohmann::json j = nlohmann::json::parse(wit::read_file(path), nullptr, false);
  if (j.is_discarded()) throw wit::Error("invalid tree head: not valid json", where);
  return wit::TreeHead::from_json(j, where);
}

// The latest signed head of a run, which must be the trainer's and name the run.
wit::TreeHead run_head(const wit::RunPaths& rp, const wit::Manifest& m) {
  uint64_t torn = 0;
  auto heads = wit::read_heads(rp.heads(), wit::TornLine::kIgnore, &torn);
  if (torn) wit::cli::note("warning: " + rp.heads() + ": torn last line ignored");
  const wit::TreeHead* h = wit::find_head(heads);
  if (!h) throw wit::Error("no signed heads", rp.heads());
  if (auto p = wit::head_problem(*h, m.run_id(), m.trainer_key, "the latest head")) throw wit::Error(*p, rp.heads());
  return *h;
}

}  // namespace

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
  auto* o_nfile = app.add_option("--nonce-file", nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("F");
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
    if (!check_path.empty()) {
      const wit::Challenge c = wit::Challenge::load(check_path);
      const std::string where = check_path == "-" ? "stdin" : check_path;
      if (!run.empty()) {
        const wit::RunPaths rp(run);
        const wit::Manifest m = wit::Manifest::load(rp.manifest());
        if (auto p = wit::head_problem(c.head, m.run_id(), m.trainer_key, "the challenge's head")) throw wit::Error(*p, where);
      }
      std::cout << "valid: " << count(c.steps.size(), "step") << " and " << count(c.segments.size(), "segment")
                << " of run " << c.head.run_id.hex() << " under the head of size " << c.head.size << "\n";
      if (!quiet) wit::cli::note(c.guarantee.words());
      return wit::cli::kOk;
    }

    if (head_path.empty() && run.empty())
      throw wit::Error("missing --head HEAD.json or --run RUN", "", "run 'wit-challenge --help' for usage");
    if (nonce_hex.empty() && nonce_file.empty())
      throw wit::Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come after the head, from someone other than the trainer");
    if (!k && !confidence) throw wit::Error("missing -k N or --confidence P --fraction F", "", "run 'wit-challenge --help' for usage");

    const wit::Hash32 nonce = wit::nonce_from_args(nonce_hex, nonce_file);

    wit::TreeHead head;
    std::string head_where;
    if (!run.empty()) {
      const wit::RunPaths rp(run);
      const wit::Manifest m = wit::Manifest::load(rp.manifest());
      head = run_head(rp, m);
      head_where = rp.heads();
      if (!checkpoint_every) checkpoint_every = m.checkpoint_every;
    } else {
      head = read_head_file(head_path);
      head_where = head_path == "-" ? "stdin" : head_path;
    }
    const bool default_fraction = !fraction;
    const wit::Challenge c =
        wit::issue_challenge(head, head_where, nonce, wit::ChallengeRequest{k, confidence, fraction, segments, checkpoint_every});
    wit::write_file_atomic(out, c.to_json().dump(2) + "\n");
    if (!quiet) {
      wit::cli::note(count(c.steps.size(), "step") + " and " + count(c.segments.size(), "segment") + " of run " +
                     head.run_id.hex().substr(0, 16) + " under the head of size " +
                     std::to_string(head.size) + (out == "-" ? "" : ", written to " + out));
      wit::cli::note(c.guarantee.words());
      if (default_fraction) wit::cli::note("(stated for the default fraction 0.05; pass --fraction F for another)");
    }
    return wit::cli::kOk;
  });
}
