// BLAKE2b-256 of four equal-length messages at once with AVX2 (one message per
// 64-bit lane), for record leaves H(0x00 || record): committing a token file
// hashes millions of same-size windows, and libsodium's single-stream BLAKE2b
// (with a copy of every block) is the bottleneck there. Same outputs as
// crypto_generichash (RFC 7693); tested against it.
#include "wit/blake2b_x4.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace wit {

namespace {

constexpr uint64_t kIV[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                             0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                             0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
constexpr uint8_t kSigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

#if defined(__x86_64__)
#define WIT_AVX2 __attribute__((target("avx2")))

WIT_AVX2 inline __m256i rotr32(__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)); }
WIT_AVX2 inline __m256i rotr24(__m256i x) {
  const __m256i m = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0, 1, 2, 11,
                                     12, 13, 14, 15, 8, 9, 10);
  return _mm256_shuffle_epi8(x, m);
}
WIT_AVX2 inline __m256i rotr16(__m256i x) {
  const __m256i m = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7, 0, 1, 10,
                                     11, 12, 13, 14, 15, 8, 9);
  return _mm256_shuffle_epi8(x, m);
}
WIT_AVX2 inline __m256i rotr63(__m256i x) { return _mm256_or_si256(_mm256_add_epi64(x, x), _mm256_srli_epi64(x, 63)); }

WIT_AVX2 inline void G(__m256i& a, __m256i& b, __m256i& c, __m256i& d, __m256i x, __m256i y) {
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), x);
  d = rotr32(_mm256_xor_si256(d, a));
  c = _mm256_add_epi64(c, d);
  b = rotr24(_mm256_xor_si256(b, c));
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), y);
  d = rotr16(_mm256_xor_si256(d, a));
  c = _mm256_add_epi64(c, d);
  b = rotr63(_mm256_xor_si256(b, c));
}

// One compression of four 128-byte blocks (block j of lane j at blk[j]);
// t[j] is lane j's byte counter after this block.
WIT_AVX2 void compress4(__m256i h[8], const uint8_t* const blk[4], const uint64_t t[4], bool last) {
  // Message word w of the four lanes in one vector: four 32-byte loads per
  // lane, transposed 4 x 4 (64-bit words are little-endian, as x86 loads them).
  __m256i m[16];
  for (int q = 0; q < 4; q++) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0] + 32 * q));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1] + 32 * q));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[2] + 32 * q));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[3] + 32 * q));
    const __m256i t0 = _mm256_unpacklo_epi64(a, b), t1 = _mm256_unpackhi_epi64(a, b);
    const __m256i t2 = _mm256_unpacklo_epi64(c, d), t3 = _mm256_unpackhi_epi64(c, d);
    m[4 * q + 0] = _mm256_permute2x128_si256(t0, t2, 0x20);
    m[4 * q + 1] = _mm256_permute2x128_si256(t1, t3, 0x20);
    m[4 * q + 2] = _mm256_permute2x128_si256(t0, t2, 0x31);
    m[4 * q + 3] = _mm256_permute2x128_si256(t1, t3, 0x31);
  }
  __m256i v[16];
  for (int i = 0; i < 8; i++) v[i] = h[i];
  for (int i = 0; i < 8; i++) v[8 + i] = _mm256_set1_epi64x(int64_t(kIV[i]));
  v[12] = _mm256_xor_si256(v[12], _mm256_setr_epi64x(int64_t(t[0]), int64_t(t[1]), int64_t(t[2]), int64_t(t[3])));
  if (last) v[14] = _mm256_xor_si256(v[14], _mm256_set1_epi64x(-1));
  for (int r = 0; r < 12; r++) {
    const uint8_t* s = kSigma[r];
    G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
    G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
    G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
    G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
    G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
    G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
    G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
    G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
  }
  for (int i = 0; i < 8; i++) h[i] = _mm256_xor_si256(h[i], _mm256_xor_si256(v[i], v[8 + i]));
}

