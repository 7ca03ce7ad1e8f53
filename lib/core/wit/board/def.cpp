// A defined board: its definition file, the board key's draws and reports.
// Format: docs/board.md ("A defined board").
#include "wit/board/def.h"

#include <sodium.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include "wit/run/bundle.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/hash/hash.h"
#include "wit/base/json_fields.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/data/readers.h"
#include "wit/hash/rng.h"
#include "wit/run/run_bundle.h"
#include "wit/hash/tags.h"
#include "wit/data/tree_audit.h"

namespace fs = std::filesystem;

namespace wit {

using nlohmann::json;

namespace {

std::string sig_hex(const std::array<uint8_t, 64>& s) { return to_hex(ByteView(s.data(), s.size())); }

std::array<uint8_t, 64> sig_field(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = jsonf::need(j, key, kind, where);
  Bytes b;
  if (!v.is_string() || !from_hex(v.get<std::string>(), b) || b.size() != 64)
    jsonf::bad(kind, std::string("field '") + key + "' is not 128 hex digits", where);
  std::array<uint8_t, 64> out{};
  std::copy(b.begin(), b.end(), out.begin());
  return out;
}

PublicKey key_field(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = jsonf::need(j, key, kind, where);
  PublicKey k;
  if (!v.is_string() || !PublicKey::from_hex(v.get<std::string>(), k))
    jsonf::bad(kind, std::string("field '") + key + "' is not a public key (64 hex digits)", where);
  return k;
}

void check_envelope(const json& j, const char* format, int version, const char* kind, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || j["format"] != format)
    throw Error(std::string("not a ") + kind + " (format is not " + format + ")", where);
  if (!j.contains("version") || !j["version"].is_number_unsigned() || j["version"].get<uint64_t>() != uint64_t(version))
    throw Error(std::string("unsupported ") + kind + " version " + (j.contains("version") ? j["version"].dump() : "none") +
                    " (this wit reads version " + std::to_string(version) + ")",
                where);
}

bool inside(const fs::path& p, const fs::path& dir) {
  const fs::path a = fs::weakly_canonical(p), d = fs::weakly_canonical(dir);
  auto ai = a.begin();
  for (auto di = d.begin(); di != d.end(); ++di, ++ai) {
    if (di->empty()) continue;
    if (ai == a.end() || *ai != *di) return false;
  }
  return true;
}

// Appends n bytes (resize and copy: GCC 12's -Wstringop-overflow misreads
// vector::insert of a range into a small vector).
void put_bytes(Bytes& m, const void* p, size_t n) {
  const size_t at = m.size();
  m.resize(at + n);
  if (n) std::memcpy(m.data() + at, p, n);
}
void put_u64(Bytes& m, uint64_t v) {
  uint8_t t[8];
  put_le64(t, v);
  put_bytes(m, t, 8);
}

}  // namespace

Bytes board_signed_message(std::string_view tag, nlohmann::json doc) {
  doc.erase("signature");
  const std::string body = doc.dump(-1, ' ', false, json::error_handler_t::strict);
  Bytes m;
  put_u64(m, tag.size());
  put_bytes(m, tag.data(), tag.size());
  put_bytes(m, body.data(), body.size());
  return m;
}

Problem board_signature_problem(const PublicKey& claimed, const PublicKey& board, const Bytes& msg,
                                                   const std::array<uint8_t, 64>& signature) {
  if (claimed != board) return "is signed by another key than the board's";
  if (!verify_signature(board, msg, signature)) return "has a bad signature (not the board key's)";
  return std::nullopt;
}

StagedFile::StagedFile(const std::string& store, const char* sub, const std::string& from, const std::string& suffix) {
  std::error_code ec;
  fs::create_directories(fs::path(store) / sub, ec);
  if (ec) throw Error("cannot make the evidence store's folder: " + ec.message(), (fs::path(store) / sub).string());
  tree_ = std::make_unique<TemporaryTree>((fs::path(store) / sub / ".incoming").string());
  path_ = tree_->path() + "/file" + suffix;
  if (from.empty()) return;
  if (!fs::copy_file(from, path_, ec) || ec) throw Error("cannot copy the file into the evidence store: " + ec.message(), from);
}

StagedFile::~StagedFile() = default;  // the tree goes with what is left in it

void StagedFile::keep(const std::string& to, const std::string& digest) {
  std::error_code ec;
  if (fs::is_regular_file(to, ec) && file_digest(to) == digest) return;  // stored once
  fs::rename(path_, to, ec);
  if (ec) throw Error("cannot store the file in the evidence store: " + ec.message(), to);
}

StagedResponse stage_response(const std::string& store, const SpooledBundle& resp) {
  StagedResponse out;
  std::vector<std::string> small;
  for (const std::string& name : resp.names()) {
    if (!ResponsePart::is_part(name)) {
      small.push_back(name);
      continue;
    }
    const bool module = name == kModelFileName;
    auto f = std::make_unique<StagedFile>(store, module ? board_path::kWeights : board_path::kStates, "",
                                          module ? ".pt" : ".safetensors");
    {
      const SpooledBundle::View v = resp.view(name);
      AtomicFile out(f->path(), true);
      out.write(v.bytes());
      out.commit();
    }
    ResponsePart p;
    p.name = name;
    p.digest = file_digest(f->path(), &p.bytes);  // the bytes as written: what is checked is what is kept
    out.files_.push_back({std::move(f), p.path(), p.digest});
    out.parts.push_back(std::move(p));
  }
  if (out.parts.empty()) return out;
  auto f = std::make_unique<StagedFile>(store, board_path::kResponses, "", ".wbundle");
  {
    BundleWriter w(f->path(), uint32_t(small.size()));
    for (const std::string& name : small) {
      const SpooledBundle::View v = resp.view(name);
      w.add(name, v.bytes());
    }
    w.finish();
  }
  out.digest = file_digest(f->path(), &out.bytes);
  out.files_.push_back({std::move(f), std::string(board_path::kResponses) + out.digest + ".wbundle", out.digest});
  return out;
}

void StagedResponse::keep(const std::string& store) {
  for (File& f : files_) f.staged->keep((fs::path(store) / f.rel).string(), f.digest);
}

std::string board_store(const std::string& dir, const BoardDefinition& def, const std::string& given) {
  if (!given.empty()) return given;
  if (def.store.empty()) return dir;
  return fs::path(def.store).is_absolute() ? def.store : (fs::path(dir) / def.store).lexically_normal().string();
}

namespace {

// The evidence store's folders, each holding SUB/DIGEST.EXT.
constexpr const char* kStoreFolders[] = {board_path::kResponses, board_path::kStates, board_path::kWeights, board_path::kLeaves,
                                         board_path::kLogs};

// The name of stored evidence, in the store or (a board without one) the folder: SUB/DIGEST.EXT.
bool stored_evidence_name(const std::string& rel) {
  static const std::pair<const char*, std::vector<const char*>> kinds[] = {{board_path::kResponses, {".wbundle"}},
                                                                           {board_path::kStates, {".safetensors"}},
                                                                           {board_path::kWeights, {".safetensors", ".pt"}},
                                                                           {board_path::kLeaves, {".wleaves"}},
                                                                           {board_path::kLogs, {".wlog"}}};
  for (const auto& [sub, exts] : kinds) {
    const std::string prefix = sub;
    if (rel.rfind(prefix, 0) != 0) continue;
    const std::string name = rel.substr(prefix.size());
    Hash32 h;
    for (const char* ext : exts) {
      const std::string e = ext;
      if (name.size() == 64 + e.size() && name.compare(64, e.size(), e) == 0 && Hash32::from_hex(name.substr(0, 64), h))
        return true;
    }
  }
  return false;
}

bool pid_gone(const std::string& digits) {
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  return ::kill(pid_t(std::stol(digits)), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::vector<std::string> unexpected_board_files(const std::string& dir, const BoardDefinition& def) {
  std::set<std::string> expected = {board_path::kDefinition, board_path::kBenchmarkCommit, board_path::kPruned};
  for (const auto& r : def.records) expected.insert(r.file);
  for (const auto& r : def.revealed) expected.insert(r.file);
  std::error_code ec;
  const bool store_here = fs::equivalent(board_store(dir, def), dir, ec);
  std::vector<std::string> out;
  const fs::path root(dir);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), root, ec).generic_string();
    const std::string top = rel.substr(0, rel.find('/'));
    if (top.rfind(".git", 0) == 0) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (top + "/" == board_path::kRuns) {
      if (rel == top) continue;  // runs/ itself: look at what it holds
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();  // a bundle names its own ignored files
      else out.push_back(rel);
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) continue;
    if (expected.count(rel) || (store_here && stored_evidence_name(rel))) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> unexpected_store_files(const std::string& store) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const char* sub : kStoreFolders)
    for (const auto& x : fs::directory_iterator(fs::path(store) / sub, ec)) {
      const std::string rel = std::string(sub) + x.path().filename().string();
      if (!stored_evidence_name(rel) || !x.is_regular_file(ec)) out.push_back(rel);
    }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> remove_stale_board_temporaries(const std::string& dir, const std::string& store) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const char* sub : kStoreFolders) {
    // Older versions staged in the folder: SUB/.incoming-PID[SUFFIX].
    for (const auto& x : fs::directory_iterator(fs::path(dir) / sub, ec)) {
      const std::string name = x.path().filename().string();
      if (name.rfind(".incoming-", 0) != 0) continue;
      const std::string pid = name.substr(10, name.find('.', 10) == std::string::npos ? std::string::npos : name.find('.', 10) - 10);
      if (!pid_gone(pid)) continue;
      std::error_code rec;
      if (fs::remove(x.path(), rec)) out.push_back(x.path().string());
    }
    const fs::path target = fs::path(store) / sub / ".incoming";
    std::vector<std::string> before;
    for (const auto& x : fs::directory_iterator(target.parent_path(), ec))
      if (x.path().filename().string().rfind(".incoming.tmp.", 0) == 0) before.push_back(x.path().string());
    remove_stale_temporaries(target.string());
    for (const auto& b : before)
      if (!fs::exists(b, ec)) out.push_back(b);
  }
  return out;
}

