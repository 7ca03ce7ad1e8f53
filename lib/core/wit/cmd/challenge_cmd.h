// The two modes of wit-challenge, one function each: wit-challenge's main
// parses the flags and calls one of these, which print what the user sees
// (stdout; the guarantee and summary on stderr unless `quiet`) and return the
// exit status. Errors throw wit::Error (exit 2). Format: docs/challenge.md.
#pragma once
#include <string>

#include "wit/run/challenge.h"

namespace wit {

// Issue: the challenge of a signed head (`head_path`, - = stdin, or the latest
// of the run directory `run`) and a nonce (`nonce_hex` or `nonce_file`), to `out`.
int challenge_issue_cmd(const std::string& head_path, const std::string& run, const std::string& nonce_hex,
                        const std::string& nonce_file, ChallengeRequest req, const std::string& out, bool quiet);
// --check: re-derives the challenge at `check_path` (- = stdin) from its head
// and nonce; with `run`, also that the head is the run's.
int challenge_check_cmd(const std::string& check_path, const std::string& run, bool quiet);

}  // namespace wit
