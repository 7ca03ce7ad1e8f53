// The subcommands of wit-board (board_cmd.h): what main used to decide.
#include "wit/cmd/board_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "wit/run/bundle.h"
#include "wit/run/challenge.h"
#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/run_bundle.h"
#include "wit/run/wlog.h"

namespace wit {

namespace fs = std::filesystem;

namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void check_fraction(double f) {
  if (!(f > 0 && f <= 1)) throw Error("--fraction must be in (0, 1]", std::to_string(f));
}

// A bundle given to challenge or add must be whole: its index checks out.
RunBundle load_whole(const std::string& path) {
  if (!lexists(path)) throw Error("no such bundle", path);
  RunBundle b = RunBundle::load(path);
  b.require_whole(path);
  return b;
}

std::string member_path(const RunBundle& b, const std::string& name) {
  return b.archive ? b.path + ":" + name : (fs::path(b.path) / name).string();
}

// The bundles named by the arguments: a directory with bundle.json is a
// bundle, any other directory a folder of bundles (its subdirectories and
// *.wbundle files), a file a .wbundle.
std::vector<std::string> expand_bundles(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (!lexists(a)) throw Error("no such bundle or folder", a);
    if (!is_dir(a) || lexists((fs::path(a) / kRunBundleIndex).string())) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> inner;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(a, ec)) {
      const std::string p = e.path().string();
      if (e.is_directory() || (e.is_regular_file() && is_wbundle_path(p))) inner.push_back(p);
    }
    if (ec) throw Error("cannot read folder: " + ec.message(), a);
    std::sort(inner.begin(), inner.end());
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

std::string first_line(const RunEntry& e) {
  const std::string d = e.describe();
  return d.substr(0, d.find('\n'));
}

}  // namespace

void note_unexpected_files(const std::string& dir, const BoardDefinition& def) {
  for (const auto& f : unexpected_board_files(dir, def))
    cli::note("unexpected file in the board folder (it counts for nothing; remove it or restore the folder from its "
              "history): " + (fs::path(dir) / f).string());
}

int board_prune_cmd(const std::string& dir, const std::string& store, const std::vector<std::string>& runs,
                    const std::string& before, bool quiet) {
  uint64_t t = 0;
  if (!before.empty()) {
    struct tm tm {};
    const char* end = ::strptime(before.c_str(), "%Y-%m-%d", &tm);
    if (!end || *end) throw Error("--before must be a date YYYY-MM-DD (UTC)", before);
    t = uint64_t(::timegm(&tm));
  }
  if (runs.empty() && t == 0) throw Error("say what to prune: --run NAME or --before DATE", dir);
  const PruneResult r = prune_board(dir, store, runs, t, uint64_t(::time(nullptr)));
  for (const auto& p : r.pruned) std::cout << p << "\n";
  if (!quiet && r.pruned.empty()) cli::note("nothing to prune: no stored file of the runs chosen that no other run names");
  else if (!quiet)
    cli::note("pruned " + std::to_string(r.pruned.size()) + " stored files (" + std::to_string(r.bytes) +
              " bytes) from the evidence store, recorded in " + (fs::path(dir) / board_path::kPruned).string() +
              "; the board's signed documents and verdicts stand, and 'wit-board audit' lists them as not re-verifiable");
  return cli::kOk;
}

int board_init_cmd(const BoardInit& in, bool quiet) {
  const BoardDefinition d = init_board(in);
  std::cout << (fs::path(in.dir) / board_path::kDefinition).string() << "\n";
  if (!quiet)
    cli::note("board " + d.name + ": benchmark of " + std::to_string(d.benchmark.n) + " records, certified from " +
                   percent(d.policy.confidence) + " against tampering with " + fraction_percent(d.policy.fraction) +
                   " of the steps; board key " + d.key.hex() + " (secret half in " + in.key_path + ")");
  return cli::kOk;
}

