// The contamination certificate's compact form (docs/proofs.md, "The compact
// form"): one multiproof for all proofs. For trees of 0..40 leaves of both data
// trees (ranged, version 3; RFC 6962, version 2) and eval sets of absent and
// present records, compacting and expanding gives back the certificate byte
// for byte, the expanded one verifies, and a changed byte anywhere in the
// multiproof makes it fail to verify or fail to parse: the compact form is an
// encoding, and what is verified is the full certificate it gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"

using namespace wit;
using nlohmann::json;

namespace {

Hash32 value(uint64_t i, uint64_t salt) {
  uint8_t b[16];
  put_le64(b, i);
  put_le64(b + 8, salt);
  return kBlake2bTree.leaf(ByteView(b, 16));
}

struct Case {
  Commitment c;
  std::vector<Hash32> leaves;  // sorted, distinct
  json cert;
};

// A tree of n leaves and a certificate of `absent` values not in it and every
// `present_every`-th leaf of it, as wit-query contamination writes one.
Case make_case(uint64_t n, int version, uint64_t absent, uint64_t present_every) {
  Case k;
  for (uint64_t i = 0; i < n; i++) k.leaves.push_back(value(i, 1));
  std::sort(k.leaves.begin(), k.leaves.end());
  k.c.version = version;
  k.c.n = n;
  const TreeHash& th = Commitment::data_tree_hash(version);
  k.c.root = merkle_root(th, k.leaves);
  const MerkleTree tree(th, k.leaves.data(), n, 2, 1);
  json a = json::array(), p = json::array();
  uint64_t e = 0;
  for (uint64_t i = 0; i < absent; i++) {
    ExclusionProof x;
    REQUIRE(prove_exclusion(tree, value(i, 2), x));
    json body = exclusion_body(x);
    body["eval_index"] = e++;
    a.push_back(body);
  }
  for (uint64_t i = 0; present_every && i < n; i += present_every) {
    json body = inclusion_body(prove_inclusion(tree, i));
    body["eval_index"] = e++;
    p.push_back(body);
  }
  k.cert = {{"format", kContaminationFormat}, {"version", version}, {"hash", "blake2b-256"},
            {"commitment", commitment_ref(k.c)}, {"clean", p.empty()}, {"absent", a}, {"present", p}};
  return k;
}

}  // namespace

TEST_CASE("a compact certificate expands to the certificate it was made from, which verifies", "[contamination][compact]") {
  for (int version : {kCommitVersion, kCommitVersionUnranged})
    for (uint64_t n = 0; n <= 40; n++)
      for (uint64_t present_every : {0, 3}) {
        CAPTURE(version, n, present_every);
        const Case k = make_case(n, version, 1 + n / 2, present_every);
        const json compact = compact_certificate(k.cert, "t");
        REQUIRE(is_compact_certificate(compact));
        REQUIRE_FALSE(compact.contains("absent"));
        CHECK(compact_certificate(compact, "t") == compact);  // already compact
        const json full = expand_certificate(compact, "t");
        CHECK(full == k.cert);
        CHECK(verify_document(full, k.c, "t").ok);
        // Read back from its text, as a folder keeps it.
        CHECK(expand_certificate(json::parse(compact.dump(2)), "t") == k.cert);
        if (n >= 8) CHECK(compact.dump(2).size() < k.cert.dump(2).size());
      }
}

TEST_CASE("a changed character of a compact certificate fails to parse or verify, or still claims only what is true", "[contamination][compact]") {
  for (int version : {kCommitVersion, kCommitVersionUnranged}) {
    const Case k = make_case(23, version, 9, 5);
    const json compact = compact_certificate(k.cert, "t");
    const std::string text = compact.dump();
    const size_t mp = text.find("\"multiproof\"");
    REQUIRE(mp != std::string::npos);
    std::mt19937_64 rng(7);
    int rejected = 0, failed = 0;
    for (size_t at = mp; at < text.size(); at++) {
      std::string t = text;
      const char was = t[at];
      // Another character of the same class, so most mutations still parse.
      t[at] = (was >= '0' && was <= '9') ? char('0' + (was - '0' + 1 + rng() % 9) % 10)
              : (was >= 'a' && was <= 'f') ? char('a' + (was - 'a' + 1) % 6)
              : (was >= 'A' && was <= 'Z') ? char('A' + (was - 'A' + 1) % 26)
                                           : char(was ^ 1);
      const json doc = json::parse(t, nullptr, false);
      if (doc.is_discarded()) continue;
      try {
        const json full = expand_certificate(doc, "t");
        const Verdict v = verify_document(full, k.c, "t");
        if (v.ok) {
          // Valid only when it still claims exactly what is true: the same proved leaves.
          CAPTURE(at, t.substr(at > 20 ? at - 20 : 0, 40));
          CHECK(full["absent"].size() + full["present"].size() == k.cert["absent"].size() + k.cert["present"].size());
          for (const auto& x : full["absent"]) {
            Hash32 h;
            REQUIRE(Hash32::from_hex(x["leaf"].get<std::string>(), h));
            CHECK_FALSE(std::binary_search(k.leaves.begin(), k.leaves.end(), h));
          }
          for (const auto& x : full["present"]) {
            Hash32 h;
            REQUIRE(Hash32::from_hex(x["leaf"].get<std::string>(), h));
            CHECK(std::binary_search(k.leaves.begin(), k.leaves.end(), h));
          }
        } else {
          failed++;
        }
      } catch (const Error&) {
        rejected++;
      }
    }
    CHECK(failed > 100);
    CHECK(rejected > 10);
  }
}

TEST_CASE("a compact certificate cannot prove a present record absent", "[contamination][compact]") {
  for (int version : {kCommitVersion, kCommitVersionUnranged}) {
    const Case k = make_case(17, version, 3, 0);
    // The forger's entry: a genuine exclusion's brackets and paths, claimed
    // for the present record at its right bracket (or left).
    for (const char* side : {"right", "left"}) {
      json full = k.cert;
      json forged = full["absent"][0];
      if (forged[side].is_null()) continue;
      forged["leaf"] = forged[side]["leaf"];
      forged["eval_index"] = 9;
      full["absent"].push_back(forged);
      const json compact = compact_certificate(full, "t");  // an encoding: it holds the lie as given
      CAPTURE(version, side);
      CHECK_FALSE(verify_document(expand_certificate(compact, "t"), k.c, "t").ok);
    }
  }
}

TEST_CASE("a malformed compact certificate is an error naming the field", "[contamination][compact]") {
  const Case k = make_case(12, kCommitVersion, 4, 0);
  const json compact = compact_certificate(k.cert, "c.json");
  auto fails = [&](json doc, const std::string& words) {
    try {
      (void)expand_certificate(doc, "c.json");
      FAIL("accepted: " + words);
    } catch (const Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(words));
    }
  };
  json d = compact;
  d["multiproof"]["nodes"] = d["multiproof"]["nodes"].get<std::string>().substr(4);
  fails(d, "multiproof.nodes");
  d = compact;
  d["multiproof"]["leaves"] = "!!!!";
  fails(d, "not base64");
  d = compact;
  d["multiproof"]["absent"][0][2] = 13;
  fails(d, "out of the tree");
  d = compact;
  d["multiproof"]["extra"] = 1;
  fails(d, "unknown field 'multiproof.extra'");
  d = compact;
  d["absent"] = json::array();
  fails(d, "beside its multiproof");
  d = compact;
  d["multiproof"]["absent"][0] = {0, "zz", 1};
  fails(d, "bad leaf");
}
