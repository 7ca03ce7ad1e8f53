// wit-log: the witness log of a run: key generation, entries, signed heads,
// inclusion and consistency proofs (and checking them), and verifying a run.
#include <sys/stat.h>

#include <iostream>

#include "wit/cli.h"
#include "wit/error.h"
#include "wit/io.h"
#include "wit/manifest.h"
#include "wit/run_lock.h"
#include "wit/runlog.h"
#include "wit/sign.h"
#include "wit/wlog.h"

namespace {

void emit(const std::string& out, const nlohmann::json& doc) { wit::write_file_atomic(out, doc.dump(2) + "\n"); }

// The run's heads, read without changing the file: a torn last line is skipped with a note.
std::vector<wit::TreeHead> load_heads(const wit::RunPaths& rp) {
  uint64_t torn = 0;
  auto heads = wit::read_heads(rp.heads(), wit::TornLine::kIgnore, &torn);
  if (torn) wit::cli::note("warning: " + rp.heads() + ": torn last line ignored");
  return heads;
}

// A head is usable when the trainer signed it for this run and the log agrees with it.
std::optional<std::string> head_unusable(const wit::TreeHead& h, const wit::Manifest& m, const wit::WitnessLog* log) {
  if (auto p = wit::head_problem(h, m.run_id(), m.trainer_key, "the head of size " + std::to_string(h.size))) return p;
  if (log && (h.size > log->size() || log->root(h.size) != h.root))
    return "the log does not match its signed head of size " + std::to_string(h.size);
  return std::nullopt;
}

int invalid(const std::string& why) {
  std::cout << "invalid: " << why << "\n";
  return wit::cli::kNegative;
}

}  // namespace

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
    const wit::RunPaths rp(run.empty() ? "." : run);
    if (*keygen) {
      for (const std::string& p : {key_out, key_out + ".pub"})
        if (!force && wit::exists(p)) throw wit::Error("key file exists", p, "use --force to overwrite it");
      wit::SecretKey k = wit::generate_key();
      wit::save_key(key_out, k);
      std::cout << k.pub().hex() << "\n";
      if (!quiet) wit::cli::note("wrote " + key_out + " (secret, mode 0600) and " + key_out + ".pub");
      return wit::cli::kOk;
    }
    if (*show) {
      wit::WitnessLog log = wit::WitnessLog::open(rp.log(), wit::TornTail::kRefuse);
      if (from > to) throw wit::Error("--from is after --to", std::to_string(from) + " > " + std::to_string(to));
      if (log.size() && from >= log.size())
        throw wit::Error("no entry " + std::to_string(from), rp.log() + " has " + std::to_string(log.size()));
      for (uint64_t i = from; i < log.size() && i <= to; i++)
        std::cout << wit::entry_json(log.entry(i), i, log.leaves()[i], full).dump() << "\n";
      return wit::cli::kOk;
    }
    if (*head) {
      const wit::Manifest m = wit::Manifest::load(rp.manifest());
      auto heads = load_heads(rp);
      const wit::TreeHead* h = wit::find_head(heads, size);
      if (!h) throw wit::Error(size ? "no signed head of size " + std::to_string(*size) : "no signed heads", rp.heads());
      wit::WitnessLog log = wit::WitnessLog::open(rp.log(), wit::TornTail::kRefuse);
      if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
      std::cout << h->to_json().dump(2) << "\n";
      return wit::cli::kOk;
    }
    if (*sign) {
      const wit::FileLock lock = wit::lock_run_dir(run);  // not while wit-train writes the run
      wit::allow_run_writes(run);                          // the one tool besides wit-train that writes a run
      wit::TreeHead h = wit::sign_run_head(run, wit::load_key(key_path), time, repair ? wit::TornTail::kCut : wit::TornTail::kRefuse);
      std::cout << h.to_json().dump(2) << "\n";
      if (!quiet) wit::cli::note("signed head of size " + std::to_string(h.size) + " appended to " + rp.heads());
      return wit::cli::kOk;
    }
    if (*prove) {
      const wit::Manifest m = wit::Manifest::load(rp.manifest());
      wit::WitnessLog log = wit::WitnessLog::open(rp.log(), wit::TornTail::kRefuse);
      auto heads = load_heads(rp);
      const wit::TreeHead* h = wit::find_head(heads, size);
      if (!h) throw wit::Error(size ? "no signed head of size " + std::to_string(*size) : "no signed heads", rp.heads());
      if (step >= h->size)
        throw wit::Error("entry " + std::to_string(step) + " is not covered by the head",
                         "head of size " + std::to_string(h->size), "sign a newer head or pass --size");
      if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
      nlohmann::json doc = wit::log_inclusion_document(log, *h, step);
      emit(out, doc);
      if (!quiet) wit::cli::note("entry " + std::to_string(step) + " under the head of size " + std::to_string(h->size));
      return wit::cli::kOk;
    }
    if (*cons) {
      const wit::Manifest m = wit::Manifest::load(rp.manifest());
      wit::WitnessLog log = wit::WitnessLog::open(rp.log(), wit::TornTail::kRefuse);
      if (old_size == 0) throw wit::Error("OLD_SIZE must be at least 1", "0");
      if (old_size > new_size)
        throw wit::Error("OLD_SIZE is larger than NEW_SIZE", std::to_string(old_size) + " > " + std::to_string(new_size));
      if (new_size > log.size())
        throw wit::Error("NEW_SIZE is beyond the log", rp.log() + " has " + std::to_string(log.size()) + " entries");
      std::vector<wit::TreeHead> heads;
      if (wit::exists(rp.heads())) heads = load_heads(rp);
      const wit::TreeHead* oh = wit::find_head(heads, old_size);
      const wit::TreeHead* nh = wit::find_head(heads, new_size);
      for (const wit::TreeHead* h : {oh, nh})
        if (h)
          if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
      emit(out, wit::log_consistency_document(log, m.run_id(), old_size, new_size, oh, nh));
      if (!quiet)
        wit::cli::note("from size " + std::to_string(old_size) + " (" + (oh ? "signed head" : "unsigned log root") +
                       ") to size " + std::to_string(new_size) + " (" + (nh ? "signed head" : "unsigned log root") + ")");
      return wit::cli::kOk;
    }
    if (*check) {
      wit::LogProofPins pins;
      if (!key_path.empty()) pins.key = wit::load_public_key(key_path);
      if (!pin_run.empty()) {
        const wit::Manifest m = wit::Manifest::load(wit::RunPaths(pin_run).manifest());
        if (pins.key && *pins.key != m.trainer_key)
          throw wit::Error("--key is not the trainer key of --run", key_path);
        pins.key = m.trainer_key;
        pins.run_id = m.run_id();
      }
      const std::string where = proof_path == "-" ? "stdin" : proof_path;
      nlohmann::json doc = nlohmann::json::parse(wit::read_file(proof_path), nullptr, false);
      if (doc.is_discarded()) throw wit::Error("invalid log proof: not valid json", where);
      return wit::cli::print_verdict(wit::verify_log_proof(doc, pins, where), json_out);
    }
    // verify
    wit::RunCheckOptions opt;
    opt.checkpoints = !no_ckpt;
    opt.init = !no_init;
    wit::RunVerdict v = wit::verify_run(run, opt);
    if (!quiet)
      for (const auto& w : v.warnings) wit::cli::note("warning: " + w);
    if (json_out)
      std::cout << v.to_json().dump() << "\n";
    else
      std::cout << (v.ok ? "valid: " : "invalid: ") << v.summary() << "\n";
    // A run killed or stopped mid-training is invalid only until it is resumed.
    if (!v.ok && !v.seed_revealed && !wit::exists(rp.seed()) && !quiet)
      std::cerr << "hint: the run is not finished (its seed is not revealed yet); if training was stopped, rerun "
                   "the same wit-train command to resume: it signs the rest\n";
    return v.ok ? wit::cli::kOk : wit::cli::kNegative;
  });
}
