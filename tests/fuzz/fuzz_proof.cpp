// Fuzz target for proof documents and contamination certificates, full or
// compact (expand_certificate, then verify_any_document) against a fixed nine-record commitment built in memory:
// of version 3 (the ranged tree), or of version 2 (RFC 6962, still read)
// for a document that says version 2.
// Besides "wit::Error or a verdict", it checks soundness: a document judged
// valid must only claim what is true of the committed records. Verdicts
// (outcome.h): j, r, n (a well-formed document judged invalid), a (valid).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"
#include "wit/run/usage.h"

#include "outcome.h"

namespace {

// The records of a nine-line file, one per line in this order: the corpus
// seeds are wit-query proofs against `wit-commit --reader lines` of that file,
// so they name this commitment and reach the Merkle checks.
const char* const kRecords[] = {"alpha", "bravo", "charlie", "delta", "echo",
                                "foxtrot", "golf", "bravo", "hotel"};

struct Fixture {
  wit::Commitment c, c2;            // version 3, version 2
  std::vector<wit::Hash32> leaves;  // the one tree: sorted, distinct
  Fixture() {
    for (const char* r : kRecords) leaves.push_back(wit::record_leaf(wit::ByteView(std::string_view(r))));
    std::sort(leaves.begin(), leaves.end());
    leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
    c.reader.kind = wit::ReaderKind::kLines;
    c.records = sizeof kRecords / sizeof kRecords[0];
    c.n = leaves.size();
    c.root = wit::merkle_root(wit::kDataTree, leaves);
    c2 = c;
    c2.version = wit::kCommitVersionUnranged;
    c2.root = wit::merkle_root(wit::kBlake2bTree, leaves);
  }
  bool present(const wit::Hash32& h) const { return std::binary_search(leaves.begin(), leaves.end(), h); }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

[[noreturn]] void unsound(const char* what, const nlohmann::json& doc) {
  std::fprintf(stderr, "fuzz_proof: accepted an unsound proof (%s):\n%s\n", what, doc.dump(2).c_str());
  std::abort();
}

void check_inclusion(const nlohmann::json& body, const nlohmann::json& doc) {
  const Fixture& f = fixture();
  wit::InclusionProof p = wit::parse_inclusion_body(body, "fuzz");
  if (p.index >= f.leaves.size() || f.leaves[p.index] != p.leaf) unsound("inclusion of a leaf not at that index", doc);
}

void check_exclusion(const nlohmann::json& body, const nlohmann::json& doc) {
  wit::ExclusionProof p = wit::parse_exclusion_body(body, "fuzz");
  if (fixture().present(p.value)) unsound("exclusion of a present leaf", doc);
}

}  // namespace

// A path's fields parsed alone (parse_proof_path, as the replay verifier
// reads a batch record's): what parses writes back (path_fields) and parses
// again to the same path and ranges.
void check_proof_path(const nlohmann::json& doc) {
  for (const wit::PathField how : {wit::PathField::kRequired, wit::PathField::kOptional}) {
    wit::ProofPath pp;
    try {
      pp = wit::parse_proof_path(doc, "fuzz", how);
    } catch (const wit::Error&) {
      continue;
    }
    wit::InclusionProof p;
    p.path = pp.path;
    p.ranges = pp.ranges;
    const wit::ProofPath again = wit::parse_proof_path(wit::path_fields(p), "fuzz");
    if (again.path != pp.path || again.ranges.size() != pp.ranges.size()) unsound("a path that does not read back", doc);
    for (size_t i = 0; i < pp.ranges.size(); i++)
      if (again.ranges[i].first != pp.ranges[i].first || again.ranges[i].last != pp.ranges[i].last)
        unsound("key ranges that do not read back", doc);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = fixture();
  nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return wit_fuzz::note('j'), 0;
  if (doc.is_object()) check_proof_path(doc);
  wit::Verdict v;
  try {
    doc = wit::expand_certificate(doc, "fuzz");  // the compact form: its full certificate, checked below
    const bool v2 = doc.is_object() && doc.contains("version") && doc["version"] == 2;
    v = wit::verify_any_document(doc, v2 ? f.c2 : f.c, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection of a malformed document
  }
  if (!v.ok) {
    if (v.reason.empty()) unsound("rejected without a reason", doc);
    wit_fuzz::note('n');
    return 0;
  }
  // Valid: what it claims must hold. The document parsed once, so these parse too.
  if (doc["format"] == "wit.contamination") {
    for (const auto& a : doc["absent"]) check_exclusion(a, doc);
    for (const auto& p : doc["present"]) check_inclusion(p, doc);
  } else if (doc["type"] == "inclusion") {
    check_inclusion(doc, doc);
  } else if (doc["type"] == "usage") {
    check_inclusion(doc["inclusion"], doc);  // the steps are checked against the signed head inside
  } else {
    check_exclusion(doc, doc);
  }
  wit_fuzz::note('a');
  return 0;
}
