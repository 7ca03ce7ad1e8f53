// The witness log: entry encoding and every decode error, the framed file with
// torn-tail repair at every cut of the last frame and corruption before it,
// truncation, roots and proofs against MerkleTree, signed heads and the heads
// file, key files, and log proof documents.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include "peak_rss.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/run/runlog.h"
#include "wit/hash/sign.h"
#include "wit/run/wlog.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

Bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void spit(const std::string& path, const std::string& s) { spit(path, Bytes(s.begin(), s.end())); }

Hash32 hash_of(uint64_t i) {
  uint8_t b[8];
  put_le64(b, i);
  return hash_tagged("test", ByteView(b, 8));
}

LogEntry genesis() {
  LogEntry e;
  e.genesis = true;
  e.g.run_id = hash_of(1);
  e.g.init_root = hash_of(2);
  e.g.n_params = 123456789;
  return e;
}

LogEntry step_entry(uint64_t s, bool probe = false, bool ckpt = false, size_t k = 8) {
  LogEntry e;
  e.s.step = s;
  e.s.lr = 3e-4f * float(s);
  e.s.mean_loss = 5.5f - 0.01f * float(s);
  e.s.grad_norm = 0.75f;
  e.s.batch_root = hash_of(100 + s);
  e.s.losses = {1.0f, 2.5f, float(s)};
  for (size_t i = 0; i < k; i++) {
    e.s.sketch.push_back(float(i) * 0.5f - float(s));
    e.s.sketch_m.push_back(1e-3f * float(i));
    e.s.sketch_v.push_back(1e-6f * float(i + s));
  }
  if (probe) e.s.probe = std::vector<float>{0.25f, -0.5f, float(s)};
  e.s.state_root = hash_of(200 + s);
  e.s.checkpoint = ckpt;
  return e;
}

