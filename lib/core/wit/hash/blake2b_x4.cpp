// BLAKE2b-256 of several messages at once, one message per 64-bit SIMD lane:
// eight with AVX-512 (zmm registers, native 64-bit rotates), four with AVX2.
// Committing a dataset hashes millions of records, token windows and tree
// nodes; a single-stream BLAKE2b is serial within a message (one compression
// depends on the one before), so lanes over independent messages are where
// the throughput is. Same outputs as crypto_generichash (RFC 7693); tested
// against it. The rounds are unrolled with the message schedule known at
// compile time, so the sixteen message words of the lanes stay in registers.
#include "wit/hash/blake2b_x4.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "wit/hash/merkle.h"

#if defined(__x86_64__)
// GCC 12 takes the deliberately undefined vector inside its own
// _mm512_undefined_epi32 (behind the 512-bit shuffles) for a use of an
// uninitialised variable: a false positive of the header, silenced here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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

// Parameter block word 0: digest 32 bytes, no key, fanout 1, depth 1.
constexpr uint64_t kParam0 = 0x01010020;

#if defined(__x86_64__)
#define WIT_AVX2 __attribute__((target("avx2"), always_inline)) inline
#define WIT_AVX2_FN __attribute__((target("avx2")))
#define WIT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline
#define WIT_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl")))

// ------------------------------------------------------------ AVX2: 4 lanes

WIT_AVX2 __m256i rotr32(__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)); }
WIT_AVX2 __m256i rotr24(__m256i x) {
  const __m256i m = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0, 1, 2, 11,
                                     12, 13, 14, 15, 8, 9, 10);
  return _mm256_shuffle_epi8(x, m);
}
WIT_AVX2 __m256i rotr16(__m256i x) {
  const __m256i m = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7, 0, 1, 10,
                                     11, 12, 13, 14, 15, 8, 9);
  return _mm256_shuffle_epi8(x, m);
}
WIT_AVX2 __m256i rotr63(__m256i x) { return _mm256_or_si256(_mm256_add_epi64(x, x), _mm256_srli_epi64(x, 63)); }

WIT_AVX2 void g4(__m256i& a, __m256i& b, __m256i& c, __m256i& d, __m256i x, __m256i y) {
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), x);
  d = rotr32(_mm256_xor_si256(d, a));
  c = _mm256_add_epi64(c, d);
  b = rotr24(_mm256_xor_si256(b, c));
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), y);
  d = rotr16(_mm256_xor_si256(d, a));
  c = _mm256_add_epi64(c, d);
  b = rotr63(_mm256_xor_si256(b, c));
}

// NAME(v, m, seq): the twelve rounds of G over the working vector v (type
// V) with message words m, each round's schedule a compile-time constant.
#define WIT_BLAKE2B_ROUNDS(NAME, ATTR, V, G)                              \
  template <int R>                                                        \
  ATTR void NAME##_one(V v[16], const V m[16]) {                          \
    constexpr const uint8_t* s = kSigma[R];                               \
    G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);                         \
    G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);                         \
    G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);                        \
    G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);                        \
    G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);                        \
    G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);                      \
    G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);                       \
    G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);                       \
  }                                                                       \
  template <int... R>                                                     \
  ATTR void NAME(V v[16], const V m[16], std::integer_sequence<int, R...>) { \
    (NAME##_one<R>(v, m), ...);                                           \
  }

WIT_BLAKE2B_ROUNDS(rounds4, WIT_AVX2, __m256i, g4)

// One compression of four 128-byte blocks (lane j's at blk[j]); t[j] is lane
// j's byte counter after this block.
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
  v[12] = _mm256_xor_si256(v[12], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)));
  if (last) v[14] = _mm256_xor_si256(v[14], _mm256_set1_epi64x(-1));
  rounds4(v, m, std::make_integer_sequence<int, 12>());
  for (int i = 0; i < 8; i++) h[i] = _mm256_xor_si256(h[i], _mm256_xor_si256(v[i], v[8 + i]));
}

