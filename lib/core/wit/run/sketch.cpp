// Blocked count-sketch over float vectors (see sketch.h for the construction).
#include "wit/run/sketch.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "wit/hash/hash.h"

namespace wit {

uint64_t sketch_seed(const Hash32& manifest_seed, const char* use) {
  // XXH3 is fine here: the sketch is a fingerprint checked by replay, not a
  // commitment; the seed only decorrelates the different uses.
  return XXH3_64bits_withSeed(use, std::strlen(use), get_le64(manifest_seed.data()));
}

namespace {

inline void block_hash(uint64_t seed, uint64_t block, uint64_t k, uint64_t& base, uint64_t& signs) {
  uint8_t b[8];
  put_le64(b, block);
  XXH128_hash_t h = XXH3_128bits_withSeed(b, 8, seed);
  base = h.high64 % k;
  signs = h.low64;
}

// Adds values[j] for j in [j0, j1) of one block: bucket (base + j) mod k,
// sign flipped (exactly -x) by xor-ing bit j of `signs` into the sign bit, so
// there is no data-dependent branch. Each bucket receives its additions in the
// same order whatever the kernel, so every path gives identical bits.
// Bucket of block element j is bucket0 + j (bucket0 < 0 for the wrapped part).
inline void add_range(const float* v, uint64_t j0, uint64_t j1, uint64_t signs, double* acc, int64_t bucket0) {
  for (uint64_t j = j0; j < j1; j++) {
    uint64_t bits;
    const double x = double(v[j - j0]);
    std::memcpy(&bits, &x, 8);
    bits ^= ((signs >> j) & 1) << 63;
    double y;
    std::memcpy(&y, &bits, 8);
    acc[bucket0 + int64_t(j)] += y;
  }
}

#if defined(__x86_64__)
// A whole non-wrapping block with AVX2: four doubles at a time, the sign of
// lane t taken from bit (j + t) of `signs`.
__attribute__((target("avx2"))) void add_full_block_avx2(const float* v, uint64_t signs, double* a) {
  const __m256i top = _mm256_set1_epi64x(INT64_MIN), s = _mm256_set1_epi64x(int64_t(signs));
  __m256i sh = _mm256_set_epi64x(60, 61, 62, 63);
  const __m256i four = _mm256_set1_epi64x(4);
  for (int j = 0; j < 64; j += 4) {
    __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(v + j));
    __m256i m = _mm256_and_si256(_mm256_sllv_epi64(s, sh), top);
    _mm256_storeu_pd(a + j, _mm256_add_pd(_mm256_loadu_pd(a + j), _mm256_xor_pd(x, _mm256_castsi256_pd(m))));
    sh = _mm256_sub_epi64(sh, four);
  }
}
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

void sketch_slot(const SketchSpec& s, uint64_t i, uint64_t& bucket, int& sign) {
  uint64_t base, signs;
  block_hash(s.seed, i / kSketchBlock, s.k, base, signs);
  const uint64_t j = i % kSketchBlock;
  bucket = (base + j) % s.k;
  sign = (signs >> j) & 1 ? -1 : 1;
}

namespace {

inline void add_block(const float* v, uint64_t j0, uint64_t j1, uint64_t base, uint64_t signs, uint64_t k,
                      double* acc) {
  if (base + kSketchBlock <= k) {
#if defined(__x86_64__)
    if (j0 == 0 && j1 == kSketchBlock && kHaveAvx2) return add_full_block_avx2(v, signs, acc + base);
#endif
    add_range(v, j0, j1, signs, acc, int64_t(base));
  } else if (k >= kSketchBlock) {
    // The block wraps once past the end of the sketch: two contiguous runs.
    const uint64_t split = std::max(j0, std::min(j1, k - base));
    add_range(v, j0, split, signs, acc, int64_t(base));
    add_range(v + (split - j0), split, j1, signs, acc, int64_t(base) - int64_t(k));
  } else {
    for (uint64_t j = j0; j < j1; j++) {
      const double x = double(v[j - j0]);
      acc[(base + j) % k] += ((signs >> j) & 1) ? -x : x;
    }
  }
}

}  // namespace

void sketch_add(const SketchSpec& s, const float* values, uint64_t n, uint64_t offset, double* acc) {
  uint64_t i = 0;
  while (i < n) {
    const uint64_t g = offset + i;
    const uint64_t block = g / kSketchBlock, j0 = g % kSketchBlock;
    const uint64_t j1 = std::min<uint64_t>(kSketchBlock, j0 + (n - i));
    uint64_t base, signs;
    block_hash(s.seed, block, s.k, base, signs);
    add_block(values + i, j0, j1, base, signs, s.k, acc);
    i += j1 - j0;
  }
}

std::vector<float> sketch_of(const SketchSpec& s, const float* values, uint64_t n) {
  std::vector<double> acc(s.k, 0.0);
  sketch_add(s, values, n, 0, acc.data());
  return std::vector<float>(acc.begin(), acc.end());
}

double l2_distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); i++) d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(d);
}

double l2_norm(const std::vector<float>& a) {
  double d = 0;
  for (float x : a) d += double(x) * x;
  return std::sqrt(d);
}

}  // namespace wit
