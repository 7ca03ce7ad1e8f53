// Run bundles: loading a directory or .wbundle, bundle.json and its member
// digests, writing a bundle back. Format: docs/run-bundle.md.
#include "wit/run/run_bundle.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "wit/run/bundle.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"

namespace fs = std::filesystem;

namespace wit {

using nlohmann::json;

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

const std::vector<std::string>& required_members() {
  static const std::vector<std::string> r = {member::kManifest, member::kHeads, member::kFinal, member::kDataCommit};
  return r;
}

const std::vector<std::string>& trainer_eval_members() {
  static const std::vector<std::string> r = {member::kEvalCommit, member::kEval, member::kEvalScores, member::kContamination};
  return r;
}

bool run_bundle_name_ok(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), name_char);
}

bool run_bundle_member_allowed(const std::string& name) {
  for (const auto* list : {&required_members(), &trainer_eval_members()})
    for (const auto& r : *list)
      if (name == r) return true;
  if (name == member::kLog || name == member::kModelFingerprint || name == member::kModelBinding || name == member::kBoardEval ||
      name == member::kBoardLeaves || name == member::kStoredLog)
    return true;
  for (const char* dir : {member::kChallenges, member::kReports, member::kEvalChecks, member::kProbeChecks,
                          member::kDraws, member::kBoardReports}) {
    const std::string d = dir;
    if (name.size() > d.size() + 5 && name.compare(0, d.size(), d) == 0 &&
        name.compare(name.size() - 5, 5, ".json") == 0)
      return run_bundle_name_ok(name.substr(d.size(), name.size() - d.size() - 5));
  }
  return false;
}

uint64_t run_bundle_member_limit(const std::string& name) {
  return name == member::kLog ? kRunBundleMaxBytes : kRunBundleMaxJsonBytes;
}

std::string member_digest(const std::string& bytes) { return blake2b_256(ByteView(bytes)).hex(); }

bool is_wbundle_path(const std::string& path) {
  return path.size() > 8 && path.compare(path.size() - 8, 8, ".wbundle") == 0;
}

const std::string& RunBundle::get(const std::string& name) const {
  auto it = files.find(name);
  if (it == files.end()) throw Error("bundle lacks member " + name, path);
  return it->second;
}

std::vector<std::string> RunBundle::names_under(const std::string& prefix) const {
  std::vector<std::string> out;
  for (auto it = files.lower_bound(prefix); it != files.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    std::string rest = it->first.substr(prefix.size());
    if (rest.size() > 5 && rest.compare(rest.size() - 5, 5, ".json") == 0) rest.resize(rest.size() - 5);
    out.push_back(rest);
  }
  return out;
}

RunBundle RunBundle::load(const std::string& path) {
  RunBundle b;
  b.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot read bundle: " + errno_text(), path);
  if (!S_ISDIR(st.st_mode)) {
    MappedFile f(path);
    b = decode(f.view(), path);
    b.path = path;
    return b;
  }
  uint64_t total = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end;
  if (ec) throw Error("cannot read bundle: " + ec.message(), path);
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error("cannot read bundle: " + ec.message(), path);
    const fs::directory_entry& e = *it;
    const std::string rel = fs::relative(e.path(), path).generic_string();
    if (e.is_symlink()) throw Error("bundle holds a symbolic link", e.path().string());
    if (e.is_directory()) continue;
    if (!e.is_regular_file()) throw Error("bundle holds something that is not a regular file", e.path().string());
    if (b.files.size() >= kRunBundleMaxMembers) throw Error("bundle has too many members", path);
    // Refuse before reading: a huge file must not be read into memory first.
    const uint64_t fsize = e.file_size(ec);
    if (ec || fsize > kRunBundleMaxBytes - total) throw Error("bundle is larger than 4 GiB", path);
    if (fsize > run_bundle_member_limit(rel))
      throw Error("bundle member " + rel + " is larger than its kind can be (" +
                      std::to_string(run_bundle_member_limit(rel)) + " bytes)",
                  e.path().string());
    std::string data = read_file(e.path().string());
    total += data.size();
    if (total > kRunBundleMaxBytes) throw Error("bundle is larger than 4 GiB", path);
    b.files[rel] = std::move(data);
  }
  return b;
}

