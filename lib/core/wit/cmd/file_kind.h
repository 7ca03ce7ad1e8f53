// What a path given on a command line holds (a run directory, a challenge, a
// bundle, a data commitment, ...), so that a swapped or misplaced argument is
// reported by the argument's name and what was expected, not by the parser
// that choked on it ("not valid json", "is a directory").
#pragma once
#include <string>
#include <vector>

namespace wit {

enum class FileKind {
  kMissing,     // nothing at the path
  kRunDir,      // a directory with run.json
  kDirectory,   // any other directory
  kBundle,      // a wit bundle (response or run bundle: one magic)
  kChallenge,   // JSON of format wit.challenge
  kCommitment,  // JSON of format wit.commit
  kJson,        // other JSON (its format, if any, in the description)
  kOther,       // any other file
};

// The kind of `path`, from its type and first bytes (a JSON file is parsed
// only when it is at most 64 MiB).
FileKind file_kind(const std::string& path);

// "a challenge (wit.challenge JSON)", "a run directory", "JSON of format
// 'wit.report'", ... for `path`.
std::string file_kind_words(const std::string& path);

// One argument of a command and what it must hold.
struct ArgExpect {
  std::string arg;   // "--run", "CHALLENGE"
  std::string path;  // as given
  FileKind want;
};

// Throws wit::Error for the first argument whose path holds another kind of
// file, naming the argument, what it expected and what the path is; when
// another of `args` expects what the path holds, the message says the two
// look swapped. A missing path is left to whoever opens it.
void expect_args(const std::vector<ArgExpect>& args);

// The reader wit-commit uses when --reader is not given (docs/records.md):
// "jsonl" when every input's name ends in .jsonl, "lines" when none ends in
// .jsonl or .json (or the input is stdin); otherwise (a .json file, or .jsonl
// files mixed with others) throws wit::Error naming the file and the choices.
std::string default_reader(const std::vector<std::string>& files);

}  // namespace wit
