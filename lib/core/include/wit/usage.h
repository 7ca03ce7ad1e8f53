// Usage proofs (docs/design.md section 3): the steps of a run at which a record was
// in a batch, each step shown by its log entry under the run's signed head
// and the record's place in the entry's batch root, and the list of steps
// shown complete by re-deriving the committed data order from the manifest
// and the revealed seed. Checkable with the data commitment alone.
// Format: docs/proofs.md, "Usage". proofs.h's verify_document calls
// verify_usage; this header does not include proofs.h (only usage.cpp does),
// so the two do not include each other.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "wit/check.h"
#include "wit/commitment.h"
#include "wit/index.h"

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

// Verifies a usage document (type "usage", already past the envelope and
// commitment checks of verify_document). Throws wit::Error when malformed.
Verdict verify_usage(const nlohmann::json& doc, const Commitment& c, const std::string& where);

}  // namespace wit
