// The torch-free parts of a run: the weight sketch (linear, shardable), the
// ChaCha20 stream, the data order, seeded initial weights and the manifest.
#include <catch2/catch.hpp>
#include <sodium.h>
#include <xxhash.h>

#include <cmath>
#include <numeric>
#include <set>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/run/order.h"
#include "wit/hash/rng.h"
#include "wit/run/sketch.h"

using namespace wit;

namespace {
std::vector<float> noise(uint64_t n, uint64_t seed) {
  std::vector<float> v(n);
  ChaChaStream s(derive_key("test", {ByteView(reinterpret_cast<const uint8_t*>(&seed), 8)}));
  for (auto& x : v) x = float(int32_t(s.next_u32() >> 8) - (1 << 23)) / float(1 << 23);
  return v;
}
}  // namespace

TEST_CASE("sketch is linear and shards sum to the whole", "[sketch]") {
  const uint64_t n = 100003;  // not a multiple of the block size
  for (uint64_t k : {64u, 512u, 1000u}) {
    SketchSpec spec{k, 12345};
    auto a = noise(n, 1), b = noise(n, 2);
    std::vector<float> sum(n);
    for (uint64_t i = 0; i < n; i++) sum[i] = a[i] + b[i];
    auto sa = sketch_of(spec, a.data(), n), sb = sketch_of(spec, b.data(), n), ss = sketch_of(spec, sum.data(), n);
    for (uint64_t j = 0; j < k; j++) CHECK(std::fabs(ss[j] - (sa[j] + sb[j])) < 1e-3);
    // Disjoint shards at arbitrary (unaligned) cut points, sketched alone and summed.
    std::vector<uint64_t> cuts = {0, 1, 63, 64, 65, 5000, 77777, n};
    std::vector<double> acc(k, 0.0);
    for (size_t c = 0; c + 1 < cuts.size(); c++)
      sketch_add(spec, a.data() + cuts[c], cuts[c + 1] - cuts[c], cuts[c], acc.data());
    for (uint64_t j = 0; j < k; j++) CHECK(std::fabs(float(acc[j]) - sa[j]) < 1e-4);
  }
}

TEST_CASE("sketch kernels give exactly the bits of the plain definition", "[sketch]") {
  // The definition (sketch.h), written out plainly: bucket (base + j) mod k,
  // sign bit j, base and signs from XXH3-128 of the block number.
  auto reference = [](const SketchSpec& s, const float* v, uint64_t n, uint64_t off, std::vector<double>& acc) {
    for (uint64_t i = 0; i < n; i++) {
      const uint64_t g = off + i, block = g / 64, j = g % 64;
      uint8_t b[8];
      put_le64(b, block);
      XXH128_hash_t h = XXH3_128bits_withSeed(b, 8, s.seed);
      const double x = double(v[i]);
      acc[(h.high64 % s.k + j) % s.k] += ((h.low64 >> j) & 1) ? -x : x;
    }
  };
  ChaChaStream rnd(derive_key("sketch-kernels", {}));
  for (int trial = 0; trial < 300; trial++) {
    const uint64_t k = std::vector<uint64_t>{16, 63, 64, 65, 100, 512, 4096}[rnd.uniform(7)];
    const uint64_t n = rnd.uniform(3000), off = rnd.uniform(100000);
    SketchSpec spec{k, rnd.next_u64()};
    auto v = noise(n, uint64_t(trial));
    std::vector<double> want(k), got(k);
    for (uint64_t j = 0; j < k; j++) want[j] = got[j] = double(rnd.uniform(1000)) / 7.0;  // non-zero start
    reference(spec, v.data(), n, off, want);
    sketch_add(spec, v.data(), n, off, got.data());
    INFO("trial " << trial << " k=" << k << " n=" << n << " offset=" << off);
    REQUIRE(want == got);
  }
}

TEST_CASE("sketch distance tracks weight distance", "[sketch]") {
  // A count sketch preserves L2 norms in expectation: a perturbation's sketch
  // has roughly the perturbation's norm, far from zero.
  const uint64_t n = 1 << 16;
  SketchSpec spec{512, 7};
  auto a = noise(n, 3), d = noise(n, 4);
  double dn = 0;
  for (auto x : d) dn += double(x) * x;
  dn = std::sqrt(dn);
  std::vector<float> b(n);
  for (uint64_t i = 0; i < n; i++) b[i] = a[i] + d[i];
  double sd = l2_distance(sketch_of(spec, a.data(), n), sketch_of(spec, b.data(), n));
  CHECK(sd > 0.7 * dn);
  CHECK(sd < 1.3 * dn);
  // A different seed gives a different sketch of the same vector.
  CHECK(l2_distance(sketch_of(spec, a.data(), n), sketch_of(SketchSpec{512, 8}, a.data(), n)) > 1.0);
}

TEST_CASE("the ChaCha20 stream is libsodium's deterministic stream, with random access", "[rng]") {
  Hash32 key = derive_key("wit/test", {ByteView("abc")});
  std::vector<uint8_t> want(4096), got(4096);
  randombytes_buf_deterministic(want.data(), want.size(), key.data());
  ChaChaStream s(key);
  s.fill(got.data(), 100);
  s.fill(got.data() + 100, got.size() - 100);
  CHECK(want == got);
  ChaChaStream at(key, 8);  // block 8 = byte 512
  std::vector<uint8_t> tail(512);
  at.fill(tail.data(), tail.size());
  CHECK(std::equal(tail.begin(), tail.end(), want.begin() + 512));
}