// What decode_entry throws, or "" when it accepts.
std::string decode_error(const Bytes& b) {
  try {
    decode_entry(b, "e");
    return "";
  } catch (const Error& err) {
    return err.what();
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
    return "";
  } catch (const Error& err) {
    return err.what();
  }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Frame layout: u32 length, u32 checksum, payload.
Bytes frame(const Bytes& payload) {
  Bytes f(8);
  put_le32(f.data(), uint32_t(payload.size()));
  put_le32(f.data() + 4, uint32_t(xxh3_64(payload)));
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

// A log file of genesis + steps 1..n-1 written through WitnessLog.
std::vector<Bytes> write_log(const std::string& path, uint64_t n) {
  std::vector<Bytes> enc;
  WitnessLog log = WitnessLog::open(path, TornTail::kRefuse, IfMissing::kCreate);
  for (uint64_t i = 0; i < n; i++) {
    enc.push_back(encode_entry(i == 0 ? genesis() : step_entry(i, i % 3 == 0, i % 4 == 0)));
    log.append(enc.back());
  }
  log.sync();
  return enc;
}

}  // namespace

// ---- entries ---------------------------------------------------------------

TEST_CASE("entries round trip byte for byte", "[wlog]") {
  std::vector<LogEntry> es = {genesis(), step_entry(1), step_entry(2, true), step_entry(3, false, true),
                              step_entry(4, true, true), step_entry(5, false, false, 0)};
  LogEntry nan = step_entry(6, true, true);
  nan.s.lr = std::numeric_limits<float>::quiet_NaN();
  nan.s.sketch[0] = -std::numeric_limits<float>::infinity();
  nan.s.losses.clear();
  es.push_back(nan);
  for (const auto& e : es) {
    const Bytes b = encode_entry(e);
    const LogEntry d = decode_entry(b, "e");
    CHECK(encode_entry(d) == b);
    CHECK(d.genesis == e.genesis);
    if (e.genesis) {
      CHECK(d.g.run_id == e.g.run_id);
      CHECK(d.g.init_root == e.g.init_root);
      CHECK(d.g.n_params == e.g.n_params);
    } else {
      CHECK(d.s.step == e.s.step);
      CHECK(d.s.batch_root == e.s.batch_root);
      CHECK(d.s.sketch.size() == e.s.sketch.size());
      CHECK(d.s.probe.has_value() == e.s.probe.has_value());
      CHECK(d.s.checkpoint == e.s.checkpoint);
      CHECK(d.s.state_root == e.s.state_root);
      if (e.s.probe) CHECK(*d.s.probe == *e.s.probe);
    }
  }
  CHECK(std::isnan(decode_entry(encode_entry(nan), "e").s.lr));
}

TEST_CASE("an entry is in its place: entry 0 the run's genesis, entry i step i's", "[wlog]") {
  const LogEntry g = genesis();
  const Hash32 run = g.g.run_id;
  Hash32 other = run;
  other.b[0] ^= 1;
  CHECK_FALSE(entry_problem(g, 0, run));
  CHECK_FALSE(entry_problem(step_entry(1), 1, run));
  CHECK_FALSE(entry_problem(step_entry(17), 17, run));
  CHECK(entry_problem(step_entry(1), 0, run) == std::string("entry 0 is not a genesis entry"));
  CHECK(entry_problem(g, 0, other) ==
        "entry 0 is the genesis of run " + run.hex() + ", not of run " + other.hex());
  CHECK(entry_problem(g, 3, run) == std::string("entry 3 is a second genesis entry"));
  CHECK(entry_problem(step_entry(18), 17, run) == std::string("entry 17 is the entry of step 18, not of step 17"));
  CHECK(entry_problem(step_entry(0), 2, run) == std::string("entry 2 is the entry of step 0, not of step 2"));
}

TEST_CASE("entry layout is the documented one", "[wlog]") {
  const Bytes g = encode_entry(genesis());
  REQUIRE(g.size() == 80);
  CHECK(std::memcmp(g.data(), "WITE\x02\x00\x00\x00", 8) == 0);
  CHECK(std::memcmp(g.data() + 8, genesis().g.run_id.data(), 32) == 0);
  CHECK(std::memcmp(g.data() + 40, genesis().g.init_root.data(), 32) == 0);
  CHECK(get_le64(g.data() + 72) == 123456789);

  const LogEntry e = step_entry(7, true, true, 2);
  const Bytes s = encode_entry(e);
  CHECK(std::memcmp(s.data(), "WITE\x02\x00\x01\x00", 8) == 0);
  CHECK(get_le64(s.data() + 8) == 7);
  float lr;
  std::memcpy(&lr, s.data() + 16, 4);
  CHECK(lr == e.s.lr);
  CHECK(get_le32(s.data() + 28) == 3);  // probe | ckpt
  CHECK(std::memcmp(s.data() + 32, e.s.batch_root.data(), 32) == 0);
  CHECK(std::memcmp(s.data() + 64, e.s.state_root.data(), 32) == 0);
  CHECK(get_le32(s.data() + 96) == 3);  // losses count
  // 96 + (4 + 12) losses + 3 * (4 + 8) sketches + (4 + 12) probe
  CHECK(s.size() == 96 + 16 + 36 + 16);
  // Without a checkpoint or probe the state root is still there, at the same place.
  const Bytes plain = encode_entry(step_entry(8, false, false, 2));
  CHECK(get_le32(plain.data() + 28) == 0);
  CHECK(std::memcmp(plain.data() + 64, step_entry(8, false, false, 2).s.state_root.data(), 32) == 0);
  CHECK(entry_leaf(s) == kBlake2bTree.leaf(s));
}

TEST_CASE("decode rejects every malformed entry with its own message", "[wlog]") {
  const Bytes good = encode_entry(step_entry(9, true, true));

  SECTION("wrong magic, even when short") {
    Bytes b = good;
    b[0] = 'X';
    CHECK(decode_error(b) == "not a witness log entry (bad magic): e at byte 0");
    CHECK(decode_error(Bytes{'W', 'I', 'X'}) == "not a witness log entry (bad magic): e at byte 0");
    CHECK(contains(decode_error(Bytes{'{', '"'}), "bad magic"));
  }
  SECTION("unknown version") {
    Bytes b = good;
    b[4] = 3;
    CHECK(decode_error(b) == "unsupported witness log entry version 3: e at byte 4");
  }
  SECTION("an old log (version 1, no state root per step) is refused, saying which version is needed") {
    Bytes b = good;
    b[4] = 1;
    CHECK(decode_error(b) == "unsupported witness log entry version 1: e at byte 4");
    try {
      decode_entry(b, "e");
    } catch (const Error& err) {
      CHECK(contains(err.hint(), "this wit reads version 2"));
      CHECK(contains(err.hint(), "retrain"));
    }
  }
  SECTION("unknown kind") {
    Bytes b = good;
    b[6] = 7;
    CHECK(decode_error(b) == "unknown witness log entry kind 7: e at byte 6");
  }
  SECTION("every truncation") {
    for (size_t n = 0; n < good.size(); n++) {
      Bytes b(good.begin(), good.begin() + long(n));
      CHECK(decode_error(b) == "entry is truncated: e at byte " + std::to_string(n));
    }
    const Bytes g = encode_entry(genesis());
    for (size_t n = 0; n < g.size(); n++) CHECK(contains(decode_error(Bytes(g.begin(), g.begin() + long(n))), "truncated"));
  }
  SECTION("trailing bytes") {
    Bytes b = good;
    b.push_back(0);
    CHECK(decode_error(b) == "entry has trailing bytes: e at byte " + std::to_string(good.size()));
    Bytes g = encode_entry(genesis());
    g.push_back(0);
    CHECK(decode_error(g) == "entry has trailing bytes: e at byte 80");
  }
  SECTION("impossible counts") {
    Bytes b = good;
    put_le32(b.data() + 96, kMaxEntryFloats + 1);  // losses count
    CHECK(decode_error(b) == "float vector count 16777217 exceeds the limit of 16777216: e at byte 96");
    put_le32(b.data() + 96, 1000);  // within the limit, but beyond the data
    CHECK(contains(decode_error(b), "truncated"));
    put_le32(b.data() + 96, 0xffffffffu);
    CHECK(contains(decode_error(b), "exceeds the limit"));
  }
  SECTION("unknown flags") {
    Bytes b = good;
    b[28] |= 4;
    CHECK(decode_error(b) == "unknown entry flags 7: e at byte 28");
  }
  SECTION("step 0") {
    Bytes b = encode_entry(step_entry(0));
    CHECK(contains(decode_error(b), "step entry has step 0"));
  }
  SECTION("flags that claim a probe the entry lacks") {
    Bytes b = encode_entry(step_entry(3, false, false));
    b[28] = 1;
    CHECK(contains(decode_error(b), "truncated"));
  }
  SECTION("a vector over the limit is refused on encode too") {
    LogEntry e = step_entry(1);
    e.s.sketch.assign(size_t(kMaxEntryFloats) + 1, 0.0f);
    CHECK_THROWS_AS(encode_entry(e), Error);
  }
}

// ---- the log file ----------------------------------------------------------

TEST_CASE("log roots and proofs agree with MerkleTree at every size", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 70);
  WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
  REQUIRE(log.size() == 70);
  std::vector<Hash32> leaves;
  for (const auto& e : enc) leaves.push_back(entry_leaf(e));
  CHECK(log.leaves() == leaves);
  MerkleTree full(kBlake2bTree, leaves.data(), leaves.size(), 2, 1);
  CHECK(log.root(0) == kBlake2bTree.empty());
  for (uint64_t n = 1; n <= 70; n++) {
    const Hash32 r = merkle_root(kBlake2bTree, std::vector<Hash32>(leaves.begin(), leaves.begin() + long(n)));
    REQUIRE(log.root(n) == r);
    for (uint64_t i = 0; i < n; i += (n > 20 ? 7 : 1)) {
      auto path = log.inclusion_proof(i, n);
      CHECK(path == full.hashes(inclusion_ranges(i, n)));
      CHECK(verify_inclusion(kBlake2bTree, i, n, leaves[i], path, r) == ProofError::kOk);
    }
    for (uint64_t m = 1; m <= n; m += (n > 20 ? 5 : 1)) {
      auto proof = log.consistency_proof(m, n);
      CHECK(proof == full.hashes(consistency_ranges(m, n)));
      CHECK(verify_consistency(kBlake2bTree, m, n, log.root(m), r, proof) == ProofError::kOk);
    }
  }
  CHECK_THROWS_AS(log.root(71), Error);
  CHECK_THROWS_AS(log.inclusion_proof(5, 5), Error);
  CHECK_THROWS_AS(log.consistency_proof(6, 5), Error);
  for (uint64_t i = 0; i < 70; i++) CHECK(log.entry_bytes(i) == enc[i]);
  CHECK(log.entry(0).genesis);
  CHECK(log.entry(33).s.step == 33);
  CHECK_THROWS_AS(log.entry(70), Error);
}

