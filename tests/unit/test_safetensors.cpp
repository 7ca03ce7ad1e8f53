// Safetensors: the writer against files built by hand from the public spec,
// round trips, one rejection (and its message) per validation rule, the
// tensor leaf and checkpoint root, and a file written and mapped back.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"
#include "wit/hash/tags.h"

using namespace wit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

Bytes hex(const std::string& s) {
  Bytes b;
  std::string clean;
  for (char c : s)
    if (c != ' ') clean += c;
  REQUIRE(from_hex(clean, b));
  return b;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A file from a header text and data bytes, the length field written by hand.
Bytes file_of(const std::string& header, const Bytes& data = {}) {
  // Assembled as a string: GCC 12 warns falsely (-Warray-bounds) on inserting
  // into a vector this small.
  std::string s(8, '\0');
  put_le64(reinterpret_cast<uint8_t*>(s.data()), header.size());
  s += header;
  s.append(data.begin(), data.end());
  return Bytes(s.begin(), s.end());
}

// The four tensors of the reference files. Inputs are native values, so the
// comparison with hand-written little-endian bytes also checks byte order.
struct Reference {
  float w[6] = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f, -0.25f};
  uint16_t b16[2] = {0x3F80, 0xC040};  // bfloat16 1.0, -3.0
  int64_t step[1] = {7};
  std::vector<TensorView> tensors() const {
    // Deliberately not in name order: the writer sorts.
    return {
        {"step", DType::kI64, {1}, ByteView(reinterpret_cast<const uint8_t*>(step), 8)},
        {"empty", DType::kU8, {0}, ByteView()},
        {"b16", DType::kBF16, {2}, ByteView(reinterpret_cast<const uint8_t*>(b16), 4)},
        {"W", DType::kF32, {2, 3}, ByteView(reinterpret_cast<const uint8_t*>(w), 24)},
    };
  }
};

// The data section of the reference file, in name order W, b16, empty, step.
const char* kReferenceData =
    "0000803f 000000c0 0000003f 00000000 00004040 000080be"  // W: 1, -2, 0.5, 0, 3, -0.25
    "803f 40c0"                                              // b16: 1.0, -3.0
    ""                                                       // empty: no bytes
    "0700000000000000";                                      // step: 7

const char* kReferenceTensors =
    "\"W\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b16\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[24,28]},"
    "\"empty\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[28,28]},"
    "\"step\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[28,36]}}";

bool same_tensor(const TensorView& a, const TensorView& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.data.size == b.data.size &&
         (a.data.size == 0 || std::memcmp(a.data.data, b.data.data, a.data.size) == 0);
}

void require_same(const std::vector<TensorView>& a, std::vector<TensorView> b) {
  std::sort(b.begin(), b.end(), [](const TensorView& x, const TensorView& y) { return x.name < y.name; });
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); i++) {
    INFO(a[i].name);
    REQUIRE(same_tensor(a[i], b[i]));
  }
}