WIT_AVX2 void init4(__m256i h[8]) {
  for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi64x(int64_t(kIV[i]));
  h[0] = _mm256_xor_si256(h[0], _mm256_set1_epi64x(kParam0));
}
WIT_AVX2 void init4(__m256i h[8], const uint64_t iv[8]) {
  for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi64x(int64_t(iv[i]));
}

WIT_AVX2 void store4(const __m256i h[8], Hash32* const out[4]) {
  alignas(32) uint64_t lanes[4][4];
  for (int i = 0; i < 4; i++) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[i]), h[i]);
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) std::memcpy(out[j]->data() + 8 * i, &lanes[i][j], 8);
}

// Four messages 0x00 || data_j whose lengths may differ but fill the same
// number of 128-byte blocks.
WIT_AVX2_FN void leaves4(const uint8_t* const data[4], const size_t len[4], Hash32* const out[4]) {
  __m256i h[8];
  init4(h);
  // The message is 0x00 || data: total = len + 1 bytes, in 128-byte blocks,
  // the last (possibly partial, zero-padded) one flagged final.
  uint64_t total[4];
  for (int j = 0; j < 4; j++) total[j] = uint64_t(len[j]) + 1;
  const uint64_t blocks = (total[0] + 127) / 128;
  alignas(32) uint8_t buf[4][128];
  const uint8_t* blk[4];
  alignas(32) uint64_t t[4];
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
WIT_AVX2_FN void nodes4(const Hash32* const left[4], const Hash32* const right[4], Hash32* const out[4]) {
  __m256i h[8];
  init4(h);
  alignas(32) uint8_t buf[4][128];
  const uint8_t* blk[4];
  alignas(32) const uint64_t t[4] = {65, 65, 65, 65};
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

// Four ranged nodes: block j is the pair at pair[j] (64 bytes) then the split
// leaves at keys[j] (64 bytes); IV personalised.
WIT_AVX2_FN void ranged4(const Hash32* const pair[4], const Hash32* const keys[4], const uint64_t iv[8],
                         Hash32* const out[4]) {
  __m256i h[8];
  init4(h, iv);
  alignas(32) uint8_t buf[4][128];
  const uint8_t* blk[4];
  alignas(32) const uint64_t t[4] = {128, 128, 128, 128};
  for (int j = 0; j < 4; j++) {
    std::memcpy(buf[j], pair[j]->data(), 64);
    std::memcpy(buf[j] + 64, keys[j]->data(), 64);
    blk[j] = buf[j];
  }
  compress4(h, blk, t, true);
  store4(h, out);
}

// ---------------------------------------------------------- AVX-512: 8 lanes

WIT_AVX512 void g8(__m512i& a, __m512i& b, __m512i& c, __m512i& d, __m512i x, __m512i y) {
  a = _mm512_add_epi64(_mm512_add_epi64(a, b), x);
  d = _mm512_ror_epi64(_mm512_xor_si512(d, a), 32);
  c = _mm512_add_epi64(c, d);
  b = _mm512_ror_epi64(_mm512_xor_si512(b, c), 24);
  a = _mm512_add_epi64(_mm512_add_epi64(a, b), y);
  d = _mm512_ror_epi64(_mm512_xor_si512(d, a), 16);
  c = _mm512_add_epi64(c, d);
  b = _mm512_ror_epi64(_mm512_xor_si512(b, c), 63);
}

WIT_BLAKE2B_ROUNDS(rounds8, WIT_AVX512, __m512i, g8)

// Two independent groups of eight lanes side by side, round by round, so
// that their dependency chains overlap.
template <int... R>
WIT_AVX512 void rounds8x2(__m512i v[16], const __m512i m[16], __m512i w[16], const __m512i n[16],
                          std::integer_sequence<int, R...>) {
  ((rounds8_one<R>(v, m), rounds8_one<R>(w, n)), ...);
}

// Rows r[j] (eight 64-bit words of lane j) to columns: out[w] holds word w of
// the eight lanes.
WIT_AVX512 void transpose8(const __m512i r[8], __m512i out[8]) {
  __m512i t[8], u[8];
  for (int p = 0; p < 4; p++) {
    t[2 * p] = _mm512_unpacklo_epi64(r[2 * p], r[2 * p + 1]);      // words 0 2 4 6 of rows 2p, 2p+1
    t[2 * p + 1] = _mm512_unpackhi_epi64(r[2 * p], r[2 * p + 1]);  // words 1 3 5 7
  }
  // u[0..3]: rows 0-3, words {0,4} {2,6} {1,5} {3,7}; u[4..7] the same for rows 4-7.
  // (0x88 takes 128-bit blocks 0 and 2 of each source, 0xDD blocks 1 and 3.)
#pragma GCC unroll 2
  for (int half = 0; half < 2; half++)
#pragma GCC unroll 2
    for (int q = 0; q < 2; q++) {
      const __m512i* s = t + 4 * half;
      u[4 * half + 2 * q] = _mm512_shuffle_i64x2(s[q], s[q + 2], 0x88);
      u[4 * half + 2 * q + 1] = _mm512_shuffle_i64x2(s[q], s[q + 2], 0xDD);
    }
  constexpr int kWord[4] = {0, 2, 1, 3};  // u[i] and u[i + 4] hold words kWord[i] and kWord[i] + 4
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    out[kWord[i]] = _mm512_shuffle_i64x2(u[i], u[i + 4], 0x88);
    out[kWord[i] + 4] = _mm512_shuffle_i64x2(u[i], u[i + 4], 0xDD);
  }
}

// The working vector of one compression of eight blocks: the chaining
// value h, the IV, the eight byte counters t after this block, the final flag.
WIT_AVX512 void start8(const __m512i h[8], __m512i t, bool last, __m512i v[16]) {
  for (int i = 0; i < 8; i++) v[i] = h[i];
  for (int i = 0; i < 8; i++) v[8 + i] = _mm512_set1_epi64(int64_t(kIV[i]));
  v[12] = _mm512_xor_si512(v[12], t);
  if (last) v[14] = _mm512_xor_si512(v[14], _mm512_set1_epi64(-1));
}
WIT_AVX512 void finish8(__m512i h[8], const __m512i v[16]) {
  for (int i = 0; i < 8; i++) h[i] = _mm512_ternarylogic_epi64(h[i], v[i], v[8 + i], 0x96);  // h ^ v ^ v'
}

// One compression of eight blocks whose message words are m (already
// transposed).
WIT_AVX512 void compress8(__m512i h[8], const __m512i m[16], __m512i t, bool last) {
  __m512i v[16];
  start8(h, t, last, v);
  rounds8(v, m, std::make_integer_sequence<int, 12>());
  finish8(h, v);
}

WIT_AVX512 void init8(__m512i h[8]) {
  for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi64(int64_t(kIV[i]));
  h[0] = _mm512_xor_si512(h[0], _mm512_set1_epi64(kParam0));
}
WIT_AVX512 void init8(__m512i h[8], const uint64_t iv[8]) {
  for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi64(int64_t(iv[i]));
}

WIT_AVX512 void store8(const __m512i h[8], Hash32* const out[8]) {
  alignas(64) uint64_t lanes[4][8];
  for (int i = 0; i < 4; i++) _mm512_store_si512(lanes[i], h[i]);
  for (int j = 0; j < 8; j++)
    for (int i = 0; i < 4; i++) std::memcpy(out[j]->data() + 8 * i, &lanes[i][j], 8);
}

// The 64 message bytes at message offset `at` of the leaf message 0x00 ||
// data (len bytes), zero past its end: a masked load, which neither reads
// nor faults on the bytes it leaves out (the prefix byte, before data, and
// everything past the end).
WIT_AVX512 __m512i leaf_bytes(const uint8_t* data, uint64_t len, uint64_t at) {
  const uint64_t have = len + 1 > at ? len + 1 - at : 0;  // message bytes from `at` on
  __mmask64 k = have >= 64 ? ~__mmask64(0) : (__mmask64(1) << have) - 1;
  if (at == 0) k &= ~__mmask64(1);  // byte 0 is the 0x00 prefix
  return _mm512_maskz_loadu_epi8(k, reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(data) + at - 1));
}