TEST_CASE("open: a missing log is an error unless created, and an empty file is an empty log", "[wlog]") {
  TempDir d("wit-wlog");
  CHECK(contains(error_of([&] { WitnessLog::open(d / "none.wlog", TornTail::kCut); }), "cannot open"));
  WitnessLog l = WitnessLog::open(d / "new.wlog", TornTail::kRefuse, IfMissing::kCreate);
  CHECK(l.size() == 0);
  CHECK(fs::exists(d / "new.wlog"));
  CHECK(WitnessLog::open(d / "new.wlog", TornTail::kRefuse).size() == 0);
}

TEST_CASE("a torn last frame is cut at every byte offset with repair, and an error without", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 6);
  const Bytes full = slurp(p);
  const uint64_t last_frame = full.size() - 8 - enc.back().size();
  for (uint64_t cut = last_frame + 1; cut < full.size(); cut++) {
    spit(p, Bytes(full.begin(), full.begin() + long(cut)));
    const std::string err = error_of([&] { WitnessLog::open(p, TornTail::kRefuse); });
    REQUIRE(contains(err, "torn frame"));
    CHECK(contains(err, "at byte " + std::to_string(last_frame)));
    CHECK(slurp(p).size() == cut);  // without repair the file is untouched
    WitnessLog log = WitnessLog::open(p, TornTail::kCut);
    CHECK(log.size() == 5);
    CHECK(log.torn_bytes() == cut - last_frame);
    CHECK(slurp(p).size() == last_frame);
    // The repaired log takes the lost entry again and reads back whole.
    log.append(enc.back());
    CHECK(slurp(p) == full);
  }
}

