// Record readers on real temporary files: the exact records of each reader
// (CRLF, blank lines, escapes, nesting, windows, directory order), their error
// messages, the reader spec JSON, and record() from several threads.
#include <catch2/catch.hpp>

#include "skip.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <thread>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/data/readers.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

// A fresh directory (wit::TempDir) to write test files in.
struct FilesDir : TempDir {
  FilesDir() : TempDir("wit-readers") {}
  // Writes `content` to dir/rel (creating parent directories); returns the path.
  std::string write(const std::string& rel, const std::string& content) const {
    fs::path p = fs::path(path()) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
};

std::vector<std::string> all_records(const RecordSource& src) {
  std::vector<std::string> out;
  std::string scratch;
  for (uint64_t i = 0; i < src.count(); i++) out.emplace_back(src.record(i, scratch).str());
  return out;
}

std::vector<uint64_t> all_lines(const RecordSource& src) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < src.count(); i++) out.push_back(src.line_of(i));
  return out;
}

// True when record i is a view into the mapped file rather than a copy.
bool points_into_file(const RecordSource& src, uint64_t i) {
  std::string scratch;
  ByteView r = src.record(i, scratch);
  ByteView f = src.files().at(0).content->view();
  return r.data >= f.data && r.data + r.size <= f.data + f.size;
}

ReaderSpec spec_of(ReaderKind k) {
  ReaderSpec s;
  s.kind = k;
  return s;
}

ReaderSpec jsonl_spec(const std::string& field = "text") {
  ReaderSpec s = spec_of(ReaderKind::kJsonl);
  s.field = field;
  return s;
}

ReaderSpec tokens_spec(uint64_t seq_len, unsigned token_bytes = 2) {
  ReaderSpec s = spec_of(ReaderKind::kTokens);
  s.seq_len = seq_len;
  s.token_bytes = token_bytes;
  return s;
}

// The message and hint of the wit::Error that fn throws ("" if none).
template <class F>
std::pair<std::string, std::string> error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.what(), e.hint()};
  }
  return {"", ""};
}

using Strings = std::vector<std::string>;
using Lines = std::vector<uint64_t>;

}  // namespace

TEST_CASE("lines: CRLF, blank lines, no final newline", "[readers]") {
  FilesDir t;
  std::string f = t.write("a.txt", "alpha\r\nbeta\n\n\r\n  \ngamma\r\r\ndelta");
  auto src = RecordSource::open(spec_of(ReaderKind::kLines), f);
  CHECK(all_records(*src) == Strings{"alpha", "beta", "  ", "gamma\r", "delta"});
  CHECK(all_lines(*src) == Lines{1, 2, 5, 6, 7});
  for (uint64_t i = 0; i < src->count(); i++) CHECK(points_into_file(*src, i));
  REQUIRE(src->files().size() == 1);
  CHECK(src->files()[0].path == f);
  CHECK(src->files()[0].content->size() == 31);

  CHECK(RecordSource::open(spec_of(ReaderKind::kLines), t.write("e", ""))->count() == 0);
  CHECK(RecordSource::open(spec_of(ReaderKind::kLines), t.write("n", "\n\r\n\n"))->count() == 0);
  std::string nope = t.path() + "/nope";
  CHECK(error_of([&] { RecordSource::open(spec_of(ReaderKind::kLines), nope); }).first ==
        "cannot open: no such file or directory: " + nope);
}

TEST_CASE("lines and jsonl: a file split on all cores gives the records and line numbers of one pass", "[readers]") {
  // Over 2 MiB, so the readers cut it into one piece per core at line ends:
  // empty and blank lines, CRLF, a lone '\r', a long line, and no final
  // newline; the expected records come from a plain scan written here.
  FilesDir t;
  std::string text, jsonl;
  std::vector<std::string> want_lines, want_jsonl;
  std::vector<uint64_t> at_lines, at_jsonl;
  uint64_t line = 0;
  for (int i = 0; i < 60000; i++) {
    std::string body = "rec " + std::to_string(i) + std::string(size_t(i % 7 == 0 ? 300 : i % 23), 'x');
    const bool crlf = i % 5 == 0, empty = i % 13 == 0, last = i == 59999;
    if (crlf && i % 11 == 0) body += "\r";  // "\r\r\n": one '\r' stays in the record
    line++;
    text += body + (last ? "" : crlf ? "\r\n" : "\n");
    want_lines.push_back(body);
    at_lines.push_back(line);
    jsonl += "{\"text\":\"" + std::to_string(i) + "\"}" + std::string(size_t(35 + i % 10), ' ') +
             (last ? "" : crlf ? "\r\n" : "\n");
    want_jsonl.push_back(std::to_string(i));
    at_jsonl.push_back(line);
    if (empty && !last) {
      line++;
      text += "\n";
      jsonl += " \t\r\n";
    }
  }
  REQUIRE(text.size() > (size_t(2) << 20));
  auto lines = RecordSource::open(spec_of(ReaderKind::kLines), t.write("big.txt", text));
  CHECK(all_records(*lines) == want_lines);
  CHECK(all_lines(*lines) == at_lines);
  REQUIRE(jsonl.size() > (size_t(2) << 20));
  auto js = RecordSource::open(jsonl_spec(), t.write("big.jsonl", jsonl));
  CHECK(all_records(*js) == want_jsonl);
  CHECK(all_lines(*js) == at_jsonl);
}

