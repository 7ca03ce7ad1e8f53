// Contamination certificates: an exact exclusion (or inclusion) proof for every
// distinct record of an eval set against a training commitment, plus n-gram
// overlap reported beside it as a statistic, not a proof.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/commitment.h"
#include "wit/index.h"

namespace wit {

inline constexpr const char* kContaminationFormat = "wit.contamination";
inline constexpr unsigned kNgramN = 13;

struct ContaminationInput {
  const Commitment* commitment = nullptr;
  std::string commit_path;  // for resolving the training sources
  const Index* index = nullptr;
  ReaderSpec eval_reader;
  std::vector<std::string> eval_paths;
  // Training files for the n-gram statistic; empty = the commitment's inputs,
  // looked up as given and then beside the commitment file.
  std::vector<std::string> train_paths;
  bool ngrams = true;
  unsigned threads = 0;
};

// Returns the certificate; its "clean" field says whether every eval record is absent.
nlohmann::json contamination_certificate(const ContaminationInput& in);

// N-gram shingles of one record (words for text readers, tokens for the tokens
// reader, ids of token_bytes bytes each), as 64-bit XXH3 values: a statistic,
// so a collision costs nothing.
std::vector<uint64_t> ngram_shingles(ByteView record, bool tokens, unsigned n = kNgramN, unsigned token_bytes = 2);

}  // namespace wit