namespace {

PruneRecord read_pruned(const std::string& dir) {
  const std::string p = (fs::path(dir) / board_path::kPruned).string();
  std::error_code ec;
  if (!fs::exists(p, ec)) return {};
  return PruneRecord::from_json(jsonf::parse(read_file(p), "invalid prune record", p), p);
}

}  // namespace

std::string utc_date(uint64_t t) {
  const time_t tt = time_t(t);
  struct tm tm {};
  ::gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

namespace {

// The store paths a run's board documents name (its evidence), parsed as
// the board wrote them; a document that does not parse names nothing here
// (build and audit say what is wrong with it).
std::vector<std::string> run_evidence(const RunBundle& b) {
  std::vector<std::string> out;
  auto doc = [&](const std::string& m) { return jsonf::parse(b.get(m), "invalid board document", m); };
  try {
    for (const std::string& name : b.names_under(member::kBoardReports)) {
      const BoardReport r = BoardReport::from_json(doc(std::string(member::kBoardReports) + name + ".json"), name);
      out.push_back(r.response_path());
      for (const ResponsePart& p : r.parts) out.push_back(p.path());  // a part shared with a kept run stays
    }
    if (b.has(member::kBoardEval)) {
      const BoardEval e = BoardEval::from_json(doc(member::kBoardEval), member::kBoardEval);
      out.push_back(e.weights_path());
      if (!e.model_digest.empty()) out.push_back(e.model_path());
    }
    if (b.has(member::kBoardLeaves))
      out.push_back(BoardLeaves::from_json(doc(member::kBoardLeaves), member::kBoardLeaves).leaves_path());
    if (b.has(member::kStoredLog)) out.push_back(StoredLog::from_json(doc(member::kStoredLog), member::kStoredLog).path());
  } catch (const std::exception&) {
  }
  std::sort(out.begin(), out.end());  // each file once (two responses' shared state, a module both scored and replayed)
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The Unix time of a run's newest board draw (0: none).
uint64_t newest_draw(const RunBundle& b) {
  uint64_t t = 0;
  for (const std::string& name : b.names_under(member::kDraws)) {
    try {
      const std::string m = std::string(member::kDraws) + name + ".json";
      t = std::max(t, BoardDraw::from_json(jsonf::parse(b.get(m), "invalid board draw", m), m).drawn_at);
    } catch (const std::exception&) {
    }
  }
  return t;
}

}  // namespace

json PruneRecord::to_json() const {
  json a = json::array();
  for (const auto& e : pruned) a.push_back({{"path", e.path}, {"at", e.at}, {"runs", e.runs}});
  return {{"format", kBoardPrunedFormat}, {"version", kBoardDocVersion}, {"pruned", a}};
}

PruneRecord PruneRecord::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid prune record";
  check_envelope(j, kBoardPrunedFormat, kBoardDocVersion, "prune record", where);
  jsonf::only_keys(j, {"format", "version", "pruned"}, kind, where);
  const json& a = jsonf::array(j, "pruned", kind, where);
  PruneRecord r;
  for (const auto& x : a) {
    if (!x.is_object()) throw Error("invalid prune record: an entry is not an object", where);
    jsonf::only_keys(x, {"path", "at", "runs"}, kind, where);
    Entry e;
    e.path = jsonf::str(x, "path", kind, where);
    e.at = jsonf::u64(x, "at", kind, where);
    const json& runs = jsonf::array(x, "runs", kind, where);
    for (const auto& n : runs) {
      if (!n.is_string() || !run_bundle_name_ok(n.get<std::string>()))
        throw Error("invalid prune record: a run name is not 1 to 64 of A-Z a-z 0-9 . _ -", where);
      e.runs.push_back(n.get<std::string>());
    }
    r.pruned.push_back(std::move(e));
  }
  return r;
}

std::vector<int64_t> curve_steps(int64_t T, size_t points) {
  std::vector<int64_t> out;
  if (T < 1) return out;
  points = std::max<size_t>(points, 2);
  if (uint64_t(T) <= points) {
    for (int64_t s = 1; s <= T; s++) out.push_back(s);
    return out;
  }
  for (size_t i = 0; i < points; i++)
    out.push_back(1 + int64_t((unsigned __int128)(i) * uint64_t(T - 1) / (points - 1)));
  return out;
}

std::string StoredLog::path() const { return std::string(board_path::kLogs) + digest + ".wlog"; }

json StoredLog::to_json() const {
  json steps = json::array(), losses = json::array();
  for (const auto& [s, l] : curve) {
    steps.push_back(s);
    losses.push_back(l);
  }
  return {{"format", kBoardLogFormat}, {"version", kBoardDocVersion}, {"path", path()},  {"digest", digest},
          {"size", size},              {"entries", entries},          {"curve", {{"steps", steps}, {"mean_loss", losses}}}};
}

std::string StoredLog::dump() const { return to_json().dump(2) + "\n"; }

StoredLog StoredLog::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid stored log";
  check_envelope(j, kBoardLogFormat, kBoardDocVersion, "stored log", where);
  jsonf::only_keys(j, {"format", "version", "path", "digest", "size", "entries", "curve"}, kind, where);
  StoredLog d;
  d.digest = jsonf::hash(j, "digest", kind, where).hex();
  if (jsonf::str(j, "path", kind, where) != d.path())
    throw Error("invalid stored log: the log's path is not logs/DIGEST.wlog", where);
  d.size = jsonf::u64(j, "size", kind, where);
  d.entries = jsonf::u64(j, "entries", kind, where);
  if (d.entries < 2 || d.entries > (uint64_t(1) << 40)) throw Error("invalid stored log: entries is not a run's (2 or more)", where);
  const json& c = jsonf::need(j, "curve", kind, where);
  if (!c.is_object()) throw Error("invalid stored log: field 'curve' is not an object", where);
  jsonf::only_keys(c, {"steps", "mean_loss"}, kind, where);
  const json& steps = jsonf::need(c, "steps", kind, where);
  const json& losses = jsonf::need(c, "mean_loss", kind, where);
  const std::vector<int64_t> want = curve_steps(int64_t(d.entries - 1));
  if (!steps.is_array() || !losses.is_array() || steps.size() != want.size() || losses.size() != want.size())
    throw Error("invalid stored log: the curve is not " + std::to_string(want.size()) + " steps and their mean losses", where);
  for (size_t i = 0; i < want.size(); i++) {
    if (!steps[i].is_number_integer() || steps[i].get<int64_t>() != want[i])
      throw Error("invalid stored log: the curve's step " + std::to_string(i) + " is not " + std::to_string(want[i]), where);
    // null: a loss that is not finite (a diverged run logs one; JSON has no NaN).
    if (!losses[i].is_number() && !losses[i].is_null())
      throw Error("invalid stored log: the curve's mean loss " + std::to_string(i) + " is not a number", where);
    d.curve.emplace_back(want[i], losses[i].is_null() ? std::numeric_limits<double>::quiet_NaN() : losses[i].get<double>());
  }
  return d;
}

std::map<std::string, std::string> pruned_evidence(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : read_pruned(dir).pruned) {
    std::string runs;
    for (const auto& r : e.runs) runs += (runs.empty() ? "" : ", ") + r;
    out[e.path] = "pruned from the store on " + utc_date(e.at) + " (runs " + runs + ")";
  }
  return out;
}

RunPruned run_pruned(const std::string& dir, const RunBundle& b) {
  RunPruned out;
  const PruneRecord rec = read_pruned(dir);
  if (rec.pruned.empty()) return out;
  std::map<std::string, uint64_t> at;
  for (const auto& e : rec.pruned) at[e.path] = std::max(at[e.path], e.at);
  for (const auto& p : run_evidence(b)) {
    out.of++;
    if (auto it = at.find(p); it != at.end()) {
      out.files++;
      out.at = std::max(out.at, it->second);
      out.log = out.log || p.rfind(board_path::kLogs, 0) == 0;
    }
  }
  return out;
}