TEST_CASE("fortune: separators, empty records, CRLF", "[readers]") {
  FilesDir t;
  std::string f = t.write("f",
                          "A\n%\nB1\nB2\n%\n%\n\n%\nC\r\nD\r\n%\n%%\n% \n%\n\n\nE\n");
  auto src = RecordSource::open(spec_of(ReaderKind::kFortune), f);
  CHECK(all_records(*src) == Strings{"A", "B1\nB2", "C\nD", "%%\n% ", "\n\nE"});
  CHECK(all_lines(*src) == Lines{1, 3, 9, 12, 15});
  CHECK(points_into_file(*src, 1));
  CHECK(!points_into_file(*src, 2));  // CRLF inside: rebuilt in scratch

  // One '\r' per line is stripped, on the last line of a record too.
  src = RecordSource::open(spec_of(ReaderKind::kFortune), t.write("g", "a\r\r\nb\r\r\n%\r\nc\r\n"));
  CHECK(all_records(*src) == Strings{"a\r\nb\r", "c"});
  CHECK(all_lines(*src) == Lines{1, 4});

  // No separator at all: the whole file is one record; a blank file has none.
  src = RecordSource::open(spec_of(ReaderKind::kFortune), t.write("h", "x\ny"));
  CHECK(all_records(*src) == Strings{"x\ny"});
  CHECK(RecordSource::open(spec_of(ReaderKind::kFortune), t.write("i", "\n%\n\n"))->count() == 0);
}

TEST_CASE("fortune: a real Debian fortune file", "[readers]") {
  const std::string f = "/usr/share/games/fortunes/computers";
  if (!fs::exists(f)) {
    WIT_SKIP(f << " not installed (apt-get install fortunes)");
  }
  auto src = RecordSource::open(spec_of(ReaderKind::kFortune), f);
  auto recs = all_records(*src);
  REQUIRE(recs.size() > 1000);
  CHECK(recs.front().rfind("!07/11 PDP a ni deppart m'I  !pleH", 0) == 0);
  CHECK(src->line_of(0) == 1);
  for (const std::string& r : recs) {
    CHECK(!r.empty());
    // No line of a record is a separator.
    CHECK(("\n" + r + "\n").find("\n%\n") == std::string::npos);
  }
  // strfile(1) counted the same records when it built the .dat index (its
  // header is big-endian: version, numstr, ...).
  std::ifstream dat(f + ".dat", std::ios::binary);
  unsigned char h[8];
  if (dat.read(reinterpret_cast<char*>(h), 8)) {
    uint32_t numstr = uint32_t(h[4]) << 24 | uint32_t(h[5]) << 16 | uint32_t(h[6]) << 8 | h[7];
    CHECK(recs.size() == numstr);
  }
}

TEST_CASE("jsonl: fields, escapes, blank lines", "[readers]") {
  FilesDir t;
  std::string f = t.write("d.jsonl",
                          "{\"text\":\"hello\"}\n"
                          " \t \n"
                          "{\"id\":1,\"text\":\"caf\\u00e9 \\ud83d\\ude00\\n\\\"q\\\" \\/\"}\n"
                          "{\"text\":\"\"}\r\n"
                          "\r\n"
                          "{\"meta\":{\"text\":1,\"a\":[{\"text\":2}]},"
                          "\"text\":\"nested ok\",\"n\":1e300}\r\n"
                          "\xef\xbb\xbf{\"text\":\"caf\xc3\xa9\"}");
  auto src = RecordSource::open(jsonl_spec(), f);
  CHECK(all_records(*src) ==
        Strings{"hello", "caf\xc3\xa9 \xf0\x9f\x98\x80\n\"q\" /", "", "nested ok", "caf\xc3\xa9"});
  CHECK(all_lines(*src) == Lines{1, 3, 4, 6, 7});
  CHECK(points_into_file(*src, 0));
  CHECK(!points_into_file(*src, 1));  // escapes: decoded into scratch
  CHECK(points_into_file(*src, 3));

  std::string g = t.write("e.jsonl", "{\"text\":1,\"body\":\"b1\"}\n{\"body\":\"b\\u0032\"}\n");
  CHECK(all_records(*RecordSource::open(jsonl_spec("body"), g)) == Strings{"b1", "b2"});
}

TEST_CASE("jsonl: errors name the line", "[readers]") {
  FilesDir t;
  auto err = [&](const std::string& content, const std::string& field = "text") {
    std::string f = t.write("x.jsonl", content);
    return error_of([&] { RecordSource::open(jsonl_spec(field), f); });
  };
  std::string w = t.path() + "/x.jsonl";
  CHECK(err("{\"text\":\"a\"}\n\n{\"txt\":\"b\"}\n").first == "missing field 'text': " + w + ":3 at byte 14");
  CHECK(err("{\"text\":\"a\"}\n{\"text\":7}\n").first ==
        "field 'text' is a number, not a string: " + w + ":2 at byte 13");
  CHECK(err("{\"text\":null}\n").first == "field 'text' is a null, not a string: " + w + ":1 at byte 0");
  CHECK(err("{\"text\":[\"a\"]}\n").first == "field 'text' is an array, not a string: " + w + ":1 at byte 0");
  CHECK(err("{\"text\":{}}\n").first == "field 'text' is an object, not a string: " + w + ":1 at byte 0");
  CHECK(err("[{\"text\":\"a\"}]\n").first == "not a json object: " + w + ":1 at byte 0");
  CHECK(err("\"text\"\n").first == "not a json object: " + w + ":1 at byte 0");
  CHECK(err("{\"text\":\"a\",\"text\":\"b\"}\n").first == "duplicate field 'text': " + w + ":1 at byte 0");
  CHECK(err("{\"text\":\"a\"}\n{\"body\":1}\n", "body").first ==
        "missing field 'body': " + w + ":1 at byte 0");

  auto bad = err("{\"text\":\"a\"}\n{\"text\":\"a\",}\n");
  CHECK(bad.first.rfind("invalid json: syntax error", 0) == 0);
  CHECK(bad.first.find("(column 13)") != std::string::npos);
  CHECK(bad.first.size() - bad.first.rfind(": " + w + ":2 at byte 13") == w.size() + 15);
  CHECK(bad.second.empty());

  // Raw control bytes and invalid UTF-8 are errors, and never reach the message.
  for (std::string line : {"{\"text\":\"a\tb\"}", "{\"text\":\"\xff\"}", "{\"text\":\"\\ud800\"}",
                           "{\"text\":\"a\"} x", "{\"text\":1e400}"}) {
    bad = err(line + "\n");
    INFO(line);
    CHECK(bad.first.rfind("invalid json: ", 0) == 0);
    CHECK(bad.first.find(": " + w + ":1") != std::string::npos);
    for (char c : bad.first) CHECK((c >= 0x20 && c < 0x7f));
  }

  // A last line cut short, without its newline, is an error with a hint.
  bad = err("{\"text\":\"a\"}\n{\"text\":\"b");
  CHECK(bad.first.rfind("invalid json: ", 0) == 0);
  CHECK(bad.first.find(": " + w + ":2") != std::string::npos);
  CHECK(bad.second.find("truncated") != std::string::npos);
  // A complete last line without its newline is fine.
  CHECK(all_records(*RecordSource::open(jsonl_spec(), t.write("y", "{\"text\":\"a\"}"))) ==
        Strings{"a"});
}

