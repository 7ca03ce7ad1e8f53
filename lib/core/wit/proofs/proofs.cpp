// Proof documents: building them from an index, parsing, and verifying them
// against a commitment alone.
#include "wit/proofs/proofs.h"

#include <algorithm>

#include "wit/base/error.h"
#include "wit/base/json_fields.h"
#include "wit/hash/hash.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr jsonf::Fields F{"invalid proof"};

// "ranges": [[first, last], ...], one per hash of the path (version 3 only).
json ranges_json(const std::vector<KeyRange>& rs) {
  json a = json::array();
  for (const KeyRange& r : rs) a.push_back({r.first.hex(), r.last.hex()});
  return a;
}
std::vector<KeyRange> get_ranges(const json& j, const std::string& where) {
  std::vector<KeyRange> out;
  if (!j.contains("ranges")) return out;
  const json& a = j["ranges"];
  if (!a.is_array() || a.size() > kMaxInclusionPath) F.bad("field 'ranges' is not an array of at most 64 ranges", where);
  for (const json& r : a) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
      F.bad("field 'ranges' holds something other than [first, last] pairs of hex hashes", where);
    KeyRange k;
    if (!Hash32::from_hex(r[0].get<std::string>(), k.first) || !Hash32::from_hex(r[1].get<std::string>(), k.last))
      F.bad("field 'ranges' holds a hash that is not 64 hex digits", where);
    out.push_back(k);
  }
  return out;
}

// Version 2 is read only: a proof of it is checked against a version-2 commitment.
int proof_version(const Commitment& c) { return c.version; }

void check_envelope(const json& doc, const std::string& where) {
  if (!doc.is_object()) F.bad("not a json object", where);
  if (!doc.contains("format") || !doc["format"].is_string())
    throw Error("not a wit proof (no format field)", where);
  if (!doc.contains("version") || !doc["version"].is_number_integer()) F.bad("missing version", where);
}

// The commitment a document names must be the one it is checked against.
Problem commitment_mismatch(const json& doc, const Commitment& c, const std::string& where) {
  const json& ref = F.need(doc, "commitment", where);
  if (!ref.is_object()) F.bad("field 'commitment' is not an object", where);
  F.only_keys(ref, {"n", "root"}, where);
  if (F.hash(ref, "root", where) != c.root || F.u64(ref, "n", where) != c.n)
    return "proof is for another commitment";
  return std::nullopt;
}

Problem record_mismatch(const json& doc, const Hash32& leaf, const std::string& where) {
  if (!doc.contains("record")) return std::nullopt;
  if (!doc["record"].is_string()) F.bad("field 'record' is not a string", where);
  if (record_leaf(ByteView(doc["record"].get<std::string>())) != leaf)
    return "embedded record does not hash to the proved leaf";
  return std::nullopt;
}

}  // namespace

json commitment_ref(const Commitment& c) { return {{"root", c.root.hex()}, {"n", c.n}}; }

InclusionProof prove_inclusion(const Index& idx, const Hash32& leaf, uint64_t position) {
  InclusionProof p = wit::prove_inclusion(idx.tree(), position);
  p.leaf = leaf;
  // A proof is checked against the root before anyone sees it: a damaged cached level gives none.
  if (verify_inclusion(idx.tree().hash(), p, idx.root()) != ProofError::kOk)
    throw Error("index is corrupt (the proof it gives does not lead to its root)", idx.where(),
                "audit it with 'wit-commit show --index', or write it again with wit-commit");
  return p;
}

ExclusionProof prove_exclusion(const Index& idx, const Hash32& leaf) {
  ExclusionProof p;
  if (!wit::prove_exclusion(idx.tree(), leaf, p))
    throw Error("record is present; it has no exclusion proof", "index");
  if (verify_exclusion(idx.tree().hash(), p, idx.root()) != ProofError::kOk)
    throw Error("index is corrupt (the proof it gives does not lead to its root)", idx.where(),
                "audit it with 'wit-commit show --index', or write it again with wit-commit");
  return p;
}

json path_fields(const InclusionProof& p) {
  json j = {{"path", jsonf::hex_array(p.path)}};
  if (!p.ranges.empty()) j["ranges"] = ranges_json(p.ranges);
  return j;
}

ProofError verify_data_inclusion(const InclusionProof& p, const Hash32& root) {
  return verify_inclusion(p.ranges.empty() ? kBlake2bTree : kDataTree, p, root);
}

json inclusion_body(const InclusionProof& p) {
  json j = {{"leaf", p.leaf.hex()}, {"index", p.index}, {"size", p.size}};
  j.update(path_fields(p));
  return j;
}