int board_reveal_cmd(const std::string& dir, const std::string& key_path, const std::string& sealed_path, bool quiet) {
  const SecretKey key = load_key(key_path);
  const BoardDefinition d = reveal_sealed(dir, key, sealed_path);
  const auto& r = d.revealed.back();
  std::cout << (fs::path(dir) / r.file).string() << "\n";
  if (!quiet)
    cli::note("revealed epoch " + std::to_string(r.commit.epoch) + ": " + std::to_string(r.commit.n) +
              " sealed records and their salts are now in the folder; anyone re-scores them with 'wit-board audit " + dir +
              "'; seal the next epoch with 'wit-board seal'");
  return cli::kOk;
}

int board_seal_cmd(const std::string& dir, const std::string& key_path, const std::string& sealed_path,
                   const std::vector<std::string>& files, bool quiet) {
  const SecretKey key = load_key(key_path);
  const BoardDefinition d = seal_board(dir, key, sealed_path, files);
  std::cout << (fs::path(dir) / board_path::kDefinition).string() << "\n";
  if (!quiet)
    cli::note("sealed epoch " + std::to_string(d.sealed->epoch) + ": " + std::to_string(d.sealed->n) +
              " records, kept with their salts in " + sealed_path + " (outside the folder); root " + d.sealed->root.hex());
  return cli::kOk;
}

namespace {

// What submit checks before a bundle goes on a board (pack --board checks the
// same before writing anything): whole, no board member, on the benchmark, a
// model the policy takes, what the board needs that only the trainer can
// give, a free name and a run id not on the board yet. Returns where it goes.
std::string check_submittable(const std::string& dir, const BoardDefinition& def, const RunBundle& b, const std::string& where) {
  b.require_whole(where);
  const std::string name = b.declared_name();
  // The board's own members are the board's to write.
  for (const auto& [m, bytes] : b.files)
    if (m.rfind(member::kDraws, 0) == 0 || m.rfind(member::kBoardReports, 0) == 0 || m == member::kBoardEval ||
        m == member::kBoardLeaves || m == member::kStoredLog)
      throw Error("the bundle holds " + m +
                      ": only the board writes draws, board reports, its evaluation, its tree audit and where it stored the log",
                  where);
  if (b.has(member::kEvalCommit)) {
    const Commitment ec = Commitment::from_json(
        nlohmann::json::parse(b.get(member::kEvalCommit), nullptr, false), member::kEvalCommit);
    if (auto p = def.benchmark_problem(ec.root, ec.n)) throw Error("the run is " + *p, where);
  }
  const Manifest mf = Manifest::from_json(nlohmann::json::parse(b.get(member::kManifest), nullptr, false), member::kManifest);
  if (auto p = def.policy.model_problem(mf.model.scripted() ? mf.model.file.hex() : "")) throw Error(*p, where);
  if (auto p = contamination_problem(def, b.has(member::kContamination))) throw Error(*p, where, "pack the bundle with --board DIR --data-index INDEX");
  const std::string to = (fs::path(dir) / board_path::kRuns / name).string();
  if (lexists(to)) throw Error("a run named " + name + " is already on the board", to);
  // One run, one entry: the same run id under another name is refused, naming the entry.
  const std::string run_id = mf.run_id().hex();
  std::error_code ec_dir;
  for (const auto& x : fs::directory_iterator(fs::path(dir) / board_path::kRuns, ec_dir)) {
    if (x.path().filename().string()[0] == '.') continue;
    const std::string m = (x.path() / member::kManifest).string();
    if (!fs::is_regular_file(m)) continue;
    const nlohmann::json j = nlohmann::json::parse(read_file(m), nullptr, false);
    if (j.is_discarded()) continue;
    std::string other;
    try {
      other = Manifest::from_json(j, m).run_id().hex();
    } catch (const Error&) {
      continue;  // a damaged entry: build names it
    }
    if (other == run_id)
      throw Error("the run (run id " + run_id.substr(0, 16) + ") is already on the board as " +
                      x.path().filename().string() + ": one run, one entry",
                  where);
  }
  return to;
}

// On a board with an evidence store: the run's log goes to the store
// (logs/DIGEST.wlog, staged and checked like any stored file) and
// log.stored.json takes run.wlog's place in the bundle, so that no file in
// the folder grows with the run's length. A log that fails check 4 stays in
// the folder: build rejects the run for it, as on a board without a store.
void store_log(const std::string& dir, const BoardDefinition& def, RunBundle& b, const std::string& name) {
  StoredLog doc;
  try {
    doc = derive_stored_log(b, b.get(member::kLog));
  } catch (const Error&) {
    return;  // the verdict's business: build names the reason
  }
  const std::string store = board_store(dir, def);
  remove_stale_board_temporaries(dir, store);
  StagedFile in(store, board_path::kLogs, "");
  write_file_atomic(in.path(), b.get(member::kLog), true);
  if (file_digest(in.path()) != doc.digest) throw Error("the log changed while it was stored", in.path());
  in.keep((fs::path(store) / doc.path()).string(), doc.digest);
  b.files.erase(member::kLog);
  b.files[member::kStoredLog] = doc.dump();
  b.files[kRunBundleIndex] = b.index_json(name);
}

}  // namespace