TEST_CASE("jsonl: the first bad line is reported, whatever the threads", "[readers]") {
  FilesDir t;
  std::string content;
  for (int i = 1; i <= 20000; i++) {
    if (i == 17001) content += "{\"text\":\"x\"\n";
    else if (i == 9001) content += "{\"nottext\":\"x\"}\n";
    else if (i == 12001) content += "{\"text\":false}\n";
    else content += "{\"text\":\"record " + std::to_string(i) + "\"}\n";
  }
  std::string f = t.write("big.jsonl", content);
  for (int round = 0; round < 5; round++)
    CHECK(error_of([&] { RecordSource::open(jsonl_spec(), f); }).first ==
          "missing field 'text': " + f + ":9001 at byte " + std::to_string(content.find("{\"nottext\"")));
}

TEST_CASE("tokens: windows, partial window, odd size", "[readers]") {
  FilesDir t;
  std::string data;
  for (int i = 0; i < 7; i++) data += {char(i), char(0x10 + i)};
  std::string f = t.write("t.bin", data);
  auto src = RecordSource::open(tokens_spec(3), f);
  CHECK(all_records(*src) == Strings{data.substr(0, 6), data.substr(6, 6)});  // token 6 dropped
  CHECK(src->line_of(1) == 0);
  // Streamed with pread, not mapped: fixed-size records, bytes on request.
  REQUIRE(src->files().size() == 1);
  CHECK(src->files()[0].content == nullptr);
  CHECK(src->files()[0].size == 14);
  CHECK(src->fixed_size() == 6);
  std::string tail(2, '\0');
  src->read_bytes(12, 2, reinterpret_cast<uint8_t*>(&tail[0]));
  CHECK(tail == data.substr(12, 2));
  {
    // A file cut short after it was opened is refused, not read as zeros.
    const std::string g = t.write("shrinks.bin", data);
    auto s = RecordSource::open(tokens_spec(3), g);
    std::filesystem::resize_file(g, 4);
    std::string scratch;
    CHECK(error_of([&] { s->record(1, scratch); }).first ==
          "file changed while reading (it is shorter than when opened): " + g);
  }
  CHECK(RecordSource::open(tokens_spec(7), f)->count() == 1);
  CHECK(RecordSource::open(tokens_spec(8), f)->count() == 0);
  CHECK(RecordSource::open(tokens_spec(1), f)->count() == 7);

  std::string odd = t.write("odd.bin", data + "x");
  CHECK(error_of([&] { RecordSource::open(tokens_spec(3), odd); }).first ==
        "token file has odd size: " + odd + " at byte 14");
  CHECK(error_of([&] { RecordSource::open(tokens_spec(0), f); }).first ==
        "invalid reader spec: --seq-len (seq_len) must be between 1 and 4294967296 for the tokens reader");
}

TEST_CASE("tokens: uint32 ids (token_bytes 4), windows of 4 * seq_len bytes, decoded little-endian", "[readers]") {
  FilesDir t;
  // Ids past 65535 (a vocabulary of 70,000 and 2^32 - 1), little-endian.
  const std::vector<uint32_t> ids{0, 1, 65535, 65536, 69999, 0x01020304, 0xFFFFFFFFu};
  std::string data;
  for (uint32_t id : ids)
    for (int b = 0; b < 4; b++) data += char((id >> (8 * b)) & 0xFF);
  const std::string f = t.write("t32.bin", data);
  auto src = RecordSource::open(tokens_spec(3, 4), f);
  CHECK(src->fixed_size() == 12);
  CHECK(all_records(*src) == Strings{data.substr(0, 12), data.substr(12, 12)});  // id 6 is a partial window
  std::string scratch;
  const ByteView r1 = src->record(1, scratch);
  REQUIRE(token_count(r1, 4) == 3);
  CHECK(token_id(r1, 4, 0) == 65536);
  CHECK(token_id(r1, 4, 1) == 69999);
  CHECK(token_id(r1, 4, 2) == 0x01020304u);
  CHECK(token_id(ByteView(data), 4, 6) == 0xFFFFFFFFu);
  // The same bytes as uint16 ids: twice the tokens, the low and high halves.
  CHECK(token_count(r1, 2) == 6);
  CHECK(token_id(r1, 2, 0) == 0);  // 65536 = 0x0001'0000
  CHECK(token_id(r1, 2, 1) == 1);
  CHECK(token_id(r1, 2, 2) == 0x116F);  // 69999 = 0x0001'116F
  CHECK(token_id(r1, 2, 4) == 0x0304);
  // The first id not below a vocabulary, and none.
  const TokenAt at = first_token_at_least(ByteView(data), 4, 70000);
  CHECK(at.position == 5);
  CHECK(at.id == 0x01020304u);
  CHECK(first_token_at_least(ByteView(data).sub(0, 20), 4, 70000).position == 5);  // count: none found
  CHECK(first_token_at_least(ByteView(data), 4, uint64_t(1) << 32).position == 7);

  // A size that is not a multiple of 4: the offset of the cut id.
  const std::string cut = t.write("cut.bin", data + "xy");
  auto e = error_of([&] { RecordSource::open(tokens_spec(3, 4), cut); });
  CHECK(e.first == "token file size 30 is not a multiple of 4 (uint32 ids, --token-bytes 4): " + cut + " at byte 28");
  CHECK(!e.second.empty());
  // The same file is fine with 2-byte ids (30 is even).
  CHECK(RecordSource::open(tokens_spec(3, 2), cut)->count() == 5);
  CHECK(error_of([&] { tokens_spec(3, 3).validate(); }).first ==
        "invalid reader spec: --token-bytes (token_bytes) must be 2 or 4");
  ReaderSpec lines = spec_of(ReaderKind::kLines);
  lines.token_bytes = 4;
  CHECK(error_of([&] { lines.validate(); }).first ==
        "invalid reader spec: --token-bytes applies to the tokens reader only");
}

