// The audited data tree: a commitment's sorted leaves exported from its index
// to a leaves file (*.wleaves), and the streaming audit of such a file against
// a commitment: strictly increasing leaves whose root is the commitment's
// root, in O(n) time and bounded memory. A version-2 exclusion proof (and so a
// version-2 contamination certificate) means absence only in a sorted tree;
// this is how someone who holds the commitment but not the data checks that
// it is one. From version 3 every proof checks the order along its own path
// (docs/proofs.md) and the audit is not needed for absence. Format: docs/leaves.md.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/data/commitment.h"
#include "wit/data/index.h"

namespace wit {

inline constexpr char kLeavesMagic[8] = {'W', 'I', 'T', 'L', 'E', 'A', 'F', '\n'};
inline constexpr uint32_t kLeavesVersion = 1;
inline constexpr size_t kLeavesHeaderSize = 64;
// Leaves hashed per chunk of the streaming audit (an aligned perfect subtree):
// the audit holds one chunk (8 MiB) plus O(log n) hashes.
inline constexpr uint64_t kLeavesChunk = uint64_t(1) << 18;

// The header of a leaves file: its leaf count and the root it claims (the
// commitment's root).
struct LeavesHeader {
  uint64_t n = 0;
  Hash32 root;
};
// Encodes the 64-byte header (magic, version, n, root, checksum).
Bytes encode_leaves_header(const LeavesHeader& h);
// Parses and checks a 64-byte header: magic, version, reserved zero, header
// checksum. Throws wit::Error naming `where`.
LeavesHeader parse_leaves_header(ByteView b, const std::string& where);

// Writes the index's leaves (already checked against `c` by the caller, or
// not: the audit decides) as a leaves file to `path` (- = stdout),
// atomically, streaming from the mapped index.
void write_leaves(const Index& idx, const std::string& path);

// Reads up to `len` bytes into `buf`; returns how many (0 only at the end).
using ReadFn = std::function<size_t(uint8_t* buf, size_t len)>;

// The audit's verdict (summary: "the N leaves are strictly increasing and
// give the commitment's root R"), with what it read.
struct LeavesAudit : Verdict {
  uint64_t n = 0;  // leaves read
  Hash32 root;     // the root the leaves give (when all were read)
};
// The streaming audit: parses the header, then reads the n leaves in chunks
// of `chunk` leaves (a power of two), checking that each is above the one
// before and folding aligned chunk roots into the root of tree `th` (the
// commitment's: kDataTree from version 3, kBlake2bTree before) (threads
// hash a chunk; 0 = all cores). ok when the header's n and root are
// `expect_n` and `expect_root`, the leaves are strictly increasing, and they
// give that root. A malformed file (bad magic or version, corrupt header,
// fewer or more bytes than n leaves) throws wit::Error; a well-formed file
// that fails is ok = false with the first reason.
LeavesAudit audit_leaves(const ReadFn& read, const std::string& where, uint64_t expect_n, const Hash32& expect_root,
                         const TreeHash& th, unsigned threads = 0, uint64_t chunk = kLeavesChunk);
// The same for a file (- = stdin) against a commitment.
LeavesAudit audit_leaves_file(const std::string& path, const Commitment& c, unsigned threads = 0);

}  // namespace wit
