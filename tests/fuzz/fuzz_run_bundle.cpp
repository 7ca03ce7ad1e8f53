// Fuzz target for run bundles and the board's judgement of them
// (RunBundle::decode, evaluate_run_bundle, docs/board.md): whatever the
// bytes, decoding either throws wit::Error or gives a bundle, and judging a
// bundle never throws and always gives one of the three statuses, with a
// reason unless certified; the entry renders to JSON and HTML.
//
// Inputs that start with the bundle magic are decoded as a .wbundle. Any
// other input is a member list in plain text, so the fuzzer reaches the
// checks without producing zstd or digests:
//   byte 0: flags (bit 0: write a fresh bundle.json over the members)
//   then members, each "\n=== NAME\n" followed by its bytes.
// Verdicts (outcome.h): the status judged (c certified, p pending, r
// rejected), d (a .wbundle that does not decode), e (empty input), u (a
// member name that is not UTF-8).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "wit/board/board.h"
#include "wit/run/bundle.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/run/run_bundle.h"

#include "outcome.h"

namespace {

void judge(const wit::RunBundle& b) {
  wit::RunEntry e;
  try {
    e = wit::evaluate_run_bundle(b);
  } catch (...) {
    std::abort();  // judging never throws
  }
  const std::string status = wit::status_name(e.status);
  if (status != "certified" && status != "pending" && status != "rejected") std::abort();
  if (status != "certified" && e.reason.empty()) std::abort();
  if (e.name.empty()) std::abort();
  (void)e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)wit::render_run_html(e);
  (void)wit::board_json({e}, 0.05);
  wit_fuzz::note(status[0]);  // c, p or r
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool init = (wit::init_crypto(), true);
  (void)init;
  const wit::ByteView in(data, size);
  if (size >= 8 && std::string(reinterpret_cast<const char*>(data), 8) == std::string(wit::kBundleMagic, 8)) {
    wit::RunBundle b;
    try {
      // A header may claim up to the 4 GiB a run bundle may hold; the fuzzer
      // stays under 64 MiB (fuzz_bundle covers the container itself).
      (void)wit::Bundle::decode(in, "fuzz.wbundle", uint64_t(64) << 20);
      b = wit::RunBundle::decode(in, "fuzz.wbundle");
    } catch (const wit::Error&) {
      wit_fuzz::note('d');  // not a bundle
      return 0;
    }
    b.path = "fuzz.wbundle";
    judge(b);
    return 0;
  }
  if (size == 0) return wit_fuzz::note('e'), 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  wit::RunBundle b;
  b.path = "fuzz";
  const std::string sep = "\n=== ";
  size_t pos = text.find(sep);
  while (pos != std::string::npos) {
    const size_t name_start = pos + sep.size();
    const size_t nl = text.find('\n', name_start);
    if (nl == std::string::npos) break;
    const std::string name = text.substr(name_start, nl - name_start);
    const size_t next = text.find(sep, nl + 1);
    b.files[name] = text.substr(nl + 1, next == std::string::npos ? std::string::npos : next - nl - 1);
    pos = next;
  }
  if (data[0] & 1) {
    try {
      b.files[wit::kRunBundleIndex] = b.index_json("fuzz");
    } catch (const std::exception&) {
      wit_fuzz::note('u');
      return 0;  // a member name that is not UTF-8 cannot be a JSON key (nor a name a bundle can hold)
    }
  }
  judge(b);
  return 0;
}
