// Proof benchmark: builds the index of n synthetic leaves (no input files),
// maps it with wit::Index, and times inclusion and exclusion proofs, building
// and verifying them, as wit-query does (the JSON document included).
//
// Usage: bench_proofs [--n N] [--iters K] [--threads T] [--dir DIR]
// Prints "key=value" lines on stdout (bench/run.sh reads them) and a summary
// on stderr. The index goes to a temporary file in DIR (default: the system
// temp dir) and is removed before exit.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/hash/blake2b_x4.h"
#include "wit/data/commitment.h"
#include "wit/hash/hash.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"

namespace {

using Clock = std::chrono::steady_clock;

// splitmix64: synthetic leaves only need to look like uniform hashes, and
// hashing 10M counters with BLAKE2b would only slow the set-up.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  wit::Hash32 hash() {
    wit::Hash32 h;
    for (int i = 0; i < 4; i++) wit::put_le64(h.data() + 8 * i, next());
    return h;
  }
};

struct Stats {
  double median = 0, p99 = 0, mean = 0;
};

Stats stats(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  Stats s;
  s.median = us[us.size() / 2];
  s.p99 = us[std::min(us.size() - 1, size_t(double(us.size()) * 0.99))];
  for (double v : us) s.mean += v;
  s.mean /= double(us.size());
  return s;
}

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void report(const char* key, const Stats& s) {
  std::printf("%s_median_us=%.2f\n%s_p99_us=%.2f\n", key, s.median, key, s.p99);
  std::fprintf(stderr, "  %-24s median %9.2f us   p99 %9.2f us   mean %9.2f us\n", key, s.median, s.p99,
               s.mean);
}

// What a tree node costs in each construction (docs/proofs.md, "Why the split
// keys"): the RFC 6962 node (65 bytes, one BLAKE2b block), the ranged node
// (128 bytes, one block: the two split keys only) and a node binding both
// children's full ranges (1 + 6 x 32 = 193 bytes, two blocks), each over
// 2^20 adjacent pairs as a tree level is built.
void node_costs() {
  const uint64_t pairs = uint64_t(1) << 20;
  std::vector<wit::Hash32> in(2 * pairs), keys(2 * pairs + 1), out(pairs);
  Rng r{5};
  for (auto& h : in) h = r.hash();
  for (auto& h : keys) h = r.hash();
  auto time_ns = [&](const std::function<void()>& f) {
    double best = 1e300;
    for (int rep = 0; rep < 3; rep++) {
      const auto t = Clock::now();
      f();
      best = std::min(best, since_us(t) * 1e3 / double(pairs));
    }
    return best;
  };
  const double rfc = time_ns([&] { wit::node_pairs(in.data(), pairs, out.data()); });
  const double ranged = time_ns([&] { wit::ranged_node_pairs(in.data(), pairs, keys.data(), 2, out.data()); });
  const double full = time_ns([&] {
    const uint8_t p = 0x01;
    for (uint64_t k = 0; k < pairs; k++)
      out[k] = wit::blake2b_256(wit::ByteView(&p, 1), wit::ByteView(in[2 * k].data(), 64),
                                wit::ByteView(keys.data()->data() + 64 * k, 128));
  });
  const double ranged_one = time_ns([&] {
    for (uint64_t k = 0; k < pairs; k++)
      out[k] = wit::kDataTree.ranged_node(in[2 * k], in[2 * k + 1], keys[2 * k], keys[2 * k + 1]);
  });
  std::printf("node_rfc6962_ns=%.1f\nnode_ranged_ns=%.1f\nnode_ranged_scalar_ns=%.1f\nnode_full_ranges_scalar_ns=%.1f\n",
              rfc, ranged, ranged_one, full);
  std::fprintf(stderr,
               "  node hash, ns a node over 2^20 pairs: RFC 6962 (65 B, lanes) %.1f; ranged (128 B, lanes) %.1f; "
               "ranged one at a time %.1f; both full ranges (193 B, 2 blocks, one at a time) %.1f\n",
               rfc, ranged, ranged_one, full);
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: bench_proofs [--n N] [--iters K] [--threads T] [--dir DIR]\n");
  std::exit(2);
}

