// Every domain-separation prefix wit hashes with, in one place. H is never used
// untagged: each use below names what it hashes, so a digest from one context
// can never be replayed as a digest of another.
#pragma once
#include <cstdint>
#include <string_view>

namespace wit::tags {

// RFC 6962 section 2.1: leaf = H(0x00 || data), node = H(0x01 || left || right).
inline constexpr uint8_t kRfc6962LeafHashPrefix = 0x00;
inline constexpr uint8_t kRfc6962NodeHashPrefix = 0x01;

// Digest of a source file: H(kSourceDigest || le64 size || le64 piece_size || MTH(pieces)).
inline constexpr std::string_view kSourceDigest = "wit/source-digest/v1";
// Digest of a reader specification, bound into the commitment id.
inline constexpr std::string_view kReaderSpec = "wit/reader-spec/v1";

}  // namespace wit::tags
