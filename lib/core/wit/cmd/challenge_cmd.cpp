// The modes of wit-challenge (challenge_cmd.h): what main used to decide.
#include "wit/cmd/challenge_cmd.h"

#include <iostream>

#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/run/runlog.h"
#include "wit/run/wlog.h"

namespace wit {

namespace {

TreeHead read_head_file(const std::string& path) {
  const std::string where = path == "-" ? "stdin" : path;
  return TreeHead::from_json(jsonf::parse(read_file(path), "invalid tree head", where), where);
}

// The latest signed head of a run, which must be the trainer's and name the run.
TreeHead run_head(const RunPaths& rp, const Manifest& m) {
  uint64_t torn = 0;
  auto heads = read_heads(rp.heads(), TornLine::kIgnore, &torn);
  if (torn) cli::note("warning: " + rp.heads() + ": torn last line ignored");
  const TreeHead* h = find_head(heads);
  if (!h) throw Error("no signed heads", rp.heads());
  if (auto p = head_problem(*h, m.run_id(), m.trainer_key, "the latest head")) throw Error(*p, rp.heads());
  return *h;
}

// "3 steps and 1 segment of run RUN_ID under the head of size N".
std::string what_of(const Challenge& c, const std::string& run_id) {
  return cli::count_of(c.steps.size(), "step") + " and " + cli::count_of(c.segments.size(), "segment") + " of run " +
         run_id + " under the head of size " + std::to_string(c.head.size);
}

}  // namespace

int challenge_check_cmd(const std::string& check_path, const std::string& run, bool quiet) {
  const Challenge c = Challenge::load(check_path);
  const std::string where = check_path == "-" ? "stdin" : check_path;
  if (!run.empty()) {
    const RunPaths rp(run);
    const Manifest m = Manifest::load(rp.manifest());
    if (auto p = head_problem(c.head, m.run_id(), m.trainer_key, "the challenge's head")) throw Error(*p, where);
  }
  std::cout << "valid: " << what_of(c, c.head.run_id.hex()) << "\n";
  if (!quiet) cli::note(c.guarantee.words());
  return cli::kOk;
}

int challenge_issue_cmd(const std::string& head_path, const std::string& run, const std::string& nonce_hex,
                        const std::string& nonce_file, ChallengeRequest req, const std::string& out, bool quiet) {
  if (head_path.empty() && run.empty())
    throw Error("missing --head HEAD.json or --run RUN", "", "run 'wit-challenge --help' for usage");
  if (nonce_hex.empty() && nonce_file.empty())
    throw Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come after the head, from someone other than the trainer");
  if (!req.k && !req.confidence) throw Error("missing -k N or --confidence P --fraction F", "", "run 'wit-challenge --help' for usage");

  const Hash32 nonce = nonce_from_args(nonce_hex, nonce_file);

  TreeHead head;
  std::string head_where;
  if (!run.empty()) {
    const RunPaths rp(run);
    const Manifest m = Manifest::load(rp.manifest());
    head = run_head(rp, m);
    head_where = rp.heads();
    if (!req.checkpoint_every) req.checkpoint_every = m.checkpoint_every;
  } else {
    head = read_head_file(head_path);
    head_where = head_path == "-" ? "stdin" : head_path;
  }
  const bool default_fraction = !req.fraction;
  const Challenge c = issue_challenge(head, head_where, nonce, req);
  write_file_atomic(out, c.to_json().dump(2) + "\n");
  if (!quiet) {
    cli::note(what_of(c, head.run_id.hex().substr(0, 16)) + (out == "-" ? "" : ", written to " + out));
    cli::note(c.guarantee.words());
    if (default_fraction) cli::note("(stated for the default fraction 0.05; pass --fraction F for another)");
  }
  return cli::kOk;
}

}  // namespace wit
