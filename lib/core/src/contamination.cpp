// Contamination certificates: exact per-record proofs plus an n-gram statistic.
#include "wit/contamination.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "wit/error.h"
#include "wit/merkle.h"
#include "wit/parallel.h"
#include "wit/proofs.h"

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

}  // namespace wit