// Message words of block `start` / 128 of eight leaf messages, transposed.
WIT_AVX512 void leaf_block8(const uint8_t* const data[8], const size_t len[8], uint64_t start, __m512i m[16]) {
  __m512i r[8];
  for (int half = 0; half < 2; half++) {
    for (int j = 0; j < 8; j++) r[j] = leaf_bytes(data[j], len[j], start + 64 * uint64_t(half));
    transpose8(r, m + 8 * half);
  }
}

// Eight messages 0x00 || data_j that fill the same number of blocks.
WIT_AVX512_FN void leaves8(const uint8_t* const data[8], const size_t len[8], Hash32* const out[8]) {
  __m512i h[8];
  init8(h);
  alignas(64) uint64_t total[8];
  for (int j = 0; j < 8; j++) total[j] = uint64_t(len[j]) + 1;
  const __m512i tot = _mm512_load_si512(total);
  const uint64_t blocks = (total[0] + 127) / 128;
  __m512i m[16];
  for (uint64_t k = 0; k < blocks; k++) {
    const uint64_t start = 128 * k;
    leaf_block8(data, len, start, m);
    const __m512i t = _mm512_min_epu64(tot, _mm512_set1_epi64(int64_t(start + 128)));
    compress8(h, m, t, k + 1 == blocks);
  }
  store8(h, out);
}

