// libFuzzer target for the text readers: the input is opened as a file with the
// jsonl, lines and fortune readers. Only wit::Error may escape them, and each
// jsonl record must equal what nlohmann's DOM parser gives for its line. The
// jsonl and lines readers' one-pass streaming (stream_text_records, with its
// simdjson document streams) must agree with open(): the same records when
// open() accepts the file, no stream when it refuses it; and reading it as a
// stream (stream_fd_records, stdin's way) gives open()'s records or its error.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/data/readers.h"

#include "outcome.h"

namespace {

// The input as a file: an in-memory file (memfd), rewritten for each input and
// opened by name, so the readers run exactly as they do on disk.
std::string input_file(const uint8_t* data, size_t size) {
  static int fd = memfd_create("fuzz_jsonl", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0) abort();
  size_t off = 0;
  while (off < size) {
    ssize_t w = pwrite(fd, data + off, size - off, off_t(off));
    if (w <= 0) abort();
    off += size_t(w);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

void check(bool ok) {
  if (!ok) abort();
}

// Line n (1-based) of the input, without its '\n'.
std::string_view line_at(std::string_view in, uint64_t n) {
  size_t b = 0;
  for (uint64_t i = 1; i < n; i++) b = in.find('\n', b) + 1;
  size_t e = in.find('\n', b);
  return in.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
}

// stream_text_records' records of the file in `parts` parts of `align`-byte
// pieces; false when it did not stream.
bool streamed(const wit::ReaderSpec& spec, const std::string& path, unsigned parts, uint64_t align,
              std::vector<std::string>& out) {
  std::vector<std::vector<std::string>> per(parts);
  uint64_t size = 0;
  const bool ok = wit::stream_text_records(spec, path, parts, align, [&](unsigned p, const wit::StreamChunk& c) {
    for (const wit::ByteView& r : *c.records) per[p].emplace_back(r.str());  // parts run at once: own vectors
  }, size);
  for (auto& v : per) out.insert(out.end(), v.begin(), v.end());
  return ok;
}

// Streaming agrees with open(): `want` is open()'s records, or null when it
// refused the file. Piece sizes from the input's first byte, so that chunk
// and part boundaries fall anywhere.
void check_stream(const wit::ReaderSpec& spec, const std::string& path, std::string_view in,
                  const std::vector<std::string>* want) {
  if (spec.kind != wit::ReaderKind::kJsonl && spec.kind != wit::ReaderKind::kLines) return;
  const uint64_t small = in.empty() ? 1 : 1 + uint8_t(in[0]) % 97;
  for (const auto& [parts, align] : {std::pair<unsigned, uint64_t>{1, uint64_t(1) << 20}, {2, small}}) {
    std::vector<std::string> got;
    const bool ok = streamed(spec, path, parts, align, got);
    if (!want) check(!ok);
    else if (!in.empty()) check(ok && got == *want);  // an empty file is not streamed
  }
}

// Reading the input as a stream (stream_fd_records, as stdin and pipes are
// read: once, in order, chunks of 16 pieces of a size from the input's last
// byte) agrees with open(): its records when open() accepts the input, else
// open()'s very error (message and hint: line and byte offset).
void check_pipe(const wit::ReaderSpec& spec, const std::string& path, std::string_view in,
                const std::vector<std::string>* want, const std::string& error, const std::string& hint) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) abort();
  const uint64_t align = in.empty() ? 1 : 1 + uint8_t(in.back()) % 61;
  std::vector<std::vector<std::string>> per(wit::stream_slots(2));
  std::vector<std::string> got;
  std::string got_error, got_hint;
  try {
    wit::stream_fd_records(
        spec, fd, path, 2, align,
        [&](unsigned slot, const wit::StreamChunk& c) {
          for (const wit::ByteView& r : *c.records) per[slot].emplace_back(r.str());  // own slot: no lock
        },
        [&](unsigned slot, const wit::StreamChunk&) {
          for (auto& r : per[slot]) got.push_back(std::move(r));
          per[slot].clear();
        });
  } catch (const wit::Error& e) {
    got_error = e.what();
    got_hint = e.hint();
  }
  ::close(fd);
  if (want) check(got_error.empty() && got == *want);
  else check(got_error == error && got_hint == hint);
}

void run(const wit::ReaderSpec& spec, const std::string& path, std::string_view in) {
  std::unique_ptr<wit::RecordSource> src;
  try {
    src = wit::RecordSource::open(spec, path);
  } catch (const wit::Error& e) {
    wit_fuzz::note('r');
    check_stream(spec, path, in, nullptr);
    check_pipe(spec, path, in, nullptr, e.what(), e.hint());
    return;  // malformed input, reported as it should be
  }
  std::vector<std::string> records;
  std::string scratch;
  uint64_t prev_line = 0;
  for (uint64_t i = 0; i < src->count(); i++) {
    std::string_view rec = src->record(i, scratch).str();
    records.emplace_back(rec);
    uint64_t line = src->line_of(i);
    check(line > prev_line);
    prev_line = line;
    switch (spec.kind) {
      case wit::ReaderKind::kJsonl: {
        std::string_view l = line_at(in, line);
        auto j = nlohmann::json::parse(l.begin(), l.end());
        check(j.at("text").get<std::string>() == rec);
        break;
      }
      case wit::ReaderKind::kLines:
        check(!rec.empty() && rec.find('\n') == std::string_view::npos);
        check(rec == line_at(in, line).substr(0, rec.size()));
        break;
      default:
        check(!rec.empty() && ("\n" + std::string(rec) + "\n").find("\n%\n") == std::string::npos);
        break;
    }
  }
  check_stream(spec, path, in, &records);
  check_pipe(spec, path, in, &records, "", "");
  wit_fuzz::note('a');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = input_file(data, size);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  wit::ReaderSpec spec;
  using K = wit::ReaderKind;
  for (K k : {K::kJsonl, K::kLines, K::kFortune}) {
    spec.kind = k;
    run(spec, path, in);
  }
  return 0;
}
