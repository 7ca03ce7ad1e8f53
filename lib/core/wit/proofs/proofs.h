// Proof documents (JSON, docs/proofs.md): inclusion and exclusion proofs of
// records against a commitment, contamination certificates, and the pure
// verification of any of them with the commitment alone.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/data/commitment.h"
#include "wit/data/index.h"
#include "wit/hash/merkle.h"

namespace wit {

inline constexpr const char* kProofFormat = "wit.proof";
// A proof document's version is its commitment's: 3 (ranged tree, every path
// carries its siblings' key ranges), or 2 (read only: an RFC 6962 data tree).
inline constexpr int kProofVersion = 3;
// What a version-2 exclusion rests on: its verdict says so, and --strict refuses it.
inline constexpr const char* kUnrangedExclusionCaveat =
    "valid if the committed tree is sorted; this version cannot show it: audit the leaves";

// Builds proofs from an index, against its one tree (with key ranges when
// the index is of version 3); the leaf must be present
// at `position` (inclusion) or absent (exclusion).
InclusionProof prove_inclusion(const Index& idx, const Hash32& leaf, uint64_t position);
ExclusionProof prove_exclusion(const Index& idx, const Hash32& leaf);

// The commitment a document names: {"n": N, "root": HEX}.
nlohmann::json commitment_ref(const Commitment& c);

// {"path": [...], "ranges": [...]}: a path's fields in any document (ranges
// only where the tree is ranged), as parse_inclusion_body reads them back.
nlohmann::json path_fields(const InclusionProof& p);
// A data-tree path checked where only the root is known (a manifest's
// data_root): the path says its tree, ranged when it carries ranges (version
// 3), RFC 6962 when not (version 2). The root decides: a version-3 root is a
// personalised BLAKE2b output that no RFC 6962 path reaches (docs/proofs.md).
ProofError verify_data_inclusion(const InclusionProof& p, const Hash32& root);

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
// A path's fields as path_fields writes them, parsed once into a typed value:
// "path" and "ranges" (absent: none). A document that carries a path beside
// fields of its own (a response's batch record: its leaf, index and size are
// the verifier's, its path may be absent for the empty path) reads it with
// this, not by building a body for parse_inclusion_body; the proof bodies
// read their paths with it too (there "path" is required).
struct ProofPath {
  std::vector<Hash32> path;
  std::vector<KeyRange> ranges;  // one per hash of the path (ranged tree), or none
};
enum class PathField { kRequired, kOptional };
ProofPath parse_proof_path(const nlohmann::json& j, const std::string& where, PathField path = PathField::kRequired);
ExclusionProof parse_exclusion_body(const nlohmann::json& j, const std::string& where);

// What every proof document passes before its type is read: its envelope,
// format, version and hash (wit::Error when malformed), then that it is of
// `c` and of `c`'s version (a "no" otherwise).
Problem check_proof_head(const nlohmann::json& doc, const Commitment& c, const std::string& where);

// Verifies a proof document of the data tree (inclusion, exclusion) or a
// contamination certificate with the commitment alone. Format errors throw
// wit::Error; a well-formed but false proof returns ok = false with the
// reason. A usage proof rests on a run's log, a layer above this one:
// verify_any_document (usage.h) verifies every type, usage included; here
// "usage" is an unknown type.
// `strict` refuses what holds only if the committed tree is sorted: the
// exclusions (and certificates with absent records) of version 2.
Verdict verify_document(const nlohmann::json& doc, const Commitment& c, const std::string& where,
                        bool strict = false);
// A data-tree inclusion proof against the commitment: its size and its path.
Verdict verify_inclusion_in(const InclusionProof& p, const Commitment& c);

// Checks that a (verified) certificate has a proof for every one of `eval_leaves`.
Verdict certificate_covers(const nlohmann::json& cert, const std::vector<Hash32>& eval_leaves, const std::string& where);

}  // namespace wit
