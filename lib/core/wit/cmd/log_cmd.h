// The subcommands of wit-log, one function each: wit-log's main parses the
// flags and calls one of these, which print what the user sees (stdout; the
// notes on stderr unless `quiet`) and return the exit status. Errors throw
// wit::Error (exit 2). Formats: docs/witness-log.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace wit {

// keygen: an Ed25519 key pair KEY (secret, mode 0600) and KEY.pub; prints the public key.
int log_keygen_cmd(const std::string& key_out, bool force, bool quiet);
// show: entries FROM..TO of RUN's log as JSON lines.
int log_show_cmd(const std::string& run, uint64_t from, uint64_t to, bool full);
// head: the latest signed head (or the one of `size`); exit 1 if it does not check out.
int log_head_cmd(const std::string& run, const std::optional<uint64_t>& size);
// sign: a head over the whole log, appended to RUN/run.heads (`repair`: cut torn tails first).
int log_sign_cmd(const std::string& run, const std::string& key_path, uint64_t time, bool repair, bool quiet);
// prove: the inclusion proof of entry `step` under a signed head, to `out`.
int log_prove_cmd(const std::string& run, uint64_t step, const std::optional<uint64_t>& size, const std::string& out,
                  bool quiet);
// consistency: the proof between the log at two sizes, to `out`.
int log_consistency_cmd(const std::string& run, uint64_t old_size, uint64_t new_size, const std::string& out, bool quiet);
// check-proof: a log proof with nothing else, pinned to a key and/or a run (exit 1 if invalid).
int log_check_proof_cmd(const std::string& proof_path, const std::string& key_path, const std::string& pin_run, bool json);
// verify: everything a run directory holds (exit 1 if invalid).
int log_verify_cmd(const std::string& run, bool checkpoints, bool init, bool json, bool quiet);

}  // namespace wit
