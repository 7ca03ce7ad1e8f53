// Contamination certificates: exact per-record proofs plus an n-gram statistic.
#include "wit/proofs/contamination.h"

#include <sodium.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "wit/base/error.h"
#include "wit/base/json_fields.h"
#include "wit/hash/merkle.h"
#include "wit/base/parallel.h"
#include "wit/proofs/proofs.h"

namespace wit {

using nlohmann::json;

std::vector<uint64_t> ngram_shingles(ByteView rec, bool tokens, unsigned n, unsigned token_bytes) {
  std::vector<uint64_t> units;
  if (tokens) {
    for (uint64_t i = 0; i < token_count(rec, token_bytes); i++) units.push_back(token_id(rec, token_bytes, i));
  } else {
    // Words: runs of ASCII letters/digits or non-ASCII bytes, ASCII lowercased;
    // punctuation and whitespace separate words (as in GPT-3's overlap study).
    std::string w;
    auto flush = [&] {
      if (!w.empty()) units.push_back(XXH3_64bits(w.data(), w.size()));
      w.clear();
    };
    for (size_t i = 0; i < rec.size; i++) {
      uint8_t c = rec.data[i];
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80) w.push_back(char(c));
      else if (c >= 'A' && c <= 'Z') w.push_back(char(c - 'A' + 'a'));
      else flush();
    }
    flush();
  }
  std::vector<uint64_t> out;
  for (size_t i = 0; i + n <= units.size(); i++) out.push_back(XXH3_64bits(&units[i], n * sizeof(uint64_t)));
  return out;
}

namespace {

// The training files, when they can be had: --train-data, else the
// commitment's inputs looked up as given and then beside the commitment file.
// Files that are found must be the committed data: they are committed again
// (with the bounded reading of wit-commit: a jsonl or lines file streamed in
// one pass, never held whole) and a commitment that is not their tree (one
// that leaves records out, say) is refused with the first difference. Not
// finding them is no error (the certificate then rests on the index audit
// alone), and `reason` says why.
std::optional<std::vector<std::string>> check_training(const ContaminationInput& in, std::string& reason) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths = in.train_paths;
  if (paths.empty()) {
    fs::path base = fs::path(in.commit_path).parent_path();
    for (const auto& p : in.commitment->inputs) {
      if (p != "-" && fs::exists(p)) paths.push_back(p);
      else if (p != "-" && fs::exists(base / p)) paths.push_back((base / p).string());
      else {
        reason = "training input not found: " + p;
        return std::nullopt;
      }
    }
  }
  const Commitment& c = *in.commitment;
  const CommitResult got = commit_dataset(c.reader, paths, in.threads);
  const MerkleTree t(c.tree_hash(), got.tree.leaves(), got.tree.size(), MerkleTree::kDefaultCacheLevel, in.threads);
  if (t.root() != c.root || got.tree.size() != c.n || got.tree.records() != c.records) {
    // The words for the difference (first_mismatch) need the files opened:
    // only on this way out.
    const RecordFiles files = RecordFiles::open(c.reader, paths);
    const std::string why = first_mismatch(c, c.reader, files, got.tree, in.threads).value_or("the trees differ");
    throw Error("the training files do not match the commitment: " + why, "",
                "a commitment must be the tree wit-commit builds from the files; certify against that one");
  }
  return paths;
}

