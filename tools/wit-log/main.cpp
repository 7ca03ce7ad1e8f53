// wit-log: the witness log of a run: key generation, entries, signed heads,
// inclusion and consistency proofs (and checking them), and verifying a run.
#include <cstdint>
#include <optional>
#include <string>

#include "wit/cmd/cli.h"
#include "wit/cmd/log_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"Witness log of a training run: keys, entries, signed heads, proofs, verification"};
  wit::cli::setup(app, "wit-log");
  app.require_subcommand(1);
  app.fallthrough();  // -q works after the subcommand too
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No summary on stderr");

  std::string key_out, key_path, run, proof_path = "-", out = "-", pin_run;
  bool force = false, full = false, json_out = false, no_ckpt = false, no_init = false, repair = false;
  uint64_t from = 0, to = UINT64_MAX, step = 0, old_size = 0, new_size = 0, time = 0;
  std::optional<uint64_t> size;

  // Subcommand declarations alike in shape (here and in other mains, e.g. wit-sketch's): CLI11's, on purpose.
  auto* keygen = app.add_subcommand("keygen", "Generate an Ed25519 key pair: KEY (secret, mode 0600) and KEY.pub");
  keygen->add_option("-o,--output", key_out, "Secret key file to write (the public key goes to KEY.pub)")->required();
  keygen->add_flag("-f,--force", force, "Overwrite an existing key");

  auto* show = app.add_subcommand("show", "Print log entries as JSON lines");
  show->add_option("RUN", run, "Run directory")->required();
  show->add_option("--from", from, "First entry (default 0)");
  show->add_option("--to", to, "Last entry (default: the last)");
  show->add_flag("--full", full, "Print sketches and probes in full instead of their length and L2 norm");

  auto* head = app.add_subcommand("head", "Print the latest signed tree head (exit 1 if it does not check out)");
  head->add_option("RUN", run, "Run directory")->required();
  head->add_option("--size", size, "The head of this size instead of the latest");

  auto* sign = app.add_subcommand("sign", "Sign a head over the whole log and append it to RUN/run.heads");
  sign->add_option("RUN", run, "Run directory")->required();
  sign->add_option("--key", key_path, "Trainer's secret key file")->required();
  sign->add_option("--time", time, "Head time in seconds since the epoch (default: now)");
  sign->add_flag("--repair", repair, "First cut a torn log tail and a torn last heads line (after a crash)");

  auto* prove = app.add_subcommand("prove", "Inclusion proof of entry STEP under a signed head");
  prove->add_option("RUN", run, "Run directory")->required();
  prove->add_option("STEP", step, "Entry index (0 = genesis, s = step s)")->required();
  prove->add_option("--size", size, "Prove against the head of this size (default: the latest)");
  prove->add_option("-o,--output", out, "Proof to write (- = stdout)");

  auto* cons = app.add_subcommand("consistency", "Consistency proof between the log at two sizes");
  cons->add_option("RUN", run, "Run directory")->required();
  cons->add_option("OLD_SIZE", old_size, "Older tree size (>= 1)")->required();
  cons->add_option("NEW_SIZE", new_size, "Newer tree size")->required();
  cons->add_option("-o,--output", out, "Proof to write (- = stdout)");

  auto* check = app.add_subcommand("check-proof", "Verify a log proof with nothing else (exit 1 if invalid)");
  check->add_option("PROOF", proof_path, "Proof JSON (- = stdin)");
  check->add_option("--key", key_path, "Trainer's public key (.pub or key file) the heads must be signed with");
  check->add_option("--run", pin_run, "Run directory whose manifest pins the trainer key and run id");
  check->add_flag("--json", json_out, "Print the verdict as JSON");

  auto* ver = app.add_subcommand("verify", "Verify a run: manifest, log, heads, seed, checkpoints (exit 1 if invalid)");
  ver->add_option("RUN", run, "Run directory")->required();
  ver->add_flag("--no-checkpoints", no_ckpt, "Do not hash the checkpoints in RUN/ckpt");
  ver->add_flag("--no-init", no_init, "Do not regenerate the initial state from the revealed seed");
  ver->add_flag("--json", json_out, "Print the verdict as JSON");

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*keygen) return wit::log_keygen_cmd(key_out, force, quiet);
    if (*show) return wit::log_show_cmd(run, from, to, full);
    if (*head) return wit::log_head_cmd(run, size);
    if (*sign) return wit::log_sign_cmd(run, key_path, time, repair, quiet);
    if (*prove) return wit::log_prove_cmd(run, step, size, out, quiet);
    if (*cons) return wit::log_consistency_cmd(run, old_size, new_size, out, quiet);
    if (*check) return wit::log_check_proof_cmd(proof_path, key_path, pin_run, json_out);
    return wit::log_verify_cmd(run, !no_ckpt, !no_init, json_out, quiet);
  });
}
