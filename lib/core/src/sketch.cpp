// Blocked count-sketch over float vectors (see sketch.h for the construction).
#include "wit/sketch.h"

#include <xxhash.h>

#include <cmath>
#include <cstring>

#include "wit/hash.h"

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

// Adds values[j] for j in [j0, j1) of one block: bucket (base + j) mod k.
inline void add_block(const float* v, uint64_t j0, uint64_t j1, uint64_t base, uint64_t signs, uint64_t k,
                      double* acc) {
  if (base + kSketchBlock <= k) {
    double* a = acc + base;
    for (uint64_t j = j0; j < j1; j++) {
      const double x = double(v[j - j0]);
      a[j] += ((signs >> j) & 1) ? -x : x;
    }
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
