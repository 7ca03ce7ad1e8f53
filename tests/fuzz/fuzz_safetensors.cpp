// Fuzz target for the safetensors reader (wit::Safetensors::parse). Any input
// either throws wit::Error or parses; what parses must survive the writer:
// re-encoding and re-parsing gives the same tensors, metadata and checkpoint
// root, and encoding is idempotent (one canonical file per content). Each
// input is also tried with its header length patched to end at its last '}',
// so that mutations of the JSON keep a consistent length and the checks past
// the JSON parse (offsets, sizes, coverage) get fuzzed too.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wit/base/error.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"

#include "outcome.h"

namespace {

bool same(const wit::TensorView& a, const wit::TensorView& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.data.size == b.data.size &&
         (a.data.size == 0 || std::memcmp(a.data.data, b.data.data, a.data.size) == 0);
}

void check(bool ok) {
  if (!ok) std::abort();
}

void exercise(const uint8_t* data, size_t size) {
  wit::Safetensors s;
  try {
    s = wit::Safetensors::parse(wit::ByteView(data, size), "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return;  // the expected rejection
  }
  const auto& ts = s.tensors();
  for (size_t i = 0; i < ts.size(); i++) {
    // In name order, unique, inside the input, of the size dtype x shape says.
    check(i == 0 || ts[i - 1].name < ts[i].name);
    check(ts[i].data.size == 0 || (ts[i].data.data >= data && ts[i].data.data + ts[i].data.size <= data + size));
    check(ts[i].data.size == ts[i].numel() * wit::dtype_size(ts[i].dtype));
    check(s.find(ts[i].name) == &ts[i]);
  }

  // A file the reader accepts must be one the writer can write: a throw here
  // is a disagreement between the two, so it is not caught.
  const wit::Bytes enc = wit::encode_safetensors(ts, s.metadata());
  const wit::Safetensors back = wit::Safetensors::parse(enc, "re-encoded");
  check(back.tensors().size() == ts.size());
  for (size_t i = 0; i < ts.size(); i++) check(same(back.tensors()[i], ts[i]));
  check(back.metadata() == s.metadata());
  check(wit::state_root(back.tensors()) == wit::state_root(ts));
  check(wit::encode_safetensors(back.tensors(), back.metadata()) == enc);
  wit_fuzz::note('a');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise(data, size);
  if (size < 9) return 0;
  const uint8_t* last = nullptr;
  for (size_t i = size; i > 8; i--)
    if (data[i - 1] == '}') {
      last = data + i - 1;
      break;
    }
  if (!last) return 0;
  std::vector<uint8_t> copy(data, data + size);
  wit::put_le64(copy.data(), uint64_t(last - data) - 7);
  exercise(copy.data(), copy.size());
  return 0;
}