TEST_CASE("files: nested directories in bytewise order", "[readers]") {
  FilesDir t;
  std::string d = t.path() + "/data";
  t.write("data/b.txt", "B");
  t.write("data/a/z", "Z");
  t.write("data/a/b/c", "C\n");
  t.write("data/a.txt", "A.TXT");
  t.write("data/A", "upper");
  t.write("data/.hidden", "h");
  t.write("data/empty", "");
  t.write("data/\xc3\xa9", "e-acute");
  t.write("outside", "not in data");
  fs::create_symlink(t.path() + "/outside", d + "/link");
  fs::create_directory_symlink(t.path(), d + "/loop");

  auto src = RecordSource::open(spec_of(ReaderKind::kFiles), d);
  CHECK(all_records(*src) == Strings{"h", "upper", "A.TXT", "C\n", "Z", "B", "", "e-acute"});
  std::vector<std::string> paths;
  for (const SourceFile& sf : src->files()) paths.push_back(sf.path);
  CHECK(paths == Strings{d + "/.hidden", d + "/A", d + "/a.txt", d + "/a/b/c", d + "/a/z",
                         d + "/b.txt", d + "/empty", d + "/\xc3\xa9"});
  CHECK(src->line_of(0) == 0);

  // A trailing slash does not double the separator.
  CHECK(RecordSource::open(spec_of(ReaderKind::kFiles), d + "/")->files()[1].path == d + "/A");
  CHECK(error_of([&] { RecordSource::open(spec_of(ReaderKind::kFiles), d + "/b.txt"); }).first ==
        "the files reader needs a directory: " + d + "/b.txt");
  CHECK(error_of([&] { RecordSource::open(spec_of(ReaderKind::kFiles), "-"); }).first ==
        "the files reader needs a directory: stdin");
  fs::create_directory(t.path() + "/void");
  CHECK(RecordSource::open(spec_of(ReaderKind::kFiles), t.path() + "/void")->count() == 0);
}

TEST_CASE("record() from two threads gives the same bytes", "[readers]") {
  FilesDir t;
  std::string jl, ft;
  for (int i = 0; i < 5000; i++) {
    jl += "{\"text\":\"r" + std::to_string(i) + (i % 3 ? "\\n\\u00e9\"}\n" : "\"}\n");
    ft += "line " + std::to_string(i) + "\r\nmore\r\n%\r\n";
  }
  for (auto& [spec, path] : {std::pair{jsonl_spec(), t.write("a.jsonl", jl)},
                             std::pair{spec_of(ReaderKind::kFortune), t.write("b.txt", ft)}}) {
    auto src = RecordSource::open(spec, path);
    REQUIRE(src->count() == 5000);
    Strings serial = all_records(*src), r1, r2;
    std::thread a([&] { r1 = all_records(*src); });
    std::thread b([&] { r2 = all_records(*src); });
    a.join();
    b.join();
    CHECK(r1 == serial);
    CHECK(r2 == serial);
  }
}

