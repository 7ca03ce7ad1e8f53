// Usage proofs (docs/design.md section 3): the steps of a run at which a record was
// in a batch, each step shown by its log entry under the run's signed head
// and the record's place in the entry's batch root, and the list of steps
// shown complete by re-deriving the committed data order from the manifest
// and the revealed seed. Checkable with the data commitment alone.
// Format: docs/proofs.md, "Usage". A layer above proofs.h (docs/design.md
// §13): verify_any_document here verifies any proof document, proofs.h's
// verify_document those of the data tree alone.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/data/commitment.h"
#include "wit/data/index.h"

namespace wit {

// Every step of the run in RUN (up to its newest signed head) whose batch
// holds record `position` of the data (whose leaf is `leaf`). The run must be
// trained on `c` and its seed revealed. `record` is embedded when given.
// Throws wit::Error when the run cannot give the proof.
nlohmann::json usage_document(const Commitment& c, const Index& idx, const std::string& run_dir, const Hash32& leaf,
                              uint64_t position, const std::optional<std::string>& record = std::nullopt);

// Throws wit::Error unless `c` (read from `commit_path`) is the data the run
// in `run_dir` trained on, naming both roots.
void check_run_data(const Commitment& c, const std::string& commit_path, const std::string& run_dir);

// Verifies a usage document (type "usage", already past check_proof_head).
// Throws wit::Error when malformed.
Verdict verify_usage(const nlohmann::json& doc, const Commitment& c, const std::string& where);

// Verifies any proof document wit-query verifies: a usage proof (format
// wit.proof, type "usage") by check_proof_head then verify_usage, any other
// by verify_document (proofs.h). Errors and "no"s as theirs.
Verdict verify_any_document(const nlohmann::json& doc, const Commitment& c, const std::string& where,
                            bool strict = false);

}  // namespace wit
