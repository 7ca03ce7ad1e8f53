// The subcommands of wit-query, one function each: wit-query's main parses
// the flags and calls one of these, which print the proof (to `out`), the
// verdict or the notes (unless `quiet`) and return the exit status.
// Errors throw wit::Error (exit 2). Formats: docs/proofs.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wit/hash/hash.h"

namespace wit {

// The record a proof is about: exactly one of text, record_file ("-" = stdin), leaf (hex).
struct RecordQuery {
  std::string text, record_file, leaf;
  bool embed = false;  // put the record itself into the proof
  // The leaf hash asked about, and the record bytes when known.
  Hash32 resolve(std::optional<std::string>& record) const;
};

// audit-leaves: a leaves file against a commitment (exit 1 if it fails).
int query_audit_leaves(const std::string& commit_path, const std::string& leaves_path, unsigned threads, bool json);

// include / exclude: prove a record is (or is not) in the committed data (exit 1 if the other is true).
int query_prove(bool include, const std::string& commit_path, const std::string& index_path, const RecordQuery& record,
                const std::string& out, bool quiet);

// usage: at which steps of RUN the record was trained on (exit 1 if at none);
// the commitment and index default to the run's own.
int query_usage(const std::string& run_dir, std::string commit_path, std::string index_path, const RecordQuery& record,
                const std::string& out, bool quiet);

// contamination: certify which eval records are in the committed data (exit 1 if any is).
struct ContaminationQuery {
  std::string commit_path, index_path, reader, field = "text";
  uint64_t seq_len = 0;
  unsigned threads = 0;
  bool no_ngrams = false;
  std::vector<std::string> eval_files, train_files;
};
int query_contamination(const ContaminationQuery& q, const std::string& out, bool quiet);

// verify: a proof or certificate with the commitment alone (exit 1 if invalid);
// a certificate must also cover every record of `cover_files`. `strict`
// refuses version-2 exclusions (valid only if the committed tree is sorted).
int query_verify(const std::string& commit_path, const std::string& proof_path, const std::vector<std::string>& cover_files,
                 const std::string& cover_reader, bool json, bool strict = false);

}  // namespace wit
