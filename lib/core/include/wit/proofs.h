// Proof documents (JSON, docs/proofs.md): inclusion and exclusion proofs of
// records against a commitment, contamination certificates, and the pure
// verification of any of them with the commitment alone.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/check.h"
#include "wit/commitment.h"
#include "wit/index.h"
#include "wit/merkle.h"

namespace wit {

inline constexpr const char* kProofFormat = "wit.proof";
inline constexpr int kProofVersion = 2;

// Builds proofs from an index, against its one tree; the leaf must be present
// at `position` (inclusion) or absent (exclusion).
InclusionProof prove_inclusion(const Index& idx, const Hash32& leaf, uint64_t position);
ExclusionProof prove_exclusion(const Index& idx, const Hash32& leaf);

// The commitment a document names: {"n": N, "root": HEX}.
nlohmann::json commitment_ref(const Commitment& c);

// The bodies (no format/version envelope) used inside documents and certificates.
nlohmann::json inclusion_body(const InclusionProof& p);
nlohmann::json exclusion_body(const ExclusionProof& p);
// Full documents: {"format":"wit.proof","version":2,"type":...,"commitment":{...},...}.
// `record` (optional) embeds the record so a reader sees what was proved.
nlohmann::json inclusion_document(const Commitment& c, const InclusionProof& p,
                                  const std::optional<std::string>& record = std::nullopt);
nlohmann::json exclusion_document(const Commitment& c, const ExclusionProof& p,
                                  const std::optional<std::string>& record = std::nullopt);

// Parsers: throw wit::Error("invalid proof: ...", where) on malformed input.
InclusionProof parse_inclusion_body(const nlohmann::json& j, const std::string& where);
ExclusionProof parse_exclusion_body(const nlohmann::json& j, const std::string& where);

// Verifies a proof document or a contamination certificate with the commitment
// alone. Format errors throw wit::Error; a well-formed but false proof returns
// ok = false with the reason.
Verdict verify_document(const nlohmann::json& doc, const Commitment& c, const std::string& where);

// Checks that a (verified) certificate has a proof for every one of `eval_leaves`.
Verdict certificate_covers(const nlohmann::json& cert, const std::vector<Hash32>& eval_leaves, const std::string& where);

}  // namespace wit