int board_submit_cmd(const std::string& u_dir, const std::string& u_bundle, bool quiet) {
  require_board_dir(u_dir);
  const FileLock lock = lock_board(u_dir);
  const BoardDefinition def = BoardDefinition::load(u_dir);  // under the lock, as every writer reads it
  RunBundle b = load_whole(u_bundle);
  const std::string name = b.declared_name();
  const std::string to = check_submittable(u_dir, def, b, u_bundle);
  if (!def.store.empty() && b.has(member::kLog)) store_log(u_dir, def, b, name);
  b.path = to;
  b.archive = false;
  b.save_new();
  std::cout << to << "\n";
  if (!quiet) {
    const RunEntry e = evaluate_run_bundle(b, def.policy.fraction, &def);
    cli::note("submitted " + name + " to board " + def.name + "; the board says: " + first_line(e));
  }
  return cli::kOk;
}

int board_leaves_cmd(const std::string& l_bundle, const std::string& l_file, const std::string& l_key, unsigned l_threads,
                     bool quiet, const std::string& store) {
  const BoardLeavesResult r = board_leaves(l_bundle, l_file, load_key(l_key), l_threads, store);
  std::cout << member_path(RunBundle{l_bundle, false, {}}, r.member) << "\n";
  if (!r.doc.refused.empty()) {
    cli::note("the training tree failed the board's audit: " + r.doc.refused);
    return cli::kNegative;
  }
  if (!quiet)
    cli::note("the board audited " + std::to_string(r.doc.n) + " sorted leaves against the data commitment; stored as " +
                   r.stored);
  return cli::kOk;
}

int board_pack_cmd(const PackInput& given, const std::string& p_out, const std::string& released, bool quiet) {
  if (lexists(p_out)) throw Error("output exists", p_out, "pick a new path; a bundle is never overwritten");
  std::optional<BoardDefinition> def;
  if (!given.board_dir.empty()) {
    if (!is_board_dir(given.board_dir)) throw Error("not a board (no board.def.json)", given.board_dir);
    def = BoardDefinition::load(given.board_dir);
  }
  PackInput in = given;
  // --released: the weights exported from the final checkpoint and bound here (no wit-sketch export / match).
  std::optional<ReleasedWeights> weights;
  if (!released.empty()) {
    if (!in.model_binding.empty())
      throw Error("--released binds the weights it exports; give --released or --model-binding, not both", released);
    if (lexists(released)) throw Error("output exists", released, "pick a new path; a file is never overwritten");
    weights.emplace(export_released(in.run_dir));
    in.model_binding_text = weights->binding;
  }
  RunBundle b = pack_run_bundle(in, def ? &*def : nullptr);
  b.path = p_out;
  b.archive = is_wbundle_path(p_out);
  std::optional<RunEntry> judged;
  if (def) {
    // Everything the board will check before the trainer submits: what submit
    // refuses, and the board's own judgement of the bundle (a rejection here
    // is the one the board would show). Nothing is written on a problem.
    (void)check_submittable(in.board_dir, *def, b, p_out);
    judged = evaluate_run_bundle(b, def->policy.fraction, &*def);
    if (judged->status == BoardStatus::kRejected)
      throw Error("board " + def->name + " would reject the run: " + judged->reason, p_out, "nothing was written");
  }
  if (weights) write_safetensors(released, weights->params);
  try {
    b.save_new();
  } catch (...) {
    if (weights) ::unlink(released.c_str());  // nothing half-done: the weights go with the bundle
    throw;
  }
  if (!quiet) {
    const RunEntry e = judged ? *judged : evaluate_run_bundle(b);
    cli::note("packed " + std::to_string(b.files.size()) + " members into " + p_out + "; the board says: " + first_line(e));
    if (weights)
      cli::note("the released weights (parameters only, bound to the final state) are in " + released +
                ": hand them to the board (wit-board evaluate)");
    if (def)
      cli::note("next: wit-board submit " + in.board_dir + " " + p_out + "; then the board draws challenges (wit-board challenge), "
                "you answer each (wit-replay respond), it replays them (wit-board add) and scores the released weights "
                "(wit-board evaluate)");
  }
  return cli::kOk;
}