std::string parse_error(const Bytes& b) {
  try {
    Safetensors::parse(b, "t.st");
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

// One valid F32 [2] tensor's entry, for the malformed cases to vary.
std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return "{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

}  // namespace

TEST_CASE("writer matches files built by hand from the spec", "[safetensors]") {
  uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  REQUIRE(first == 1);  // the inputs below are native values; the test assumes a little-endian host

  Reference r;
  SECTION("four tensors, no metadata") {
    const std::string h = std::string("{") + kReferenceTensors;
    REQUIRE(h.size() == 231);  // counted by hand: 231 + 1 space = 232 = 0xe8
    const Bytes expect = cat({hex("e800000000000000"), text(h + " "), hex(kReferenceData)});
    REQUIRE(encode_safetensors(r.tensors()) == expect);
  }
  SECTION("with metadata: \"__metadata__\" first, even before a capital letter") {
    const std::string h = std::string("{\"__metadata__\":{\"format\":\"pt\",\"step\":\"7\"},") + kReferenceTensors;
    REQUIRE(h.size() == 273);  // 273 + 7 spaces = 280 = 0x118
    const Bytes expect = cat({hex("1801000000000000"), text(h + "       "), hex(kReferenceData)});
    REQUIRE(encode_safetensors(r.tensors(), {{"step", "7"}, {"format", "pt"}}) == expect);
  }
  SECTION("no tensors: the reference implementation's empty file") {
    REQUIRE(encode_safetensors({}) == cat({hex("0800000000000000"), text("{}      ")}));
  }
  SECTION("one tensor whose header needs no padding (as the reference implementation writes it)") {
    const float v[6] = {0, 1, 2, 3, 4, 5};
    const std::string h = "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}";
    REQUIRE(h.size() == 64);
    const Bytes expect = cat({hex("4000000000000000"), text(h),
                              hex("00000000 0000803f 00000040 00004040 00008040 0000a040")});
    const TensorView t{"attn.0", DType::kF32, {1, 2, 3}, ByteView(reinterpret_cast<const uint8_t*>(v), 24)};
    REQUIRE(encode_safetensors({t}) == expect);
  }
  SECTION("names and metadata are JSON-escaped") {
    const uint8_t one = 1;
    const TensorView t{"a\"b\\c\n\xc3\xa9", DType::kBool, {}, ByteView(&one, 1)};
    const std::string h = "{\"__metadata__\":{\"k\":\"tab\\there\"},"
                          "\"a\\\"b\\\\c\\n\xc3\xa9\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[0,1]}}";
    Bytes expect = file_of(h + std::string((8 - h.size() % 8) % 8, ' '), {1});
    REQUIRE(encode_safetensors({t}, {{"k", "tab\there"}}) == expect);
    Safetensors s = Safetensors::parse(expect, "t.st");
    REQUIRE(s.tensors().at(0).name == t.name);
    REQUIRE(s.metadata().at("k") == "tab\there");
  }
}

TEST_CASE("the hand-built reference file parses back", "[safetensors]") {
  Reference r;
  const std::string h = std::string("{\"__metadata__\":{\"format\":\"pt\",\"step\":\"7\"},") + kReferenceTensors;
  const Bytes b = cat({hex("1801000000000000"), text(h + "       "), hex(kReferenceData)});
  Safetensors s = Safetensors::parse(b, "t.st");
  require_same(s.tensors(), r.tensors());
  REQUIRE(s.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"step", "7"}});
  REQUIRE(s.find("b16") != nullptr);
  REQUIRE(s.find("b16")->data.data == b.data() + 8 + 280 + 24);  // a view into the buffer, not a copy
  REQUIRE(s.find("empty")->numel() == 0);
  REQUIRE(s.find("W")->numel() == 6);
  REQUIRE(s.find("missing") == nullptr);
}

TEST_CASE("reader accepts what the spec allows beyond what wit writes", "[safetensors]") {
  SECTION("data in another order than the names, and whitespace in the header") {
    const std::string h = "{ \"b\" : " + entry("\"U8\"", "[2]", "[0, 2]") + ",\n \"a\":" +
                          entry("\"I16\"", "[1]", "[2,4]") + "}\n\t ";
    const auto bytes = file_of(h, {1, 2, 3, 4});  // the tensors are views into it: it must outlive them
    Safetensors s = Safetensors::parse(bytes, "t.st");
    REQUIRE(s.tensors().size() == 2);
    REQUIRE(s.tensors()[0].name == "a");
    REQUIRE(s.tensors()[0].data.data[0] == 3);
    REQUIRE(s.tensors()[1].data.data[1] == 2);
  }
  SECTION("empty tensors anywhere, several at one offset, and zero dims with large ones") {
    const std::string h = "{\"a\":" + entry("\"F32\"", "[3,0,5]", "[0,0]") + ",\"b\":" +
                          entry("\"F64\"", "[0]", "[0,0]") + ",\"c\":" + entry("\"U8\"", "[1]", "[0,1]") +
                          ",\"d\":" + entry("\"U8\"", "[0,9223372036854775807]", "[1,1]") +
                          ",\"e\":" + entry("\"I64\"", "[1152921504606846976,0]", "[1,1]") + "}";
    Safetensors s = Safetensors::parse(file_of(h, {9}), "t.st");
    REQUIRE(s.tensors().size() == 5);
    REQUIRE(s.find("d")->shape[1] == INT64_MAX);
    REQUIRE(s.find("d")->numel() == 0);
  }
  SECTION("scalars (rank 0) and an empty header object") {
    REQUIRE(Safetensors::parse(file_of("{\"s\":" + entry("\"I32\"", "[]", "[0,4]") + "}", {1, 0, 0, 0}), "t.st")
                .find("s")
                ->numel() == 1);
    REQUIRE(Safetensors::parse(file_of("{}"), "t.st").tensors().empty());
  }
  SECTION("empty metadata and a \"-0\" offset") {
    const std::string h = "{\"__metadata__\":{},\"x\":" + entry("\"U8\"", "[1]", "[-0,1]") + "}";
    Safetensors s = Safetensors::parse(file_of(h, {5}), "t.st");
    REQUIRE(s.metadata().empty());
    REQUIRE(s.tensors().size() == 1);
  }
}