int run(int argc, char** argv) {
  uint64_t n = 10'000'000, iters = 2000;
  unsigned threads = 0;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    if (a == "--n") n = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--iters") iters = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--threads") threads = unsigned(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--dir") dir = argv[++i];
    else usage();
  }
  if (n < 2 || iters < 1) usage();

  // Build what commit_dataset would, from synthetic leaves.
  auto t0 = Clock::now();
  const std::string path = dir + "/bench_proofs." + std::to_string(getpid()) + ".widx";
  wit::Commitment commitment;
  {
    // n random record leaves as a lines file would give, committed as wit-commit does.
    const std::string data = dir + "/bench_proofs." + std::to_string(getpid()) + ".tokens";
    {
      Rng rng{42};
      wit::AtomicFile f(data, true);
      std::vector<uint8_t> buf;
      for (uint64_t i = 0; i < n; i++) {
        const wit::Hash32 h = rng.hash();
        buf.insert(buf.end(), h.data(), h.data() + 16);
        if (buf.size() >= (1u << 20)) {
          f.write(wit::ByteView(buf));
          buf.clear();
        }
      }
      f.write(wit::ByteView(buf));
      f.commit();
    }
    wit::ReaderSpec spec;
    spec.kind = wit::ReaderKind::kTokens;
    spec.seq_len = 8;  // 16 random bytes a record
    wit::CommitResult r = wit::commit_dataset(spec, {data}, threads);
    std::remove(data.c_str());
    wit::write_index(path, r);
    commitment = r.commitment;
  }
  const double build_s = since_us(t0) / 1e6;
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove_index{path};

  t0 = Clock::now();
  wit::Index idx(path);
  idx.check_matches(commitment, "bench");
  const double open_ms = since_us(t0) / 1e3;
  const uint64_t index_bytes = std::filesystem::file_size(path);
  std::fprintf(stderr, "bench_proofs: n=%" PRIu64 " leaves, index %.1f MB built in %.1f s, opened in %.1f ms\n", n,
               double(index_bytes) / 1e6, build_s, open_ms);
  std::printf("n=%" PRIu64 "\nindex_bytes=%" PRIu64 "\nbuild_s=%.2f\nopen_ms=%.2f\n", n, index_bytes, build_s,
              open_ms);

  // Untimed warm-up: allocator and the top of the mapped trees.
  {
    Rng warm{99};
    for (int i = 0; i < 200; i++) {
      const wit::Hash32 leaf = idx.tree().leaves()[warm.next() % n];
      (void)wit::prove_inclusion(idx, leaf, *idx.find(leaf));
      (void)wit::prove_exclusion(idx, warm.hash());
    }
  }

  Rng pick{7};
  std::vector<double> inc_core, inc_gen, inc_ver_core, inc_ver, exc_core, exc_gen, exc_ver_core, exc_ver;
  size_t inc_doc = 0, inc_raw = 0, exc_doc = 0, exc_raw = 0;
  for (uint64_t it = 0; it < iters; it++) {
    // Inclusion of a random record, looked up by its leaf as wit-query does.
    const wit::Hash32 leaf = idx.tree().leaves()[pick.next() % n];
    auto t = Clock::now();
    auto pos = idx.find(leaf);
    wit::InclusionProof ip = wit::prove_inclusion(idx, leaf, *pos);
    inc_core.push_back(since_us(t));
    t = Clock::now();
    pos = idx.find(leaf);
    ip = wit::prove_inclusion(idx, leaf, *pos);
    std::string text = wit::inclusion_document(commitment, ip).dump(2) + "\n";
    inc_gen.push_back(since_us(t));
    inc_doc = text.size();
    inc_raw = 32 * (1 + ip.path.size() + 2 * ip.ranges.size());

    t = Clock::now();
    wit::ProofError pe = wit::verify_inclusion(commitment.tree_hash(), ip, commitment.root);
    inc_ver_core.push_back(since_us(t));
    t = Clock::now();
    wit::Verdict v = wit::verify_document(nlohmann::json::parse(text), commitment, "bench");
    inc_ver.push_back(since_us(t));
    if (pe != wit::ProofError::kOk || !v.ok) throw wit::Error("inclusion proof did not verify: " + v.reason);

    // Exclusion of a random absent value (a fresh random hash).
    const wit::Hash32 value = pick.hash();
    t = Clock::now();
    if (idx.find(value)) continue;  // 2^-256: not going to happen
    wit::ExclusionProof ep = wit::prove_exclusion(idx, value);
    exc_core.push_back(since_us(t));
    t = Clock::now();
    (void)idx.find(value);
    ep = wit::prove_exclusion(idx, value);
    text = wit::exclusion_document(commitment, ep).dump(2) + "\n";
    exc_gen.push_back(since_us(t));
    exc_doc = text.size();
    exc_raw = 32 * (1 + (ep.has_left ? 1 + ep.left.path.size() + 2 * ep.left.ranges.size() : 0) +
                    (ep.has_right ? 1 + ep.right.path.size() + 2 * ep.right.ranges.size() : 0));

    t = Clock::now();
    pe = wit::verify_exclusion(commitment.tree_hash(), ep, commitment.root);
    exc_ver_core.push_back(since_us(t));
    t = Clock::now();
    v = wit::verify_document(nlohmann::json::parse(text), commitment, "bench");
    exc_ver.push_back(since_us(t));
    if (pe != wit::ProofError::kOk || !v.ok) throw wit::Error("exclusion proof did not verify: " + v.reason);
  }

  std::fprintf(stderr, "bench_proofs: %" PRIu64 " random inclusion and exclusion proofs each\n", iters);
  report("inc_prove", stats(inc_core));
  report("inc_prove_doc", stats(inc_gen));
  report("inc_verify", stats(inc_ver_core));
  report("inc_verify_doc", stats(inc_ver));
  report("exc_prove", stats(exc_core));
  report("exc_prove_doc", stats(exc_gen));
  report("exc_verify", stats(exc_ver_core));
  report("exc_verify_doc", stats(exc_ver));
  std::printf("inc_doc_bytes=%zu\ninc_raw_bytes=%zu\nexc_doc_bytes=%zu\nexc_raw_bytes=%zu\n", inc_doc, inc_raw,
              exc_doc, exc_raw);
  std::fprintf(stderr, "  proof size: inclusion %zu B json, %zu B of hashes; exclusion %zu B json, %zu B of hashes\n",
               inc_doc, inc_raw, exc_doc, exc_raw);
  node_costs();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_proofs: error: %s\n", e.what());
    return 2;
  }
}