int board_build_cmd(const std::vector<std::string>& b_paths, const std::string& b_site, double fraction, bool quiet) {
  check_fraction(fraction);
  std::vector<RunEntry> runs;
  std::optional<BoardDefinition> def;
  if (b_paths.size() == 1 && is_board_dir(b_paths[0])) {
    def = BoardDefinition::load(b_paths[0]);
    fraction = def->policy.fraction;
    runs = evaluate_board(b_paths[0], *def);
    note_unexpected_files(b_paths[0], *def);
  } else {
    for (const auto& p : b_paths)
      if (is_board_dir(p)) throw Error("a board folder is built on its own", p, "wit-board build DIR -o SITE");
    const std::vector<std::string> paths = expand_bundles(b_paths);
    for (const auto& p : paths) runs.push_back(evaluate_bundle_path(p, fraction));
    runs = order_board(std::move(runs));
  }
  write_site(b_site, runs, fraction, def ? &*def : nullptr);
  if (!quiet) {
    size_t cert = 0, pend = 0, rej = 0;
    for (const auto& r : runs)
      (r.status == BoardStatus::kCertified ? cert : r.status == BoardStatus::kPending ? pend : rej)++;
    cli::note(std::to_string(runs.size()) + (runs.size() == 1 ? " run: " : " runs: ") + std::to_string(cert) + " certified, " +
                   std::to_string(pend) + " pending, " + std::to_string(rej) + " rejected; open " + b_site +
                   "/index.html");
  }
  return cli::kOk;
}

int board_challenge_cmd(const BoardChallengeArgs& a, bool quiet) {
  if (a.nonce.empty() == a.key_path.empty())
    throw Error("give --key KEY (the board draws the challenge) or --nonce HEX (a caller's challenge)", "",
                     "run 'wit-board challenge --help' for usage");
  const std::string board_dir = board_of_bundle(a.bundle);
  std::optional<BoardDefinition> def;
  if (!board_dir.empty()) def = BoardDefinition::load(board_dir);
  std::optional<SecretKey> key;
  if (!a.key_path.empty()) {
    key = load_key(a.key_path);
    if (!def) (void)board_of_bundle_or_throw(a.bundle);
    check_board_key(*def, *key, a.bundle);
  } else {
    (void)nonce_from_args(a.nonce, "");  // a bad nonce is refused before anything is read
  }
  if (!a.k && !a.confidence && !def) throw Error("missing -k N or --confidence P --fraction F", "", "run 'wit-board challenge --help' for usage");
  check_outputs_apart({a.bundle, a.bundle + "/" + kRunBundleIndex}, {a.out});
  // Opened before the bundle changes, so an output that cannot be written leaves the bundle as it was.
  std::optional<AtomicFile> out_file;
  if (!a.out.empty()) out_file.emplace(a.out);
  const FileLock lock = lock_run_bundle(a.bundle);
  RunBundle b = load_whole(a.bundle);
  const TreeHead head = newest_signed_head(b);
  std::optional<BoardDraw> draw;
  Hash32 nonce;
  if (key) {
    draw = BoardDraw::make(*key, head.run_id, head, next_draw_number(b), uint64_t(std::time(nullptr)));
    nonce = draw->nonce;
  } else {
    nonce = nonce_from_args(a.nonce, "");
  }
  ChallengeRequest req{a.k, a.confidence, a.fraction, 0, std::nullopt};
  if (!a.k && !a.confidence) req.k = def->draw_k(int64_t(head.size) - 1);  // the board's policy
  const Challenge c = issue_challenge(head, member::kHeads, nonce, req);
  const std::string text = c.to_json().dump(2) + "\n";
  const std::string name = challenge_member_name(c.seed);
  const std::string m = std::string(member::kChallenges) + name + ".json";
  if (b.has(m) && b.get(m) != text)
    throw Error("the bundle holds a different challenge with this name", member_path(b, m));
  if (out_file) out_file->write(text);  // a device such as /dev/full fails here, before the bundle changes
  if (!b.has(m)) b.put_and_save(m, text);
  const std::string dm = std::string(member::kDraws) + name + ".json";
  if (draw && !b.has(dm)) b.put_and_save(dm, draw->to_json().dump(2) + "\n");
  if (out_file) out_file->commit();
  if (a.out != "-") std::cout << member_path(b, m) << "\n";
  if (!quiet)
    cli::note((draw ? "board challenge " + std::to_string(draw->number) + " drawn with the board key: "
                         : std::string("a caller's challenge (its passes add no confidence on a board): ")) +
                   c.guarantee.words());
  return cli::kOk;
}

