// Several record leaves H(0x00 || data_j) at once, and several tree nodes
// (BLAKE2b-256, one message per SIMD lane: eight (twice over) with
// AVX-512, four with AVX2), bit-identical to kBlake2bTree.leaf and .node.
#pragma once
#include <cstddef>
#include <cstdint>

#include "wit/base/bytes.h"

namespace wit {

// Whether leaves_x4 can run on this CPU (x86-64 with AVX2).
bool leaves_x4_available();
// Precondition: leaves_x4_available(); all four records are `len` bytes.
void leaves_x4(const uint8_t* const data[4], size_t len, Hash32 out[4]);
// Records of lengths len[j] that fill the same number of BLAKE2b blocks:
// x4_blocks(len[j]) equal for all four. Precondition: leaves_x4_available().
void leaves_x4(const uint8_t* const data[4], const size_t len[4], Hash32 out[4]);
// 128-byte blocks of the leaf message 0x00 || record of `len` bytes.
inline uint64_t x4_blocks(size_t len) { return (uint64_t(len) + 1 + 127) / 128; }
// Four RFC 6962 nodes H(0x01 || left_j || right_j), bit-identical to
// kBlake2bTree.node. Precondition: leaves_x4_available().
void nodes_x4(const Hash32* const left[4], const Hash32* const right[4], Hash32 out[4]);

// Messages hashed at once on this CPU: 16 (AVX-512: two interleaved groups of
// eight lanes), 4 (AVX2) or 1.
unsigned hash_lanes();
// The leaves of `count` <= 16 records (record j: len[j] bytes at data[j]) into
// *out[j], whose leaf messages fill the same number of blocks (x4_blocks
// equal). Any CPU: lanes where there are, one at a time where not.
void leaves_lanes(const uint8_t* const* data, const size_t* len, size_t count, Hash32* const* out);
// The leaves of `count` records of `len` bytes each, record i at base + i *
// stride, into out[0 .. count).
void leaves_lanes(const uint8_t* base, size_t len, size_t stride, size_t count, Hash32* out);
// out[k] = node(in[2k], in[2k+1]) for k < pairs (RFC 6962 nodes of adjacent
// pairs, a tree level); out may be in. Any CPU.
void node_pairs(const Hash32* in, uint64_t pairs, Hash32* out);
// out[k] = kDataTree.ranged_node(in[2k], in[2k+1], keys[k*key_stride],
// keys[k*key_stride + 1]): ranged nodes of adjacent pairs, whose split leaves
// (the left child's last, the right child's first) are adjacent in the sorted
// leaves; one 128-byte block each. out may be in, not keys. Any CPU.
void ranged_node_pairs(const Hash32* in, uint64_t pairs, const Hash32* keys, uint64_t key_stride, Hash32* out);
// The IV of a ranged node: BLAKE2b-256's, with the personalisation in the parameter block.
void ranged_node_iv(uint64_t iv[8]);

}  // namespace wit
