// The subcommands of wit-log (log_cmd.h): what main used to decide.
#include "wit/cmd/log_cmd.h"

#include <iostream>

#include "wit/base/check.h"
#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/run/run_lock.h"
#include "wit/run/runlog.h"
#include "wit/hash/sign.h"
#include "wit/run/wlog.h"

namespace wit {

namespace {

void emit(const std::string& out, const nlohmann::json& doc) { write_file_atomic(out, doc.dump(2) + "\n"); }

// The run's heads, read without changing the file: a torn last line is skipped with a note.
std::vector<TreeHead> load_heads(const RunPaths& rp) {
  uint64_t torn = 0;
  auto heads = read_heads(rp.heads(), TornLine::kIgnore, &torn);
  if (torn) cli::note("warning: " + rp.heads() + ": torn last line ignored");
  return heads;
}

// A head is usable when the trainer signed it for this run and the log agrees with it.
Problem head_unusable(const TreeHead& h, const Manifest& m, const WitnessLog* log) {
  if (auto p = head_problem(h, m.run_id(), m.trainer_key, "the head of size " + std::to_string(h.size))) return p;
  if (log && (h.size > log->size() || log->root(h.size) != h.root))
    return "the log does not match its signed head of size " + std::to_string(h.size);
  return std::nullopt;
}

// A head that does not check out is a verdict: "invalid: WHY", exit 1.
int invalid(const std::string& why) { return cli::print_verdict(Verdict::fail(why), false); }

}  // namespace

int log_keygen_cmd(const std::string& key_out, bool force, bool quiet) {
  for (const std::string& p : {key_out, key_out + ".pub"})
    if (!force && exists(p)) throw Error("key file exists", p, "use --force to overwrite it");
  SecretKey k = generate_key();
  save_key(key_out, k);
  std::cout << k.pub().hex() << "\n";
  if (!quiet) cli::note("wrote " + key_out + " (secret, mode 0600) and " + key_out + ".pub");
  return cli::kOk;
}

int log_show_cmd(const std::string& run, uint64_t from, uint64_t to, bool full) {
  const RunPaths rp(run.empty() ? "." : run);
  WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (from > to) throw Error("--from is after --to", std::to_string(from) + " > " + std::to_string(to));
  if (log.size() && from >= log.size())
    throw Error("no entry " + std::to_string(from), rp.log() + " has " + std::to_string(log.size()));
  for (uint64_t i = from; i < log.size() && i <= to; i++)
    std::cout << entry_json(log.entry(i), i, log.leaves()[i], full).dump() << "\n";
  return cli::kOk;
}

int log_head_cmd(const std::string& run, const std::optional<uint64_t>& size) {
  const RunPaths rp(run.empty() ? "." : run);
  const Manifest m = Manifest::load(rp.manifest());
  auto heads = load_heads(rp);
  const TreeHead* h = find_head(heads, size);
  if (!h) throw Error(size ? "no signed head of size " + std::to_string(*size) : "no signed heads", rp.heads());
  WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
  std::cout << h->to_json().dump(2) << "\n";
  return cli::kOk;
}

int log_sign_cmd(const std::string& run, const std::string& key_path, uint64_t time, bool repair, bool quiet) {
  const RunPaths rp(run.empty() ? "." : run);
  const FileLock lock = lock_run_dir(run);  // not while wit-train writes the run
  allow_run_writes(run);                          // the one tool besides wit-train that writes a run
  TreeHead h = sign_run_head(run, load_key(key_path), time, repair ? TornTail::kCut : TornTail::kRefuse);
  std::cout << h.to_json().dump(2) << "\n";
  if (!quiet) cli::note("signed head of size " + std::to_string(h.size) + " appended to " + rp.heads());
  return cli::kOk;
}

int log_prove_cmd(const std::string& run, uint64_t step, const std::optional<uint64_t>& size, const std::string& out,
                  bool quiet) {
  const RunPaths rp(run.empty() ? "." : run);
  const Manifest m = Manifest::load(rp.manifest());
  WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  auto heads = load_heads(rp);
  const TreeHead* h = find_head(heads, size);
  if (!h) throw Error(size ? "no signed head of size " + std::to_string(*size) : "no signed heads", rp.heads());
  if (step >= h->size)
    throw Error("entry " + std::to_string(step) + " is not covered by the head",
                     "head of size " + std::to_string(h->size), "sign a newer head or pass --size");
  if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
  nlohmann::json doc = log_inclusion_document(log, *h, step);
  emit(out, doc);
  if (!quiet) cli::note("entry " + std::to_string(step) + " under the head of size " + std::to_string(h->size));
  return cli::kOk;
}

int log_consistency_cmd(const std::string& run, uint64_t old_size, uint64_t new_size, const std::string& out, bool quiet) {
  const RunPaths rp(run.empty() ? "." : run);
  const Manifest m = Manifest::load(rp.manifest());
  WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  if (old_size == 0) throw Error("OLD_SIZE must be at least 1", "0");
  if (old_size > new_size)
    throw Error("OLD_SIZE is larger than NEW_SIZE", std::to_string(old_size) + " > " + std::to_string(new_size));
  if (new_size > log.size())
    throw Error("NEW_SIZE is beyond the log", rp.log() + " has " + std::to_string(log.size()) + " entries");
  std::vector<TreeHead> heads;
  if (exists(rp.heads())) heads = load_heads(rp);
  const TreeHead* oh = find_head(heads, old_size);
  const TreeHead* nh = find_head(heads, new_size);
  for (const TreeHead* h : {oh, nh})
    if (h)
      if (auto p = head_unusable(*h, m, &log)) return invalid(*p);
  emit(out, log_consistency_document(log, m.run_id(), old_size, new_size, oh, nh));
  if (!quiet)
    cli::note("from size " + std::to_string(old_size) + " (" + (oh ? "signed head" : "unsigned log root") +
                   ") to size " + std::to_string(new_size) + " (" + (nh ? "signed head" : "unsigned log root") + ")");
  return cli::kOk;
}

int log_check_proof_cmd(const std::string& proof_path, const std::string& key_path, const std::string& pin_run, bool json_out) {
  LogProofPins pins;
  if (!key_path.empty()) pins.key = load_public_key(key_path);
  if (!pin_run.empty()) {
    const Manifest m = Manifest::load(RunPaths(pin_run).manifest());
    if (pins.key && *pins.key != m.trainer_key)
      throw Error("--key is not the trainer key of --run", key_path);
    pins.key = m.trainer_key;
    pins.run_id = m.run_id();
  }
  const std::string where = proof_path == "-" ? "stdin" : proof_path;
  const nlohmann::json doc = jsonf::parse(read_file(proof_path), "invalid log proof", where);
  return cli::print_verdict(verify_log_proof(doc, pins, where), json_out);
}

int log_verify_cmd(const std::string& run, bool checkpoints, bool init, bool json_out, bool quiet) {
  const RunPaths rp(run.empty() ? "." : run);
  RunCheckOptions opt;
  opt.checkpoints = checkpoints;
  opt.init = init;
  RunVerdict v = verify_run(run, opt);
  if (!quiet)
    for (const auto& w : v.warnings) cli::note("warning: " + w);
  const int rc = cli::print_verdict(v, json_out, v.details());
  // A run killed or stopped mid-training is invalid only until it is resumed.
  if (!v.ok && !v.seed_revealed && !exists(rp.seed()) && !quiet)
    std::cerr << "hint: the run is not finished (its seed is not revealed yet); if training was stopped, rerun "
                 "the same wit-train command to resume: it signs the rest\n";
  return rc;
}

}  // namespace wit