TEST_CASE("data order: deterministic permutation batches", "[order]") {
  Hash32 run_id = derive_key("run", {});
  Bytes seed(32, 7), other(32, 8);
  DataOrder o(run_id, ByteView(seed), 103, 10);
  CHECK(o.steps_per_epoch() == 10);
  std::set<uint64_t> seen;
  for (int64_t s = 1; s <= 10; s++)
    for (uint64_t i : o.batch(s)) {
      CHECK(i < 103);
      CHECK(seen.insert(i).second);  // no record twice in an epoch
    }
  CHECK(seen.size() == 100);
  DataOrder o2(run_id, ByteView(seed), 103, 10), o3(run_id, ByteView(other), 103, 10);
  CHECK(o.batch(17) == o2.batch(17));
  CHECK(o.batch(17) != o3.batch(17));
  CHECK(o.batch(1) != o.batch(11));  // a new permutation each epoch
  for (uint64_t rec : {0u, 5u, 102u}) {
    auto steps = o.steps_using(rec, 35);
    for (int64_t s = 1; s <= 35; s++) {
      auto b = o2.batch(s);
      bool in = std::find(b.begin(), b.end(), rec) != b.end();
      CHECK(in == (std::find(steps.begin(), steps.end(), s) != steps.end()));
    }
  }
  CHECK_THROWS_AS(DataOrder(run_id, ByteView(seed), 5, 10), Error);
  auto p = probe_indices(run_id, ByteView(seed), 103, 8);
  CHECK(p.size() == 8);
  CHECK(std::set<uint64_t>(p.begin(), p.end()).size() == 8);
}

TEST_CASE("initial weights come from the seed, exactly", "[init]") {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 32;
  c.n_head = 4;
  c.context = 16;
  auto ps = model_params(c);
  CHECK(std::is_sorted(ps.begin(), ps.end(), [](auto& a, auto& b) { return a.name < b.name; }));
  CHECK(param_count(c) == 257 * 32 + 16 * 32 + 2 * (4 * 32 + 3 * 32 * 32 + 3 * 32 + 32 * 32 + 32 + 4 * 32 * 32 + 4 * 32 + 4 * 32 * 32 + 32) + 2 * 32);
  Bytes seed(32, 1), seed2(32, 2);
  for (const auto& p : ps) {
    std::vector<float> a(p.numel()), b(p.numel());
    init_param(p, ByteView(seed), a.data());
    init_param(p, ByteView(seed), b.data());
    CHECK(a == b);
    if (p.init == InitKind::kUniform) {
      double sum = 0, sq = 0;
      for (float x : a) {
        CHECK(std::fabs(x) <= p.bound);
        sum += x;
        sq += double(x) * x;
      }
      const double sd = std::sqrt(sq / double(a.size()));
      CHECK(sd == Approx(p.bound / std::sqrt(3.0)).epsilon(0.1));
      init_param(p, ByteView(seed2), b.data());
      CHECK(a != b);
    }
  }
  // Known answers from the independent Python recipes of docs/manifest.md
  // ("Initial weights") and docs/state-root.md, for this config and seed
  // 32 x 0x01 (tests/cli/torch_known_answers.sh runs those recipes against
  // real runs; these values were computed with them).
  for (const auto& p : ps) {
    std::vector<float> a(p.numel());
    init_param(p, ByteView(seed), a.data());
    if (p.name == "wte") {
      CHECK(a[0] == -0x1.56c7bep-6f);
      CHECK(a[1] == -0x1.1627e2p-5f);
      CHECK(a[2] == -0x1.fd4d94p-10f);
      CHECK(a[3] == -0x1.0701cep-5f);
    } else if (p.name == "h.1.mlp.proj.weight") {  // b_proj = b / sqrt(2 n_layer)
      CHECK(a[0] == 0x1.b3c26ap-7f);
      CHECK(a[1] == 0x1.0cbb34p-7f);
    }
  }
  Hash32 r1 = initial_state_root(c, ByteView(seed));
  CHECK(r1.hex() == "224143310634eb838f32b772398bc4b7d070e1db421dc1f1451d4c4d8cd2a28d");
  CHECK(r1 == initial_state_root(c, ByteView(seed)));
  CHECK(r1 != initial_state_root(c, ByteView(seed2)));
  ModelConfig c2 = c;
  c2.n_layer = 3;
  CHECK(r1 != initial_state_root(c2, ByteView(seed)));
}

TEST_CASE("learning-rate schedule: warmup then cosine", "[manifest]") {
  Manifest m;
  m.opt.lr = 1e-3;
  m.schedule.warmup = 10;
  m.schedule.min_lr_ratio = 0.1;
  m.steps = 110;
  CHECK(m.lr_at(1) == Approx(1e-4));
  CHECK(m.lr_at(10) == Approx(1e-3));
  CHECK(m.lr_at(60) == Approx(0.55e-3));
  CHECK(m.lr_at(110) == Approx(1e-4));
  for (int64_t s = 11; s < 110; s++) CHECK(m.lr_at(s + 1) <= m.lr_at(s));
}

TEST_CASE("a revealed seed opens the manifest's seed commitment, or is refused in one wording", "[manifest]") {
  Manifest mf;
  const Bytes seed(32, 5), other(32, 6);
  mf.seed_commitment = seed_commitment(ByteView(seed));
  CHECK_FALSE(seed_problem(mf, ByteView(seed)));
  CHECK(seed_problem(mf, ByteView(other)) == std::string("the revealed seed does not match the manifest's seed commitment"));
}