// Eight RFC 6962 nodes H(0x01 || in[2j] || in[2j+1]) of adjacent pairs: one
// 65-byte block each, loaded straight from the pair.
WIT_AVX512_FN void pairs8(const Hash32* in, Hash32* const out[8]) {
  __m512i h[8];
  init8(h);
  const uint8_t* p = in->data();
  __m512i m[16], r[8];
  const __m512i prefix = _mm512_maskz_set1_epi8(__mmask64(1), 0x01);
  for (int j = 0; j < 8; j++)  // bytes 0..63: 0x01, then the pair's first 63 bytes
    r[j] = _mm512_or_si512(prefix, _mm512_maskz_loadu_epi8(~__mmask64(1), reinterpret_cast<const void*>(
                                                                                reinterpret_cast<uintptr_t>(p) +
                                                                                64 * uint64_t(j) - 1)));
  transpose8(r, m);
  for (int j = 0; j < 8; j++) r[j] = _mm512_maskz_loadu_epi8(__mmask64(1), p + 64 * j + 63);  // byte 64
  transpose8(r, m + 8);
  compress8(h, m, _mm512_set1_epi64(65), true);
  store8(h, out);
}
// Eight ranged nodes of adjacent pairs: bytes 0..63 the pair in[2j],
// in[2j+1], bytes 64..127 the two split leaves at keys + j * key_stride.
WIT_AVX512_FN void ranged8(const Hash32* in, const Hash32* keys, uint64_t key_stride, const uint64_t iv[8],
                           Hash32* const out[8]) {
  __m512i h[8];
  init8(h, iv);
  __m512i m[16], r[8];
  for (int j = 0; j < 8; j++) r[j] = _mm512_loadu_si512(reinterpret_cast<const void*>(in + 2 * j));
  transpose8(r, m);
  for (int j = 0; j < 8; j++) r[j] = _mm512_loadu_si512(reinterpret_cast<const void*>(keys + j * key_stride));
  transpose8(r, m + 8);
  compress8(h, m, _mm512_set1_epi64(128), true);
  store8(h, out);
}
// Two independent compressions of eight blocks each, round by round.
WIT_AVX512 void compress8x2(__m512i h[8], const __m512i m[16], __m512i t, __m512i h2[8], const __m512i m2[16],
                            __m512i t2, bool last) {
  __m512i v[16], w[16];
  start8(h, t, last, v);
  start8(h2, t2, last, w);
  rounds8x2(v, m, w, m2, std::make_integer_sequence<int, 12>());
  finish8(h, v);
  finish8(h2, w);
}

