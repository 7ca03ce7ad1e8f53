// The commands of wit-commit, one function each: wit-commit's main parses the
// flags and calls one of these, which write the outputs, print what the user
// sees (stdout; notes on stderr unless `quiet`) and return the exit status.
// Errors throw wit::Error (exit 2). Formats: docs/commitment.md, docs/leaves.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace wit {

struct CommitArgs {
  std::string reader = "lines";  // --reader
  bool reader_given = false;     // else chosen by the inputs' names (docs/records.md)
  std::string field = "text";    // --field (jsonl)
  uint64_t seq_len = 0;          // --seq-len (tokens)
  unsigned token_bytes = 2;      // --token-bytes (tokens)
  bool token_bytes_given = false;
  std::string out = "-";         // -o: the commitment JSON
  std::string index_path;        // --index (default: beside -o as NAME.widx)
  bool no_index = false;
  unsigned threads = 0;          // hashing threads (0 = all cores)
  bool quiet = false;
  std::string memory = "1G";     // --memory (parse_size): past it, sorted runs spill to disk (0 = never)
  std::vector<std::string> files;
};

struct MergeArgs {
  std::vector<std::string> shards;  // shard commitments, each with its index beside it (NAME.widx)
  std::string out = "-";            // -o: the merged commitment
  std::string index_path;           // --index (default: beside -o as NAME.widx)
  bool no_index = false;
  unsigned threads = 0;
  std::string memory = "1G";
  bool quiet = false;
};

// A size in bytes: digits, then optionally K, M, G or T (powers of 1024; a
// trailing B or iB is allowed: 512M, 4GiB). Throws wit::Error naming `what`.
uint64_t parse_size(const std::string& v, const std::string& what);

// Commit the records of a.files: the commitment to a.out and its index,
// published together under the pair's lock.
int commit_cmd(CommitArgs a);
// merge: shards committed apart into the commitment and index of all their
// files, in the order given (docs/commitment.md, "Shards").
int commit_merge_cmd(const MergeArgs& a);
// show: the commitment at `commit_path` for a person; with `index_path`, that
// index audited against it too.
int commit_show_cmd(const std::string& commit_path, const std::string& index_path);
// leaves: the index's sorted leaves to a leaves file (`out`, - = stdout).
int commit_leaves_cmd(const std::string& index_path, const std::string& out, bool quiet);

}  // namespace wit
