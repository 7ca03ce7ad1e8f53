// Streaming input (docs/records.md, "Streaming input"): stdin, pipes and
// fifos are read once, in order, with bounded memory. The records, the
// chunk order, the errors (line and byte offset) and a whole commitment from
// a pipe are checked against the same bytes in a regular file.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/data/readers.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

struct Dir : TempDir {
  Dir() : TempDir("wit-stream-input") {}
  std::string write(const std::string& name, const std::string& content) const {
    const std::string p = path() + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

ReaderSpec spec_of(ReaderKind k, const std::string& field = "text") {
  ReaderSpec s;
  s.kind = k;
  s.field = field;
  return s;
}

// Writes `content` to fd from a thread of its own, then closes fd.
struct Feeder {
  std::thread t;
  Feeder(const std::string& content, int fd)
      : t([content, fd] {
          for (size_t at = 0; at < content.size();) {
            const ssize_t w = ::write(fd, content.data() + at, content.size() - at);
            if (w <= 0) break;
            at += size_t(w);
          }
          ::close(fd);
        }) {}
  ~Feeder() { t.join(); }
};

// What stream_fd_records gave for `content` through a pipe.
struct Piped {
  std::vector<std::string> records;  // in done() order
  std::string bytes;                 // the fresh bytes of each chunk, in done() order
  bool in_order = true;              // offsets count up, pieces aligned, slots in range
  uint64_t size = 0;
  std::string error;                 // a wit::Error's message, if one was thrown
  std::string hint;
};

Piped pipe_records(const ReaderSpec& spec, const std::string& content, unsigned threads, uint64_t align) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  Piped out;
  std::vector<std::vector<std::string>> per(stream_slots(threads));
  std::mutex mu;
  {
    Feeder f(content, p[1]);
    try {
      out.size = stream_fd_records(
          spec, p[0], "-", threads, align,
          [&](unsigned slot, const StreamChunk& c) {
            std::vector<std::string> v;
            for (const ByteView& r : *c.records) v.emplace_back(r.str());
            std::lock_guard<std::mutex> g(mu);
            if (slot >= per.size()) out.in_order = false;
            else per[slot] = std::move(v);
          },
          [&](unsigned slot, const StreamChunk& c) {
            if (c.offset != out.bytes.size() || c.offset % align != 0) out.in_order = false;
            out.bytes += c.fresh.str();
            for (auto& r : per[slot]) out.records.push_back(std::move(r));
            per[slot].clear();
          });
    } catch (const Error& e) {
      out.error = e.what();
      out.hint = e.hint();
    }
    ::close(p[0]);  // the feeder stops (EPIPE) if reading ended early
  }
  return out;
}

std::vector<std::string> file_records(const ReaderSpec& spec, const std::string& path) {
  auto src = RecordSource::open(spec, path);
  std::vector<std::string> out;
  std::string scratch;
  for (uint64_t i = 0; i < src->count(); i++) out.emplace_back(src->record(i, scratch).str());
  return out;
}

std::string file_error(const ReaderSpec& spec, const std::string& path, std::string* hint = nullptr) {
  try {
    RecordSource::open(spec, path);
  } catch (const Error& e) {
    if (hint) *hint = e.hint();
    return e.what();
  }
  return "";
}

// A message about `from` as it reads about stdin.
std::string as_stdin(std::string msg, const std::string& from) {
  const size_t at = msg.find(from);
  if (at != std::string::npos) msg.replace(at, from.size(), "stdin");
  return msg;
}

}  // namespace