json exclusion_body(const ExclusionProof& p) {
  auto bracket = [](bool has, const Bracket& b) -> json {
    if (!has) return nullptr;
    json j = {{"index", b.index}, {"leaf", b.leaf.hex()}, {"path", jsonf::hex_array(b.path)}};
    if (!b.ranges.empty()) j["ranges"] = ranges_json(b.ranges);
    return j;
  };
  return {{"leaf", p.value.hex()}, {"size", p.size}, {"left", bracket(p.has_left, p.left)},
          {"right", bracket(p.has_right, p.right)}};
}

json inclusion_document(const Commitment& c, const InclusionProof& p, const std::optional<std::string>& record) {
  json d = {{"format", kProofFormat}, {"version", proof_version(c)}, {"type", "inclusion"},
            {"hash", kBlake2bTree.name}, {"commitment", commitment_ref(c)}};
  d.update(inclusion_body(p));
  if (record) d["record"] = *record;
  return d;
}

json exclusion_document(const Commitment& c, const ExclusionProof& p, const std::optional<std::string>& record) {
  json d = {{"format", kProofFormat}, {"version", proof_version(c)}, {"type", "exclusion"},
            {"hash", kBlake2bTree.name}, {"commitment", commitment_ref(c)}};
  d.update(exclusion_body(p));
  if (record) d["record"] = *record;
  return d;
}

// One spelling only: a misspelt key (say "recOrd") must not pass unchecked.

InclusionProof parse_inclusion_body(const json& j, const std::string& where) {
  InclusionProof p;
  p.leaf = F.hash(j, "leaf", where);
  p.index = F.u64(j, "index", where);
  p.size = F.u64(j, "size", where);
  ProofPath pp = parse_proof_path(j, where);
  p.path = std::move(pp.path);
  p.ranges = std::move(pp.ranges);
  return p;
}

ProofPath parse_proof_path(const json& j, const std::string& where, PathField path) {
  ProofPath out;
  if (path == PathField::kRequired || j.contains("path")) out.path = F.hashes(j, "path", kMaxInclusionPath, where);
  out.ranges = get_ranges(j, where);
  return out;
}

ExclusionProof parse_exclusion_body(const json& j, const std::string& where) {
  ExclusionProof p;
  p.value = F.hash(j, "leaf", where);
  p.size = F.u64(j, "size", where);
  for (const char* side : {"left", "right"}) {
    const json& b = F.need(j, side, where);
    if (b.is_null()) continue;
    if (!b.is_object()) F.bad(std::string("field '") + side + "' is neither null nor an object", where);
    F.only_keys(b, {"index", "leaf", "path", "ranges"}, where);
    Bracket& br = std::string(side) == "left" ? p.left : p.right;
    (std::string(side) == "left" ? p.has_left : p.has_right) = true;
    br.index = F.u64(b, "index", where);
    br.leaf = F.hash(b, "leaf", where);
    ProofPath pp = parse_proof_path(b, where);
    br.path = std::move(pp.path);
    br.ranges = std::move(pp.ranges);
  }
  return p;
}

Verdict verify_inclusion_in(const InclusionProof& p, const Commitment& c) {
  if (p.size != c.n) return Verdict::fail("proof is for a tree of " + std::to_string(p.size) +
                                        " records, the commitment has " + std::to_string(c.n));
  ProofError e = verify_inclusion(c.tree_hash(), p, c.root);
  if (e != ProofError::kOk) return Verdict::fail(to_string(e));
  return Verdict::pass("record " + p.leaf.hex() + " is at position " + std::to_string(p.index) + " of the " +
                        std::to_string(c.n) + " distinct committed records");
}