TEST_CASE("reader spec JSON", "[readers]") {
  CHECK(jsonl_spec("body").to_json().dump() == R"({"field":"body","kind":"jsonl"})");
  CHECK(tokens_spec(1024).to_json().dump() == R"({"kind":"tokens","seq_len":1024})");
  CHECK(spec_of(ReaderKind::kLines).to_json().dump() == R"({"kind":"lines"})");
  CHECK(spec_of(ReaderKind::kFortune).to_json().dump() == R"({"kind":"fortune"})");
  CHECK(spec_of(ReaderKind::kFiles).to_json().dump() == R"({"kind":"files"})");
  // uint32 ids are written; the default uint16 ids are not, so a uint16 spec
  // (and every commitment and run id over one) is what it always was.
  CHECK(tokens_spec(1024, 4).to_json().dump() == R"({"kind":"tokens","seq_len":1024,"token_bytes":4})");
  CHECK(tokens_spec(1024, 2).to_json().dump() == R"({"kind":"tokens","seq_len":1024})");
  CHECK(ReaderSpec::from_json(nlohmann::json::parse(R"({"kind":"tokens","seq_len":8})"), "w").token_bytes == 2);

  for (ReaderSpec s : {jsonl_spec("body"), tokens_spec(7), tokens_spec(7, 4), spec_of(ReaderKind::kFiles)}) {
    ReaderSpec r = ReaderSpec::from_json(s.to_json(), "c.json");
    CHECK(r.to_json() == s.to_json());
  }
  CHECK(ReaderSpec::from_json(nlohmann::json::parse(R"({"kind":"jsonl"})"), "w").field == "text");

  auto err = [](const char* text) {
    return error_of([&] { ReaderSpec::from_json(nlohmann::json::parse(text), "c.json"); }).first;
  };
  CHECK(err("[]") == "invalid reader spec: not a json object: c.json");
  CHECK(err("{}") == "invalid reader spec: missing 'kind': c.json");
  CHECK(err(R"({"kind":3})") == "invalid reader spec: 'kind' is not a string: c.json");
  CHECK(err(R"({"kind":"csv"})") == "invalid reader spec: unknown kind 'csv': c.json");
  CHECK(err(R"({"kind":"lines","field":"text"})") ==
        "invalid reader spec: unexpected key 'field' for reader 'lines': c.json");
  CHECK(err(R"({"kind":"tokens"})") == "invalid reader spec: missing 'seq_len': c.json");
  CHECK(err(R"({"kind":"tokens","seq_len":-4})") ==
        "invalid reader spec: --seq-len (seq_len) must be between 1 and 4294967296 for the tokens reader: "
        "c.json");
  CHECK(err(R"({"kind":"tokens","seq_len":4.5})") ==
        "invalid reader spec: 'seq_len' is not an integer: c.json");
  // One spelling: the default width is never written, so "token_bytes": 2 is refused too.
  for (const char* bad : {R"({"kind":"tokens","seq_len":4,"token_bytes":2})", R"({"kind":"tokens","seq_len":4,"token_bytes":8})",
                          R"({"kind":"tokens","seq_len":4,"token_bytes":4.0})", R"({"kind":"tokens","seq_len":4,"token_bytes":"4"})"})
    CHECK(err(bad) == "invalid reader spec: 'token_bytes' must be 4 (uint32 ids); uint16 ids are the default and leave it "
                      "out: c.json");
  CHECK(err(R"({"kind":"lines","token_bytes":4})") ==
        "invalid reader spec: unexpected key 'token_bytes' for reader 'lines': c.json");
  CHECK(err(R"({"kind":"jsonl","field":""})") ==
        "invalid reader spec: jsonl field name is empty: c.json");
  CHECK(err(R"({"kind":"jsonl","field":1})") ==
        "invalid reader spec: 'field' is not a string: c.json");

  CHECK(ReaderSpec::parse_kind("fortune") == ReaderKind::kFortune);
  CHECK(std::string(ReaderSpec::kind_name(ReaderKind::kTokens)) == "tokens");
  auto pk = error_of([] { ReaderSpec::parse_kind("csv"); });
  CHECK(pk.first == "unknown reader kind 'csv'");
  CHECK(!pk.second.empty());
  CHECK_NOTHROW(jsonl_spec().validate());
  CHECK_THROWS_AS(tokens_spec(0).validate(), Error);
}

namespace {

// Sets FileBytes' read tuning for one test and restores the defaults after.
struct ReadTuning {
  ReadTuning(uint64_t chunk, uint64_t min_read, bool force) { FileBytes::set_tuning(chunk, min_read, force); }
  ~ReadTuning() { FileBytes::reset_tuning(); }
};

struct Seen {
  std::vector<std::string> records;
  std::vector<uint64_t> lines;
  bool read = false;
  bool operator==(const Seen& o) const { return records == o.records && lines == o.lines; }
};

Seen seen(const ReaderSpec& spec, const std::string& path) {
  auto src = RecordSource::open(spec, path);
  Seen s{all_records(*src), all_lines(*src), src->files().at(0).content->was_read()};
  for (uint64_t i = 0; i < src->count(); i++)
    if (!points_into_file(*src, i) && spec.kind == ReaderKind::kLines) s.records.push_back("<copied>");
  return s;
}

}  // namespace

TEST_CASE("text readers: a file read with pread in chunks gives the records of the mapped file", "[readers]") {
  // Chunk sizes down to one byte, so every record, CRLF pair, escape and
  // "%" separator is cut by some chunk boundary; lines longer than a chunk;
  // no final newline; empty lines before the only record.
  FilesDir t;
  const std::string long_line(5000, 'L');
  const std::vector<std::pair<ReaderSpec, std::string>> cases = {
      {spec_of(ReaderKind::kLines), "a\r\nbb\n\n\r\nccc\r\r\n" + long_line + "\nlast"},
      {spec_of(ReaderKind::kLines), "\n\r\nx"},
      {spec_of(ReaderKind::kLines), long_line + "\r\n" + long_line},
      {spec_of(ReaderKind::kFortune), "one\r\ntwo\r\n%\r\n%\n\n%\nthree\n" + long_line + "\n%\nfour"},
      {jsonl_spec(), "{\"text\":\"a\\\"b\\u00e9\\ud83d\\ude00\"}\r\n\n{\"id\":1,\"text\":\"" + long_line +
                         "\"}\n{\"text\":\"caf\xc3\xa9\"}"},
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const std::string f = t.write("in" + std::to_string(k), cases[k].second);
    const Seen mapped = seen(cases[k].first, f);
    CHECK(!mapped.read);  // small files are mapped by default
    REQUIRE(!mapped.records.empty());
    for (uint64_t chunk : {1, 2, 3, 7, 64, 4096, 1 << 20}) {
      ReadTuning tune(chunk, 0, true);
      INFO("case " << k << ", chunk " << chunk);
      const Seen read = seen(cases[k].first, f);
      CHECK(read.read);
      CHECK(read == mapped);
    }
  }
  // An empty file has no records either way (and is never read).
  ReadTuning tune(3, 0, true);
  CHECK(seen(spec_of(ReaderKind::kLines), t.write("empty", "")).records.empty());
}

TEST_CASE("text readers: a large file read on all threads in chunks equals a plain scan", "[readers]") {
  // Over twice the 4 MiB a thread reads at least, so several threads read it.
  FilesDir t;
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; text.size() < (size_t(9) << 20); i++) {
    std::string body = "line " + std::to_string(i) + std::string(size_t(i % 97), 'y');
    text += body + (i % 3 ? "\n" : "\r\n");
    want.push_back(body);
  }
  const std::string f = t.write("big.txt", text);
  for (uint64_t chunk : {uint64_t(4093), uint64_t(1) << 20}) {
    ReadTuning tune(chunk, 0, true);
    auto src = RecordSource::open(spec_of(ReaderKind::kLines), f);
    CHECK(src->files().at(0).content->was_read());
    CHECK(src->files().at(0).content->view().str() == text);
    CHECK(all_records(*src) == want);
  }
}