TEST_CASE("a pipe gives open()'s records of the same bytes in a file, chunks in input order", "[readers][stream]") {
  // Chunks of 16 pieces of 1 to 4096 bytes, so that lines, CRLF pairs and
  // escapes fall across chunk ends; lines longer than a chunk and longer than
  // the 1 MiB a buffer carries before it grows; blank lines; no final
  // newline; an empty input.
  Dir t;
  const std::string long_line(5000, 'L'), huge_line(size_t(3) << 20, 'H');
  const std::vector<std::pair<ReaderSpec, std::string>> cases = {
      {spec_of(ReaderKind::kLines), "a\r\nbb\n\n\r\nccc\r\r\n" + long_line + "\nlast"},
      {spec_of(ReaderKind::kLines), "\n\r\nx"},
      {spec_of(ReaderKind::kLines), "x\n"},
      {spec_of(ReaderKind::kLines), ""},
      {spec_of(ReaderKind::kLines), "\r"},
      {spec_of(ReaderKind::kLines), long_line + "\r\n" + huge_line + "\nend\n"},
      {spec_of(ReaderKind::kJsonl), "{\"text\":\"a\\\"b\\u00e9\\ud83d\\ude00\"}\r\n\n  \t\r\n{\"id\":1,\"text\":\"" +
                                        long_line + "\"}\n{\"text\":\"caf\xc3\xa9\"}"},
      {spec_of(ReaderKind::kJsonl), "{\"text\":\"x\"}\n{\"text\" : \"x\", \"b\":[1,{\"text\":2}]}\n{\"a\":\"text\",\"text\":\"\"}\n"},
      {spec_of(ReaderKind::kJsonl, "f"), "{\"text\":\"no\",\"f\":\"\\/\\n\\t\"}\n{\"f\":\"same\",\"g\":\"same\"}\r\n"},
      {spec_of(ReaderKind::kJsonl), "\xef\xbb\xbf{\"text\":\"bom\"}\n{\"text\":\"big\",\"n\":123456789012345678901234567890}\n"},
      {spec_of(ReaderKind::kJsonl), "{\"text\":\"" + huge_line + "\"}\n{\"text\":\"after\"}\n"},
      {spec_of(ReaderKind::kJsonl), ""},
      {spec_of(ReaderKind::kJsonl), " \n\t\n"},
      {spec_of(ReaderKind::kFortune), "A\n%\nB1\nB2\n%\n%\n\n%\nC\r\nD\r\n"},
      {spec_of(ReaderKind::kFortune), "\n\nE\n%\r\n%%\n% \nF\r\n\r\n%"},
      {spec_of(ReaderKind::kFortune), "no separator\r\nat all\n" + long_line},
      {spec_of(ReaderKind::kFortune), "%\n%\n"},
      {spec_of(ReaderKind::kFortune), "x\r\ny\n%\n" + huge_line + "\r\n" + long_line + "\n%\nlast\r\n"},
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const std::string f = t.write("s" + std::to_string(k), cases[k].second);
    const auto want = file_records(cases[k].first, f);
    // Tiny pieces for the small inputs; the 3 MiB lines in chunks of 64 KiB and 1 MiB.
    const bool big = cases[k].second.size() > (size_t(1) << 20);
    for (uint64_t align : big ? std::vector<uint64_t>{4096, 65536} : std::vector<uint64_t>{1, 3, 64, 4096})
      for (unsigned threads : {1u, 2u, 3u}) {
        INFO("case " << k << ", align " << align << ", threads " << threads);
        const Piped got = pipe_records(cases[k].first, cases[k].second, threads, align);
        REQUIRE(got.error == "");
        CHECK(got.records == want);
        CHECK(got.in_order);
        CHECK(got.size == cases[k].second.size());
        CHECK(got.bytes == cases[k].second);
      }
  }
}

TEST_CASE("a pipe's bad line is the input's first, named by line and byte offset as open() names it",
          "[readers][stream]") {
  Dir t;
  std::string many;
  for (int i = 1; i <= 3000; i++) {
    if (i == 2001) many += "{\"nottext\":\"x\"}\n";
    else if (i == 2500) many += "{\"text\":false}\n";
    else many += "{\"text\":\"record " + std::to_string(i) + "\"}\n";
  }
  const std::vector<std::string> cases = {
      many,
      "{\"text\":\"a\"}\n\n{\"txt\":\"b\"}\n",
      "{\"text\":\"a\"}\n{\"text\":\"a\",}\n",
      "{\"text\":\"a\"}\r\n{\"text\":\"\\ud800\"}\n{\"x\":1}\n",
      "[1]\n",
      "{\"text\":\"a\"}\n{\"text\":\"b",  // cut short: the hint says so
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const std::string f = t.write("bad" + std::to_string(k), cases[k]);
    std::string want_hint;
    const std::string want = as_stdin(file_error(spec_of(ReaderKind::kJsonl), f, &want_hint), f);
    REQUIRE(want.find("stdin:") != std::string::npos);
    REQUIRE(want.find(" at byte ") != std::string::npos);
    for (uint64_t align : {1, 64, 4096})
      for (unsigned threads : {1u, 3u}) {
        INFO("case " << k << ", align " << align << ", threads " << threads);
        const Piped got = pipe_records(spec_of(ReaderKind::kJsonl), cases[k], threads, align);
        CHECK(got.error == want);
        CHECK(got.hint == want_hint);
      }
  }
  CHECK(as_stdin(file_error(spec_of(ReaderKind::kJsonl), t.path() + "/bad0"), t.path() + "/bad0") ==
        "missing field 'text': stdin:2001 at byte " + std::to_string(many.find("{\"nottext\"")));
}