RunBundle RunBundle::decode(ByteView data, const std::string& where) {
  RunBundle b;
  b.path = where;
  b.archive = true;
  const Bundle z = Bundle::decode(data, where, kRunBundleMaxBytes,
                                  [](const std::string& n, const Bundle&) { return run_bundle_member_limit(n); });
  if (z.members().size() > kRunBundleMaxMembers) throw Error("bundle has too many members", where);
  for (const auto& [name, bytes] : z.members()) b.files[name] = std::string(bytes.begin(), bytes.end());
  return b;
}

std::string RunBundle::index_json(const std::string& name) const {
  json members = json::object();
  for (const auto& [n, data] : files)
    if (n != kRunBundleIndex) members[n] = member_digest(data);
  json j = {{"format", kRunBundleFormat}, {"version", kRunBundleVersion}, {"name", name}, {"members", members}};
  return j.dump(2) + "\n";
}

std::string RunBundle::declared_name() const {
  auto it = files.find(kRunBundleIndex);
  if (it == files.end()) return "";
  json j = json::parse(it->second, nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return "";
  return j["name"].get<std::string>();
}

Problem RunBundle::index_problem() const {
  auto it = files.find(kRunBundleIndex);
  if (it == files.end()) return Problem("missing member bundle.json");
  const json j = json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Problem("bundle.json is not a json object");
  if (!j.contains("format") || j["format"] != kRunBundleFormat) return Problem("bundle.json is not a run bundle index (format is not \"wit.run-bundle\")");
  if (!j.contains("version") || !j["version"].is_number_integer()) return Problem("bundle.json has no version");
  if (j["version"].get<int64_t>() != kRunBundleVersion)
    return Problem("unsupported run bundle version " + j["version"].dump() + " (this wit reads version 1)");
  for (const auto& [k, v] : j.items())
    if (k != "format" && k != "version" && k != "name" && k != "members") return Problem("bundle.json has an unknown field '" + k + "'");
  if (!j.contains("name") || !j["name"].is_string() || !run_bundle_name_ok(j["name"].get<std::string>()))
    return Problem("bundle.json has no valid name (1 to 64 of A-Z a-z 0-9 . _ -)");
  if (!j.contains("members") || !j["members"].is_object()) return Problem("bundle.json has no members object");
  const json& m = j["members"];
  for (const auto& [name, digest] : m.items()) {
    if (!run_bundle_member_allowed(name)) return Problem("bundle.json lists an unknown member " + name);
    if (!digest.is_string()) return Problem("bundle.json: the digest of " + name + " is not a string");
    auto f = files.find(name);
    if (f == files.end()) return Problem("missing member " + name);
    if (member_digest(f->second) != digest.get<std::string>()) return Problem("member " + name + " does not match its hash in bundle.json");
  }
  for (const auto& [name, data] : files) {
    if (name == kRunBundleIndex) continue;
    if (!m.contains(name)) return Problem("member " + name + " is not listed in bundle.json");
  }
  for (const auto& r : required_members())
    if (!files.count(r)) return Problem("missing member " + r);
  return std::nullopt;
}

void RunBundle::require_whole(const std::string& where) const {
  if (Problem p = index_problem()) throw Error("the bundle is damaged: " + *p, where);
}

namespace {

void write_dir_member(const std::string& dir, const std::string& name, const std::string& data) {
  const fs::path p = fs::path(dir) / name;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw Error("cannot create directory: " + ec.message(), p.parent_path().string());
  write_file_atomic(p.string(), data);
}

Bundle to_container(const std::map<std::string, std::string>& files) {
  Bundle z;
  for (const auto& [name, data] : files) z.put(name, data);
  return z;
}

}  // namespace

void RunBundle::check_member_syntax() const {
  for (const auto& [name, data] : files) {
    const bool jsonl = name == member::kHeads;
    if (!jsonl && (name.size() < 5 || name.compare(name.size() - 5, 5, ".json") != 0)) continue;
    size_t line = 0;
    for (size_t at = 0; at < data.size() || (at == 0 && !jsonl);) {
      const size_t end = jsonl ? std::min(data.find('\n', at), data.size()) : data.size();
      line++;
      const json j = json::parse(data.begin() + long(at), data.begin() + long(end), nullptr, false);
      if (j.is_discarded() || !j.is_object())
        throw Error("member " + name + " is not " + (jsonl ? "one json object per line" : "a json object") +
                        (jsonl ? " (line " + std::to_string(line) + ")" : std::string()),
                    path);
      at = end + 1;
      if (!jsonl) break;
    }
  }
}

void RunBundle::put_and_save(const std::string& name, const std::string& bytes) {
  if (!run_bundle_member_allowed(name)) throw Error("not a run bundle member name", name);
  std::string bname = declared_name();
  if (!run_bundle_name_ok(bname)) throw Error("bundle.json has no valid name", path);
  files[name] = bytes;
  files[kRunBundleIndex] = index_json(bname);
  check_member_syntax();
  if (archive) {
    to_container(files).save(path);
    return;
  }
  write_dir_member(path, name, bytes);
  write_dir_member(path, kRunBundleIndex, files[kRunBundleIndex]);
}

void RunBundle::save_new() const {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) throw Error("output exists", path, "pick a new path; a bundle is never overwritten");
  check_member_syntax();
  if (archive) {
    to_container(files).save(path);
    return;
  }
  // Built beside the target and renamed, so no half-written bundle is ever at
  // `path`; an error, a signal or the next writer after a kill removes it.
  try {
    TemporaryTree tree(path);
    for (const auto& [name, data] : files) write_dir_member(tree.path(), name, data);
    tree.commit();
  } catch (const fs::filesystem_error& e) {
    throw Error("cannot write bundle: " + e.code().message(), path);
  }
}