PruneResult prune_board(const std::string& dir, const std::string& store_given, const std::vector<std::string>& runs,
                        uint64_t before, uint64_t now) {
  require_board_dir(dir);
  const FileLock lock = lock_board(dir);
  const BoardDefinition def = BoardDefinition::load(dir);  // under the lock, as every writer reads it
  const std::string store = board_store(dir, def, store_given);
  remove_stale_board_temporaries(dir, store);
  std::map<std::string, std::set<std::string>> chosen;  // store path -> runs that name it
  std::set<std::string> kept;
  std::set<std::string> named(runs.begin(), runs.end()), seen;
  std::error_code ec;
  std::vector<fs::path> folders;
  for (const auto& x : fs::directory_iterator(fs::path(dir) / board_path::kRuns, ec)) folders.push_back(x.path());
  std::sort(folders.begin(), folders.end());
  for (const auto& f : folders) {
    const std::string name = f.filename().string();
    RunBundle b;
    try {
      b = RunBundle::load(f.string());
    } catch (const std::exception&) {
      continue;  // names nothing the prune could keep or drop
    }
    seen.insert(name);
    const uint64_t t = newest_draw(b);
    const bool drop = named.count(name) || (before > 0 && t > 0 && t < before);
    for (const auto& p : run_evidence(b)) {
      if (drop) chosen[p].insert(name);
      else kept.insert(p);
    }
  }
  for (const auto& n : named)
    if (!seen.count(n)) throw Error("no run " + n + " on board " + def.name, dir);
  PruneRecord rec = read_pruned(dir);
  PruneResult out;
  for (const auto& [p, who] : chosen) {
    if (kept.count(p)) continue;  // another run still rests on these bytes
    out.pruned.push_back(p);
    rec.pruned.push_back({p, now, std::vector<std::string>(who.begin(), who.end())});
  }
  if (out.pruned.empty()) return out;
  // The record first: a prune cut short leaves bytes recorded as pruned (audit
  // re-verifies what is still there), never bytes gone unrecorded.
  write_file_atomic((fs::path(dir) / board_path::kPruned).string(), rec.to_json().dump(2) + "\n");
  for (const auto& p : out.pruned) {
    const fs::path at = fs::path(store) / p;
    const uint64_t n = fs::is_regular_file(at, ec) ? fs::file_size(at, ec) : 0;
    if (fs::remove(at, ec)) out.bytes += n;
    if (ec) throw Error("cannot remove it from the store: " + ec.message(), at.string());
  }
  return out;
}

std::string file_digest(const std::string& path, uint64_t* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open", path);
  Blake2b h;
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize got = in.gcount();
    if (got > 0) h.update(ByteView(reinterpret_cast<const uint8_t*>(buf.data()), size_t(got)));
    total += uint64_t(std::max<std::streamsize>(got, 0));
  }
  if (in.bad()) throw Error("cannot read", path);
  if (bytes) *bytes = total;
  return h.final().hex();
}

NotReVerifiable not_in_store(const std::string& store, const std::string& rel, const char* what,
                             const std::map<std::string, std::string>& pruned) {
  const auto it = pruned.find(rel);
  return NotReVerifiable(std::string("its ") + what + " " + rel + " is not in the store " + store +
                         (it != pruned.end() ? " (" + it->second + "; the signed document stands, but can no longer be "
                                                                    "replayed from the store)"
                                             : std::string()));
}

NotReVerifiable other_bytes_in_store(const std::string& rel, const char* what) {
  return NotReVerifiable(std::string("the store serves other bytes for its ") + what + " " + rel + " than its digest");
}

Fd open_stored(const std::string& store, const std::string& rel, const char* what,
               const std::map<std::string, std::string>& pruned, const StoreOpen& open) {
  const std::string p = (fs::path(store) / rel).string();
  Fd in = open ? open(p) : Fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!in.ok() || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw not_in_store(store, rel, what, pruned);
  return in;
}

