// The weight sketch: a linear count-sketch of a long float vector into k
// buckets. Parameter i goes to bucket (base(b) + i mod 64) mod k with sign
// bit (i mod 64) of sign(b), where b = i / 64 and (base, sign) come from one
// XXH3-128 of b keyed by the sketch seed: one hash serves 64 parameters and no
// random table is kept. Linear: sketch(a + b) = sketch(a) + sketch(b), and a
// shard [offset, offset + n) can be sketched alone and the results summed.
#pragma once
#include <cstdint>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

inline constexpr uint64_t kSketchBlock = 64;

struct SketchSpec {
  uint64_t k = 512;
  uint64_t seed = 0;  // first 8 bytes (le) of the manifest's sketch seed, plus a per-use offset
};

// Derives the 64-bit XXH3 seed for one use of the sketch ("weights", "adam.m", "adam.v", "probe").
uint64_t sketch_seed(const Hash32& manifest_seed, const char* use);

// acc[k] += sketch of values[0..n) sitting at global indices [offset, offset + n).
void sketch_add(const SketchSpec& s, const float* values, uint64_t n, uint64_t offset, double* acc);

// The bucket and sign (+1 or -1) of global index i: the sketch is public, so
// anyone (a forger too) can compute its matrix; the attack suite uses this to
// hide updates in its null space.
void sketch_slot(const SketchSpec& s, uint64_t i, uint64_t& bucket, int& sign);

// Convenience: the sketch of one whole vector.
std::vector<float> sketch_of(const SketchSpec& s, const float* values, uint64_t n);

// L2 norms, for distances relative to a step's own update.
double l2_distance(const std::vector<float>& a, const std::vector<float>& b);
double l2_norm(const std::vector<float>& a);

}  // namespace wit