TEST_CASE("an exception from work() or done() ends the stream and is rethrown", "[readers][stream]") {
  std::string content;
  for (int i = 0; i < 5000; i++) content += "line " + std::to_string(i) + "\n";
  for (int which = 0; which < 2; which++) {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    std::string what;
    {
      Feeder f(content, p[1]);
      int calls = 0;
      using Fn = std::function<void(unsigned, const StreamChunk&)>;
      const Fn boom = [&](unsigned, const StreamChunk&) {
        if (++calls == 3) throw Error("stop here");
      };
      const Fn nothing = [](unsigned, const StreamChunk&) {};
      try {
        stream_fd_records(spec_of(ReaderKind::kLines), p[0], "-", 1, 64, which ? boom : nothing, which ? nothing : boom);
      } catch (const Error& e) {
        what = e.what();
      }
      ::close(p[0]);
    }
    CHECK(what == "stop here");
  }
}

namespace {

// commit_dataset of `paths` where "<fifo>" is replaced by a fifo fed with `piped`.
CommitResult commit_with_fifo(const ReaderSpec& spec, std::vector<std::string> paths, const std::string& fifo,
                              const std::string& piped, unsigned threads) {
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    Feeder f(piped, fd);
  });
  for (auto& p : paths)
    if (p == "<fifo>") p = fifo;
  CommitResult r;
  try {
    r = commit_dataset(spec, paths, threads);
  } catch (...) {
    writer.join();
    ::unlink(fifo.c_str());
    throw;
  }
  writer.join();
  ::unlink(fifo.c_str());
  return r;
}

// commit_dataset of `paths` with stdin ("-") a pipe fed with `piped`.
CommitResult commit_with_stdin(const ReaderSpec& spec, const std::vector<std::string>& paths,
                               const std::string& piped, unsigned threads) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const int saved = ::dup(0);
  ::dup2(p[0], 0);
  ::close(p[0]);
  CommitResult r;
  std::exception_ptr err;
  {
    Feeder f(piped, p[1]);
    try {
      r = commit_dataset(spec, paths, threads);
    } catch (...) {
      err = std::current_exception();
    }
    ::dup2(saved, 0);  // closes the read end: a feeder still writing stops
    ::close(saved);
  }
  if (err) std::rethrow_exception(err);
  return r;
}

void same_commit(const CommitResult& a, const CommitResult& b) {
  CHECK(a.commitment.root == b.commitment.root);
  CHECK(a.commitment.records == b.commitment.records);
  CHECK(a.commitment.n == b.commitment.n);
  REQUIRE(a.tree.size() == b.tree.size());
  CHECK(std::memcmp(a.tree.leaves(), b.tree.leaves(), 32 * a.tree.size()) == 0);
  CHECK(std::equal(a.tree.firsts().begin(), a.tree.firsts().end(), b.tree.firsts().begin()));
  REQUIRE(a.commitment.sources.size() == b.commitment.sources.size());
  for (size_t k = 0; k < a.commitment.sources.size(); k++) {
    INFO("source " << k);
    CHECK(a.commitment.sources[k].digest == b.commitment.sources[k].digest);
    CHECK(a.commitment.sources[k].size == b.commitment.sources[k].size);
    CHECK(a.commitment.sources[k].records == b.commitment.sources[k].records);
    CHECK(a.commitment.sources[k].piece_size == b.commitment.sources[k].piece_size);
  }
}

}  // namespace