TEST_CASE("a checksum mismatch in the last frame, or zeros after a frame, is a torn tail", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 4);
  const Bytes full = slurp(p);
  const uint64_t last_frame = full.size() - 8 - enc.back().size();

  Bytes b = full;
  b[b.size() - 3] ^= 0x40;  // inside the last payload
  spit(p, b);
  CHECK(contains(error_of([&] { WitnessLog::open(p, TornTail::kRefuse); }), "torn frame"));
  CHECK(WitnessLog::open(p, TornTail::kCut).size() == 3);
  CHECK(slurp(p).size() == last_frame);

  // The file system extended the file but the data never landed: zeros.
  b = full;
  b.insert(b.end(), 4096, 0);
  spit(p, b);
  CHECK(contains(error_of([&] { WitnessLog::open(p, TornTail::kRefuse); }), "torn frame"));
  WitnessLog log = WitnessLog::open(p, TornTail::kCut);
  CHECK(log.size() == 4);
  CHECK(log.torn_bytes() == 4096);
  CHECK(slurp(p) == full);

  // A last frame with a bad checksum followed by zeros.
  b = full;
  b[last_frame + 8] ^= 1;
  b.insert(b.end(), 100, 0);
  spit(p, b);
  CHECK(WitnessLog::open(p, TornTail::kCut).size() == 3);
}

TEST_CASE("corruption before the last frame is reported with its byte offset", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 6);
  const Bytes full = slurp(p);
  uint64_t off2 = 0;
  for (int i = 0; i < 2; i++) off2 += 8 + enc[size_t(i)].size();

  for (uint64_t at : {off2 + 8, off2 + 20, off2 + 4, off2}) {  // payload, payload, checksum, length
    Bytes b = full;
    b[at] ^= 0x01;
    spit(p, b);
    for (bool repair : {false, true}) {
      const std::string err = error_of([&] { WitnessLog::open(p, repair ? TornTail::kCut : TornTail::kRefuse); });
      CHECK(contains(err, "witness log is corrupt"));
      CHECK(contains(err, p + " at byte " + std::to_string(off2)));
      CHECK(slurp(p) == b);  // never repaired away
    }
  }
  Bytes b = full;
  put_le32(b.data() + off2, 0xfffffff0u);  // an impossible length
  spit(p, b);
  CHECK(contains(error_of([&] { WitnessLog::open(p, TornTail::kCut); }), "frame length 4294967280 is impossible"));
}

TEST_CASE("truncate drops entries on disk and the log grows again", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 20);
  WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
  const Hash32 r7 = log.root(7);
  log.truncate(7);
  CHECK(log.size() == 7);
  CHECK(log.root(7) == r7);
  WitnessLog again = WitnessLog::open(p, TornTail::kRefuse);
  CHECK(again.size() == 7);
  CHECK(again.leaves() == log.leaves());
  for (uint64_t i = 7; i < 20; i++) log.append(enc[i]);
  WitnessLog whole = WitnessLog::open(p, TornTail::kRefuse);
  CHECK(whole.size() == 20);
  CHECK(whole.root(20) == log.root(20));
  CHECK(log.inclusion_proof(9, 20) == whole.inclusion_proof(9, 20));
  log.truncate(20);  // no-op
  CHECK_THROWS_AS(log.truncate(21), Error);
  log.truncate(0);
  CHECK(slurp(p).empty());
  CHECK(log.root(0) == kBlake2bTree.empty());
}

TEST_CASE("append refuses entries that do not decode and a file changed behind its back", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  write_log(p, 3);
  WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
  CHECK_THROWS_AS(log.append(Bytes{'n', 'o', 'p', 'e'}), Error);
  CHECK(WitnessLog::open(p, TornTail::kRefuse).size() == 3);
  Bytes b = slurp(p);
  Bytes extra = frame(encode_entry(step_entry(3)));
  b.insert(b.end(), extra.begin(), extra.end());
  spit(p, b);
  CHECK(contains(error_of([&] { log.append(encode_entry(step_entry(3))); }), "changed on disk"));
}

