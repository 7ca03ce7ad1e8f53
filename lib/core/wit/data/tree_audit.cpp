// Leaves files and their streaming audit (docs/leaves.md): export the sorted
// leaves of an index; check a file's leaves strictly increasing and hashing
// to a commitment's root, one chunk in memory at a time.
#include "wit/data/tree_audit.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "wit/base/binary_header.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/data/sorted_merge.h"

namespace wit {

namespace {

// Header offsets (docs/leaves.md).
constexpr size_t kOffVersion = 8, kOffReserved = 12, kOffN = 16, kOffRoot = 24, kOffHeaderSum = 56;
// The most leaves a file may declare (as an index's records): 32 B each fits any file size.
constexpr uint64_t kMaxLeaves = uint64_t(1) << 50;

}  // namespace

Bytes encode_leaves_header(const LeavesHeader& h) {
  Bytes b(kLeavesHeaderSize, 0);
  std::memcpy(b.data(), kLeavesMagic, 8);
  put_le32(b.data() + kOffVersion, kLeavesVersion);
  put_le64(b.data() + kOffN, h.n);
  std::memcpy(b.data() + kOffRoot, h.root.data(), 32);
  put_le64(b.data() + kOffHeaderSum, xxh3_64(ByteView(b.data(), kOffHeaderSum)));
  return b;
}

LeavesHeader parse_leaves_header(ByteView b, const std::string& where) {
  check_binary_header(b, kLeavesMagic, kLeavesHeaderSize, kLeavesVersion, "leaves file", where);
  if (get_le64(b.data + kOffHeaderSum) != xxh3_64(ByteView(b.data, kOffHeaderSum)))
    throw Error("leaves file header is corrupt (checksum mismatch)", where + " at byte 0");
  if (get_le32(b.data + kOffReserved) != 0) throw Error("leaves file header is corrupt (reserved field not zero)", where + " at byte 12");
  LeavesHeader h;
  h.n = get_le64(b.data + kOffN);
  if (h.n > kMaxLeaves) throw Error("leaves file header is corrupt (impossible leaf count)", where + " at byte 16");
  std::memcpy(h.root.data(), b.data + kOffRoot, 32);
  return h;
}

void write_leaves(const Index& idx, const std::string& path) {
  AtomicFile out(path, /*binary=*/true);
  out.write(ByteView(encode_leaves_header({idx.n(), idx.root()})));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(idx.tree().leaves());
  const uint64_t total = idx.n() * 32;
  constexpr uint64_t kStep = uint64_t(1) << 22;  // 4 MiB writes from the mapped index
  for (uint64_t off = 0; off < total; off += kStep) out.write(ByteView(p + off, size_t(std::min(kStep, total - off))));
  out.commit();
}

namespace {

// Reads exactly `len` bytes unless the input ends first; returns how many.
size_t read_full(const ReadFn& read, uint8_t* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    const size_t r = read(buf + got, len - got);
    if (r == 0) break;
    got += r;
  }
  return got;
}

}  // namespace

LeavesAudit audit_leaves(const ReadFn& read, const std::string& where, uint64_t expect_n, const Hash32& expect_root,
                         const TreeHash& th, unsigned threads, uint64_t chunk) {
  if (chunk == 0 || (chunk & (chunk - 1)) != 0) throw Error("the audit's chunk must be a power of two", std::to_string(chunk));
  uint8_t hb[kLeavesHeaderSize];
  const LeavesHeader h = parse_leaves_header(ByteView(hb, read_full(read, hb, sizeof hb)), where);
  LeavesAudit a;
  if (h.n != expect_n) {
    a.reason = "the leaves file holds " + std::to_string(h.n) + " leaves, the commitment has " + std::to_string(expect_n);
    return a;
  }
  if (h.root != expect_root) {
    a.reason = "the leaves file is of another tree (its header names root " + h.root.hex() + ")";
    return a;
  }
  const uint64_t chunk_leaves = std::min(chunk, std::max<uint64_t>(h.n, 1));
  std::vector<Hash32> buf(static_cast<size_t>(chunk_leaves));
  RootFolder folder(th);
  Hash32 prev;
  for (uint64_t done = 0; done < h.n;) {
    const uint64_t want = std::min(chunk_leaves, h.n - done);
    const size_t got = read_full(read, reinterpret_cast<uint8_t*>(buf.data()), size_t(want * 32));
    if (got != want * 32)
      throw Error("leaves file is truncated (its header says " + std::to_string(h.n) + " leaves, the file has " +
                      std::to_string(done + got / 32) + ")",
                  where);
    for (uint64_t i = 0; i < want; i++) {
      const Hash32& cur = buf[size_t(i)];
      if ((done + i > 0) && !(prev < cur)) {
        a.n = done + i + 1;
        a.reason = "leaves " + std::to_string(done + i - 1) + " and " + std::to_string(done + i) +
                   " are out of order or equal: not a sorted distinct tree";
        return a;
      }
      prev = cur;
    }
    done += want;
    const RootFolder::Node sub{want, MerkleTree(th, buf.data(), want, MerkleTree::kDefaultCacheLevel, threads).root(),
                               buf.front(), buf[size_t(want - 1)]};
    if (want == chunk_leaves && chunk_leaves == chunk) {
      // A full chunk is an aligned perfect subtree of the whole tree.
      folder.push(sub);
    } else {
      // The last, smaller chunk: its own root is the right end of the fold.
      a.root = folder.root(&sub);
      a.n = done;
    }
  }
  if (h.n == 0 || h.n % chunk == 0) a.root = folder.root(nullptr);
  a.n = h.n;
  uint8_t extra = 0;
  if (read_full(read, &extra, 1) != 0)
    throw Error("leaves file has bytes after its " + std::to_string(h.n) + " leaves", where);
  if (a.root != expect_root) {
    a.reason = "the leaves do not give the commitment's root (they give " + a.root.hex() + ")";
    return a;
  }
  a.ok = true;
  a.summary = "the " + std::to_string(a.n) + " leaves are strictly increasing and give the commitment's root " + expect_root.hex();
  return a;
}

LeavesAudit audit_leaves_file(const std::string& path, const Commitment& c, unsigned threads) {
  const bool std_in = path == "-";
  const std::string where = std_in ? "stdin" : path;
  Fd opened;
  if (!std_in) {
    opened.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!opened.ok()) throw Error("cannot open: " + errno_text(), path);
  }
  const int fd = std_in ? STDIN_FILENO : opened.get();
  const ReadFn read = [fd, &where](uint8_t* b, size_t len) -> size_t {
    for (;;) {
      const ssize_t r = ::read(fd, b, len);
      if (r >= 0) return size_t(r);
      if (errno != EINTR) throw Error("cannot read: " + errno_text(), where);
    }
  };
  return audit_leaves(read, where, c.n, c.root, c.tree_hash(), threads);
}

}  // namespace wit