WIT_AVX2 void init4(__m256i h[8]) {
  for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi64x(int64_t(kIV[i]));
  h[0] = _mm256_xor_si256(h[0], _mm256_set1_epi64x(0x01010020));  // digest 32, no key, fanout 1, depth 1
}

WIT_AVX2 void store4(const __m256i h[8], Hash32 out[4]) {
  alignas(32) uint64_t lanes[8][4];
  for (int i = 0; i < 8; i++) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[i]), h[i]);
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) std::memcpy(out[j].data() + 8 * i, &lanes[i][j], 8);
}

// Four messages 0x00 || data_j whose lengths may differ but fill the same
// number of 128-byte blocks.
WIT_AVX2 void leaves_x4_avx2(const uint8_t* const data[4], const size_t len[4], Hash32 out[4]) {
  __m256i h[8];
  init4(h);
  // The message is 0x00 || data: total = len + 1 bytes, in 128-byte blocks,
  // the last (possibly partial, zero-padded) one flagged final.
  uint64_t total[4];
  for (int j = 0; j < 4; j++) total[j] = uint64_t(len[j]) + 1;
  const uint64_t blocks = (total[0] + 127) / 128;
  alignas(32) uint8_t buf[4][128];
  const uint8_t* blk[4];
  uint64_t t[4];
  for (uint64_t k = 0; k < blocks; k++) {
    const uint64_t start = 128 * k;
    const bool last = k + 1 == blocks;
    for (int j = 0; j < 4; j++) {
      const uint64_t n = std::min<uint64_t>(128, total[j] - start);
      t[j] = start + n;
      if (k > 0 && n == 128) {
        blk[j] = data[j] + start - 1;  // whole block inside the data: read in place
        continue;
      }
      std::memset(buf[j], 0, 128);
      if (k == 0) {
        buf[j][0] = 0x00;  // the RFC 6962 leaf prefix
        std::memcpy(buf[j] + 1, data[j], n - 1);
      } else {
        std::memcpy(buf[j], data[j] + start - 1, n);
      }
      blk[j] = buf[j];
    }
    compress4(h, blk, t, last);
  }
  store4(h, out);
}

// Four RFC 6962 nodes H(0x01 || left_j || right_j): one 65-byte block each.
WIT_AVX2 void nodes_x4_avx2(const Hash32* const left[4], const Hash32* const right[4], Hash32 out[4]) {
  __m256i h[8];
  init4(h);
  alignas(32) uint8_t buf[4][128];
  const uint8_t* blk[4];
  const uint64_t t[4] = {65, 65, 65, 65};
  for (int j = 0; j < 4; j++) {
    std::memset(buf[j] + 64, 0, 64);
    buf[j][0] = 0x01;  // the RFC 6962 node prefix
    std::memcpy(buf[j] + 1, left[j]->data(), 32);
    std::memcpy(buf[j] + 33, right[j]->data(), 32);
    blk[j] = buf[j];
  }
  compress4(h, blk, t, true);
  store4(h, out);
}

const bool kAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

bool leaves_x4_available() {
#if defined(__x86_64__)
  return kAvx2;
#else
  return false;
#endif
}

void leaves_x4(const uint8_t* const data[4], size_t len, Hash32 out[4]) {
  const size_t lens[4] = {len, len, len, len};
  leaves_x4(data, lens, out);
}

void leaves_x4(const uint8_t* const data[4], const size_t len[4], Hash32 out[4]) {
#if defined(__x86_64__)
  if (kAvx2) return leaves_x4_avx2(data, len, out);
#endif
  (void)data;
  (void)len;
  (void)out;
}

void nodes_x4(const Hash32* const left[4], const Hash32* const right[4], Hash32 out[4]) {
#if defined(__x86_64__)
  if (kAvx2) return nodes_x4_avx2(left, right, out);
#endif
  (void)left;
  (void)right;
  (void)out;
}

}  // namespace wit