StoredCopy::StoredCopy(const std::string& store, const std::string& rel, const std::string& digest, const char* what,
                       const std::map<std::string, std::string>& pruned, const StoreOpen& open) {
  const std::string p = (fs::path(store) / rel).string();
  const Fd in = open_stored(store, rel, what, pruned, open);
  dir_ = std::make_unique<TempDir>("wit-audit");
  tree_ = std::make_unique<TemporaryTree>(*dir_ / "copy");
  path_ = tree_->path() + "/" + fs::path(rel).filename().string();
  Fd out(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out.ok()) throw Error("cannot make a private copy of stored evidence: " + errno_text(), path_);
  Blake2b h;
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const ssize_t got = ::read(in.get(), buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read stored evidence: " + errno_text(), p);
    if (got == 0) break;
    h.update(ByteView(buf.data(), size_t(got)));
    for (ssize_t done = 0; done < got;) {
      const ssize_t w = ::write(out.get(), buf.data() + done, size_t(got - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error("cannot make a private copy of stored evidence: " + errno_text(), path_);
      done += w;
    }
  }
  if (!out.close()) throw Error("cannot make a private copy of stored evidence: " + errno_text(), path_);
  if (h.final().hex() != digest) throw other_bytes_in_store(rel, what);
}

// --- the sealed split

std::string revealed_file(uint64_t epoch) { return std::string(board_path::kRevealed) + "epoch-" + std::to_string(epoch) + ".json"; }

Hash32 sealed_leaf(const Hash32& salt, ByteView record) {
  std::string b(reinterpret_cast<const char*>(salt.data()), 32);
  b.append(reinterpret_cast<const char*>(record.data), record.size);
  return hash_tagged(tags::kBoardSealedLeaf, ByteView(b));
}

SealedSet SealedSet::seal(const std::string& board, uint64_t epoch, const std::vector<std::string>& records) {
  SealedSet s;
  s.board = board;
  s.epoch = epoch;
  std::vector<std::string> distinct(records);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (auto& r : distinct) {
    SealedRecord x;
    randombytes_buf(x.salt.data(), 32);  // secret until the reveal: a guessed record cannot be tested
    x.leaf = sealed_leaf(x.salt, ByteView(r));
    x.record = std::move(r);
    s.records.push_back(std::move(x));
  }
  std::sort(s.records.begin(), s.records.end(), [](const SealedRecord& a, const SealedRecord& b) { return a.leaf < b.leaf; });
  return s;
}

std::vector<Hash32> SealedSet::leaves() const {
  std::vector<Hash32> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(r.leaf);
  return out;
}

Hash32 SealedSet::root() const { return merkle_root(kBlake2bTree, leaves()); }

json SealedSet::to_json() const {
  json recs = json::array();
  for (const auto& r : records)
    recs.push_back({{"salt", r.salt.hex()}, {"record_hex", to_hex(ByteView(r.record))}, {"leaf", r.leaf.hex()}});
  return {{"format", kBoardSealedFormat}, {"version", kBoardDocVersion}, {"board", board}, {"epoch", epoch},
          {"n", records.size()},          {"root", root().hex()},          {"records", recs}};
}

std::string SealedSet::dump() const { return to_json().dump(2) + "\n"; }

SealedSet SealedSet::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid sealed set";
  check_envelope(j, kBoardSealedFormat, kBoardDocVersion, "sealed set", where);
  jsonf::only_keys(j, {"format", "version", "board", "epoch", "n", "root", "records"}, kind, where);
  SealedSet s;
  s.board = jsonf::str(j, "board", kind, where);
  s.epoch = jsonf::u64(j, "epoch", kind, where);
  const json& recs = jsonf::array(j, "records", kind, where);
  for (const auto& r : recs) {
    if (!r.is_object()) throw Error("invalid sealed set: a record is not an object", where);
    jsonf::only_keys(r, {"salt", "record_hex", "leaf"}, kind, where);
    SealedRecord x;
    x.salt = jsonf::hash(r, "salt", kind, where);
    Bytes b;
    if (!from_hex(jsonf::str(r, "record_hex", kind, where), b)) throw Error("invalid sealed set: a record is not hex", where);
    x.record.assign(b.begin(), b.end());
    x.leaf = sealed_leaf(x.salt, ByteView(x.record));
    if (x.leaf != jsonf::hash(r, "leaf", kind, where))
      throw Error("invalid sealed set: record " + std::to_string(s.records.size()) + "'s leaf is not H(tag || salt || record)", where);
    if (!s.records.empty() && !(s.records.back().leaf < x.leaf))
      throw Error("invalid sealed set: the records are not in strictly increasing leaf order", where);
    s.records.push_back(std::move(x));
  }
  if (s.records.empty()) throw Error("invalid sealed set: no records", where);
  if (jsonf::u64(j, "n", kind, where) != s.records.size()) throw Error("invalid sealed set: n is not the number of records", where);
  if (jsonf::hash(j, "root", kind, where) != s.root()) throw Error("invalid sealed set: root is not the records' root", where);
  return s;
}

SealedSet SealedSet::load(const std::string& path) {
  return from_json(jsonf::parse(read_file(path), "invalid sealed set", path), path);
}

Problem SealedSet::problem(const std::string& def_name, const SealedCommit& c) const {
  if (board != def_name) return "is the sealed set of board " + board + ", not " + def_name;
  if (epoch != c.epoch || records.size() != c.n || root() != c.root)
    return "is not the sealed set board.def.json commits to (epoch " + std::to_string(c.epoch) + ", " +
           std::to_string(c.n) + " records, root " + c.root.hex().substr(0, 16) + ")";
  return std::nullopt;
}

Problem BoardPolicy::overlap_problem() const {
  if (overlap_window < 8 || overlap_window > 4096) return "overlap window must be 8 to 4096 tokens";
  if (!(overlap_share > 0 && overlap_share <= 1)) return "overlap share must be in (0, 1]";
  if (overlap_action != "reject" && overlap_action != "flag") return "overlap action must be reject or flag";
  return std::nullopt;
}

Problem BoardPolicy::model_problem(const std::string& file_hex) const {
  if (models == "any") return std::nullopt;
  if (models == "builtin") {
    if (file_hex.empty()) return std::nullopt;
    return "the board takes the built-in GPT only (policy.models), not the TorchScript module " + file_hex;
  }
  if (file_hex.empty()) return "the board takes only the TorchScript modules it reviewed (policy.models), not the built-in GPT";
  for (const auto& d : model_digests)
    if (d == file_hex) return std::nullopt;
  return "the board has not reviewed the TorchScript module " + file_hex + " (policy.models lists the digests it takes)";
}

// --- the definition

json BoardDefinition::to_json() const {
  json recs = json::array();
  for (const auto& r : records) recs.push_back({{"file", r.file}, {"digest", r.digest}});
  auto policy_json = [&] {
    json p = {{"fraction", policy.fraction}, {"confidence", policy.confidence}, {"k", policy.k},
              {"gap_threshold", policy.gap_threshold},
              {"overlap", {{"window", policy.overlap_window}, {"share", policy.overlap_share}, {"action", policy.overlap_action}}}};
    p["models"] = policy.models == "list" ? json(policy.model_digests) : json(policy.models);
    return p;
  };
  auto sealed_json = [](const SealedCommit& c) { return json{{"epoch", c.epoch}, {"n", c.n}, {"root", c.root.hex()}}; };
  json j = {{"format", kBoardDefinitionFormat},
          {"version", kBoardDefinitionVersion},
          {"name", name},
          {"key", key.hex()},
          {"benchmark",
           {{"commit", board_path::kBenchmarkCommit},
            {"commit_digest", benchmark_digest},
            {"root", benchmark.root.hex()},
            {"n", benchmark.n},
            {"reader", benchmark.reader.to_json()},
            {"records", recs},
            {"metric", metric}}},
          {"policy", policy_json()}};
  if (sealed) j["sealed"] = sealed_json(*sealed);
  if (!revealed.empty()) {
    json r = json::array();
    for (const auto& e : revealed) {
      json x = sealed_json(e.commit);
      x["file"] = e.file;
      x["digest"] = e.digest;
      r.push_back(x);
    }
    j["revealed"] = r;
  }
  if (!store.empty()) j["store"] = store;
  if (signature) j["signature"] = sig_hex(*signature);
  return j;
}

std::string BoardDefinition::dump() const { return to_json().dump(2) + "\n"; }

void BoardDefinition::sign_with(const SecretKey& k) {
  signature.reset();
  signature = sign(k, board_signed_message(tags::kBoardDefinition, to_json()));
}

BoardDefinition BoardDefinition::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid board definition";
  check_envelope(j, kBoardDefinitionFormat, kBoardDefinitionVersion, "board definition", where);
  jsonf::only_keys(j, {"format", "version", "name", "key", "benchmark", "policy", "sealed", "revealed", "store", "signature"}, kind,
                   where);
  BoardDefinition d;
  d.name = jsonf::str(j, "name", kind, where);
  if (!run_bundle_name_ok(d.name)) throw Error("invalid board definition: field 'name' is not 1 to 64 of A-Z a-z 0-9 . _ -", where);
  d.key = key_field(j, "key", kind, where);
  const json& b = jsonf::need(j, "benchmark", kind, where);
  if (!b.is_object()) throw Error("invalid board definition: field 'benchmark' is not an object", where);
  jsonf::only_keys(b, {"commit", "commit_digest", "root", "n", "reader", "records", "metric"}, kind, where);
  if (jsonf::str(b, "commit", kind, where) != board_path::kBenchmarkCommit)
    throw Error(std::string("invalid board definition: the benchmark commitment must be ") + board_path::kBenchmarkCommit, where);
  d.benchmark_digest = jsonf::str(b, "commit_digest", kind, where);
  d.benchmark.root = jsonf::hash(b, "root", kind, where);
  d.benchmark.n = jsonf::u64(b, "n", kind, where);
  d.benchmark.reader = ReaderSpec::from_json(jsonf::need(b, "reader", kind, where), where);
  d.metric = jsonf::str(b, "metric", kind, where);
  const json& recs = jsonf::array(b, "records", kind, where);
  for (const auto& r : recs) {
    if (!r.is_object()) throw Error("invalid board definition: a record file is not an object", where);
    BenchmarkRecordFile f{jsonf::str(r, "file", kind, where), jsonf::str(r, "digest", kind, where)};
    const std::string prefix = board_path::kBenchmarkRecords;
    if (f.file.compare(0, prefix.size(), prefix) != 0 || !run_bundle_name_ok(f.file.substr(prefix.size())))
      throw Error("invalid board definition: record file " + f.file + " is not benchmark/records/NAME", where);
    d.records.push_back(f);
  }
  const json& p = jsonf::need(j, "policy", kind, where);
  if (!p.is_object()) throw Error("invalid board definition: field 'policy' is not an object", where);
  jsonf::only_keys(p, {"fraction", "confidence", "k", "gap_threshold", "models", "overlap"}, kind, where);
  d.policy.fraction = jsonf::number(p, "fraction", kind, where);
  d.policy.confidence = jsonf::number(p, "confidence", kind, where);
  d.policy.k = int64_t(jsonf::u64(p, "k", kind, where));
  // Definitions written before the sealed split have none of these: the defaults.
  if (p.contains("gap_threshold")) d.policy.gap_threshold = jsonf::number(p, "gap_threshold", kind, where);
  if (!(d.policy.gap_threshold > 0 && d.policy.gap_threshold < 1))
    throw Error("invalid board definition: policy gap_threshold must be in (0, 1)", where);
  if (p.contains("models")) {
    const json& m = p["models"];
    if (m.is_string() && (m == "any" || m == "builtin")) {
      d.policy.models = m.get<std::string>();
    } else if (m.is_array()) {
      d.policy.models = "list";
      for (const auto& x : m) {
        Hash32 h;
        if (!x.is_string() || !Hash32::from_hex(x.get<std::string>(), h))
          throw Error("invalid board definition: policy models lists a digest that is not 64 hex digits", where);
        d.policy.model_digests.push_back(h.hex());
      }
    } else {
      throw Error("invalid board definition: policy models is not \"any\", \"builtin\" or a list of module digests", where);
    }
  }
  if (p.contains("overlap")) {
    const json& o = p["overlap"];
    if (!o.is_object()) throw Error("invalid board definition: policy overlap is not an object", where);
    jsonf::only_keys(o, {"window", "share", "action"}, kind, where);
    d.policy.overlap_window = jsonf::u64(o, "window", kind, where);
    d.policy.overlap_share = jsonf::number(o, "share", kind, where);
    d.policy.overlap_action = jsonf::str(o, "action", kind, where);
  }
  if (auto p = d.policy.overlap_problem()) throw Error("invalid board definition: policy " + *p, where);
  auto sealed_commit = [&](const json& x) {
    if (!x.is_object()) throw Error("invalid board definition: a sealed commitment is not an object", where);
    SealedCommit c;
    c.epoch = jsonf::u64(x, "epoch", kind, where);
    c.n = jsonf::u64(x, "n", kind, where);
    c.root = jsonf::hash(x, "root", kind, where);
    if (c.n < 1) throw Error("invalid board definition: a sealed split holds no record", where);
    return c;
  };
  if (j.contains("sealed")) {
    jsonf::only_keys(j["sealed"], {"epoch", "n", "root"}, kind, where);
    d.sealed = sealed_commit(j["sealed"]);
  }
  if (j.contains("revealed")) {
    for (const auto& x : jsonf::array(j, "revealed", kind, where)) {
      jsonf::only_keys(x, {"epoch", "n", "root", "file", "digest"}, kind, where);
      BoardDefinition::Revealed r{sealed_commit(x), jsonf::str(x, "file", kind, where), jsonf::str(x, "digest", kind, where)};
      if (r.file != revealed_file(r.commit.epoch))
        throw Error("invalid board definition: a revealed epoch's file is not " + revealed_file(r.commit.epoch), where);
      d.revealed.push_back(r);
    }
  }
  if (j.contains("store")) {
    d.store = jsonf::str(j, "store", kind, where);
    if (d.store.empty() || d.store.size() > 4096 || d.store.find('\0') != std::string::npos)
      throw Error("invalid board definition: field 'store' is not a path", where);
  }
  if (j.contains("signature")) d.signature = sig_field(j, "signature", kind, where);
  if (!(d.policy.fraction > 0 && d.policy.fraction <= 1))
    throw Error("invalid board definition: policy fraction must be in (0, 1]", where);
  if (!(d.policy.confidence > 0 && d.policy.confidence < 1))
    throw Error("invalid board definition: policy confidence must be in (0, 1)", where);
  return d;
}