TEST_CASE("a commitment from stdin or a fifo equals the one from the same bytes in a file", "[commit][stream]") {
  // Several MiB (several 1 MiB source-digest pieces and 16 MiB chunks' worth
  // at two threads), repeats across chunks (first occurrences), escapes,
  // CRLF, a line of 2 MiB, no final newline; a file after the stream and
  // one before it, one of which the one pass does not take (a line over 16 MiB).
  Dir t;
  std::string a;
  for (int i = 0; a.size() < (size_t(20) << 20); i++) {
    const std::string text = i % 7 == 0 ? "repeat " + std::to_string(i % 50) : "record " + std::to_string(i) +
                                                                                  std::string(size_t(i % 131), 'x');
    a += "{\"id\":" + std::to_string(i) + ",\"text\":\"" + text + (i % 11 == 0 ? "\\u00e9\\n" : "") + "\"}" +
         (i % 5 == 0 ? "\r\n" : "\n");
    if (i == 1000) a += "{\"text\":\"" + std::string(size_t(2) << 20, 'w') + "\"}\n";
  }
  a += "{\"text\":\"the end\"}";
  const std::string fa = t.write("a.jsonl", a);
  const std::string fb = t.write("b.jsonl", "{\"text\":\"repeat 3\"}\n{\"text\":\"b only\"}\n");
  const std::string fc = t.write("c.jsonl", "{\"text\":\"" + std::string(size_t(17) << 20, 'c') + "\"}\n{\"text\":\"c\"}\n");
  for (ReaderKind kind : {ReaderKind::kJsonl, ReaderKind::kLines}) {
    const ReaderSpec spec = spec_of(kind);
    for (unsigned threads : {1u, 2u}) {
      INFO("reader " << ReaderSpec::kind_name(kind) << ", threads " << threads);
      const CommitResult want = commit_dataset(spec, {fb, fa, fc}, threads);
      same_commit(commit_with_stdin(spec, {fb, "-", fc}, a, threads), want);
      same_commit(commit_with_fifo(spec, {fb, "<fifo>", fc}, t.path() + "/fifo", a, threads), want);
    }
  }
  // Empty input.
  const std::string fe = t.write("e.jsonl", "");
  same_commit(commit_with_stdin(spec_of(ReaderKind::kJsonl), {"-"}, "", 2),
              commit_dataset(spec_of(ReaderKind::kJsonl), {fe}, 2));
  // A bad line in the stream: its line and byte offset, nothing committed.
  const std::string bad = "{\"text\":\"a\"}\n{\"text\":\"b\"}\n{\"text\":3}\n{\"text\":\"c\"}\n";
  CHECK_THROWS_WITH(commit_with_stdin(spec_of(ReaderKind::kJsonl), {fb, "-"}, bad, 2),
                    "field 'text' is a number, not a string: stdin:3 at byte 26");
}

TEST_CASE("a token stream commits as the same bytes in a file: windows, a partial one, one over 16 MiB",
          "[commit][stream]") {
  // Window counts 0 to 9 and more (the source digest's piece tree of every
  // shape up to 2^3 + 1, built as the leaves go by), with and without a
  // partial window; uint32 ids; windows of 18 MiB, hashed in pieces.
  Dir t;
  auto bytes = [](size_t n, unsigned seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++) s[i] = char((i * 2654435761u + seed) >> 7);
    return s;
  };
  struct Case {
    uint64_t seq_len;
    unsigned width;
    size_t size;
  };
  std::vector<Case> cases;
  for (size_t w = 0; w <= 9; w++) cases.push_back({4, 2, 8 * w});
  cases.push_back({4, 2, 8 * 9 + 6});
  cases.push_back({4, 4, 16 * 1000 + 4});
  cases.push_back({1024, 2, size_t(33) << 20});  // 16 MiB reads: two of 8192 windows, one more
  cases.push_back({size_t(9) << 20, 2, (size_t(37) << 20) + 2});  // two windows of 18 MiB, a partial one
  for (size_t k = 0; k < cases.size(); k++) {
    ReaderSpec spec = spec_of(ReaderKind::kTokens);
    spec.seq_len = cases[k].seq_len;
    spec.token_bytes = cases[k].width;
    const std::string content = bytes(cases[k].size, unsigned(k));
    const std::string f = t.write("t" + std::to_string(k) + ".bin", content);
    INFO("case " << k << ": seq_len " << spec.seq_len << ", width " << spec.token_bytes << ", " << content.size()
                 << " bytes");
    const CommitResult want = commit_dataset(spec, {f}, 2);
    same_commit(commit_with_stdin(spec, {"-"}, content, 2), want);
    if (k == 3) same_commit(commit_with_fifo(spec, {f, "<fifo>"}, t.path() + "/fifo", content, 1),
                            commit_dataset(spec, {f, f}, 1));
  }
  // A cut id: the reader's error, from the stream's end.
  ReaderSpec spec = spec_of(ReaderKind::kTokens);
  spec.seq_len = 4;
  CHECK_THROWS_WITH(commit_with_stdin(spec, {"-"}, bytes(17, 1), 1), "token file has odd size: stdin at byte 16");
}