TEST_CASE("text readers: stdin, special files and missing files keep their behaviour when reading is forced",
          "[readers]") {
  FilesDir t;
  ReadTuning tune(7, 0, true);
  const std::string nope = t.path() + "/nope";
  CHECK(error_of([&] { RecordSource::open(spec_of(ReaderKind::kLines), nope); }).first ==
        "cannot open: no such file or directory: " + nope);
  CHECK(error_of([&] { RecordSource::open(spec_of(ReaderKind::kLines), t.path()); }).first ==
        "is a directory: " + t.path());
  auto null_dev = RecordSource::open(spec_of(ReaderKind::kLines), "/dev/null");
  CHECK(null_dev->count() == 0);
  CHECK(null_dev->files().at(0).content->was_read());  // a device is read to its end, as a pipe
}

TEST_CASE("text and token readers: a pipe (a fifo, stdin) gives the records of the same bytes in a file",
          "[readers]") {
  // Pipes are read to their end into memory that grows without copying (from
  // 64 MiB, doubling): one input past that, so it grows.
  FilesDir t;
  std::string big;
  for (int i = 0; big.size() < (size_t(66) << 20); i++) big += "{\"text\":\"record " + std::to_string(i) + "\"}\n";
  const std::vector<std::pair<ReaderSpec, std::string>> cases = {
      {spec_of(ReaderKind::kLines), "a\r\nbb\n\nlast"},
      {spec_of(ReaderKind::kFortune), "one\n%\ntwo\r\n"},
      {jsonl_spec(), "{\"text\":\"caf\xc3\xa9\"}\n\n{\"text\":\"x\\u00e9\"}"},
      {tokens_spec(4), std::string("\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00", 10)},
      {jsonl_spec(), big},
  };
  // feed(content, fd): writes content into the pipe's write end and closes it.
  auto feed = [](const std::string& content, int fd) {
    for (size_t at = 0; at < content.size();) {
      const ssize_t w = ::write(fd, content.data() + at, content.size() - at);
      if (w <= 0) break;
      at += size_t(w);
    }
    ::close(fd);
  };
  for (size_t k = 0; k < cases.size(); k++) {
    INFO("case " << k);
    const std::string f = t.write("in" + std::to_string(k), cases[k].second);
    const auto want = all_records(*RecordSource::open(cases[k].first, f));
    REQUIRE(!want.empty());
    // A fifo named on the command line (as bash's <(...) gives).
    const std::string fifo = t.path() + "/fifo" + std::to_string(k);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::thread writer([&] { feed(cases[k].second, ::open(fifo.c_str(), O_WRONLY)); });
    auto src = RecordSource::open(cases[k].first, fifo);
    writer.join();
    CHECK(src->files().at(0).content->was_read());
    CHECK(src->files().at(0).content->size() == cases[k].second.size());
    CHECK(all_records(*src) == want);
    // stdin: a pipe on fd 0 for the call.
    int p[2];
    REQUIRE(::pipe(p) == 0);
    const int saved = ::dup(0);
    ::dup2(p[0], 0);
    ::close(p[0]);
    std::thread in_writer([&] { feed(cases[k].second, p[1]); });
    std::vector<std::string> got;
    try {
      got = all_records(*RecordSource::open(cases[k].first, "-"));
    } catch (...) {
      in_writer.join();
      ::dup2(saved, 0);
      ::close(saved);
      throw;
    }
    in_writer.join();
    ::dup2(saved, 0);
    ::close(saved);
    CHECK(got == want);
  }
}

TEST_CASE("text readers: a file read (not mapped) is still an input no output may replace", "[readers][safety]") {
  FilesDir t;
  const std::string f = t.write("in.txt", "precious\n");
  ReadTuning tune(4, 0, true);
  auto src = RecordSource::open(spec_of(ReaderKind::kLines), f);
  REQUIRE(src->files().at(0).content->was_read());
  note_output(f);
  CHECK_THROWS_WITH(write_file_atomic(f, "lost"), Catch::Contains("output is one of the inputs"));
  CHECK(all_records(*src) == Strings{"precious"});
  std::ifstream in(f, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "precious\n");
}

namespace {

// What stream_text_records saw: the records of all parts in part order, and
// the fresh bytes reassembled by offset (checked to be align-aligned).
struct Streamed {
  bool ok = false;
  std::vector<std::string> records;
  std::string bytes;
  bool aligned = true;
};

Streamed stream(const ReaderSpec& spec, const std::string& path, unsigned parts, uint64_t align) {
  std::vector<std::vector<std::string>> per(parts);
  std::vector<std::pair<uint64_t, std::string>> fresh;
  std::mutex mu;
  Streamed s;
  uint64_t size = 0;
  s.ok = stream_text_records(spec, path, parts, align, [&](unsigned p, const StreamChunk& c) {
    std::lock_guard<std::mutex> g(mu);
    REQUIRE(p < parts);
    for (const ByteView& r : *c.records) per[p].emplace_back(r.str());
    if (c.offset % align != 0) s.aligned = false;
    fresh.emplace_back(c.offset, std::string(c.fresh.str()));
  }, size);
  for (auto& v : per) s.records.insert(s.records.end(), v.begin(), v.end());
  std::sort(fresh.begin(), fresh.end());
  for (auto& [off, b] : fresh) {
    if (off != s.bytes.size()) s.aligned = false;  // a gap or an overlap
    s.bytes += b;
  }
  if (s.bytes.size() != size) s.aligned = false;
  return s;
}

}  // namespace