BoardDefinition BoardDefinition::load(const std::string& dir) {
  const std::string where = (fs::path(dir) / board_path::kDefinition).string();
  const json j = jsonf::parse(read_file(where), "invalid board definition", where);
  BoardDefinition d = from_json(j, where);
  if (d.signature) {
    if (!verify_signature(d.key, board_signed_message(tags::kBoardDefinition, j), *d.signature))
      throw Error("the board definition's signature is not the board key's (edited after it was signed)", where,
                  "restore board.def.json from the folder's history (git checkout)");
  } else if (d.sealed || !d.revealed.empty()) {
    throw Error("the board definition has a sealed split but no signature", where);
  }
  for (const auto& r : d.revealed) {
    const std::string rp = (fs::path(dir) / r.file).string();
    if (file_digest(rp) != r.digest) throw Error("the revealed sealed set does not match its digest in board.def.json", rp);
  }
  const std::string cpath = (fs::path(dir) / board_path::kBenchmarkCommit).string();
  if (file_digest(cpath) != d.benchmark_digest)
    throw Error("the board's benchmark commitment does not match its digest in " + std::string(board_path::kDefinition), cpath);
  const Commitment c = Commitment::load(cpath);
  if (c.root != d.benchmark.root || c.n != d.benchmark.n)
    throw Error("the board's benchmark commitment is not the one the definition names", cpath);
  d.benchmark = c;
  return d;
}

int64_t BoardDefinition::draw_k(int64_t T) const {
  if (T < 1) return 0;
  if (policy.k > 0) return std::min(policy.k, T);
  return k_for_confidence(T, policy.fraction, policy.confidence);
}

Problem BoardDefinition::benchmark_problem(const Hash32& eval_root, uint64_t eval_n) const {
  if (eval_root != benchmark.root || eval_n != benchmark.n)
    return "evaluated on another eval set (root " + eval_root.hex().substr(0, 16) + ", " + std::to_string(eval_n) +
           " records) than board " + name + "'s benchmark (root " + benchmark.root.hex().substr(0, 16) + ", " +
           std::to_string(benchmark.n) + " records)";
  return std::nullopt;
}

std::vector<uint64_t> BoardDefinition::public_epochs_before(uint64_t epoch) const {
  std::vector<uint64_t> out;
  for (const auto& r : revealed)
    if (r.commit.epoch < epoch) out.push_back(r.commit.epoch);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
const BoardDefinition::Revealed& revealed_epoch(const BoardDefinition& d, uint64_t epoch) {
  for (const auto& r : d.revealed)
    if (r.commit.epoch == epoch) return r;
  throw Error("board " + d.name + " has not revealed epoch " + std::to_string(epoch));
}
}  // namespace

Hash32 BoardDefinition::public_split_root(const std::vector<uint64_t>& epochs) const {
  if (epochs.empty()) return benchmark.root;
  Bytes b(benchmark.root.data(), benchmark.root.data() + 32);
  append_le64(b, benchmark.n);
  for (uint64_t e : epochs) {
    const SealedCommit& c = revealed_epoch(*this, e).commit;
    append_le64(b, e);
    b.insert(b.end(), c.root.data(), c.root.data() + 32);
    append_le64(b, c.n);
  }
  return hash_tagged(tags::kBoardPublicSplit, ByteView(b));
}

uint64_t BoardDefinition::public_split_n(const std::vector<uint64_t>& epochs) const {
  uint64_t n = benchmark.n;
  for (uint64_t e : epochs) n += revealed_epoch(*this, e).commit.n;
  return n;
}

Problem BoardDefinition::public_split_problem(const std::vector<uint64_t>& epochs, const Hash32& eval_root,
                                              uint64_t eval_n) const {
  if (epochs.empty()) return benchmark_problem(eval_root, eval_n);
  for (uint64_t e : epochs)
    if (std::none_of(revealed.begin(), revealed.end(), [&](const Revealed& r) { return r.commit.epoch == e; }))
      return "scored on a public split with epoch " + std::to_string(e) + ", which board " + name + " has not revealed";
  const Hash32 root = public_split_root(epochs);
  const uint64_t n = public_split_n(epochs);
  if (eval_root != root || eval_n != n)
    return "evaluated on another eval set (root " + eval_root.hex().substr(0, 16) + ", " + std::to_string(eval_n) +
           " records) than board " + name + "'s public split with " + std::to_string(epochs.size()) +
           " revealed epochs (root " + root.hex().substr(0, 16) + ", " + std::to_string(n) + " records)";
  return std::nullopt;
}

