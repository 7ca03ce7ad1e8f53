// tree_forge: attacks 19 and 23, a trainer running its own code commits to a
// data tree whose leaves are out of order. From the honest commitment and
// index of its training files (which hold some eval records), it moves each
// eval record's leaf out of its sorted place, so that its sorted neighbours
// become adjacent, and writes from that one forged root (everything else in
// the commitment unchanged) an inclusion proof of such a record and a clean
// contamination certificate for the whole eval set.
//   --v2: a version-2 commitment (an RFC 6962 tree): both verify, and only the
//         audit of the leaves catches it (attack 19 as it was).
//   version 3 (the ranged tree), with the keys each node binds chosen by
//   --keys: honest (the leaves around each split of the unsorted tree: attack
//   19), sorted (attack 23: every node claims the split keys the sorted tree
//   of the same leaves would have) or path (attack 23: the nodes on the
//   included record's path claim what its proof needs, the others honest).
//   The proofs are the best a forger can give for the tree: the real sibling
//   hashes, each range's near end the one its parent binds and its far end
//   the one the node above binds (docs/proofs.md).
//   tree_forge --commit C --index I --out-commit F.commit.json --leaves F.wleaves
//              --proof INCL.json --certificate CERT.json [--v2 | --keys K] EVALFILE...
// The inclusion proof is of the first eval record that is in the training data.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"
#include "wit/data/tree_audit.h"

using namespace wit;
using json = nlohmann::json;