// Calls mark(shingle) for every n-gram shingle of every training record, one
// file after another, reading each with bounded memory: a jsonl or lines file
// streamed in chunks (stream_text_records, on all threads: mark must be
// thread-safe), anything else opened as its reader opens it (token files are
// read with pread; fortune files whole). A file the one pass gives up on
// is read again whole: mark may see some of its shingles twice.
void for_each_training_shingle(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                               const std::function<void(uint64_t)>& mark) {
  const bool tokens = spec.kind == ReaderKind::kTokens;
  for (const auto& path : paths) {
    uint64_t size = 0;
    if (stream_text_records(spec, path, threads, kDefaultPieceSize, [&](unsigned, const StreamChunk& c) {
          for (const ByteView& r : *c.records)
            for (uint64_t s : ngram_shingles(r, tokens, kNgramN, spec.token_bytes)) mark(s);
        }, size))
      continue;
    const auto src = RecordSource::open(spec, path);
    parallel_for(src->count(), threads, 256, [&](uint64_t b, uint64_t e) {
      std::string scratch;
      for (uint64_t i = b; i < e; i++)
        for (uint64_t s : ngram_shingles(src->record(i, scratch), tokens, kNgramN, spec.token_bytes)) mark(s);
    });
  }
}

json ngram_statistic(const ContaminationInput& in, const LeafSet& eval, const std::vector<std::string>* train,
                     const std::string& missing) {
  json st = {{"kind", "statistic, not a proof"}, {"n", kNgramN},
             {"unit", in.eval_reader.kind == ReaderKind::kTokens ? "tokens" : "words"}};
  if (!in.ngrams) {
    st["computed"] = false;
    st["reason"] = "disabled";
    return st;
  }
  if ((in.commitment->reader.kind == ReaderKind::kTokens) != (in.eval_reader.kind == ReaderKind::kTokens)) {
    st["computed"] = false;
    st["reason"] = "training and eval data are not both text or both tokens";
    return st;
  }
  if (in.commitment->reader.kind == ReaderKind::kTokens &&
      in.commitment->reader.token_bytes != in.eval_reader.token_bytes) {
    st["computed"] = false;
    st["reason"] = "training and eval token ids differ in width";
    return st;
  }
  if (!train) {
    st["computed"] = false;
    st["reason"] = missing;
    return st;
  }
  const bool tokens = in.commitment->reader.kind == ReaderKind::kTokens;
  const unsigned width = in.commitment->reader.token_bytes;
  // The eval side's shingles (small) are the set; the training records are
  // streamed past it, marking the ones they hold. (The training side's
  // shingles were the set before: memory grew with the corpus.)
  std::string scratch;
  std::vector<std::vector<uint64_t>> eval_shingles;
  std::unordered_map<uint64_t, size_t> slot;
  for (const auto& r : eval.files.readers)
    for (uint64_t i = 0; i < r->count(); i++) {
      eval_shingles.push_back(ngram_shingles(r->record(i, scratch), tokens, kNgramN, width));
      for (uint64_t s : eval_shingles.back()) slot.emplace(s, slot.size());
    }
  std::unique_ptr<std::atomic<bool>[]> seen(new std::atomic<bool>[slot.size() + 1]);
  for (size_t k = 0; k <= slot.size(); k++) seen[k].store(false, std::memory_order_relaxed);
  if (!slot.empty())
    for_each_training_shingle(in.commitment->reader, *train, in.threads, [&](uint64_t s) {
      if (auto it = slot.find(s); it != slot.end()) seen[it->second].store(true, std::memory_order_relaxed);
    });
  uint64_t records = 0, short_records = 0, with_overlap = 0, grams = 0, hits = 0;
  for (const auto& sh : eval_shingles) {
    records++;
    if (sh.empty()) {
      short_records++;
      continue;
    }
    uint64_t h = 0;
    for (uint64_t s : sh) h += seen[slot.at(s)].load(std::memory_order_relaxed) ? 1 : 0;
    grams += sh.size();
    hits += h;
    with_overlap += h > 0;
  }
  st["computed"] = true;
  st["eval_records"] = records;
  st["eval_records_too_short"] = short_records;
  st["eval_records_with_overlap"] = with_overlap;
  st["eval_ngrams"] = grams;
  st["overlapping_ngrams"] = hits;
  st["overlap_fraction"] = grams ? double(hits) / double(grams) : 0.0;
  return st;
}

}  // namespace