TEST_CASE("round trips", "[safetensors]") {
  std::mt19937_64 rng(42);
  const DType all[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64,
                       DType::kI32, DType::kI16, DType::kI8,  DType::kU8,   DType::kBool};
  for (int round = 0; round < 50; round++) {
    std::vector<Bytes> store;
    std::vector<TensorView> ts;
    const int n = int(rng() % 8);
    store.reserve(n);
    for (int i = 0; i < n; i++) {
      TensorView t;
      t.name = "t" + std::to_string(rng() % 1000) + "." + std::to_string(i);
      t.dtype = all[rng() % 10];
      for (int r = int(rng() % 4); r > 0; r--) t.shape.push_back(int64_t(rng() % 5));
      Bytes b(t.numel() * dtype_size(t.dtype));
      for (auto& x : b) x = uint8_t(rng());
      store.push_back(std::move(b));
      t.data = store.back();
      ts.push_back(t);
    }
    std::map<std::string, std::string> meta;
    if (rng() % 2) meta = {{"Z", "last"}, {"0", "first"}, {"run", "\x01\xe2\x82\xac"}};
    const Bytes enc = encode_safetensors(ts, meta);
    REQUIRE((8 + get_le64(enc.data())) % 8 == 0);  // header padded: the data starts 8-aligned
    Safetensors s = Safetensors::parse(enc, "t.st");
    require_same(s.tensors(), ts);
    REQUIRE(s.metadata() == meta);
    // Re-encoding what was read gives the same bytes: one canonical file.
    REQUIRE(encode_safetensors(s.tensors(), s.metadata()) == enc);
  }
}

TEST_CASE("writer refuses what no reader would accept", "[safetensors]") {
  const uint8_t buf[8] = {};
  auto t = [&](const std::string& name, DType d, std::vector<int64_t> shape, size_t n) {
    return TensorView{name, d, std::move(shape), ByteView(buf, n)};
  };
  REQUIRE_THROWS_WITH(encode_safetensors({t("a", DType::kU8, {1}, 1), t("a", DType::kU8, {1}, 1)}),
                      Contains("duplicate tensor name \"a\""));
  REQUIRE_THROWS_WITH(encode_safetensors({t("a", DType::kF32, {2}, 4)}), Contains("4 bytes of data but F32 [2] needs 8"));
  REQUIRE_THROWS_WITH(encode_safetensors({t("a", DType::kF32, {-1}, 0)}), Contains("negative dimension"));
  REQUIRE_THROWS_WITH(encode_safetensors({t("__metadata__", DType::kU8, {1}, 1)}), Contains("reserved"));
  REQUIRE_THROWS_WITH(encode_safetensors({t("\xff", DType::kU8, {1}, 1)}), Contains("not valid utf-8"));
  REQUIRE_THROWS_WITH(encode_safetensors({}, {{"k", "\xc3"}}), Contains("not valid utf-8"));
  REQUIRE_THROWS_AS(encode_safetensors({t("a", DType::kU8, {1}, 1), t("a", DType::kU8, {1}, 1)}), Error);
}