TEST_CASE("entries are read from the file when asked for; a file changed since the scan is refused", "[wlog]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  auto enc = write_log(p, 12);
  WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
  for (uint64_t i = 0; i < 12; i++) CHECK(log.entry_bytes(i) == enc[i]);
  CHECK(log.entry(7).s.step == 7);
  const Bytes more = encode_entry(step_entry(12));
  log.append(more);
  CHECK(log.entry_bytes(12) == more);  // appended through the log: read back like the rest
  CHECK(error_of([&] { log.entry_bytes(13); }) == "no entry 13 (the log has 13): " + p);
  CHECK(error_of([&] { log.entry(13); }) == "no entry 13 (the log has 13): " + p);

  const Bytes full = slurp(p);
  uint64_t off5 = 0;
  for (size_t i = 0; i < 5; i++) off5 += 8 + enc[i].size();
  Bytes b = full;
  b[off5 + 8 + 10] ^= 1;  // entry 5, behind the log's back
  spit(p, b);
  CHECK(error_of([&] { log.entry_bytes(5); }) ==
        "witness log changed on disk since it was opened: " + p + " at byte " + std::to_string(off5));
  CHECK(log.entry_bytes(4) == enc[4]);
  spit(p, Bytes(full.begin(), full.begin() + long(off5 + 3)));
  CHECK(error_of([&] { log.entry(7); }) == "witness log changed on disk since it was opened (it is shorter): " + p);
}

TEST_CASE("a log opens in memory for its tree, not its entries", "[wlog]") {
  // 64 entries of three 2^17-float sketches (96 MiB), opened and read through:
  // holding the entries, as the log once did, costs their 96 MiB.
  TempDir d("wit-wlog");
  const std::string p = d / "big.wlog";
  constexpr size_t kK = size_t(1) << 17;
  constexpr uint64_t kEntries = 64, kBound = uint64_t(24) << 20;
  {
    WitnessLog w = WitnessLog::open(p, TornTail::kRefuse, IfMissing::kCreate);
    w.append(encode_entry(genesis()));
    for (uint64_t s = 1; s < kEntries; s++) w.append(encode_entry(step_entry(s, false, false, kK)));
  }
  const uint64_t file = fs::file_size(p);
  REQUIRE(file > (kEntries - 1) * kK * 12);
  const wit_test::PeakRss rss = wit_test::peak_rss_growth([&] {
    const WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
    uint64_t floats = 0;
    for (uint64_t i = 0; i < log.size(); i++) floats += log.entry(i).s.sketch.size();
    return std::array<uint64_t, 3>{floats, 0, 0};
  });
  CHECK(rss.values[0] == (kEntries - 1) * kK);
  if (!rss.measured) {
    WARN("memory not measured under AddressSanitizer, whose allocator keeps freed memory");
    return;
  }
  INFO("peak RSS grew by " << rss.grew << " bytes for a log of " << file);
  CHECK(rss.grew < kBound);
}

// ---- keys ------------------------------------------------------------------