// Sixteen messages that fill the same number of blocks, as two groups of
// eight whose rounds interleave: one compression is a chain of dependent
// steps, and a second independent chain beside it keeps more of the
// vector units busy (about 20% faster than one group after the other).
WIT_AVX512_FN void leaves16(const uint8_t* const data[16], const size_t len[16], Hash32* const out[16]) {
  __m512i h[8], h2[8];
  init8(h);
  init8(h2);
  alignas(64) uint64_t total[16];
  for (int j = 0; j < 16; j++) total[j] = uint64_t(len[j]) + 1;
  const __m512i tot = _mm512_load_si512(total), tot2 = _mm512_load_si512(total + 8);
  const uint64_t blocks = (total[0] + 127) / 128;
  __m512i m[16], m2[16];
  for (uint64_t k = 0; k < blocks; k++) {
    const uint64_t start = 128 * k;
    leaf_block8(data, len, start, m);
    leaf_block8(data + 8, len + 8, start, m2);
    const __m512i lim = _mm512_set1_epi64(int64_t(start + 128));
    compress8x2(h, m, _mm512_min_epu64(tot, lim), h2, m2, _mm512_min_epu64(tot2, lim), k + 1 == blocks);
  }
  store8(h, out);
  store8(h2, out + 8);
}

const bool kAvx2 = __builtin_cpu_supports("avx2");
const bool kAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vl");
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
  Hash32* const o[4] = {&out[0], &out[1], &out[2], &out[3]};
  if (kAvx2) return leaves4(data, len, o);
#endif
  (void)data;
  (void)len;
  (void)out;
}

void nodes_x4(const Hash32* const left[4], const Hash32* const right[4], Hash32 out[4]) {
#if defined(__x86_64__)
  Hash32* const o[4] = {&out[0], &out[1], &out[2], &out[3]};
  if (kAvx2) return nodes4(left, right, o);
#endif
  (void)left;
  (void)right;
  (void)out;
}

unsigned hash_lanes() {
#if defined(__x86_64__)
  if (kAvx512) return 16;
  if (kAvx2) return 4;
#endif
  return 1;
}

namespace {

// Runs an N-lane kernel on `count` <= N messages: the lanes past count
// repeat message 0 (same block count) into a spare output.
template <size_t N, class Kernel>
void on_lanes(const uint8_t* const* data, const size_t* len, size_t count, Hash32* const* out, Kernel&& kernel) {
  const uint8_t* d[N];
  size_t l[N];
  Hash32* o[N];
  Hash32 spare;
  for (size_t j = 0; j < N; j++) {
    const bool used = j < count;
    d[j] = data[used ? j : 0];
    l[j] = len[used ? j : 0];
    o[j] = used ? out[j] : &spare;
  }
  kernel(d, l, o);
}

}  // namespace

void leaves_lanes(const uint8_t* const* data, const size_t* len, size_t count, Hash32* const* out) {
#if defined(__x86_64__)
  if (kAvx512 && count > 8) return on_lanes<16>(data, len, count, out, leaves16);
  if (kAvx512 && count > 4) return on_lanes<8>(data, len, count, out, leaves8);
  if (kAvx2 && count > 1) return on_lanes<4>(data, len, count, out, leaves4);
#endif
  for (size_t j = 0; j < count; j++) *out[j] = kBlake2bTree.leaf(ByteView(data[j], len[j]));
}

