// The first checks of each of wit's binary files (bundles, leaves files).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "wit/base/bytes.h"

namespace wit {

// In their documented order: the 8-byte `magic` (on whatever bytes `head`
// has, so that a short file that is not a WHAT is never called a truncated
// one), the header's `header_size`, then the u32 version right after the
// magic. Throws wit::Error("not a wit WHAT (wrong magic)",
// "WHAT is truncated (header needs N bytes, file has M)" or
// "unsupported WHAT version V (this wit reads version W)", where).
void check_binary_header(ByteView head, const char (&magic)[8], size_t header_size, uint32_t version,
                         const std::string& what, const std::string& where);

}  // namespace wit
