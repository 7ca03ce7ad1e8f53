// Contamination certificates: an exact exclusion (or inclusion) proof for every
// distinct record of an eval set against a training commitment, plus n-gram
// overlap reported beside it as a statistic, not a proof.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/data/commitment.h"
#include "wit/data/index.h"

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

// The certificate's compact form (docs/proofs.md, "The compact form"): the
// same proofs as one multiproof, every tree node they need given once (as
// base64 of the raw bytes) instead of one audit path per proof. A board
// folder keeps this form (wit-board pack writes it): 11.8 MB of audit paths
// for the demo's 1514 records are about 0.6 MB as a multiproof.
// compact_certificate: a full certificate (absent/present lists) to the
// compact one; one already compact is returned as is. Throws Error("invalid
// proof: ...", where) on a certificate whose proofs do not parse or disagree
// on a node. expand_certificate: the compact form back to the full one,
// which verify_document then checks as any other (the expansion computes the
// nodes on the proofs' paths and trusts nothing: a wrong node makes a path
// that does not verify). Any other document is returned as is. Throws
// Error("invalid proof: ...", where) on a malformed compact form.
bool is_compact_certificate(const nlohmann::json& doc);
nlohmann::json compact_certificate(const nlohmann::json& cert, const std::string& where);
nlohmann::json expand_certificate(const nlohmann::json& doc, const std::string& where);

// N-gram shingles of one record (words for text readers, tokens for the tokens
// reader, ids of token_bytes bytes each), as 64-bit XXH3 values: a statistic,
// so a collision costs nothing.
std::vector<uint64_t> ngram_shingles(ByteView record, bool tokens, unsigned n = kNgramN, unsigned token_bytes = 2);

}  // namespace wit