namespace {

// A version-2 exclusion passes only with what it rests on said; strict refuses it.
Verdict unranged_absence(Verdict v, bool strict) {
  if (!v.ok) return v;
  if (strict)
    return Verdict::fail("version 2 exclusion refused (--strict): it is " + std::string(kUnrangedExclusionCaveat) +
                         ", or prove again against a version 3 commitment");
  v.summary += " (" + std::string(kUnrangedExclusionCaveat) + ")";
  return v;
}

Verdict verify_exclusion_in(const ExclusionProof& p, const Commitment& c) {
  if (p.size != c.n) return Verdict::fail("proof is for a tree of " + std::to_string(p.size) +
                                        " records, the commitment has " + std::to_string(c.n));
  ProofError e = verify_exclusion(c.tree_hash(), p, c.root);
  if (e != ProofError::kOk) return Verdict::fail(to_string(e));
  return Verdict::pass("record " + p.value.hex() + " is not among the " + std::to_string(c.n) +
                        " distinct committed records");
}

Verdict verify_certificate(const json& doc, const Commitment& c, const std::string& where, bool strict) {
  const json& absent = F.need(doc, "absent", where);
  const json& present = F.need(doc, "present", where);
  const json& clean = F.need(doc, "clean", where);
  if (!absent.is_array() || !present.is_array() || !clean.is_boolean())
    F.bad("fields 'absent', 'present' must be arrays and 'clean' a boolean", where);
  F.only_keys(doc, {"format", "version", "hash", "commitment", "eval", "clean", "absent", "present", "ngram_overlap"},
              where);
  size_t i = 0;
  for (const auto& a : absent) {
    F.only_keys(a, {"leaf", "size", "left", "right", "eval_index"}, where);
    Verdict v = verify_exclusion_in(parse_exclusion_body(a, where), c);
    if (!v.ok) return Verdict::fail("absent[" + std::to_string(i) + "]: " + v.reason);
    i++;
  }
  i = 0;
  for (const auto& p : present) {
    F.only_keys(p, {"leaf", "index", "size", "path", "ranges", "eval_index"}, where);
    Verdict v = verify_inclusion_in(parse_inclusion_body(p, where), c);
    if (!v.ok) return Verdict::fail("present[" + std::to_string(i) + "]: " + v.reason);
    i++;
  }
  if (clean.get<bool>() != present.empty())
    return Verdict::fail("'clean' disagrees with the list of present records");
  std::string s = std::to_string(absent.size()) + " eval records proved absent, " +
                  std::to_string(present.size()) + " proved present";
  if (!c.ranged() && !absent.empty()) return unranged_absence(Verdict::pass(s), strict);
  return Verdict::pass(s);
}

}  // namespace

Verdict certificate_covers(const json& cert, const std::vector<Hash32>& eval_leaves, const std::string& where) {
  std::vector<Hash32> proved;
  for (const char* list : {"absent", "present"})
    for (const auto& p : F.need(cert, list, where)) proved.push_back(F.hash(p, "leaf", where));
  std::sort(proved.begin(), proved.end());
  for (size_t i = 0; i < eval_leaves.size(); i++)
    if (!std::binary_search(proved.begin(), proved.end(), eval_leaves[i]))
      return Verdict::fail("eval record " + std::to_string(i) + " (" + eval_leaves[i].hex() + ") has no proof in the certificate");
  return Verdict::pass("the certificate covers all " + std::to_string(eval_leaves.size()) + " eval records");
}

Problem check_proof_head(const json& doc, const Commitment& c, const std::string& where) {
  check_envelope(doc, where);
  const std::string format = doc["format"].get<std::string>();
  const int64_t version = doc["version"].get<int64_t>();
  if (format != kProofFormat && format != "wit.contamination")
    throw Error("not a wit proof (format \"" + format + "\")", where);
  if (version != kProofVersion && version != kCommitVersionUnranged)
    throw Error("unsupported proof version " + std::to_string(version) + " (this wit reads versions " +
                    std::to_string(kCommitVersionUnranged) + " and " + std::to_string(kProofVersion) + ")",
                where, version == 1 ? "version 1 proofs were against a two-tree commitment; prove again" : "");
  if (doc.contains("hash") && doc["hash"] != kBlake2bTree.name) F.bad("unsupported hash", where);
  if (auto m = commitment_mismatch(doc, c, where)) return *m;
  if (version != c.version)
    return "proof is of version " + std::to_string(version) + ", its commitment of version " +
           std::to_string(c.version) + " (a proof is of its commitment's version)";
  return std::nullopt;
}

Verdict verify_document(const json& doc, const Commitment& c, const std::string& where, bool strict) {
  if (const Problem p = check_proof_head(doc, c, where)) return Verdict::fail(*p);
  if (doc["format"] == "wit.contamination") return verify_certificate(doc, c, where, strict);
  const json& type = F.need(doc, "type", where);
  if (type == "inclusion") {
    F.only_keys(doc, {"format", "version", "type", "hash", "commitment", "leaf", "index", "size", "path", "ranges", "record"}, where);
    InclusionProof p = parse_inclusion_body(doc, where);
    if (auto m = record_mismatch(doc, p.leaf, where)) return Verdict::fail(*m);
    return verify_inclusion_in(p, c);
  }
  if (type == "exclusion") {
    F.only_keys(doc, {"format", "version", "type", "hash", "commitment", "leaf", "size", "left", "right", "record"}, where);
    ExclusionProof p = parse_exclusion_body(doc, where);
    if (auto m = record_mismatch(doc, p.value, where)) return Verdict::fail(*m);
    if (!c.ranged()) return unranged_absence(verify_exclusion_in(p, c), strict);
    return verify_exclusion_in(p, c);
  }
  F.bad("unknown proof type " + type.dump(), where);
}

}  // namespace wit