json contamination_certificate(const ContaminationInput& in) {
  const Commitment& c = *in.commitment;
  // An exclusion is a gap between two adjacent leaves, which means absence
  // only in a sorted distinct tree: check the whole index, and the training
  // files when they are at hand, before proving anything.
  in.index->check_matches(c, in.commit_path, in.threads);  // with the full audit
  std::string missing;
  const std::optional<std::vector<std::string>> train = check_training(in, missing);
  LeafSet eval = hash_records(in.eval_reader, in.eval_paths, in.threads);
  // One proof per distinct eval record, in first-seen order; eval_index says
  // which eval record it is about (the first, if it repeats).
  std::vector<uint64_t> order(eval.leaves.size()), distinct;
  std::iota(order.begin(), order.end(), uint64_t(0));
  std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
    return eval.leaves[a] < eval.leaves[b] || (eval.leaves[a] == eval.leaves[b] && a < b);
  });
  for (size_t i = 0; i < order.size(); i++)
    if (i == 0 || eval.leaves[order[i]] != eval.leaves[order[i - 1]]) distinct.push_back(order[i]);
  std::sort(distinct.begin(), distinct.end());
  json absent = json::array(), present = json::array();
  for (uint64_t e : distinct) {
    const Hash32& leaf = eval.leaves[e];
    json body;
    if (auto pos = in.index->find(leaf)) body = inclusion_body(prove_inclusion(*in.index, leaf, *pos));
    else body = exclusion_body(prove_exclusion(*in.index, leaf));
    body["eval_index"] = e;
    (body.contains("index") ? present : absent).push_back(std::move(body));
  }
  json sources = json::array();
  for (const auto& s : eval.sources)
    sources.push_back({{"path", s.path}, {"size", s.size}, {"piece_size", s.piece_size}, {"digest", s.digest.hex()}});
  MerkleTree eval_tree(kBlake2bTree, eval.leaves.data(), eval.leaves.size(), 8, in.threads);
  json cert = {
      {"format", kContaminationFormat},
      {"version", c.version},
      {"hash", kBlake2bTree.name},
      {"commitment", commitment_ref(c)},
      {"eval", {{"reader", in.eval_reader.to_json()}, {"inputs", in.eval_paths}, {"sources", sources},
                {"n", eval.leaves.size()}, {"n_distinct", distinct.size()}, {"root", eval_tree.root().hex()}}},
      {"clean", present.empty()},
      {"absent", absent},
      {"present", present},
  };
  cert["ngram_overlap"] = ngram_statistic(in, eval, train ? &*train : nullptr, missing);
  return cert;
}

// --- The compact form: one multiproof for all of a certificate's proofs.
//
// The proofs' target positions P are every bracket's and every present
// record's position in the tree of n leaves. A node of the tree is "given"
// when it is a sibling on some target's audit path and holds no target (its
// hash, and on a ranged tree for a node of more than one leaf its first and
// last leaf, are in `nodes`, in increasing position order); every other node
// on the paths is computed from its children, bottom-up, as the tree computes
// it. The full certificate is rebuilt from them and verified as any other.

