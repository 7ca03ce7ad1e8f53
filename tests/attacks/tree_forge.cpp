// tree_forge: attack 19, a trainer running its own code commits to a data
// tree whose leaves are out of order. From the honest commitment and index of
// its training files (which hold some eval records), it moves each eval
// record's leaf out of its sorted place, so that its sorted neighbours become
// adjacent: the forged root (everything else in the commitment unchanged)
// then gives both an inclusion proof of such a record and a clean
// contamination certificate for the whole eval set. What only an audit of the
// leaves catches (wit-query audit-leaves, docs/leaves.md).
//   tree_forge --commit C --index I --out-commit F.commit.json --leaves F.wleaves
//              --proof INCL.json --certificate CERT.json EVALFILE...
// The inclusion proof is of the first eval record that is in the training data.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/commitment.h"
#include "wit/contamination.h"
#include "wit/error.h"
#include "wit/index.h"
#include "wit/io.h"
#include "wit/merkle.h"
#include "wit/proofs.h"
#include "wit/tree_audit.h"

using namespace wit;
using json = nlohmann::json;

namespace {

// An "exclusion" of v in the forged tree: adjacent leaves that bracket it, or
// an end. Not a search in a sorted tree: a scan, since the tree is not one.
bool forged_exclusion(const MerkleTree& t, const std::vector<Hash32>& T, const Hash32& v, ExclusionProof& p) {
  const uint64_t n = T.size();
  p = ExclusionProof{};
  p.value = v;
  p.size = n;
  auto bracket = [&](uint64_t i) { return Bracket{i, T[i], t.hashes(inclusion_ranges(i, n))}; };
  if (n == 0) return true;
  if (v < T[0]) {
    p.has_right = true;
    p.right = bracket(0);
    return true;
  }
  if (T[n - 1] < v) {
    p.has_left = true;
    p.left = bracket(n - 1);
    return true;
  }
  for (uint64_t i = 0; i + 1 < n; i++)
    if (T[i] < v && v < T[i + 1]) {
      p.has_left = p.has_right = true;
      p.left = bracket(i);
      p.right = bracket(i + 1);
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string commit_path, index_path, out_commit, out_leaves, out_proof, out_cert;
  std::vector<std::string> eval_files;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&](std::string& v) {
      if (i + 1 >= argc) throw Error("missing value", a);
      v = argv[++i];
    };
    if (a == "--commit") next(commit_path);
    else if (a == "--index") next(index_path);
    else if (a == "--out-commit") next(out_commit);
    else if (a == "--leaves") next(out_leaves);
    else if (a == "--proof") next(out_proof);
    else if (a == "--certificate") next(out_cert);
    else eval_files.push_back(a);
  }
  try {
    if (commit_path.empty() || index_path.empty() || out_commit.empty() || out_leaves.empty() || out_proof.empty() ||
        out_cert.empty() || eval_files.empty())
      throw Error("usage: tree_forge --commit C --index I --out-commit F --leaves L --proof P --certificate X EVALFILE...");
    const Commitment honest = Commitment::load(commit_path);
    const Index idx(index_path);
    idx.check_matches(honest, commit_path);
    const LeafSet eval = hash_records(honest.reader, eval_files, 1);

    // S: the sorted leaves without the eval records; the moved ones go before
    // S when above its first leaf (else after it), out of order either way.
    std::vector<Hash32> S, front, back;
    std::vector<bool> moved(idx.n(), false);
    for (const Hash32& e : eval.leaves)
      if (auto pos = idx.find(e)) moved[*pos] = true;
    for (uint64_t i = 0; i < idx.n(); i++)
      if (!moved[i]) S.push_back(idx.tree().leaves()[i]);
    for (uint64_t i = 0; i < idx.n(); i++)
      if (moved[i]) (S.empty() || S[0] < idx.tree().leaves()[i] ? front : back).push_back(idx.tree().leaves()[i]);
    if (front.empty() && back.empty()) throw Error("no eval record is in the training data: nothing to hide");
    std::vector<Hash32> T = front;
    T.insert(T.end(), S.begin(), S.end());
    T.insert(T.end(), back.begin(), back.end());
    const MerkleTree tree(kBlake2bTree, T.data(), T.size(), 8, 1);

    Commitment forged = honest;  // same files, counts and digests: only the root differs
    forged.root = tree.root();
    write_file_atomic(out_commit, forged.dump());
    {
      AtomicFile f(out_leaves, true);
      f.write(ByteView(encode_leaves_header({T.size(), forged.root})));
      f.write(ByteView(reinterpret_cast<const uint8_t*>(T.data()), T.size() * 32));
      f.commit();
    }

    // The inclusion proof of the first eval record trained on.
    bool proved = false;
    json absent = json::array();
    for (uint64_t e = 0; e < eval.leaves.size(); e++) {
      const Hash32& v = eval.leaves[e];
      for (uint64_t i = 0; i < T.size() && !proved; i++)
        if (T[i] == v) {
          InclusionProof p{v, i, T.size(), tree.hashes(inclusion_ranges(i, T.size()))};
          write_file_atomic(out_proof, inclusion_document(forged, p).dump(2) + "\n");
          proved = true;
        }
      ExclusionProof x;
      if (!forged_exclusion(tree, T, v, x)) throw Error("eval record " + std::to_string(e) + " cannot be bracketed in this tree");
      json body = exclusion_body(x);
      body["eval_index"] = e;
      absent.push_back(body);
    }
    const MerkleTree eval_tree(kBlake2bTree, eval.leaves.data(), eval.leaves.size(), 8, 1);
    const json cert = {
        {"format", kContaminationFormat},
        {"version", kProofVersion},
        {"hash", kBlake2bTree.name},
        {"commitment", commitment_ref(forged)},
        {"eval",
         {{"reader", honest.reader.to_json()}, {"inputs", eval_files}, {"n", eval.leaves.size()},
          {"n_distinct", eval.leaves.size()}, {"root", eval_tree.root().hex()}}},
        {"clean", true},
        {"absent", absent},
        {"present", json::array()},
    };
    write_file_atomic(out_cert, cert.dump(2) + "\n");
    std::cerr << "tree_forge: moved " << front.size() + back.size() << " eval records out of order; forged root "
              << forged.root.hex() << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "tree_forge: error: " << e.what() << "\n";
    return 2;
  }
}