TEST_CASE("every malformed file is rejected with its own message", "[safetensors]") {
  const std::string ok = entry("\"F32\"", "[2]", "[0,8]");
  const Bytes eight(8, 0);
  auto one = [&](const std::string& e, const Bytes& data = Bytes(8, 0)) {
    return parse_error(file_of("{\"a\":" + e + "}", data));
  };
  // The valid base the cases vary.
  REQUIRE(one(ok) == "(parsed)");

  SECTION("header length") {
    REQUIRE_THAT(parse_error(Bytes{1, 0, 0}), Contains("shorter than the 8-byte header length") &&
                                                  Contains("t.st at byte 0"));
    Bytes big = file_of("{}");
    put_le64(big.data(), 100'000'001);
    REQUIRE_THAT(parse_error(big), Contains("header length 100000001 exceeds the limit of 100000000 bytes"));
    put_le64(big.data(), 3);
    REQUIRE_THAT(parse_error(big), Contains("header length 3 exceeds the file (2 bytes after the length)"));
    put_le64(big.data(), UINT64_MAX);
    REQUIRE_THAT(parse_error(big), Contains("exceeds the limit"));
  }
  SECTION("header not a JSON object") {
    REQUIRE_THAT(parse_error(file_of("[1,2]")), Contains("header is not a json object") && Contains("at byte 8"));
    REQUIRE_THAT(parse_error(file_of(" {}")), Contains("header is not a json object"));
    REQUIRE_THAT(parse_error(file_of("")), Contains("header is not a json object"));
    REQUIRE_THAT(parse_error(file_of("{\"a\":")), Contains("header is not valid json"));
    REQUIRE_THAT(parse_error(file_of("{}x")), Contains("header is not valid json") && Contains("at byte 10"));
    REQUIRE_THAT(parse_error(file_of("{} {}")), Contains("header is not valid json"));
    // nlohmann alone would stop at a NUL and ignore the rest.
    REQUIRE_THAT(parse_error(file_of(std::string("{}\0\0", 4))),
                 Contains("header is not valid json (NUL byte)") && Contains("at byte 10"));
    REQUIRE_THAT(parse_error(file_of(std::string("{}\0{\"a\":1}", 10))), Contains("NUL byte"));
    REQUIRE_THAT(parse_error(file_of(std::string("{\"a\0\":1}", 8))), Contains("NUL byte"));
    REQUIRE_THAT(parse_error(file_of("{\"\xff\":1}")), Contains("header is not valid json"));
    REQUIRE_THAT(parse_error(file_of("{\"a\":" + entry("\"F32\"", "[[2]]", "[0,8]") + "}", eight)),
                 Contains("nests deeper"));
  }
  SECTION("duplicate keys") {
    REQUIRE_THAT(parse_error(file_of("{\"a\":" + ok + ",\"a\":" + ok + "}", eight)),
                 Contains("duplicate key \"a\" in header"));
    REQUIRE_THAT(one("{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"),
                 Contains("duplicate key \"dtype\""));
    REQUIRE_THAT(parse_error(file_of("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}")), Contains("duplicate key \"k\""));
  }
  SECTION("entries") {
    REQUIRE_THAT(one("[1]"), Contains("tensor \"a\": entry is not an object"));
    REQUIRE_THAT(one("{\"dtype\":\"F32\",\"shape\":[2]}"), Contains("missing field \"data_offsets\""));
    REQUIRE_THAT(one("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}"),
                 Contains("unknown field \"x\""));
  }
  SECTION("dtype") {
    REQUIRE_THAT(one(entry("\"U16\"", "[2]", "[0,8]")), Contains("tensor \"a\": unknown dtype \"U16\""));
    REQUIRE_THAT(one(entry("\"f32\"", "[2]", "[0,8]")), Contains("unknown dtype \"f32\""));
    REQUIRE_THAT(one(entry("4", "[2]", "[0,8]")), Contains("dtype is not a string"));
    REQUIRE_THROWS_WITH(parse_dtype("F8_E4M3", "x"), "unknown dtype \"F8_E4M3\": x");
    REQUIRE(parse_dtype("BF16", "x") == DType::kBF16);
  }
  SECTION("shape") {
    REQUIRE_THAT(one(entry("\"F32\"", "[-1]", "[0,8]")), Contains("negative dimension -1 in shape"));
    REQUIRE_THAT(one(entry("\"F32\"", "[2.0]", "[0,8]")), Contains("shape holds something other than an integer"));
    REQUIRE_THAT(one(entry("\"F32\"", "[\"2\"]", "[0,8]")), Contains("other than an integer"));
    REQUIRE_THAT(one(entry("\"F32\"", "[1e400]", "[0,8]")), Contains("not valid json"));  // out of double range
    REQUIRE_THAT(one(entry("\"F32\"", "[18446744073709551616]", "[0,8]")), Contains("other than an integer"));
    REQUIRE_THAT(one(entry("\"F32\"", "[9223372036854775808]", "[0,8]")),
                 Contains("dimension 9223372036854775808 in shape is too large"));
    REQUIRE_THAT(one(entry("\"F32\"", "2", "[0,8]")), Contains("shape is not an array"));
    REQUIRE_THAT(one(entry("\"F32\"", "[1099511627776,1099511627776,1099511627776]", "[0,8]")),
                 Contains("overflows 64 bits"));
    // numel fits but numel * 8 does not.
    REQUIRE_THAT(one(entry("\"F64\"", "[2305843009213693952]", "[0,8]")), Contains("overflows 64 bits"));
    // A zero dimension does not excuse the others: the rule does not depend on the order of the dims.
    REQUIRE_THAT(one(entry("\"F64\"", "[0,2305843009213693952]", "[0,0]"), {}), Contains("overflows 64 bits"));
    REQUIRE_THAT(one(entry("\"F64\"", "[2305843009213693952,0]", "[0,0]"), {}), Contains("overflows 64 bits"));
  }
  SECTION("data_offsets") {
    for (const char* bad : {"[0]", "[0,8,8]", "[\"0\",8]", "[-1,8]", "[0,8.5]", "{}", "8"})
      REQUIRE_THAT(one(entry("\"F32\"", "[2]", bad)), Contains("data_offsets is not two non-negative integers"));
    REQUIRE_THAT(one(entry("\"F32\"", "[0]", "[8,0]")), Contains("data_offsets begin 8 is after end 0"));
    REQUIRE_THAT(one(entry("\"F32\"", "[4]", "[0,16]")), Contains("data_offsets end 16 is beyond the data (8 bytes)"));
    REQUIRE_THAT(one(entry("\"F32\"", "[3]", "[0,8]")), Contains("data_offsets span 8 bytes but F32 [3] needs 12"));
    REQUIRE_THAT(one(entry("\"F32\"", "[1]", "[0,8]")), Contains("needs 4"));
  }
  SECTION("coverage of the data: overlaps, holes, trailing bytes") {
    const std::string h1 = "{\"a\":" + entry("\"F32\"", "[2]", "[0,8]") + ",\"b\":" + entry("\"U8\"", "[4]", "[4,8]") + "}";
    REQUIRE_THAT(parse_error(file_of(h1, eight)), Contains("tensors \"a\" and \"b\" overlap"));
    const std::string h2 = "{\"a\":" + entry("\"U8\"", "[2]", "[0,2]") + ",\"b\":" + entry("\"U8\"", "[4]", "[4,8]") + "}";
    // The hole is data bytes 2..3: file byte 8 + header + 2.
    REQUIRE_THAT(parse_error(file_of(h2, eight)),
                 Contains("hole of 2 bytes before tensor \"b\"") && Contains("at byte " + std::to_string(8 + h2.size() + 2)));
    const std::string h3 = "{\"a\":" + entry("\"U8\"", "[4]", "[4,8]") + "}";
    REQUIRE_THAT(parse_error(file_of(h3, eight)), Contains("hole of 4 bytes before tensor \"a\""));
    REQUIRE_THAT(one(entry("\"F32\"", "[2]", "[0,8]"), Bytes(11, 0)), Contains("3 trailing bytes after the last tensor"));
    REQUIRE_THAT(parse_error(file_of("{}", {1})), Contains("1 trailing bytes"));
    // An empty tensor inside another one's bytes is refused, as the reference reader does.
    const std::string h4 = "{\"a\":" + entry("\"F32\"", "[2]", "[0,8]") + ",\"e\":" + entry("\"U8\"", "[0]", "[4,4]") + "}";
    REQUIRE_THAT(parse_error(file_of(h4, eight)), Contains("overlap"));
  }
  SECTION("metadata") {
    REQUIRE_THAT(parse_error(file_of("{\"__metadata__\":{\"k\":1}}")), Contains("metadata value for \"k\" is not a string"));
    REQUIRE_THAT(parse_error(file_of("{\"__metadata__\":{\"k\":null}}")), Contains("is not a string"));
    REQUIRE_THAT(parse_error(file_of("{\"__metadata__\":[]}")), Contains("\"__metadata__\" is not an object"));
    REQUIRE_THAT(parse_error(file_of("{\"__metadata__\":null}")), Contains("\"__metadata__\" is not an object"));
  }
  SECTION("messages are one line and name the file") {
    const std::string m = one("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\\ny\":1}");
    REQUIRE_THAT(m, Contains("unknown field \"x\\ny\"") && Contains(": t.st at byte 8"));
    REQUIRE(m.find('\n') == std::string::npos);
    REQUIRE(m.rfind("invalid safetensors: ", 0) == 0);
  }
}