int board_repair_cmd(const std::string& r_bundle, const std::string& r_name, bool quiet) {
  const RepairResult r = repair_run_bundle(r_bundle, r_name);
  if (!quiet)
    for (const auto& c : r.changes) cli::note(c);
  if (r.problem) throw Error("the bundle is still not whole: " + *r.problem, r_bundle);
  if (!quiet) cli::note(r.changes.empty() ? "nothing to repair: " + r_bundle + " is whole"
                                          : "repaired " + r_bundle + "; run 'wit-board show " + r_bundle + "' for the verdict");
  return cli::kOk;
}

int board_show_cmd(const std::string& s_bundle, std::string s_board, double fraction, bool s_json) {
  // show: something that is not a bundle at all is an error (2); a bundle
  // whose contents do not check out, or that cannot be read (a link inside
  // it), is a verdict (1), as on the board.
  check_fraction(fraction);
  if (!lexists(s_bundle)) throw Error("no such bundle", s_bundle);
  if (is_dir(s_bundle) && !lexists((fs::path(s_bundle) / kRunBundleIndex).string()))
    throw Error("not a run bundle (no bundle.json)", s_bundle);
  if (!is_dir(s_bundle)) {
    char head[sizeof kBundleMagic] = {};
    std::ifstream f(s_bundle, std::ios::binary);
    f.read(head, sizeof head);
    if (std::memcmp(head, kBundleMagic, std::min<size_t>(sizeof head, size_t(f.gcount()))) != 0 || f.gcount() == 0)
      throw Error("not a wit bundle (wrong magic)", s_bundle);
  }
  if (s_board.empty()) s_board = board_of_bundle(s_bundle);
  std::optional<BoardDefinition> def;
  if (!s_board.empty()) {
    if (!is_board_dir(s_board)) throw Error("not a board (no board.def.json)", s_board);
    def = BoardDefinition::load(s_board);
  }
  // A run on its own board is judged with the board (the gap test is corrected over its runs, a copy of
  // another run counts once, a folder that does not match its index is an error).
  std::optional<RunEntry> on_board;
  if (def && board_of_bundle(s_bundle) == s_board)
    for (auto& x : evaluate_board(s_board, *def))
      if (std::error_code ec; fs::equivalent(fs::path(s_board) / board_path::kRuns / x.source, s_bundle, ec))
        on_board = std::move(x);
  const RunEntry e = on_board ? *on_board : evaluate_bundle_path(s_bundle, fraction, def ? &*def : nullptr);
  if (s_json) std::cout << e.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else std::cout << e.describe();
  std::cout.flush();
  if (!std::cout) throw Error("cannot write to stdout");
  return e.status == BoardStatus::kRejected ? cli::kNegative : cli::kOk;
}

}  // namespace wit