TEST_CASE("streamed text records are open()'s records at any piece size and part count", "[readers]") {
  // Pieces down to one byte and up to five parts, so every line, CRLF pair,
  // escape and part boundary falls inside or at the edge of some chunk; lines
  // longer than a chunk and than a part; no final newline; blank lines first.
  FilesDir t;
  const std::string long_line(5000, 'L');
  const std::vector<std::pair<ReaderSpec, std::string>> cases = {
      {spec_of(ReaderKind::kLines), "a\r\nbb\n\n\r\nccc\r\r\n" + long_line + "\nlast"},
      {spec_of(ReaderKind::kLines), "\n\r\nx"},
      {spec_of(ReaderKind::kLines), "x\n"},
      {spec_of(ReaderKind::kLines), long_line + "\r\n" + long_line},
      {jsonl_spec(), "{\"text\":\"a\\\"b\\u00e9\\ud83d\\ude00\"}\r\n\n  \t\r\n{\"id\":1,\"text\":\"" + long_line +
                         "\"}\n{\"text\":\"caf\xc3\xa9\"}"},
      {jsonl_spec(), "{\"text\":\"x\"}\n{\"text\" : \"x\", \"b\":[1,{\"text\":2}]}\n{\"a\":\"text\",\"text\":\"\"}\n"},
      {jsonl_spec("f"), "{\"text\":\"no\",\"f\":\"\\/\\n\\t\"}\n{\"f\":\"same\",\"g\":\"same\"}\r\n"},
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const std::string f = t.write("s" + std::to_string(k), cases[k].second);
    const auto want = all_records(*RecordSource::open(cases[k].first, f));
    REQUIRE(!want.empty());
    for (uint64_t align : {1, 2, 3, 7, 64, 4096, 1 << 20})
      for (unsigned parts : {1u, 2u, 3u, 5u}) {
        INFO("case " << k << ", align " << align << ", parts " << parts);
        const Streamed s = stream(cases[k].first, f, parts, align);
        REQUIRE(s.ok);
        CHECK(s.records == want);
        CHECK(s.aligned);
        CHECK(s.bytes == cases[k].second);
      }
  }
}

TEST_CASE("streamed jsonl records are open()'s where simdjson's document stream and the lines disagree",
          "[readers]") {
  // The streamed pass parses many lines per simdjson document stream; every
  // line the stream does not match one document for one line (or that
  // simdjson refuses and nlohmann accepts) is decided alone. Each case has
  // ordinary lines before and after the odd ones, so the stream restarts.
  FilesDir t;
  const std::string ok = "{\"id\":7,\"text\":\"plain\"}\n";
  std::string many_odd;  // more odd lines than the stream restarts for
  for (int i = 0; i < 40; i++)
    many_odd += ok + "\xef\xbb\xbf{\"text\":\"bom " + std::to_string(i) + "\"}\n{\"text\":\"big\",\"n\":1" +
                std::string(30, '0') + "}\n";
  const std::vector<std::string> cases = {
      // simdjson refuses, nlohmann accepts: a big integer, deep nesting, a BOM.
      ok + "{\"text\":\"x\",\"n\":123456789012345678901234567890}\n" + ok,
      ok + "{\"text\":\"deep\",\"a\":" + std::string(1500, '[') + std::string(1500, ']') + "}\n" + ok,
      ok + "\xef\xbb\xbf{\"text\":\"bom\"}\n" + ok,
      many_odd,
      // Blank lines and blanks around the object; CRLF; escapes and
      // surrogate pairs between ordinary lines; the field nested too.
      ok + "   \t\r\n\n  {\"text\" : \"a b\" }  \t\r\n\r\n" + ok,
      ok + "{\"text\":\"\\ud83d\\ude00\\u00e9\\\"\"}\n{\"text\":\"caf\xc3\xa9\"}\n" + ok,
      ok + "{\"x\":{\"text\":\"inner\"},\"text\":\"outer\"}\n{\"a\":\"text\",\"text\":\"text\"}\n" + ok,
      // The key far into the line, after near misses ("tex, "\"text\"").
      ok + "{\"meta\":\"" + std::string(70, 'm') + " \\\"tex \\\"text\\\"\",\"text\":\"far\"}\n{\"t\":1,\"text\":\"x\"}\n",
      // No newline at the end; a last line of blanks only.
      ok + "{\"text\":\"last\"}",
      ok + ok + "  ",
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const std::string f = t.write("m" + std::to_string(k), cases[k]);
    const auto want = all_records(*RecordSource::open(jsonl_spec(), f));
    REQUIRE(!want.empty());
    for (uint64_t align : {1, 7, 64, 4096, 1 << 20})
      for (unsigned parts : {1u, 2u, 3u}) {
        INFO("case " << k << ", align " << align << ", parts " << parts);
        const Streamed s = stream(jsonl_spec(), f, parts, align);
        REQUIRE(s.ok);
        CHECK(s.records == want);
      }
  }
  // Runs of lines longer than a stream's segment (256 KiB), cut by lines
  // with surrogate escapes (decided alone) and lines with other escapes and
  // an escaped backslash before "ud83d" (no surrogate: streamed).
  std::string runs;
  for (int i = 0; i < 30000; i++) {
    runs += "{\"id\":" + std::to_string(i) + ",\"text\":\"r" + std::to_string(i * 7919 % 1000) + "\"}\n";
    if (i % 997 == 0) runs += "{\"text\":\"\\ud83d\\ude00 " + std::to_string(i) + "\"}\n";
    if (i % 1009 == 0) runs += "{\"text\":\"\\\\ud83d\\n\\u00e9\"}\n";
    if (i % 4999 == 0) runs += "{\"text\":\"\\ud83d\\ude00\"}\n{\"text\":\"\\uD83D\\uDE00\"}\n";
  }
  {
    const std::string f = t.write("runs", runs);
    const auto want = all_records(*RecordSource::open(jsonl_spec(), f));
    REQUIRE(want.size() > 30000);
    for (uint64_t align : {4096, 1 << 20})
      for (unsigned parts : {1u, 2u}) {
        INFO("runs, align " << align << ", parts " << parts);
        const Streamed s = stream(jsonl_spec(), f, parts, align);
        REQUIRE(s.ok);
        CHECK(s.records == want);
      }
  }
  // Lines around the stream's batch size: one shorter, one as long, one
  // longer (parsed alone), between ordinary lines.
  std::string big;
  for (int64_t d : {-1, 0, 1}) {
    const uint64_t len = uint64_t(int64_t(kJsonlStreamBatch) + d);
    big += ok + "{\"text\":\"" + std::string(len - 11, 'b') + "\"}\n";
    REQUIRE(big.size() - big.rfind('{') == len + 1);
  }
  big += ok;
  const std::string f = t.write("big", big);
  const auto want = all_records(*RecordSource::open(jsonl_spec(), f));
  REQUIRE(want.size() == 7);
  for (uint64_t align : {4096, 1 << 20, 3 << 20})
    for (unsigned parts : {1u, 2u}) {
      INFO("batch-size lines, align " << align << ", parts " << parts);
      const Streamed s = stream(jsonl_spec(), f, parts, align);
      REQUIRE(s.ok);
      CHECK(s.records == want);
    }
}