TEST_CASE("contamination's n-gram statistic streams the training files past the eval shingles", "[contamination]") {
  // The statistic the old way (every training shingle in a set, each eval
  // shingle looked up) against the certificate's, on a training JSONL of a
  // few MiB (cut into parts on every thread) that shares 13-word runs with
  // some eval records; and training files that are not the committed ones
  // are refused with the first difference.
  Dir t;
  std::vector<std::string> words;
  for (int i = 0; i < 500; i++) words.push_back("w" + std::to_string(i * 7919 % 1000));
  auto text = [&](int at, int n) {
    std::string s;
    for (int k = 0; k < n; k++) s += (k ? " " : "") + words[size_t(at + k) % words.size()];
    return s;
  };
  std::string train, eval;
  for (int i = 0; i < 40000; i++) train += "{\"text\":\"" + text(i * 31, 10 + i % 40) + "\"}\n";
  // Eval records: all seen, seen but for the runs across a join, too short.
  for (int i = 0; i < 60; i++)
    eval += (i % 3 == 0   ? text(i * 131, 14 + i % 20)
             : i % 3 == 1 ? text(i * 131, 14) + " " + text(i * 17 + 250, 14)
                          : "never seen " + text(i, 5) + " zz" + std::to_string(i)) +
            "\n";
  const std::string ft = t.write("train.jsonl", train), fe = t.write("eval.txt", eval);
  const ReaderSpec spec = spec_of(ReaderKind::kJsonl);
  const CommitResult data = commit_dataset(spec, {ft}, 2);
  const std::string cpath = t.write("train.commit.json", data.commitment.dump());
  const Bytes idx_bytes = encode_index(data);
  const Index idx(ByteView(idx_bytes), "train.widx");

  std::unordered_set<uint64_t> seen;
  {
    auto src = RecordSource::open(spec, ft);
    std::string scratch;
    for (uint64_t i = 0; i < src->count(); i++)
      for (uint64_t s : ngram_shingles(src->record(i, scratch), false)) seen.insert(s);
  }
  uint64_t grams = 0, hits = 0, with = 0, shorts = 0;
  for (const std::string& r : file_records(spec_of(ReaderKind::kLines), fe)) {
    const auto sh = ngram_shingles(ByteView(r), false);
    uint64_t h = 0;
    for (uint64_t s : sh) h += seen.count(s);
    grams += sh.size();
    hits += h;
    with += h > 0;
    shorts += sh.empty();
  }
  REQUIRE(hits > 0);
  REQUIRE(hits < grams);
  auto input = [&](const std::string& train_path, unsigned threads) {
    ContaminationInput in;
    in.commitment = &data.commitment;
    in.commit_path = cpath;
    in.index = &idx;
    in.eval_reader = spec_of(ReaderKind::kLines);
    in.eval_paths = {fe};
    in.train_paths = {train_path};
    in.threads = threads;
    return in;
  };
  for (unsigned threads : {1u, 2u, 3u}) {
    const nlohmann::json st = contamination_certificate(input(ft, threads))["ngram_overlap"];
    INFO(st.dump());
    CHECK(st["computed"] == true);
    CHECK(st["eval_records"] == 60);
    CHECK(st["eval_ngrams"] == grams);
    CHECK(st["overlapping_ngrams"] == hits);
    CHECK(st["eval_records_with_overlap"] == with);
    CHECK(st["eval_records_too_short"] == shorts);
  }
  const ContaminationInput in = input(t.write("other.jsonl", train + "{\"text\":\"one more\"}\n"), 1);
  CHECK_THROWS_WITH(contamination_certificate(in),
                    Catch::Contains("the training files do not match the commitment: it holds 40001 records"));
}