TEST_CASE("key files round trip, with mode 0600 and a .pub beside", "[wlog][keys]") {
  TempDir d("wit-wlog");
  const SecretKey k = generate_key();
  save_key(d / "k.key", k);
  struct stat st {};
  REQUIRE(::stat((d / "k.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(load_key(d / "k.key").b == k.b);
  CHECK(load_public_key(d / "k.key") == k.pub());
  CHECK(load_public_key(d / "k.key.pub") == k.pub());
  const auto j = nlohmann::json::parse(read_file(d / "k.key.pub"));
  CHECK(j == nlohmann::json{{"format", "wit.key"}, {"version", 1}, {"type", "ed25519"}, {"public", k.pub().hex()}});
  CHECK(fs::directory_iterator(d.path()) != fs::directory_iterator());
  for (const auto& e : fs::directory_iterator(d.path())) CHECK(!contains(e.path().string(), ".tmp."));

  const Bytes msg = {'h', 'i'};
  auto sig = sign(k, msg);
  CHECK(verify_signature(k.pub(), msg, sig));
  CHECK(!verify_signature(generate_key().pub(), msg, sig));
  CHECK(!verify_signature(k.pub(), Bytes{'h', 'o'}, sig));
  sig[5] ^= 1;
  CHECK(!verify_signature(k.pub(), msg, sig));
  CHECK_THROWS_AS(save_key("-", k), Error);
}

TEST_CASE("key file errors are one line naming the file", "[wlog][keys]") {
  TempDir d("wit-wlog");
  const SecretKey k = generate_key();
  save_key(d / "k.key", k);
  auto j = nlohmann::json::parse(read_file(d / "k.key"));
  auto with = [&](const std::string& field, const nlohmann::json& v) {
    auto c = j;
    if (v.is_null()) c.erase(field);
    else c[field] = v;
    spit(d / "bad.key", c.dump());
    return error_of([&] { load_key(d / "bad.key"); });
  };
  CHECK(contains(error_of([&] { load_key(d / "missing.key"); }), "cannot open"));
  spit(d / "bad.key", std::string("not json"));
  CHECK(error_of([&] { load_key(d / "bad.key"); }) == "invalid key file: not a json object: " + (d / "bad.key"));
  CHECK(contains(with("format", "wit.commit"), "not a wit key file"));
  CHECK(contains(with("version", 2), "unsupported key file version 2"));
  CHECK(contains(with("type", "rsa"), "unsupported key type 'rsa'"));
  CHECK(contains(with("public", "zz"), "'public' is not 64 hex digits"));
  CHECK(contains(with("secret", "abcd"), "'secret' is not 128 hex digits"));
  CHECK(contains(with("public", generate_key().pub().hex()), "public key does not match the secret key"));
  std::string sec = j["secret"].get<std::string>();
  sec[3] = sec[3] == '0' ? '1' : '0';  // damage the seed half
  CHECK(contains(with("secret", sec), "does not match"));
  CHECK(contains(error_of([&] { load_key(d / "k.key.pub"); }), "not a secret key"));
  for (const std::string& e : {with("type", "rsa"), with("version", 2)}) CHECK(e.find('\n') == std::string::npos);
}

// ---- heads -----------------------------------------------------------------

TEST_CASE("tree heads sign exactly the documented bytes", "[wlog][heads]") {
  const SecretKey k = generate_key();
  const TreeHead h = sign_head(k, hash_of(1), 41, hash_of(2), 1700000000);
  const Bytes sb = h.signed_bytes();
  REQUIRE(sb.size() == 8 + 16 + 32 + 8 + 32 + 8);
  CHECK(get_le64(sb.data()) == 16);
  CHECK(std::memcmp(sb.data() + 8, "wit/tree-head/v1", 16) == 0);
  CHECK(std::memcmp(sb.data() + 24, hash_of(1).data(), 32) == 0);
  CHECK(get_le64(sb.data() + 56) == 41);
  CHECK(std::memcmp(sb.data() + 64, hash_of(2).data(), 32) == 0);
  CHECK(get_le64(sb.data() + 96) == 1700000000);
  CHECK(h.key == k.pub());
  CHECK(h.signature_ok());
  CHECK(verify_signature(k.pub(), sb, h.sig));

  const TreeHead back = TreeHead::from_json(h.to_json(), "h");
  CHECK(back.to_json() == h.to_json());
  CHECK(back.signature_ok());

  // Every signed field, the key and the signature are bound.
  for (int f = 0; f < 6; f++) {
    TreeHead t = h;
    switch (f) {
      case 0: t.run_id.b[0] ^= 1; break;
      case 1: t.size++; break;
      case 2: t.root.b[31] ^= 1; break;
      case 3: t.time++; break;
      case 4: t.key = generate_key().pub(); break;
      case 5: t.sig[0] ^= 1; break;
    }
    CHECK(!t.signature_ok());
  }
}

TEST_CASE("tree head json is strict", "[wlog][heads]") {
  const TreeHead h = sign_head(generate_key(), hash_of(1), 3, hash_of(2), 5);
  const nlohmann::json j = h.to_json();
  auto err = [&](const std::string& field, const nlohmann::json& v) {
    auto c = j;
    if (v.is_null()) c.erase(field);
    else c[field] = v;
    return error_of([&] { TreeHead::from_json(c, "run.heads:4"); });
  };
  CHECK(err("size", nullptr) == "invalid tree head: missing field 'size': run.heads:4");
  CHECK(contains(err("size", -1), "'size' is not a non-negative integer"));
  CHECK(contains(err("time", "now"), "'time' is not a non-negative integer"));
  CHECK(contains(err("root", "00"), "'root' is not 64 hex digits"));
  CHECK(contains(err("run_id", 7), "'run_id' is not a string"));
  CHECK(contains(err("key", std::string(64, 'g')), "'key' is not 64 hex digits"));
  CHECK(contains(err("sig", std::string(126, '0')), "'sig' is not 128 hex digits"));
  CHECK(contains(err("extra", 1), "unknown field 'extra'"));
  CHECK(contains(error_of([&] { TreeHead::from_json(nlohmann::json::array(), "x"); }), "not a json object"));
}

TEST_CASE("heads file: append, read, torn last line, bad lines", "[wlog][heads]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.heads";
  const SecretKey k = generate_key();
  std::vector<TreeHead> hs;
  for (uint64_t n : {10, 20, 30}) hs.push_back(sign_head(k, hash_of(1), n, hash_of(n), 100 + n));
  for (const auto& h : hs) append_head(p, h);
  auto back = read_heads(p);
  REQUIRE(back.size() == 3);
  for (size_t i = 0; i < 3; i++) CHECK(back[i].to_json() == hs[i].to_json());
  const std::string text = read_file(p);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);

  SECTION("a torn last line is dropped with repair and an error without") {
    const std::string torn = text + hs[0].to_json().dump().substr(0, 40);
    spit(p, torn);
    CHECK(error_of([&] { read_heads(p); }) == "torn last line (no newline): " + p + ":4");
    uint64_t tb = 0;
    CHECK(read_heads(p, TornLine::kIgnore, &tb).size() == 3);
    CHECK(tb == 40);
    CHECK(read_file(p) == torn);  // reading never changes the file
    CHECK(contains(error_of([&] { append_head(p, hs[0]); }), "heads file ends in a torn line"));
    CHECK(cut_torn_heads(p) == 40);
    CHECK(read_file(p) == text);
    CHECK(cut_torn_heads(p) == 0);
    append_head(p, hs[2]);
    CHECK(read_heads(p).size() == 4);
  }
  SECTION("even a complete head without its newline is torn") {
    spit(p, text + hs[0].to_json().dump());
    CHECK_THROWS_AS(read_heads(p), Error);
    CHECK(read_heads(p, TornLine::kIgnore).size() == 3);
  }
  SECTION("other bad lines are errors naming file:LINE, with or without repair") {
    std::string lines = text;
    lines.insert(text.find('\n') + 1, "{\"size\": 1}\n");
    spit(p, lines);
    for (bool repair : {false, true})
      CHECK(error_of([&] { read_heads(p, repair ? TornLine::kIgnore : TornLine::kRefuse); }) == "invalid tree head: missing field 'run_id': " + p + ":2");
    spit(p, text + "\n");
    CHECK(error_of([&] { read_heads(p, TornLine::kIgnore); }) == "invalid tree head: empty line: " + p + ":4");
    spit(p, "garbage\n" + text);
    CHECK(error_of([&] { read_heads(p, TornLine::kIgnore); }) == "invalid tree head: not valid json: " + p + ":1");
  }
  SECTION("a torn only line") {
    spit(p, std::string("{\"ru"));
    CHECK(read_heads(p, TornLine::kIgnore).empty());
    CHECK(cut_torn_heads(p) == 4);
    CHECK(read_file(p).empty());
  }
  CHECK(cut_torn_heads(d / "none.heads") == 0);
  CHECK(!fs::exists(d / "none.heads"));
}

// ---- log proof documents ---------------------------------------------------

TEST_CASE("log proof documents verify alone and fail when tampered", "[wlog][proofs]") {
  TempDir d("wit-wlog");
  const std::string p = d / "run.wlog";
  write_log(p, 13);
  WitnessLog log = WitnessLog::open(p, TornTail::kRefuse);
  const SecretKey k = generate_key();
  const Hash32 run = genesis().g.run_id;
  const TreeHead h13 = sign_head(k, run, 13, log.root(13), 9);
  const TreeHead h5 = sign_head(k, run, 5, log.root(5), 8);
  LogProofPins pins;
  pins.key = k.pub();
  pins.run_id = run;

  for (uint64_t i = 0; i < 13; i++) {
    auto doc = log_inclusion_document(log, h13, i);
    auto v = verify_log_proof(doc, pins, "proof");
    CHECK(v.ok);
    CHECK(v.reason.empty());
  }
  auto inc = log_inclusion_document(log, h13, 6);
  auto bad_inc = [&](const std::function<void(nlohmann::json&)>& f, const LogProofPins& pn) {
    auto c = inc;
    f(c);
    return verify_log_proof(c, pn, "proof");
  };
  CHECK(!bad_inc([](auto& c) { c["index"] = 7; }, pins).ok);
  CHECK(!bad_inc([](auto& c) { c["head"]["size"] = 12; }, pins).ok);
  CHECK(!bad_inc([](auto& c) { c["leaf"] = std::string(64, '0'); }, pins).ok);
  CHECK(!bad_inc([](auto& c) {
          std::string s = c["path"][1];
          s[0] = s[0] == 'a' ? 'b' : 'a';
          c["path"][1] = s;
        }, pins).ok);
  CHECK(!bad_inc([](auto& c) { c["path"].erase(0); }, pins).ok);
  {  // rewriting the entry and its leaf consistently still fails at the root
    LogEntry e = decode_entry(log.entry_bytes(6), "e");
    e.s.lr += 1;
    const Bytes b = encode_entry(e);
    auto r = bad_inc([&](auto& c) {
      c["entry"] = to_hex(b);
      c["leaf"] = entry_leaf(b).hex();
    }, pins);
    CHECK(!r.ok);
    CHECK(r.reason == "log entry 6 is not in the signed log: proof does not lead to the root");
  }
  LogProofPins other = pins;
  other.key = generate_key().pub();
  CHECK(contains(bad_inc([](auto&) {}, other).reason, "signed by another key"));
  other = pins;
  other.run_id = hash_of(99);
  CHECK(contains(bad_inc([](auto&) {}, other).reason, "is for run"));
  CHECK(bad_inc([](auto&) {}, LogProofPins{}).ok);
  CHECK_THROWS_AS(bad_inc([](auto& c) { c.erase("path"); }, pins), Error);
  CHECK_THROWS_AS(bad_inc([](auto& c) { c["format"] = "wit.proof"; }, pins), Error);
  CHECK_THROWS_AS(bad_inc([](auto& c) { c["version"] = 2; }, pins), Error);
  CHECK_THROWS_AS(bad_inc([](auto& c) { c["entry"] = "xyz"; }, pins), Error);

  // Consistency: signed to signed, unsigned ends, tampering.
  auto cons = log_consistency_document(log, run, 5, 13, &h5, &h13);
  CHECK(verify_log_proof(cons, pins, "c").ok);
  for (uint64_t m = 1; m <= 13; m++) {
    auto c = log_consistency_document(log, run, m, 13, nullptr, &h13);
    CHECK(verify_log_proof(c, pins, "c").ok);
    CHECK(!c["old"].contains("sig"));
  }
  auto t = cons;
  t["old"]["root"] = log.root(6).hex();
  CHECK(!verify_log_proof(t, pins, "c").ok);  // the signature no longer matches
  t = log_consistency_document(log, run, 5, 13, nullptr, nullptr);
  CHECK(verify_log_proof(t, pins, "c").ok);
  t["old"]["root"] = log.root(6).hex();
  CHECK(verify_log_proof(t, pins, "c").reason == "proof does not lead to the old root");
  t = cons;
  t["path"][0] = hash_of(5).hex();
  CHECK(!verify_log_proof(t, pins, "c").ok);
  t = cons;
  t["old"]["extra"] = 1;
  CHECK_THROWS_AS(verify_log_proof(t, pins, "c"), Error);
}

TEST_CASE("verify_entry_proof: one order and one wording for a log entry's proof", "[wlog][proofs]") {
  const Hash32 run = genesis().g.run_id;
  // A log of 4 entries: the genesis, step 1, bytes that do not decode, and step 4 at index 3 (out of place).
  std::vector<Bytes> enc = {encode_entry(genesis()), encode_entry(step_entry(1)), Bytes{'W', 'I', 'T', 'E', 9},
                            encode_entry(step_entry(4))};
  std::vector<Hash32> leaves;
  for (const Bytes& b : enc) leaves.push_back(entry_leaf(b));
  const MerkleTree tree(kBlake2bTree, leaves.data(), leaves.size());
  const Hash32 root = tree.root();
  auto path = [&](uint64_t i) { return tree.hashes(inclusion_ranges(i, 4)); };
  auto prove = [&](uint64_t i, uint64_t at) { return verify_entry_proof(enc[i], at, 4, root, path(at), run, "e"); };

  const ProvedEntry one = prove(1, 1);
  CHECK_FALSE(one.no);
  CHECK(one.decoded);
  CHECK(one.entry.s.step == 1);
  // The proof first: the entry is not where it says.
  const ProvedEntry moved = prove(1, 0);
  REQUIRE(moved.no);
  CHECK(*moved.no == "log entry 0 is not in the signed log: proof does not lead to the root");
  CHECK_FALSE(moved.decoded);
  // Proved bytes that do not decode are a no (the evidence), said with the decoder's message.
  const ProvedEntry junk = prove(2, 2);
  REQUIRE(junk.no);
  CHECK(junk.no->find(": e at byte") != std::string::npos);
  CHECK_FALSE(junk.decoded);
  // Proved and decoded, but out of its place.
  const ProvedEntry misplaced = prove(3, 3);
  REQUIRE(misplaced.no);
  CHECK(*misplaced.no == "entry 3 is the entry of step 4, not of step 3");
  CHECK(misplaced.decoded);
}