TEST_CASE("a jsonl file with one line that is not one object is not streamed", "[readers]") {
  // Lines a document stream would split other than at the newlines: each
  // among ordinary lines, and open() refuses each.
  FilesDir t;
  std::string ok;
  for (int i = 0; i < 50; i++) ok += "{\"text\":\"line " + std::to_string(i) + "\"}\n";
  const std::vector<std::string> odd = {
      "{\"text\":\"a\"}{\"text\":\"b\"}",   // two objects on one line
      "{\"text\":\"a\"} {\"text\":\"b\"}",  // ... with a blank between
      "{\"text\":\n\"a\"}",                 // one object on two lines
      "{\"text\":\"a\",\n\"b\":1}",
      "{\"text\":\"a\n\"}",                 // a newline in a string
      "1", "[{\"text\":\"a\"}]", "\"text\"", "null", "{\"text\":\"a\"}1",
      "{\"text\":\"a\"} x", "{\"text\":\"a\"},", "{\"text\":\"a\"}}", "{\"text\":\"a\"",
      "{\"text\":\"a\"}\x0c", "{\"text\":tru}", "{\"text\":\"a\",\"n\":truex}", "{\"text\":\"\xff\"}",
      "{\"text\":\"\\ud800\"}", "{\"text\":1}", "{\"n\":1}",
  };
  for (size_t k = 0; k < odd.size(); k++)
    for (const std::string& content : {ok + odd[k] + "\n" + ok, ok + odd[k], odd[k] + "\n" + ok}) {
      const std::string f = t.write("o" + std::to_string(k), content);
      INFO("case " << k << ": " << content);
      CHECK_THROWS_AS(RecordSource::open(jsonl_spec(), f), Error);
      for (uint64_t align : {3, 64, 1 << 20})
        for (unsigned parts : {1u, 2u}) {
          INFO("align " << align << ", parts " << parts);
          CHECK(!stream(jsonl_spec(), f, parts, align).ok);
        }
    }
}

TEST_CASE("a text file that open() refuses, or that is not a regular file, is not streamed", "[readers]") {
  // The caller then opens it the ordinary way, which words the error.
  FilesDir t;
  auto refused = [&](const ReaderSpec& spec, const std::string& path) {
    for (unsigned parts : {1u, 2u})
      for (uint64_t align : {uint64_t(5), uint64_t(1) << 20}) {
        INFO(path << ", parts " << parts << ", align " << align);
        CHECK(!stream(spec, path, parts, align).ok);
      }
  };
  refused(jsonl_spec(), t.write("bad.jsonl", "{\"text\":\"a\"}\n{\"text\":1}\n{\"text\":\"c\"}\n"));
  refused(jsonl_spec(), t.write("trunc.jsonl", "{\"text\":\"a\"}\n{\"text\":\"b"));
  refused(jsonl_spec(), t.write("dup.jsonl", "{\"text\":\"a\",\"text\":\"b\"}\n"));
  refused(jsonl_spec(), t.write("lone.jsonl", "{\"text\":\"\\ud800\"}\n"));
  refused(spec_of(ReaderKind::kFortune), t.write("f.txt", "a\n%\nb\n"));
  refused(spec_of(ReaderKind::kLines), "/dev/null");
  refused(spec_of(ReaderKind::kLines), t.path() + "/nope");
  refused(spec_of(ReaderKind::kLines), "-");
  // Size 0 says nothing of a /proc file's lines: such files are read whole.
  refused(spec_of(ReaderKind::kLines), t.write("empty", ""));
  if (fs::exists("/proc/version")) refused(spec_of(ReaderKind::kLines), "/proc/version");
  // A line longer than a chunk and the 16 MiB carried over to the next one
  // is refused on one part; with two, the first part may read on to its end
  // (within its buffer), and then the records must be open()'s.
  const std::string huge = t.write("huge.txt", "a\n" + std::string((size_t(33) << 20), 'h') + "\nb\n");
  const auto want = all_records(*RecordSource::open(spec_of(ReaderKind::kLines), huge));
  CHECK(!stream(spec_of(ReaderKind::kLines), huge, 1, uint64_t(1) << 20).ok);
  CHECK(!stream(spec_of(ReaderKind::kLines), huge, 2, 5).ok);
  const Streamed two = stream(spec_of(ReaderKind::kLines), huge, 2, uint64_t(1) << 20);
  CHECK((!two.ok || two.records == want));
}