FileLock lock_run_bundle(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("no such bundle", path);
  return FileLock::wait_existing(path, "the bundle");
}

RepairResult repair_run_bundle(const std::string& path, const std::string& name) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("no such bundle", path);
  const FileLock lock = lock_run_bundle(path);
  RepairResult out;
  if (S_ISDIR(st.st_mode)) {
    // A killed writer's temporaries (MEMBER.tmp.PID.XXXXXX) are not members.
    std::vector<std::pair<std::string, std::string>> temps;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string p = it->path().string(), target = temporary_target(p);
      if (it->is_regular_file() && !target.empty()) temps.emplace_back(p, target);
    }
    for (const auto& [p, target] : temps) {
      remove_stale_temporaries(target);
      if (!fs::exists(p)) out.changes.push_back("removed the stale temporary " + fs::relative(p, path).generic_string());
    }
  }
  RunBundle b = RunBundle::load(path);
  for (const auto& [n, data] : b.files)
    if (n != kRunBundleIndex && !run_bundle_member_allowed(n))
      throw Error("cannot repair: the bundle holds " + n + ", which no run bundle may hold", path,
                  "move it out of the bundle and repair again");
  std::string bname = name.empty() ? b.declared_name() : name;
  if (!run_bundle_name_ok(bname))
    throw Error(name.empty() ? "cannot repair: bundle.json gives no valid name" : "not a valid bundle name", path,
                "pass --name NAME (1 to 64 of A-Z a-z 0-9 . _ -)");
  const std::string fresh = b.index_json(bname);
  const json old = b.has(kRunBundleIndex) ? json::parse(b.files[kRunBundleIndex], nullptr, false) : json();
  const json oldm = old.is_object() && old.contains("members") && old["members"].is_object() ? old["members"] : json::object();
  const json newm = json::parse(fresh)["members"];
  for (const auto& [n, d] : newm.items()) {
    if (!oldm.contains(n)) out.changes.push_back("listed " + n);
    else if (oldm[n] != d) out.changes.push_back("new digest for " + n + " (its bytes changed since it was listed)");
  }
  for (const auto& [n, d] : oldm.items())
    if (!newm.contains(n)) out.changes.push_back("unlisted " + n + " (not in the bundle)");
  if (!b.has(kRunBundleIndex) || b.files[kRunBundleIndex] != fresh) {
    if (out.changes.empty() || b.declared_name() != bname) out.changes.push_back("rewrote bundle.json");
    b.files[kRunBundleIndex] = fresh;
    if (b.archive) to_container(b.files).save(path);
    else write_dir_member(path, kRunBundleIndex, fresh);
  }
  out.problem = b.index_problem();
  return out;
}

}  // namespace wit