bool is_board_dir(const std::string& dir) {
  struct stat st {};
  return ::stat((fs::path(dir) / board_path::kDefinition).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string board_of_bundle(const std::string& bundle_path) {
  std::string p = bundle_path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const fs::path runs = fs::path(p).parent_path();
  if (runs.filename() != "runs") return "";
  const fs::path dir = runs.parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  return is_board_dir(d) ? d : "";
}

void require_board_dir(const std::string& dir) {
  if (!is_board_dir(dir)) throw Error("not a board (no board.def.json)", dir, "make one with 'wit-board init'");
}

FileLock lock_board(const std::string& dir) { return FileLock::wait_existing(dir, "the board"); }

std::string board_of_bundle_or_throw(const std::string& bundle_path) {
  const std::string dir = board_of_bundle(bundle_path);
  if (dir.empty())
    throw Error("the bundle is not on a defined board (a board's runs are DIR/runs/NAME)", bundle_path,
                "put it on one with 'wit-board submit DIR BUNDLE'");
  return dir;
}

void check_board_key(const BoardDefinition& def, const SecretKey& key, const std::string& where) {
  if (key.pub() != def.key) throw Error("the key is not the board's (its public key is not the one in board.def.json)", where);
}

namespace {
// The definition a writer files under, read once the board is locked (so a
// seal or reveal that ran while it waited is what it sees), the key checked
// against it, then the submitted file checked to exist.
BoardDefinition filing_definition(const std::string& dir, const std::string& bundle_path, const SecretKey& key,
                                  const std::string& input, const char* no_input) {
  BoardDefinition def = BoardDefinition::load(dir);
  check_board_key(def, key, bundle_path);
  if (!fs::is_regular_file(input)) throw Error(no_input, input);
  return def;
}
RunBundle load_whole(const std::string& bundle_path) {
  RunBundle b = RunBundle::load(bundle_path);
  b.require_whole(bundle_path);
  return b;
}
}  // namespace

BoardFiling::BoardFiling(const std::string& bundle_path, const SecretKey& key, const std::string& input, const char* no_input,
                         const std::string& store_given)
    : dir(board_of_bundle_or_throw(bundle_path)),
      board_lock(lock_board(dir)),
      def(filing_definition(dir, bundle_path, key, input, no_input)),
      store(board_store(dir, def, store_given)),
      bundle_lock(lock_run_bundle(bundle_path)),
      bundle(load_whole(bundle_path)) {
  remove_stale_board_temporaries(dir, store);
}

namespace {

// `wit-board init --split N`: N of the benchmark's distinct records drawn at
// random become the sealed set; the rest, in tree order, written in the
// reader's format (benchmark/records/public.EXT, its bytes), is what is published.
std::pair<std::vector<std::string>, std::pair<std::string, std::string>> split_benchmark(const Commitment& c,
                                                                                      const Dataset& ds, uint64_t n,
                                                                                      const std::string& dir) {
  if (n >= ds.size())
    throw Error("--split must leave records to publish: " + std::to_string(n) + " of " + std::to_string(ds.size()) +
                    " distinct records",
                dir);
  Hash32 key;
  randombytes_buf(key.data(), 32);  // secret: which records are sealed is what nobody outside may know
  const std::vector<uint64_t> perm = random_permutation(key, ds.size());
  std::vector<bool> is_sealed(size_t(ds.size()), false);
  for (uint64_t i = 0; i < n; i++) is_sealed[size_t(perm[size_t(i)])] = true;
  std::vector<std::string> sealed;
  std::string out, ext;
  for (uint64_t i = 0; i < ds.size(); i++) {
    const std::string r = ds.record(i);
    if (is_sealed[size_t(i)]) {
      sealed.push_back(r);
      continue;
    }
    switch (c.reader.kind) {
      case ReaderKind::kLines: out += r + "\n"; ext = "txt"; break;
      case ReaderKind::kFortune: out += r + "\n%\n"; ext = "txt"; break;
      case ReaderKind::kJsonl: out += json{{c.reader.field, r}}.dump() + "\n"; ext = "jsonl"; break;
      case ReaderKind::kTokens: out += r; ext = "bin"; break;
      case ReaderKind::kFiles:
        throw Error("--split cannot publish records of the files reader as one file", dir,
                    "give the sealed records with --sealed-records");
    }
  }
  return {std::move(sealed), {std::string(board_path::kBenchmarkRecords) + "public." + ext, std::move(out)}};
}

// The commitment of the published part written by split_benchmark, checked to
// give back exactly its records; its paths are the folder's.
Commitment commit_public(const ReaderSpec& reader, const std::pair<std::string, std::string>& pub, const std::string& dir) {
  const fs::path tmp = fs::temp_directory_path() / ("wit-board-split-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(tmp, ec);
  const std::string path = (tmp / fs::path(pub.first).filename()).string();
  write_file_atomic(path, pub.second, true);
  CommitResult r;
  try {
    r = commit_dataset(reader, {path}, 1);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(tmp, ec);
  Commitment c = r.commitment;
  for (auto& s : c.sources) s.path = pub.first;
  c.inputs = {pub.first};
  (void)dir;
  return c;
}

// The records of `files` (read with `reader`) for a sealed set; one that
// `published` says anyone has read is refused.
std::vector<std::string> sealed_records(const ReaderSpec& reader, const std::vector<std::string>& files,
                                        const std::function<bool(ByteView)>& published) {
  const RecordFiles rf = RecordFiles::open(reader, files);
  std::vector<std::string> recs;
  std::string scratch;
  for (uint64_t i = 0; i < rf.records; i++) {
    const ByteView r = rf.record(i, scratch);
    if (published(r))
      throw Error("sealed record " + std::to_string(i + 1) + " is already published (a benchmark record, or a revealed epoch's)",
                  files.front(),
                  "the sealed split must be records nobody outside the board has read");
    recs.emplace_back(reinterpret_cast<const char*>(r.data), r.size);
  }
  if (recs.empty()) throw Error("the sealed records files hold no record", files.front());
  return recs;
}

// The definition at DIR, with `key` checked to be the board's, for a writer holding the board's lock.
BoardDefinition definition_for_key(const std::string& dir, const SecretKey& key) {
  require_board_dir(dir);
  BoardDefinition d = BoardDefinition::load(dir);
  check_board_key(d, key, dir);
  return d;
}

}  // namespace

BoardDefinition reveal_sealed(const std::string& dir, const SecretKey& key, const std::string& sealed_path) {
  const FileLock lock = lock_board(dir);
  BoardDefinition d = definition_for_key(dir, key);
  if (!d.sealed) throw Error("the board has no sealed epoch to reveal", dir, "'wit-board seal' seals the next one");
  const SealedSet s = SealedSet::load(sealed_path);
  if (auto p = s.problem(d.name, *d.sealed)) throw Error("the sealed set " + *p, sealed_path);
  const std::string rel = revealed_file(s.epoch);
  const std::string text = s.dump();
  std::error_code ec;
  fs::create_directories(fs::path(dir) / board_path::kRevealed, ec);
  if (fs::exists(fs::path(dir) / rel, ec)) throw Error("the epoch is already revealed", (fs::path(dir) / rel).string());
  write_file_atomic((fs::path(dir) / rel).string(), text);
  d.revealed.push_back({*d.sealed, rel, member_digest(text)});
  d.sealed.reset();
  d.sign_with(key);
  write_file_atomic((fs::path(dir) / board_path::kDefinition).string(), d.dump());
  return d;
}

BoardDefinition seal_board(const std::string& dir, const SecretKey& key, const std::string& sealed_path,
                           const std::vector<std::string>& files) {
  const FileLock lock = lock_board(dir);
  BoardDefinition d = definition_for_key(dir, key);
  if (d.sealed)
    throw Error("epoch " + std::to_string(d.sealed->epoch) + " is still sealed", dir,
                "'wit-board reveal' ends it before a new set is sealed");
  if (files.empty()) throw Error("a sealed set needs its records (--sealed-records FILE...)", dir);
  if (inside(sealed_path, dir))
    throw Error("the sealed records must be kept outside the board folder", sealed_path,
                "the folder is published; the sealed set is what the board ranks on");
  std::error_code ec;
  if (fs::exists(sealed_path, ec)) throw Error("the sealed set file exists", sealed_path, "a sealed set is never overwritten; pick a new path");
  // Nobody outside may have read a record: none of the benchmark's, none of a revealed epoch's.
  std::vector<std::string> paths;
  for (const auto& r : d.records) paths.push_back((fs::path(dir) / r.file).string());
  const Dataset published(d.benchmark, paths, 1);
  std::set<Hash32> revealed;
  uint64_t epoch = 0;
  for (const auto& r : d.revealed) {
    for (const auto& x : SealedSet::load((fs::path(dir) / r.file).string()).records) revealed.insert(record_leaf(ByteView(x.record)));
    epoch = std::max(epoch, r.commit.epoch + 1);
  }
  const SealedSet s = SealedSet::seal(d.name, epoch, sealed_records(d.benchmark.reader, files, [&](ByteView r) {
                                        const Hash32 l = record_leaf(r);
                                        return bool(published.tree().find(l)) || revealed.count(l) != 0;
                                      }));
  d.sealed = s.commit();
  d.sign_with(key);
  write_file_atomic(sealed_path, s.dump());
  ::chmod(sealed_path.c_str(), 0600);
  try {
    write_file_atomic((fs::path(dir) / board_path::kDefinition).string(), d.dump());
  } catch (...) {
    fs::remove(sealed_path, ec);
    throw;
  }
  return d;
}

void parse_models_policy(const std::string& which, BoardPolicy& policy) {
  policy.model_digests.clear();
  if (which == "any" || which == "builtin") {
    policy.models = which;
    return;
  }
  policy.models = "list";
  size_t at = 0;
  while (at <= which.size()) {
    const size_t comma = std::min(which.find(',', at), which.size());
    const std::string d = which.substr(at, comma - at);
    Hash32 h;
    if (!Hash32::from_hex(d, h))
      throw Error("--models takes any, builtin, or module digests (64 hex digits each, comma-separated)", d);
    policy.model_digests.push_back(h.hex());
    at = comma + 1;
  }
}

BoardDefinition init_board(const BoardInit& in) {
  if (!run_bundle_name_ok(in.name)) throw Error("invalid --name (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)", in.name);
  if (!(in.policy.fraction > 0 && in.policy.fraction <= 1)) throw Error("--fraction must be in (0, 1]", std::to_string(in.policy.fraction));
  if (!(in.policy.confidence > 0 && in.policy.confidence < 1))
    throw Error("--confidence must be in (0, 1)", std::to_string(in.policy.confidence));
  if (in.policy.k < 0) throw Error("-k must be positive", std::to_string(in.policy.k));
  if (!(in.policy.gap_threshold > 0 && in.policy.gap_threshold < 1))
    throw Error("--gap-threshold must be in (0, 1)", std::to_string(in.policy.gap_threshold));
  if (auto p = in.policy.overlap_problem()) throw Error("--" + *p);
  if (in.record_files.empty()) throw Error("the benchmark needs its record files (the eval set the board keeps)", in.commit_path);
  std::error_code ec;
  if (fs::exists(in.dir, ec) && !fs::is_empty(in.dir, ec))
    throw Error("the board folder exists and is not empty", in.dir, "wit-board init writes a new board");
  if (inside(in.key_path, in.dir))
    throw Error("the board key must be kept outside the board folder", in.key_path, "the folder is published; the key signs for the board");
  // The evidence store: outside the folder (a git repository holds documents, the store the bytes).
  fs::path dir_abs = fs::absolute(in.dir).lexically_normal();
  if (dir_abs.filename().empty()) dir_abs = dir_abs.parent_path();  // "board/" is "board"
  const fs::path store_abs = in.store.empty() ? dir_abs.parent_path() / (dir_abs.filename().string() + ".store")
                                              : fs::absolute(in.store).lexically_normal();
  if (inside(store_abs.string(), in.dir) || store_abs == dir_abs)
    throw Error("the evidence store must be kept outside the board folder", in.store,
                "the folder holds the board's documents; the store holds the bytes they name by digest");
  const std::string store_rel = store_abs.lexically_relative(dir_abs).generic_string();
  if (!in.sealed_path.empty() && inside(in.sealed_path, in.dir))
    throw Error("the sealed records must be kept outside the board folder", in.sealed_path,
                "the folder is published; the sealed set is what the board ranks on");
  if (!in.sealed_path.empty() && fs::exists(in.sealed_path, ec))
    throw Error("the sealed set file exists", in.sealed_path, "a sealed set is never overwritten; pick a new path");
  if (!in.sealed_files.empty() && in.split > 0)
    throw Error("give the sealed records (--sealed-records) or a number to split off (--split), not both", in.dir);
  if (in.sealed_path.empty() != (in.sealed_files.empty() && in.split == 0))
    throw Error("a sealed split needs both --sealed PATH (where the board keeps it) and --sealed-records FILE... or --split N",
                in.dir);
  Commitment c = Commitment::load(in.commit_path);
  // The records must be the commitment's (the board keeps what it scores on).
  const Dataset check(c, in.record_files, 1);
  std::optional<SealedSet> sealed;
  std::optional<std::pair<std::string, std::string>> public_file;  // relative path, bytes (a split)
  if (!in.sealed_files.empty())
    sealed = SealedSet::seal(in.name, 0, sealed_records(c.reader, in.sealed_files, [&](ByteView r) {
                               return bool(check.tree().find(record_leaf(r)));
                             }));
  if (in.split > 0) {
    const auto [sealed_recs, pub] = split_benchmark(c, check, in.split, in.dir);
    sealed = SealedSet::seal(in.name, 0, sealed_recs);
    public_file = pub;
    const uint64_t pool = c.n;
    c = commit_public(c.reader, pub, in.dir);
    // What was written reads back as exactly the records that were not sealed.
    std::set<Hash32> sealed_leaves;
    for (const auto& r : sealed_recs) sealed_leaves.insert(record_leaf(ByteView(r)));
    std::vector<Hash32> kept;
    for (uint64_t i = 0; i < check.size(); i++)
      if (!sealed_leaves.count(check.leaf(i))) kept.push_back(check.leaf(i));
    if (c.n != pool - in.split || c.root != merkle_root(c.tree_hash(), kept))
      throw Error("the published part does not read back as the records that were not sealed", in.commit_path,
                  "give the sealed records with --sealed-records instead");
  }
  BoardDefinition d;
  d.name = in.name;
  d.policy = in.policy;
  d.metric = kEvalMetric;
  d.benchmark = c;
  std::vector<std::pair<std::string, std::string>> files;  // relative path, bytes
  const std::string ctext = public_file ? c.dump() : read_file(in.commit_path);
  files.emplace_back(board_path::kBenchmarkCommit, ctext);
  d.benchmark_digest = member_digest(ctext);
  if (public_file) {
    d.records.push_back({public_file->first, member_digest(public_file->second)});
    files.push_back(*public_file);
  }
  for (const auto& f : public_file ? std::vector<std::string>{} : in.record_files) {
    const std::string base = fs::path(f).filename().string();
    if (!run_bundle_name_ok(base)) throw Error("a benchmark file name must be 1 to 64 of A-Z a-z 0-9 . _ -", f);
    const std::string rel = std::string(board_path::kBenchmarkRecords) + base;
    for (const auto& r : d.records)
      if (r.file == rel) throw Error("two benchmark files with the same name", f);
    const std::string text = read_file(f);
    d.records.push_back({rel, member_digest(text)});
    files.emplace_back(rel, text);
  }
  // The key: an existing one is used, else a new one is made.
  SecretKey key;
  if (fs::exists(in.key_path, ec)) {
    key = load_key(in.key_path);
  } else {
    key = generate_key();
    save_key(in.key_path, key);
  }
  d.key = key.pub();
  if (sealed) d.sealed = sealed->commit();
  d.store = in.store.empty() || fs::path(in.store).is_relative() ? store_rel : store_abs.string();
  d.sign_with(key);
  // The sealed set first (outside the folder): a board never commits to records it did not keep.
  if (sealed) {
    write_file_atomic(in.sealed_path, sealed->dump());
    ::chmod(in.sealed_path.c_str(), 0600);  // secret until the reveal, like the key
  }
  // Build the folder beside DIR and rename it into place (over the empty
  // folder checked above); an error, a signal or the next writer after a
  // kill removes it.
  try {
    TemporaryTree tree(in.dir);
    const fs::path tmp = tree.path();
    for (const auto& [rel, text] : files) {
      fs::create_directories((tmp / rel).parent_path());
      write_file_atomic((tmp / rel).string(), text, true);
    }
    fs::create_directories(tmp / board_path::kRuns);
    write_file_atomic((tmp / board_path::kDefinition).string(), d.dump());
    fs::create_directories(store_abs, ec);
    if (ec) throw Error("cannot make the evidence store: " + ec.message(), store_abs.string());
    tree.commit();
  } catch (...) {
    if (sealed) fs::remove(in.sealed_path, ec);
    throw;
  }
  return d;
}

// --- draws

Bytes draw_message(const Hash32& run_id, const TreeHead& head, uint64_t number) {
  Bytes m;
  put_u64(m, tags::kBoardDraw.size());
  put_bytes(m, tags::kBoardDraw.data(), tags::kBoardDraw.size());
  put_bytes(m, run_id.data(), 32);
  const Bytes hb = head.signed_bytes();
  put_u64(m, hb.size());
  put_bytes(m, hb.data(), hb.size());
  put_bytes(m, head.sig.data(), head.sig.size());
  put_u64(m, number);
  return m;
}

Hash32 draw_nonce(const std::array<uint8_t, 64>& signature) {
  return hash_tagged(tags::kBoardNonce, ByteView(signature.data(), signature.size()));
}

BoardDraw BoardDraw::make(const SecretKey& key, const Hash32& run_id, const TreeHead& head, uint64_t number,
                          uint64_t drawn_at) {
  BoardDraw d;
  d.board_key = key.pub();
  d.run_id = run_id;
  d.head = head;
  d.number = number;
  d.signature = sign(key, draw_message(run_id, head, number));
  d.nonce = draw_nonce(d.signature);
  d.drawn_at = drawn_at;
  return d;
}

Problem BoardDraw::problem(const PublicKey& key) const {
  if (board_key != key) return "is drawn by another key than the board's";
  if (head.run_id != run_id) return "names another run than its head's";
  if (!verify_signature(key, draw_message(run_id, head, number), signature)) return "has a bad signature (not the board key's)";
  if (nonce != draw_nonce(signature)) return "has a nonce not derived from the board's signature";
  return std::nullopt;
}

json BoardDraw::to_json() const {
  return {{"format", kBoardDrawFormat}, {"version", kBoardDocVersion}, {"board_key", board_key.hex()},
          {"run_id", run_id.hex()},     {"head", head.to_json()},      {"number", number},
          {"signature", sig_hex(signature)}, {"nonce", nonce.hex()},   {"drawn_at", drawn_at}};
}

BoardDraw BoardDraw::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid board draw";
  check_envelope(j, kBoardDrawFormat, kBoardDocVersion, "board draw", where);
  jsonf::only_keys(j, {"format", "version", "board_key", "run_id", "head", "number", "signature", "nonce", "drawn_at"}, kind, where);
  BoardDraw d;
  d.board_key = key_field(j, "board_key", kind, where);
  d.run_id = jsonf::hash(j, "run_id", kind, where);
  d.head = TreeHead::from_json(jsonf::need(j, "head", kind, where), where);
  d.number = jsonf::u64(j, "number", kind, where);
  d.signature = sig_field(j, "signature", kind, where);
  d.nonce = jsonf::hash(j, "nonce", kind, where);
  d.drawn_at = jsonf::u64(j, "drawn_at", kind, where);
  return d;
}

// --- board reports

json BoardReport::to_json() const {
  json j = {{"format", kBoardReportFormat},
          {"version", kBoardDocVersion},
          {"board_key", board_key.hex()},
          {"challenge", challenge},
          {"response", {{"digest", response_digest}, {"bytes", response_bytes}, {"path", response_path()}}},
          {"report", report},
          {"signature", sig_hex(signature)}};
  if (!overlap.is_null()) j["overlap"] = overlap;  // reports without a finding keep their old bytes
  if (!parts.empty()) {  // reports naming the whole response file keep their old bytes
    json a = json::array();
    for (const ResponsePart& p : parts)
      a.push_back({{"name", p.name}, {"path", p.path()}, {"digest", p.digest}, {"bytes", p.bytes}});
    j["parts"] = a;
  }
  return j;
}

std::string BoardReport::response_path() const { return std::string(board_path::kResponses) + response_digest + ".wbundle"; }

bool ResponsePart::is_part(const std::string& name) {
  if (name == kModelFileName) return true;
  if (name.rfind("state/", 0) != 0) return false;
  const std::string rest = name.substr(6);  // one safe path component
  return !rest.empty() && rest.size() <= 200 && rest.find("..") == std::string::npos && rest != "." &&
         rest.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos;
}

std::string ResponsePart::path() const {
  return name == kModelFileName ? std::string(board_path::kWeights) + digest + ".pt"
                                : std::string(board_path::kStates) + digest + ".safetensors";
}

BoardReport BoardReport::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid board report";
  check_envelope(j, kBoardReportFormat, kBoardDocVersion, "board report", where);
  jsonf::only_keys(j, {"format", "version", "board_key", "challenge", "response", "report", "overlap", "parts", "signature"},
                   kind, where);
  BoardReport r;
  if (j.contains("overlap")) {  // absent in reports filed before the overlap test
    r.overlap = j["overlap"];
    if (!r.overlap.is_null() && !r.overlap.is_object())
      throw Error("invalid board report: field 'overlap' is not null or an object", where);
  }
  r.board_key = key_field(j, "board_key", kind, where);
  r.challenge = jsonf::str(j, "challenge", kind, where);
  const json& resp = jsonf::need(j, "response", kind, where);
  if (!resp.is_object()) throw Error("invalid board report: field 'response' is not an object", where);
  jsonf::only_keys(resp, {"digest", "bytes", "path"}, kind, where);
  r.response_digest = jsonf::hash(resp, "digest", kind, where).hex();
  r.response_bytes = jsonf::u64(resp, "bytes", kind, where);
  if (jsonf::str(resp, "path", kind, where) != r.response_path())
    throw Error("invalid board report: the response's path is not responses/DIGEST.wbundle", where);
  if (j.contains("parts")) {  // absent in reports that name the whole response file
    const json& a = j["parts"];
    if (!a.is_array() || a.empty()) throw Error("invalid board report: field 'parts' is not a non-empty array", where);
    for (const json& e : a) {
      if (!e.is_object()) throw Error("invalid board report: a part is not an object", where);
      jsonf::only_keys(e, {"name", "path", "digest", "bytes"}, kind, where);
      ResponsePart p;
      p.name = jsonf::str(e, "name", kind, where);
      if (!ResponsePart::is_part(p.name))
        throw Error("invalid board report: part " + json(p.name).dump() + " is not a state/ member or model.pt", where);
      if (!r.parts.empty() && !(r.parts.back().name < p.name))
        throw Error("invalid board report: the parts are not in strictly increasing name order", where);
      p.digest = jsonf::hash(e, "digest", kind, where).hex();
      p.bytes = jsonf::u64(e, "bytes", kind, where);
      if (jsonf::str(e, "path", kind, where) != p.path())
        throw Error("invalid board report: part " + p.name + "'s path is not " + p.path(), where);
      r.parts.push_back(std::move(p));
    }
  }
  r.report = jsonf::need(j, "report", kind, where);
  if (!r.report.is_object()) throw Error("invalid board report: field 'report' is not an object", where);
  r.signature = sig_field(j, "signature", kind, where);
  return r;
}

// --- the board's evaluation

json BoardEval::to_json() const {
  json j = {{"format", kBoardEvalFormat},
          {"version", kBoardDocVersion},
          {"board_key", board_key.hex()},
          {"weights", {{"digest", weights_digest}, {"bytes", weights_bytes}, {"path", weights_path()}}},
          {"model", model_digest.empty() ? json(nullptr) : json{{"digest", model_digest}, {"path", model_path()}}},
          {"eval", refused.empty() ? eval : json(nullptr)},
          {"refused", refused.empty() ? json(nullptr) : json(refused)},
          {"signature", sig_hex(signature)}};
  // Evaluations on a board without a sealed split keep their old bytes (and signatures).
  if (has_sealed)
    j["sealed"] = {{"epoch", sealed_epoch},
                   {"eval", refused.empty() ? sealed_eval : json(nullptr)},
                   {"gap", refused.empty() ? gap : json(nullptr)}};
  if (!public_revealed.empty()) j["public_revealed"] = public_revealed;
  return j;
}

std::string BoardEval::weights_path() const { return std::string(board_path::kWeights) + weights_digest + ".safetensors"; }
std::string BoardEval::model_path() const { return std::string(board_path::kWeights) + model_digest + ".pt"; }

BoardEval BoardEval::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid board evaluation";
  check_envelope(j, kBoardEvalFormat, kBoardDocVersion, "board evaluation", where);
  jsonf::only_keys(j, {"format", "version", "board_key", "weights", "model", "eval", "refused", "sealed", "public_revealed",
                       "signature"},
                  kind, where);
  BoardEval e;
  // Evaluations scored on the benchmark alone have no "public_revealed".
  if (j.contains("public_revealed")) {
    const json& x = j["public_revealed"];
    if (!x.is_array() || x.empty() || x.size() > 1000000)
      throw Error("invalid board evaluation: field 'public_revealed' is not a non-empty list of epochs", where);
    for (const auto& v : x) {
      if (!v.is_number_unsigned() || (!e.public_revealed.empty() && v.get<uint64_t>() <= e.public_revealed.back()))
        throw Error("invalid board evaluation: field 'public_revealed' is not a list of increasing epochs", where);
      e.public_revealed.push_back(v.get<uint64_t>());
    }
  }
  // Evaluations filed before the sealed split have no "sealed" field.
  if (j.contains("sealed") && !j["sealed"].is_null()) {
    const json& x = j["sealed"];
    if (!x.is_object()) throw Error("invalid board evaluation: field 'sealed' is not an object", where);
    jsonf::only_keys(x, {"epoch", "eval", "gap"}, kind, where);
    e.has_sealed = true;
    e.sealed_epoch = jsonf::u64(x, "epoch", kind, where);
    e.sealed_eval = jsonf::need(x, "eval", kind, where);
    e.gap = jsonf::need(x, "gap", kind, where);
  }
  e.board_key = key_field(j, "board_key", kind, where);
  const json& w = jsonf::need(j, "weights", kind, where);
  if (!w.is_object()) throw Error("invalid board evaluation: field 'weights' is not an object", where);
  jsonf::only_keys(w, {"digest", "bytes", "path"}, kind, where);
  e.weights_digest = jsonf::hash(w, "digest", kind, where).hex();
  e.weights_bytes = jsonf::u64(w, "bytes", kind, where);
  if (jsonf::str(w, "path", kind, where) != e.weights_path())
    throw Error("invalid board evaluation: the weights' path is not weights/DIGEST.safetensors", where);
  const json& m = jsonf::need(j, "model", kind, where);
  if (!m.is_null()) {
    jsonf::only_keys(m, {"digest", "path"}, kind, where);
    e.model_digest = jsonf::hash(m, "digest", kind, where).hex();
    if (jsonf::str(m, "path", kind, where) != e.model_path())
      throw Error("invalid board evaluation: the model's path is not weights/DIGEST.pt", where);
  }
  e.eval = jsonf::need(j, "eval", kind, where);
  const json& refused = jsonf::need(j, "refused", kind, where);
  if (!refused.is_null()) {
    if (!refused.is_string() || refused.get<std::string>().empty())
      throw Error("invalid board evaluation: field 'refused' is not null or a reason", where);
    e.refused = refused.get<std::string>();
  }
  if (e.refused.empty() ? !e.eval.is_object() : !e.eval.is_null())
    throw Error("invalid board evaluation: field 'eval' must be an object, or null when refused", where);
  if (e.has_sealed && (e.refused.empty() ? !e.sealed_eval.is_object() || !e.gap.is_object()
                                         : !e.sealed_eval.is_null() || !e.gap.is_null()))
    throw Error("invalid board evaluation: the sealed split's 'eval' and 'gap' must be objects, or null when refused", where);
  e.signature = sig_field(j, "signature", kind, where);
  return e;
}

// --- the audited tree

json BoardLeaves::to_json() const {
  return {{"format", kBoardLeavesFormat},
          {"version", kBoardDocVersion},
          {"board_key", board_key.hex()},
          {"leaves", {{"digest", leaves_digest}, {"bytes", leaves_bytes}, {"path", leaves_path()}}},
          {"n", n},
          {"root", root.hex()},
          {"refused", refused.empty() ? json(nullptr) : json(refused)},
          {"signature", sig_hex(signature)}};
}

std::string BoardLeaves::leaves_path() const { return std::string(board_path::kLeaves) + leaves_digest + ".wleaves"; }

BoardLeaves BoardLeaves::from_json(const json& j, const std::string& where) {
  const char* kind = "invalid board leaves audit";
  check_envelope(j, kBoardLeavesFormat, kBoardDocVersion, "board leaves audit", where);
  jsonf::only_keys(j, {"format", "version", "board_key", "leaves", "n", "root", "refused", "signature"}, kind, where);
  BoardLeaves d;
  d.board_key = key_field(j, "board_key", kind, where);
  const json& l = jsonf::need(j, "leaves", kind, where);
  jsonf::only_keys(l, {"digest", "bytes", "path"}, kind, where);
  d.leaves_digest = jsonf::hash(l, "digest", kind, where).hex();
  d.leaves_bytes = jsonf::u64(l, "bytes", kind, where);
  if (jsonf::str(l, "path", kind, where) != d.leaves_path())
    throw Error("invalid board leaves audit: the leaves' path is not leaves/DIGEST.wleaves", where);
  d.n = jsonf::u64(j, "n", kind, where);
  d.root = jsonf::hash(j, "root", kind, where);
  const json& r = jsonf::need(j, "refused", kind, where);
  if (!r.is_null()) {
    if (!r.is_string() || r.get<std::string>().empty())
      throw Error("invalid board leaves audit: field 'refused' is not null or a reason", where);
    d.refused = r.get<std::string>();
  }
  d.signature = sig_field(j, "signature", kind, where);
  return d;
}

BoardLeavesResult board_leaves(const std::string& bundle_path, const std::string& leaves_path, const SecretKey& key,
                               unsigned threads, const std::string& store_given) {
  BoardFiling f(bundle_path, key, leaves_path, "no such leaves file", store_given);
  RunBundle& b = f.bundle;
  if (b.has(member::kBoardLeaves))
    throw Error("the board has already audited this run's training tree", bundle_path, "'wit-board audit' audits the stored leaves again");
  const json cj = json::parse(b.get(member::kDataCommit), nullptr, false);
  const Commitment data = Commitment::from_json(cj, member::kDataCommit);
  // The file must claim to be this commitment's leaves: another's is a usage error, not a verdict.
  std::string head(kLeavesHeaderSize, '\0');
  {
    std::ifstream in(leaves_path, std::ios::binary);
    in.read(head.data(), std::streamsize(head.size()));
    if (in.gcount() != std::streamsize(head.size())) throw Error("not a leaves file (shorter than its header)", leaves_path);
  }
  const LeavesHeader h = parse_leaves_header(ByteView(head), leaves_path);
  if (h.n != data.n || h.root != data.root)
    throw Error("the leaves file is of another commitment (n " + std::to_string(h.n) + ", root " + h.root.hex().substr(0, 16) +
                    "), not the run's data commitment (n " + std::to_string(data.n) + ", root " + data.root.hex().substr(0, 16) +
                    "); nothing was filed",
                leaves_path, "export the run's: wit-commit leaves --index DATA.widx -o F");
  StagedFile in(f.store, board_path::kLeaves, leaves_path);
  BoardLeavesResult out;
  const LeavesAudit a = audit_leaves_file(in.path(), data, threads);
  out.doc.n = data.n;
  out.doc.root = data.root;
  out.doc.refused = a.ok ? "" : a.reason;
  out.doc.leaves_digest = file_digest(in.path(), &out.doc.leaves_bytes);
  out.doc.sign_with(key);
  out.stored = (fs::path(f.store) / out.doc.leaves_path()).string();
  in.keep(out.stored, out.doc.leaves_digest);
  b.put_and_save(member::kBoardLeaves, out.doc.to_json().dump(2) + "\n");
  out.member = member::kBoardLeaves;
  return out;
}

}  // namespace wit
