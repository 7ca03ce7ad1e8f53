// The first checks of wit's binary files (binary_header.h).
#include "wit/base/binary_header.h"

#include <algorithm>
#include <cstring>

#include "wit/base/error.h"

namespace wit {

void check_binary_header(ByteView head, const char (&magic)[8], size_t header_size, uint32_t version,
                         const std::string& what, const std::string& where) {
  if (head.size > 0 && std::memcmp(head.data, magic, std::min<size_t>(head.size, 8)) != 0)
    throw Error("not a wit " + what + " (wrong magic)", where);
  if (head.size < header_size)
    throw Error(what + " is truncated (header needs " + std::to_string(header_size) + " bytes, file has " +
                    std::to_string(head.size) + ")",
                where);
  const uint32_t v = get_le32(head.data + 8);
  if (v != version)
    throw Error("unsupported " + what + " version " + std::to_string(v) + " (this wit reads version " +
                    std::to_string(version) + ")",
                where);
}

}  // namespace wit
