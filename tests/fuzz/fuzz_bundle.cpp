// Fuzz target for bundles (Bundle::decode, docs/bundle.md): every input is
// either rejected with a wit::Error or decodes to members that survive
// re-encoding and decoding unchanged. The streaming reader (BundleReader, as
// a file is read: the bytes pulled in small pieces) must reach exactly the
// same verdict, with the same message or the same members. Inputs that start
// with the bundle magic are decoded as they are; any other input is taken as
// a raw payload, its last 8 bytes replaced by the payload checksum, and
// wrapped in a header and a zstd frame, so that the fuzzer reaches the
// payload parser directly instead of having to produce valid zstd. The same
// input as a file, read by SpooledBundle::open_hashed, must reach a plain
// open's verdict and message, hold Bundle::decode's members when that accepts
// it, and give the whole input's BLAKE2b digest, accepted or refused.
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wit/run/bundle.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/hash/hash.h"

#include "outcome.h"

namespace {

constexpr uint64_t kCap = uint64_t(64) << 20;

// The streaming reader's verdict on `in`, pulled in pieces of 1 to 64 bytes
// (the piece size taken from the input, so the fuzzer varies it): the
// members, or the error message.
std::string streamed(wit::ByteView in, std::map<std::string, wit::Bytes>& members) {
  const size_t piece = in.size ? 1 + in.data[in.size / 2] % 64 : 1;
  size_t off = 0;
  try {
    wit::BundleReader r(
        [&](uint8_t* dst, size_t cap) {
          const size_t k = std::min({cap, piece, in.size - off});
          std::memcpy(dst, in.data + off, k);
          off += k;
          return k;
        },
        "fuzz", kCap);
    for (int i = 0; r.next(); i++) {
      if (i % 2) {
        wit::Bytes got;
        r.read_to([&](wit::ByteView v) { got.insert(got.end(), v.data, v.data + v.size); });
        members[r.name()] = got;
      } else {
        members[r.name()] = r.read();
      }
    }
  } catch (const wit::Error& e) {
    return e.what();
  }
  return "";
}

// The input as a file through SpooledBundle::open_hashed (every member over
// 64 bytes spilled to the scratch file): see the top of this file.
void check_hashed(wit::ByteView in, const std::string& refused, const wit::Bundle& b) {
  static const wit::TempDir dir("wit-fuzz-bundle");
  const std::string path = dir / "in.wbundle";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(in.data), std::streamsize(in.size));
    if (!f) std::abort();
  }
  std::string plain, hashed;
  try {
    wit::SpooledBundle::open(path);
  } catch (const wit::Error& e) {
    plain = e.what();
  }
  wit::FileDigest seen;
  std::optional<wit::SpooledBundle> s;
  try {
    s = wit::SpooledBundle::open_hashed(path, {}, 64, &seen);
  } catch (const wit::Error& e) {
    hashed = e.what();
  }
  if (hashed != plain) std::abort();  // hashing changed the verdict
  wit::Blake2b h;
  h.update(in);
  const std::string want = h.final().hex();
  if (!seen.whole || seen.hex != want || seen.bytes != in.size) std::abort();
  if (s && (!s->digest().whole || s->digest().hex != want)) std::abort();
  if (!refused.empty()) return;
  if (!s) std::abort();  // accepted in memory, refused from the file
  std::vector<std::string> names;
  for (const auto& [name, data] : b.members()) {
    names.push_back(name);
    if (s->get(name) != data) std::abort();
  }
  if (s->names() != names) std::abort();
}

void check(wit::ByteView in) {
  wit::Bundle b;
  std::string refused;
  try {
    b = wit::Bundle::decode(in, "fuzz", kCap);
  } catch (const wit::Error& e) {
    refused = e.what();
  }
  std::map<std::string, wit::Bytes> members;
  if (streamed(in, members) != refused) std::abort();  // the two readers disagree
  check_hashed(in, refused, b);
  if (!refused.empty()) {
    wit_fuzz::note('r');
    return;  // the expected rejection
  }
  if (members != b.members()) std::abort();
  const wit::Bytes again = b.encode(1);
  wit::Bundle c;
  try {
    c = wit::Bundle::decode(again, "fuzz-again", kCap);
  } catch (const wit::Error&) {
    std::abort();  // what decodes must encode to something that decodes
  }
  if (c.members() != b.members()) std::abort();
  wit_fuzz::note('a');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 8 && std::memcmp(data, wit::kBundleMagic, 8) == 0) {
    check(wit::ByteView(data, size));
    return 0;
  }
  wit::Bytes payload(data, data + size);
  if (size >= 8) wit::put_le64(payload.data() + size - 8, wit::xxh3_64(wit::ByteView(data, size - 8)));
  wit::Bytes file(wit::kBundleMagic, wit::kBundleMagic + 8);
  wit::append_le32(file, wit::kBundleVersion);
  wit::append_le32(file, 0);
  wit::append_le64(file, payload.size());
  const size_t head = file.size();
  file.resize(head + ZSTD_compressBound(payload.size()));
  const size_t n = ZSTD_compress(file.data() + head, file.size() - head, payload.data(), payload.size(), 1);
  if (ZSTD_isError(n)) std::abort();
  file.resize(head + n);
  check(file);
  return 0;
}