TEST_CASE("tensor leaf and state root", "[safetensors][state_root]") {
  Reference r;
  const std::vector<TensorView> ts = r.tensors();

  SECTION("tensor leaf byte layout, hashed by hand") {
    const TensorView& w = ts[3];
    REQUIRE(w.name == "W");
    Bytes m;
    auto field = [&](ByteView v) {
      append_le64(m, v.size);
      m.insert(m.end(), v.data, v.data + v.size);
    };
    field(ByteView(tags::kTensorLeaf));
    field(ByteView(std::string_view("W")));
    field(ByteView(std::string_view("F32")));
    append_le64(m, 2);
    append_le64(m, 2);
    append_le64(m, 3);
    append_le64(m, w.data.size);
    // One chunk: the chunk tree's root is the chunk's RFC 6962 leaf H(0x00 || bytes).
    Bytes leaf_in{0x00};
    leaf_in.insert(leaf_in.end(), w.data.data, w.data.data + w.data.size);
    const Hash32 chunk = blake2b_256(leaf_in);
    m.insert(m.end(), chunk.data(), chunk.data() + 32);
    REQUIRE(tensor_leaf(w) == blake2b_256(m));
  }
  SECTION("chunk trees: chunks of 64 KiB, the last one shorter, on any thread count") {
    // Sizes around the chunk boundaries and the four-lane kernel's groups of four.
    std::mt19937 g(7);
    for (uint64_t n : {uint64_t(0), uint64_t(1), kStateChunkBytes - 1, kStateChunkBytes, kStateChunkBytes + 1,
                       4 * kStateChunkBytes, 5 * kStateChunkBytes + 3, 9 * kStateChunkBytes}) {
      Bytes data(n);
      for (auto& c : data) c = uint8_t(g());
      std::vector<Hash32> leaves;
      for (uint64_t off = 0; off < n; off += kStateChunkBytes)
        leaves.push_back(kBlake2bTree.leaf(ByteView(data).sub(off, std::min(kStateChunkBytes, n - off))));
      const Hash32 want = merkle_root(kBlake2bTree, leaves);
      REQUIRE(chunk_root(ByteView(data)) == want);
      // Many tensors, so the parallel split lands inside tensors too.
      std::vector<TensorView> many;
      std::vector<std::string> names;
      for (int i = 0; i < 7; i++) names.push_back("t" + std::to_string(i));
      for (int i = 0; i < 7; i++) many.push_back({names[size_t(i)], DType::kU8, {int64_t(n)}, ByteView(data)});
      const NamedLeaves one = tensor_leaves(many, 1);
      for (unsigned th : {2u, 3u, 5u}) REQUIRE(tensor_leaves(many, th) == one);
      REQUIRE(one[0].second == tensor_leaf(many[0]));
    }
  }
  SECTION("state root joins a parameters root and an optimizer root") {
    const TensorView p1{"a.weight", DType::kF32, {2}, ts[3].data.sub(0, 8)};
    const TensorView p2{"b", DType::kF32, {1}, ts[3].data.sub(8, 4)};
    const TensorView m1{"adam.m.a.weight", DType::kF32, {2}, ts[3].data.sub(12, 8)};
    const TensorView st{"wit.step", DType::kI64, {1}, ts[3].data.sub(0, 8)};
    const std::vector<TensorView> state{st, m1, p2, p1};
    const StateRoot sr = state_root_parts(state);
    REQUIRE(sr.params == merkle_root(kBlake2bTree, {tensor_leaf(p1), tensor_leaf(p2)}));
    REQUIRE(sr.optim == merkle_root(kBlake2bTree, {tensor_leaf(m1), tensor_leaf(st)}));
    Bytes j;
    append_le64(j, tags::kStateRoot.size());
    j.insert(j.end(), tags::kStateRoot.begin(), tags::kStateRoot.end());
    j.insert(j.end(), sr.params.data(), sr.params.data() + 32);
    j.insert(j.end(), sr.optim.data(), sr.optim.data() + 32);
    REQUIRE(sr.root == blake2b_256(j));
    REQUIRE(state_root(state) == sr.root);
    // A parameters-only file has the same parameters root.
    REQUIRE(state_root_parts({p2, p1}).params == sr.params);
    REQUIRE(is_param_tensor("h.0.attn.qkv.weight"));
    REQUIRE_FALSE(is_param_tensor("adam.v.wte"));
    REQUIRE_FALSE(is_param_tensor("wit.step"));
  }
  SECTION("root does not depend on the input order; the parsed file has the same root") {
    std::vector<TensorView> shuffled = ts;
    std::mt19937 g(1);
    for (int i = 0; i < 10; i++) {
      std::shuffle(shuffled.begin(), shuffled.end(), g);
      REQUIRE(state_root(shuffled) == state_root(ts));
    }
    REQUIRE(state_root(Safetensors::parse(encode_safetensors(ts), "t.st").tensors()) == state_root(ts));
    REQUIRE(state_root({}) == join_state_root(kBlake2bTree.empty(), kBlake2bTree.empty()));
  }
  SECTION("any change moves the root") {
    const Hash32 base = state_root(ts);
    std::vector<Hash32> seen{base};
    auto differs = [&](std::vector<TensorView> v) {
      const Hash32 h = state_root(v);
      REQUIRE(std::find(seen.begin(), seen.end(), h) == seen.end());
      seen.push_back(h);
    };
    Bytes flipped(ts[3].data.data, ts[3].data.data + 24);
    flipped[17] ^= 0x01;
    auto v = ts;
    v[3].data = flipped;
    differs(v);  // one bit of one byte
    v = ts;
    v[3].name = "X";
    differs(v);  // a name
    v = ts;
    v[3].dtype = DType::kI32;
    differs(v);  // a dtype of the same size, same bytes
    v = ts;
    v[3].shape = {3, 2};
    differs(v);  // a shape with the same numel
    v[3].shape = {6};
    differs(v);
    v[3].shape = {6, 1};
    differs(v);
    v = ts;
    v[1].shape = {0, 0};
    differs(v);  // an empty tensor's shape
    v = ts;
    v.pop_back();
    differs(v);  // a tensor fewer
    v = ts;
    v[3].name = "adam.m.W";
    differs(v);  // the same tensor moved from the parameters to the optimizer root
    // Name and dtype fields are length-prefixed: moving a byte from one to the other changes the leaf.
    const uint8_t one = 1;
    REQUIRE(tensor_leaf({"aF", DType::kF32, {}, ByteView()}) != tensor_leaf({"a", DType::kF32, {}, ByteView()}));
    REQUIRE(tensor_leaf({"a", DType::kU8, {1}, ByteView(&one, 1)}) != tensor_leaf({"a", DType::kBool, {1}, ByteView(&one, 1)}));
  }
  SECTION("duplicate names have no root") {
    auto v = ts;
    v.push_back(ts[0]);
    REQUIRE_THROWS_WITH(state_root(v), Contains("duplicate tensor name 'step'"));
  }
}