TEST_CASE("a fortune file, from a file or a pipe, commits as the opened file's records", "[commit][stream]") {
  // Fortune files are read as streams are (cut after a "%" line): the tree
  // and source digest must be those of the reader's records of the whole file.
  Dir t;
  std::string text;
  for (int i = 0; text.size() < (size_t(18) << 20); i++) {
    text += "fortune " + std::to_string(i % 3000) + (i % 4 ? "\n" : "\r\n") + "second line " + std::to_string(i);
    text += i % 5 == 0 ? "\r\n%\r\n" : i % 7 == 0 ? "\n%\n%\n\n%\n" : "\n%\n";
  }
  const std::string f = t.write("f.txt", text);
  const ReaderSpec spec = spec_of(ReaderKind::kFortune);
  const RecordFiles files = RecordFiles::open(spec, {f});
  const DataTree want(files, 1);
  const auto want_sources = source_digests(spec, files, 1);
  for (unsigned threads : {1u, 2u}) {
    INFO("threads " << threads);
    for (const CommitResult& got : {commit_dataset(spec, {f}, threads), commit_with_stdin(spec, {"-"}, text, threads)}) {
      CHECK(got.commitment.records == files.records);
      REQUIRE(got.tree.size() == want.size());
      CHECK(std::memcmp(got.tree.leaves(), want.leaves(), 32 * want.size()) == 0);
      CHECK(std::equal(want.firsts().begin(), want.firsts().end(), got.tree.firsts().begin()));
      REQUIRE(got.commitment.sources.size() == 1);
      CHECK(got.commitment.sources[0].digest == want_sources[0].digest);
      CHECK(got.commitment.sources[0].records == want_sources[0].records);
      CHECK(got.commitment.sources[0].size == want_sources[0].size);
    }
  }
}

TEST_CASE("contamination's n-gram statistic over token windows (uint32 ids) is the one of every training shingle",
          "[contamination]") {
  // Token files are read with pread, window by window, in parallel: the
  // counts must be those of the set of all training shingles.
  Dir t;
  auto ids = [](size_t n, uint32_t mul, uint32_t mod) {
    std::string s;
    for (size_t i = 0; i < n; i++) {
      const uint32_t v = uint32_t(i * mul % mod) + 70000;
      for (int b = 0; b < 4; b++) s += char(v >> (8 * b));
    }
    return s;
  };
  ReaderSpec spec = spec_of(ReaderKind::kTokens);
  spec.seq_len = 32;
  spec.token_bytes = 4;
  const std::string ft = t.write("train.bin", ids(32 * 3000, 7, 5000));
  const std::string fe = t.write("eval.bin", ids(32 * 10, 7, 5000) + ids(32 * 10, 13, 4999));
  const CommitResult data = commit_dataset(spec, {ft}, 2);
  const std::string cpath = t.write("train.commit.json", data.commitment.dump());
  const Bytes idx_bytes = encode_index(data);
  const Index idx(ByteView(idx_bytes), "train.widx");
  std::unordered_set<uint64_t> seen;
  uint64_t grams = 0, hits = 0;
  {
    auto src = RecordSource::open(spec, ft);
    std::string scratch;
    for (uint64_t i = 0; i < src->count(); i++)
      for (uint64_t s : ngram_shingles(src->record(i, scratch), true, kNgramN, 4)) seen.insert(s);
    auto ev = RecordSource::open(spec, fe);
    for (uint64_t i = 0; i < ev->count(); i++)
      for (uint64_t s : ngram_shingles(ev->record(i, scratch), true, kNgramN, 4)) {
        grams++;
        hits += seen.count(s);
      }
  }
  REQUIRE(hits > 0);
  REQUIRE(hits < grams);
  ContaminationInput in;
  in.commitment = &data.commitment;
  in.commit_path = cpath;
  in.index = &idx;
  in.eval_reader = spec;
  in.eval_paths = {fe};
  in.threads = 2;  // the training file found as the commitment's input
  const nlohmann::json st = contamination_certificate(in)["ngram_overlap"];
  INFO(st.dump());
  CHECK(st["unit"] == "tokens");
  CHECK(st["eval_ngrams"] == grams);
  CHECK(st["overlapping_ngrams"] == hits);
}
