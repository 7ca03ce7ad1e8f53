// Fuzz target for the leaves file parser and its streaming audit
// (wit/data/tree_audit.h, docs/leaves.md). Each input is audited as given, against
// the n and root its own header names (so a well-formed file reaches the
// order and root checks), and, when it is at least a header long, again with
// magic, version, reserved field and header checksum patched in. A file the
// audit passes must hold exactly n strictly increasing leaves whose RFC 6962
// root is the header's: checked again here by plain means.
// Letters (outcome.h): a audit passed, f well-formed but failed, r rejected.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/data/tree_audit.h"

#include "outcome.h"

namespace {

void exercise(const uint8_t* data, size_t size) {
  try {
    const wit::LeavesHeader h = wit::parse_leaves_header(wit::ByteView(data, size), "fuzz");
    size_t pos = 0;
    const wit::ReadFn read = [&](uint8_t* out, size_t len) {
      const size_t n = std::min(len, size - pos);
      std::memcpy(out, data + pos, n);
      pos += n;
      return n;
    };
    // A small chunk, so that inputs of a few leaves cross chunk boundaries.
    // The root is of a version-3 (ranged) tree, or else of version 2 (RFC 6962).
    const size_t start = pos;
    wit::LeavesAudit a = wit::audit_leaves(read, "fuzz", h.n, h.root, wit::kDataTree, 1, 2);
    const wit::TreeHash* th = &wit::kDataTree;
    if (!a.ok) {
      pos = start;
      a = wit::audit_leaves(read, "fuzz", h.n, h.root, wit::kBlake2bTree, 1, 2);
      th = &wit::kBlake2bTree;
    }
    if (a.ok) {
      if (size != wit::kLeavesHeaderSize + 32 * h.n) std::abort();
      std::vector<wit::Hash32> leaves(size_t(h.n));
      if (h.n) std::memcpy(leaves.data(), data + wit::kLeavesHeaderSize, size_t(32 * h.n));
      for (size_t i = 1; i < leaves.size(); i++)
        if (!(leaves[i - 1] < leaves[i])) std::abort();
      if (wit::merkle_root(*th, leaves) != h.root) std::abort();
    }
    wit_fuzz::note(a.ok ? 'a' : 'f');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise(data, size);
  if (size < wit::kLeavesHeaderSize) return 0;
  std::vector<uint8_t> copy(data, data + size);
  uint8_t* h = copy.data();
  std::memcpy(h, wit::kLeavesMagic, 8);
  wit::put_le32(h + 8, wit::kLeavesVersion);
  wit::put_le32(h + 12, 0);
  wit::put_le64(h + 56, wit::xxh3_64(wit::ByteView(h, 56)));
  exercise(copy.data(), copy.size());
  return 0;
}