void leaves_lanes(const uint8_t* base, size_t len, size_t stride, size_t count, Hash32* out) {
  const uint8_t* d[16];
  size_t l[16];
  Hash32* o[16];
  for (size_t done = 0; done < count;) {
    const size_t c = std::min<size_t>(hash_lanes() == 1 ? 16 : hash_lanes(), count - done);
    for (size_t j = 0; j < c; j++) {
      d[j] = base + (done + j) * stride;
      l[j] = len;
      o[j] = out + done + j;
    }
    leaves_lanes(d, l, c, o);
    done += c;
  }
}

void node_pairs(const Hash32* in, uint64_t pairs, Hash32* out) {
  uint64_t k = 0;
#if defined(__x86_64__)
  // Each group reads all its inputs before it writes, so out may be in.
  if (kAvx512) {
    for (; k + 8 <= pairs; k += 8) {
      Hash32 o[8];
      Hash32* const op[8] = {&o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]};
      pairs8(in + 2 * k, op);
      std::memcpy(static_cast<void*>(out + k), o, sizeof o);
    }
  }
  if (kAvx2) {
    for (; k + 4 <= pairs; k += 4) {
      const Hash32* l[4] = {&in[2 * k], &in[2 * k + 2], &in[2 * k + 4], &in[2 * k + 6]};
      const Hash32* r[4] = {&in[2 * k + 1], &in[2 * k + 3], &in[2 * k + 5], &in[2 * k + 7]};
      Hash32 o[4];
      Hash32* const op[4] = {&o[0], &o[1], &o[2], &o[3]};
      nodes4(l, r, op);
      std::memcpy(static_cast<void*>(out + k), o, sizeof o);
    }
  }
#endif
  for (; k < pairs; k++) out[k] = kBlake2bTree.node(in[2 * k], in[2 * k + 1]);
}

void ranged_node_iv(uint64_t iv[8]) {
  for (int i = 0; i < 8; i++) iv[i] = kIV[i];
  iv[0] ^= kParam0;
  for (int i = 0; i < 2; i++) {  // parameter words 6 and 7: the personalisation, little-endian
    uint64_t w = 0;
    std::memcpy(&w, kRangedNodePersonal + 8 * i, 8);
    iv[6 + i] ^= w;
  }
}

void ranged_node_pairs(const Hash32* in, uint64_t pairs, const Hash32* keys, uint64_t key_stride, Hash32* out) {
  uint64_t k = 0;
#if defined(__x86_64__)
  static const auto iv = [] {
    std::array<uint64_t, 8> v;
    ranged_node_iv(v.data());
    return v;
  }();
  // Each group reads all its inputs before it writes, so out may be in.
  if (kAvx512) {
    for (; k + 8 <= pairs; k += 8) {
      Hash32 o[8];
      Hash32* const op[8] = {&o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]};
      ranged8(in + 2 * k, keys + k * key_stride, key_stride, iv.data(), op);
      std::memcpy(static_cast<void*>(out + k), o, sizeof o);
    }
  }
  if (kAvx2) {
    for (; k + 4 <= pairs; k += 4) {
      const Hash32* p[4], *kk[4];
      for (int j = 0; j < 4; j++) {
        p[j] = &in[2 * (k + j)];
        kk[j] = keys + (k + j) * key_stride;
      }
      Hash32 o[4];
      Hash32* const op[4] = {&o[0], &o[1], &o[2], &o[3]};
      ranged4(p, kk, iv.data(), op);
      std::memcpy(static_cast<void*>(out + k), o, sizeof o);
    }
  }
#endif
  for (; k < pairs; k++) {
    const Hash32* kk = keys + k * key_stride;
    const Hash32 l = in[2 * k], r = in[2 * k + 1];
    out[k] = kDataTree.ranged_node(l, r, kk[0], kk[1]);
  }
}

}  // namespace wit
