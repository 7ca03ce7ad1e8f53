// Fuzz target for witness log entries (decode_entry, docs/witness-log.md):
// every input is either rejected with a wit::Error or decodes to an entry
// whose encoding is exactly the input (the format has one encoding per
// entry), and whose JSON form (wit-log show) can be printed.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "wit/base/error.h"
#include "wit/run/runlog.h"
#include "wit/run/wlog.h"

#include "outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wit::ByteView in(data, size);
  wit::LogEntry e;
  try {
    e = wit::decode_entry(in, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  const wit::Bytes again = wit::encode_entry(e);
  if (again.size() != size || (size && std::memcmp(again.data(), data, size) != 0)) std::abort();
  const wit::Hash32 leaf = wit::entry_leaf(in);
  (void)wit::entry_json(e, e.genesis ? 0 : e.s.step, leaf, false).dump();
  (void)wit::entry_json(e, e.genesis ? 0 : e.s.step, leaf, true).dump();
  wit_fuzz::note('a');
  return 0;
}
