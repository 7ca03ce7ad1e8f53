// What a command-line path holds, for messages about misplaced arguments.
#include "wit/cmd/file_kind.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "wit/run/bundle.h"
#include "wit/run/challenge.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/runlog.h"

namespace wit {

namespace fs = std::filesystem;

namespace {

// The "format" of a JSON document at `path` ("" when it has none), or
// nullopt-like false when the file is not JSON.
bool json_format(const std::string& path, std::string& format) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size > (uint64_t(64) << 20)) return false;
  const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) return false;
  format = j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
  return true;
}

const char* kind_words(FileKind k) {
  switch (k) {
    case FileKind::kMissing: return "no file or directory";
    case FileKind::kRunDir: return "a run directory";
    case FileKind::kDirectory: return "a directory";
    case FileKind::kBundle: return "a wit bundle (.wbundle)";
    case FileKind::kChallenge: return "a challenge (wit.challenge JSON)";
    case FileKind::kCommitment: return "a data commitment (wit.commit JSON)";
    case FileKind::kJson: return "JSON";
    case FileKind::kOther: return "a file";
  }
  return "?";
}

}  // namespace

FileKind file_kind(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return FileKind::kMissing;
  if (fs::is_directory(st)) return fs::is_regular_file(RunPaths(path).manifest(), ec) ? FileKind::kRunDir : FileKind::kDirectory;
  char head[sizeof kBundleMagic] = {};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(head, sizeof head);
    if (in.gcount() == sizeof head && std::memcmp(head, kBundleMagic, sizeof head) == 0) return FileKind::kBundle;
  }
  std::string format;
  if (!json_format(path, format)) return FileKind::kOther;
  if (format == kChallengeFormat) return FileKind::kChallenge;
  if (format == kCommitFormat) return FileKind::kCommitment;
  return FileKind::kJson;
}

std::string file_kind_words(const std::string& path) {
  const FileKind k = file_kind(path);
  std::string format;
  if (k == FileKind::kJson && json_format(path, format) && !format.empty()) return "JSON of format '" + format + "'";
  return kind_words(k);
}

void expect_args(const std::vector<ArgExpect>& args) {
  for (const auto& a : args) {
    const FileKind k = file_kind(a.path);
    if (k == a.want || k == FileKind::kMissing) continue;
    std::string msg = a.arg + " expects " + kind_words(a.want) + ", but " + a.path + " is " + file_kind_words(a.path);
    for (const auto& b : args)
      if (&b != &a && b.want == k && file_kind(b.path) == a.want) {
        msg += ", what " + b.arg + " expects, and " + b.arg + " " + b.path + " is " + kind_words(a.want) +
               ": are the two swapped?";
        break;
      }
    throw Error(msg);
  }
}

std::string default_reader(const std::vector<std::string>& files) {
  auto ends = [](const std::string& f, const char* suffix) {
    const size_t n = std::strlen(suffix);
    return f.size() > n && f.compare(f.size() - n, n, suffix) == 0;
  };
  size_t jsonl = 0;
  for (const auto& f : files) {
    if (ends(f, ".json"))
      throw Error("a .json input needs --reader: --reader jsonl for one JSON object per line (the record is its "
                  "--field, default \"text\"), --reader lines for each line as it is",
                  f);
    if (ends(f, ".jsonl")) jsonl++;
  }
  if (jsonl == 0) return "lines";
  if (jsonl == files.size()) return "jsonl";
  for (const auto& f : files)
    if (!ends(f, ".jsonl"))
      throw Error("the inputs mix .jsonl files with others, so the reader cannot follow the names: give --reader "
                  "jsonl or --reader lines",
                  f);
  return "lines";  // not reached
}

}  // namespace wit