namespace {

// A ranged tree over T whose nodes bind keys of the forger's choice.
struct Forged {
  const std::vector<Hash32>& T;
  std::map<std::pair<uint64_t, uint64_t>, Hash32> hash;
  std::map<std::pair<uint64_t, uint64_t>, std::pair<Hash32, Hash32>> keys;  // (left last, right first) bound
  Hash32 root;
};
using KeyChoice = std::function<std::pair<Hash32, Hash32>(uint64_t b, uint64_t e, uint64_t k)>;
Hash32 build(Forged& f, uint64_t b, uint64_t e, const KeyChoice& choose) {
  Hash32 h = f.T[b];
  if (e - b > 1) {
    const uint64_t k = b + split_point(e - b);
    const Hash32 l = build(f, b, k, choose), r = build(f, k, e, choose);
    const auto kk = choose(b, e, k);
    f.keys[{b, e}] = kk;
    h = kDataTree.ranged_node(l, r, kk.first, kk.second);
  }
  f.hash[{b, e}] = h;
  return h;
}

// The best inclusion proof of position i: the real sibling hashes; each
// range's near end is what its parent binds, its far end what the first node
// above that binds it does (else the true leaf).
InclusionProof best_proof(const Forged& f, uint64_t i) {
  const uint64_t n = f.T.size();
  const std::vector<Range> sib = inclusion_ranges(i, n);
  std::vector<Range> parent;
  Range cur{i, i + 1};
  for (const Range& s : sib) {
    cur = {std::min(cur.begin, s.begin), std::max(cur.end, s.end)};
    parent.push_back(cur);
  }
  InclusionProof p{f.T[i], i, n, {}, {}};
  for (size_t j = 0; j < sib.size(); j++) {
    const Range& s = sib[j];
    const bool right = s.begin > i;
    p.path.push_back(f.hash.at({s.begin, s.end}));
    if (s.size() == 1) {
      p.ranges.push_back({f.T[s.begin], f.T[s.begin]});
      continue;
    }
    const auto& bound = f.keys.at({parent[j].begin, parent[j].end});
    Hash32 near = right ? bound.second : bound.first;
    Hash32 far = right ? f.T[s.end - 1] : f.T[s.begin];
    for (size_t u = j + 1; u < sib.size(); u++)
      if ((sib[u].begin > i) == right) {
        const auto& up = f.keys.at({parent[u].begin, parent[u].end});
        far = right ? up.first : up.second;
        break;
      }
    p.ranges.push_back(right ? KeyRange{near, far} : KeyRange{far, near});
  }
  return p;
}

// An "exclusion" of v in the forged tree: adjacent leaves that bracket it, or
// an end. Not a search in a sorted tree: a scan, since the tree is not one.
template <class ProveAt>
bool forged_exclusion(const std::vector<Hash32>& T, const Hash32& v, ExclusionProof& p, ProveAt&& at) {
  const uint64_t n = T.size();
  p = ExclusionProof{};
  p.value = v;
  p.size = n;
  auto bracket = [&](uint64_t i) {
    InclusionProof q = at(i);
    return Bracket{i, T[i], q.path, q.ranges};
  };
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

// A value just below / above h (h -/+ 1 as a big-endian number).
Hash32 below(Hash32 h) {
  for (int i = 31; i >= 0 && h.b[size_t(i)]-- == 0; i--) {
  }
  return h;
}
Hash32 above(Hash32 h) {
  for (int i = 31; i >= 0 && ++h.b[size_t(i)] == 0; i--) {
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  std::string commit_path, index_path, out_commit, out_leaves, out_proof, out_cert, keys = "honest";
  bool v2 = false;
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
    else if (a == "--keys") next(keys);
    else if (a == "--v2") v2 = true;
    else eval_files.push_back(a);
  }
  try {
    if (commit_path.empty() || index_path.empty() || out_commit.empty() || out_leaves.empty() || out_proof.empty() ||
        out_cert.empty() || eval_files.empty())
      throw Error("usage: tree_forge --commit C --index I --out-commit F --leaves L --proof P --certificate X "
                  "[--v2 | --keys honest|sorted|path] EVALFILE...");
    if (keys != "honest" && keys != "sorted" && keys != "path") throw Error("--keys is honest, sorted or path", keys);
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
    // The record whose inclusion is proved: the first eval record trained on.
    uint64_t target = T.size();
    for (uint64_t e = 0; e < eval.leaves.size() && target == T.size(); e++)
      for (uint64_t i = 0; i < T.size(); i++)
        if (T[i] == eval.leaves[e]) {
          target = i;
          break;
        }

    Commitment forged = honest;  // same files, counts and digests: only the root (and for --v2 the version) differs
    std::function<InclusionProof(uint64_t)> prove_at;
    std::unique_ptr<MerkleTree> v2_tree;
    Forged f{T, {}, {}, {}};
    if (v2) {
      v2_tree = std::make_unique<MerkleTree>(kBlake2bTree, T.data(), T.size(), 8, 1);
      forged.version = kCommitVersionUnranged;
      forged.root = v2_tree->root();
      prove_at = [&](uint64_t i) {
        return InclusionProof{T[i], i, T.size(), v2_tree->hashes(inclusion_ranges(i, T.size())), {}};
      };
    } else {
      std::vector<Hash32> sorted = T;
      std::sort(sorted.begin(), sorted.end());
      // The target's path, bottom-up: what each of its ancestors must bind
      // for its proof to pass (its computed range so far, and a key past it).
      std::map<std::pair<uint64_t, uint64_t>, std::pair<Hash32, Hash32>> path_keys;
      if (keys == "path") {
        KeyRange cur{T[target], T[target]};
        Range at{target, target + 1};
        for (const Range& s : inclusion_ranges(target, T.size())) {
          const bool right = s.begin > target;
          const Range par{std::min(at.begin, s.begin), std::max(at.end, s.end)};
          if (right) {
            const Hash32 first = s.size() == 1 ? T[s.begin] : above(cur.last);
            path_keys[{par.begin, par.end}] = {cur.last, first};
            cur.last = s.size() == 1 ? T[s.begin] : above(first);
          } else {
            const Hash32 last = s.size() == 1 ? T[s.begin] : below(cur.first);
            path_keys[{par.begin, par.end}] = {last, cur.first};
            cur.first = s.size() == 1 ? T[s.begin] : below(last);
          }
          at = par;
        }
      }
      const KeyChoice choose = [&](uint64_t b, uint64_t e, uint64_t k) {
        if (keys == "sorted") return std::make_pair(sorted[k - 1], sorted[k]);
        auto it = path_keys.find({b, e});
        if (it != path_keys.end()) return it->second;
        return std::make_pair(T[k - 1], T[k]);
      };
      f.root = T.empty() ? kDataTree.empty() : build(f, 0, T.size(), choose);
      forged.root = f.root;
      prove_at = [&](uint64_t i) { return best_proof(f, i); };
    }
    write_file_atomic(out_commit, forged.dump());
    {
      AtomicFile lf(out_leaves, true);
      lf.write(ByteView(encode_leaves_header({T.size(), forged.root})));
      lf.write(ByteView(reinterpret_cast<const uint8_t*>(T.data()), T.size() * 32));
      lf.commit();
    }

    if (target < T.size()) write_file_atomic(out_proof, inclusion_document(forged, prove_at(target)).dump(2) + "\n");
    json absent = json::array();
    for (uint64_t e = 0; e < eval.leaves.size(); e++) {
      const Hash32& v = eval.leaves[e];
      ExclusionProof x;
      if (!forged_exclusion(T, v, x, prove_at))
        throw Error("eval record " + std::to_string(e) + " cannot be bracketed in this tree");
      json body = exclusion_body(x);
      body["eval_index"] = e;
      absent.push_back(body);
    }
    const MerkleTree eval_tree(kBlake2bTree, eval.leaves.data(), eval.leaves.size(), 8, 1);
    const json cert = {
        {"format", kContaminationFormat},
        {"version", forged.version},
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
    std::cerr << "tree_forge: moved " << front.size() + back.size() << " eval records out of order; "
              << (v2 ? "version 2" : "keys " + keys) << "; forged root " << forged.root.hex() << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "tree_forge: error: " << e.what() << "\n";
    return 2;
  }
}