namespace {

constexpr jsonf::Fields kProof{"invalid proof"};

bool holds_target(const std::vector<uint64_t>& targets, Range r) {
  const auto it = std::lower_bound(targets.begin(), targets.end(), r.begin);
  return it != targets.end() && *it < r.end;
}

// The given nodes of targets' paths in a tree of n leaves: disjoint (a node
// holding a given one holds its sibling's target), so ordered by position.
std::vector<Range> given_nodes(const std::vector<uint64_t>& targets, uint64_t n) {
  std::vector<Range> out;
  for (uint64_t t : targets)
    for (const Range& r : inclusion_ranges(t, n))
      if (!holds_target(targets, r)) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct TreeNode {
  Hash32 hash;
  KeyRange range;
};

std::string to_base64(const std::vector<uint8_t>& bin) {
  std::string out(sodium_base64_ENCODED_LEN(bin.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), bin.data(), bin.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

std::vector<uint8_t> from_base64(const json& j, const char* key, const std::string& where) {
  const std::string s = kProof.str(j, key, "multiproof." + where);
  std::vector<uint8_t> bin(s.size() / 4 * 3 + 3);
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(bin.data(), bin.size(), s.data(), s.size(), nullptr, &len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != s.data() + s.size())
    kProof.bad(std::string("field 'multiproof.") + key + "' is not base64", where);
  bin.resize(len);
  return bin;
}

// The nodes of one tree that the paths of `targets` need: the targets' leaves
// and the given nodes; the rest computed on demand and kept.
class Multiproof {
 public:
  Multiproof(const TreeHash& th, uint64_t n, std::vector<uint64_t> targets)
      : th_(th), n_(n), targets_(std::move(targets)) {}
  const std::vector<uint64_t>& targets() const { return targets_; }
  void set(Range r, const TreeNode& node) { nodes_[{r.begin, r.end}] = node; }
  const TreeNode& node(Range r) {
    if (auto it = nodes_.find({r.begin, r.end}); it != nodes_.end()) return it->second;
    if (r.size() < 2 || !holds_target(targets_, r)) throw Error("invalid proof: a node the multiproof needs is missing");
    const uint64_t m = r.begin + split_point(r.size());
    const TreeNode l = node({r.begin, m}), rt = node({m, r.end});
    TreeNode out{th_.ranged() ? th_.ranged_node(l.hash, rt.hash, l.range.last, rt.range.first) : th_.node(l.hash, rt.hash),
                 {l.range.first, rt.range.last}};
    return nodes_[{r.begin, r.end}] = out;
  }
  // The audit path of target `index`: hashes, and ranges on a ranged tree.
  void path(uint64_t index, std::vector<Hash32>& hashes, std::vector<KeyRange>& ranges) {
    for (const Range& r : inclusion_ranges(index, n_)) {
      const TreeNode& x = node(r);
      hashes.push_back(x.hash);
      if (th_.ranged()) ranges.push_back(x.range);
    }
  }

 private:
  const TreeHash& th_;
  uint64_t n_;
  std::vector<uint64_t> targets_;
  std::map<std::pair<uint64_t, uint64_t>, TreeNode> nodes_;
};

const TreeHash& certificate_tree(const json& doc, const std::string& where) {
  const int64_t v = kProof.count(kProof.need(doc, "version", where), "version", where);
  return Commitment::data_tree_hash(int(v));
}

uint64_t certificate_size(const json& doc, const std::string& where) {
  return kProof.u64(kProof.need(doc, "commitment", where), "n", where);
}

}  // namespace

bool is_compact_certificate(const json& doc) {
  return doc.is_object() && doc.contains("format") && doc["format"] == kContaminationFormat && doc.contains("multiproof");
}

json compact_certificate(const json& cert, const std::string& where) {
  if (is_compact_certificate(cert)) return cert;
  const TreeHash& th = certificate_tree(cert, where);
  const uint64_t n = certificate_size(cert, where);
  const json& absent = kProof.need(cert, "absent", where);
  const json& present = kProof.need(cert, "present", where);
  if (!absent.is_array() || !present.is_array()) kProof.bad("fields 'absent', 'present' must be arrays", where);
  std::map<uint64_t, Hash32> leaf_at;
  auto target = [&](uint64_t index, const Hash32& leaf) {
    if (index >= n) kProof.bad("a proof's index is out of the tree", where);
    if (auto [it, fresh] = leaf_at.emplace(index, leaf); !fresh && it->second != leaf)
      kProof.bad("two proofs name different leaves at position " + std::to_string(index), where);
  };
  struct Path {
    uint64_t index;
    std::vector<Hash32> hashes;
    std::vector<KeyRange> ranges;
  };
  std::vector<Path> paths;
  json a_out = json::array(), p_out = json::array();
  for (const auto& body : absent) {
    const ExclusionProof e = parse_exclusion_body(body, where);
    if (e.size != n) kProof.bad("a proof is for a tree of another size than the commitment's", where);
    if (e.has_left && e.has_right && e.right.index != e.left.index + 1) kProof.bad("an exclusion's brackets are not adjacent", where);
    const uint64_t at = e.has_right ? e.right.index : e.has_left ? e.left.index + 1 : 0;
    for (const Bracket* b : {e.has_left ? &e.left : nullptr, e.has_right ? &e.right : nullptr})
      if (b) {
        target(b->index, b->leaf);
        paths.push_back({b->index, b->path, b->ranges});
      }
    a_out.push_back({kProof.count(kProof.need(body, "eval_index", where), "eval_index", where), e.value.hex(), at});
  }
  for (const auto& body : present) {
    const InclusionProof p = parse_inclusion_body(body, where);
    if (p.size != n) kProof.bad("a proof is for a tree of another size than the commitment's", where);
    target(p.index, p.leaf);
    paths.push_back({p.index, p.path, p.ranges});
    p_out.push_back({kProof.count(kProof.need(body, "eval_index", where), "eval_index", where), p.leaf.hex(), p.index});
  }
  std::vector<uint64_t> targets;
  std::vector<uint8_t> leaves;
  for (const auto& [index, leaf] : leaf_at) {
    targets.push_back(index);
    leaves.insert(leaves.end(), leaf.b.begin(), leaf.b.end());
  }
  // Every given node from the first path that has it; another path's must agree.
  std::map<uint64_t, std::pair<Hash32, KeyRange>> given;
  for (const Path& p : paths) {
    const std::vector<Range> rs = inclusion_ranges(p.index, n);
    if (p.hashes.size() != rs.size() || (th.ranged() && p.ranges.size() != rs.size()))
      kProof.bad("a proof's path has the wrong length for its position", where);
    for (size_t i = 0; i < rs.size(); i++)
      if (!holds_target(targets, rs[i])) {
        const KeyRange kr = th.ranged() ? p.ranges[i] : KeyRange{};
        if (auto [it, fresh] = given.emplace(rs[i].begin, std::make_pair(p.hashes[i], kr)); !fresh && it->second.first != p.hashes[i])
          kProof.bad("two proofs disagree on the node of positions " + std::to_string(rs[i].begin) + ".." +
                         std::to_string(rs[i].end - 1),
                     where);
      }
  }
  std::vector<uint8_t> nodes;
  for (const Range& r : given_nodes(targets, n)) {
    const auto& [h, kr] = given.at(r.begin);
    nodes.insert(nodes.end(), h.b.begin(), h.b.end());
    if (th.ranged() && r.size() > 1)
      for (const Hash32* x : {&kr.first, &kr.last}) nodes.insert(nodes.end(), x->b.begin(), x->b.end());
  }
  json out = cert;
  out.erase("absent");
  out.erase("present");
  out["multiproof"] = {{"absent", a_out}, {"present", p_out}, {"leaves", to_base64(leaves)}, {"nodes", to_base64(nodes)}};
  return out;
}

json expand_certificate(const json& doc, const std::string& where) {
  if (!is_compact_certificate(doc)) return doc;
  if (doc.contains("absent") || doc.contains("present"))
    kProof.bad("a compact certificate has no 'absent' or 'present' list beside its multiproof", where);
  const TreeHash& th = certificate_tree(doc, where);
  const uint64_t n = certificate_size(doc, where);
  const json& mp = doc["multiproof"];
  kProof.only_keys(mp, {"absent", "present", "leaves", "nodes"}, where, "multiproof");
  // The entries: [eval_index, leaf, position] (for an absent record the
  // position of its right neighbour, n when it is above every leaf).
  struct Entry {
    int64_t eval_index;
    Hash32 leaf;
    uint64_t at;
  };
  auto entries = [&](const char* key, bool gap) {
    const json& list = kProof.need(mp, key, where);
    if (!list.is_array()) kProof.bad(std::string("field 'multiproof.") + key + "' must be an array", where);
    std::vector<Entry> out;
    for (const auto& e : list) {
      const std::string name = std::string("multiproof.") + key + "[" + std::to_string(out.size()) + "]";
      if (!e.is_array() || e.size() != 3 || !e[1].is_string())
        kProof.bad("field '" + name + "' must be [eval_index, leaf, position]", where);
      Entry x{kProof.count(e[0], name, where), {}, uint64_t(kProof.count(e[2], name, where))};
      if (!Hash32::from_hex(e[1].get<std::string>(), x.leaf)) kProof.bad("field '" + name + "' has a bad leaf", where);
      if (gap ? x.at > n : x.at >= n) kProof.bad("field '" + name + "' names a position out of the tree", where);
      out.push_back(x);
    }
    return out;
  };
  const std::vector<Entry> absent = entries("absent", true), present = entries("present", false);
  std::vector<uint64_t> targets;
  for (const Entry& e : absent) {
    if (e.at > 0) targets.push_back(e.at - 1);
    if (e.at < n) targets.push_back(e.at);
  }
  for (const Entry& e : present) targets.push_back(e.at);
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  const std::vector<uint8_t> leaves = from_base64(mp, "leaves", where), nodes = from_base64(mp, "nodes", where);
  if (leaves.size() != targets.size() * 32)
    kProof.bad("field 'multiproof.leaves' holds " + std::to_string(leaves.size()) + " bytes, not 32 for each of the " +
                   std::to_string(targets.size()) + " positions the proofs name",
               where);
  Multiproof tree(th, n, targets);
  std::map<uint64_t, Hash32> leaf_at;
  for (size_t i = 0; i < targets.size(); i++) {
    Hash32 h;
    std::memcpy(h.b.data(), leaves.data() + 32 * i, 32);
    leaf_at[targets[i]] = h;
    tree.set({targets[i], targets[i] + 1}, {h, {h, h}});
  }
  size_t at = 0;
  auto take = [&](Hash32& h) {
    if (at + 32 > nodes.size()) kProof.bad("field 'multiproof.nodes' is shorter than the nodes the proofs need", where);
    std::memcpy(h.b.data(), nodes.data() + at, 32);
    at += 32;
  };
  for (const Range& r : given_nodes(targets, n)) {
    TreeNode x;
    take(x.hash);
    x.range = {x.hash, x.hash};
    if (th.ranged() && r.size() > 1) {
      take(x.range.first);
      take(x.range.last);
    }
    tree.set(r, x);
  }
  if (at != nodes.size()) kProof.bad("field 'multiproof.nodes' is longer than the nodes the proofs need", where);
  json a_out = json::array(), p_out = json::array();
  auto bracket = [&](uint64_t index) {
    Bracket b{index, leaf_at.at(index), {}, {}};
    tree.path(index, b.path, b.ranges);
    return b;
  };
  for (const Entry& e : absent) {
    ExclusionProof p;
    p.value = e.leaf;
    p.size = n;
    p.has_left = e.at > 0;
    p.has_right = e.at < n;
    if (p.has_left) p.left = bracket(e.at - 1);
    if (p.has_right) p.right = bracket(e.at);
    json body = exclusion_body(p);
    body["eval_index"] = e.eval_index;
    a_out.push_back(std::move(body));
  }
  for (const Entry& e : present) {
    InclusionProof p;
    p.leaf = e.leaf;
    p.index = e.at;
    p.size = n;
    tree.path(e.at, p.path, p.ranges);
    json body = inclusion_body(p);
    body["eval_index"] = e.eval_index;
    p_out.push_back(std::move(body));
  }
  json out = doc;
  out.erase("multiproof");
  out["absent"] = std::move(a_out);
  out["present"] = std::move(p_out);
  return out;
}

}  // namespace wit