TEST_CASE("write_safetensors and Safetensors::open", "[safetensors]") {
  std::string dir = (fs::temp_directory_path() / "wit-safetensors-XXXXXX").string();
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  const std::string path = dir + "/ckpt.safetensors";
  Reference r;
  const std::map<std::string, std::string> meta{{"format", "pt"}};
  write_safetensors(path, r.tensors(), meta);

  std::ifstream in(path, std::ios::binary);
  const Bytes on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(on_disk == encode_safetensors(r.tensors(), meta));

  Safetensors s = Safetensors::open(path);
  require_same(s.tensors(), r.tensors());
  REQUIRE(s.metadata() == meta);
  // The views stay valid in a copy, which shares the mapping.
  Safetensors copy = s;
  s = Safetensors::parse(file_of("{}"), "x");
  REQUIRE(copy.find("W")->data.data[3] == 0x3f);

  std::ofstream(dir + "/bad.safetensors", std::ios::binary) << std::string("\x04\0\0\0\0\0\0\0{}", 10);
  REQUIRE_THROWS_WITH(Safetensors::open(dir + "/bad.safetensors"),
                      Contains("header length 4 exceeds the file") && Contains(dir + "/bad.safetensors at byte 0"));
  REQUIRE_THROWS_AS(Safetensors::open(dir + "/missing.safetensors"), Error);
  fs::remove_all(dir);
}
