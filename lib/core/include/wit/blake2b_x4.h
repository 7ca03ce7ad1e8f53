// Four record leaves H(0x00 || data_j) of equal-length records at once
// (BLAKE2b-256, AVX2), bit-identical to kBlake2bTree.leaf.
#pragma once
#include <cstddef>
#include <cstdint>

#include "wit/bytes.h"

namespace wit {

// Whether leaves_x4 can run on this CPU (x86-64 with AVX2).
bool leaves_x4_available();
// Precondition: leaves_x4_available(); all four records are `len` bytes.
void leaves_x4(const uint8_t* const data[4], size_t len, Hash32 out[4]);

}  // namespace wit
