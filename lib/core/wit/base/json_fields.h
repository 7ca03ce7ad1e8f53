// Reading typed fields of wit's JSON documents with one-line errors of the
// form "<kind>: <why>: <where>", e.g. "invalid proof: missing field 'leaf': p.json".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"

namespace wit::jsonf {

[[noreturn]] void bad(const char* kind, const std::string& why, const std::string& where);
// Parses a whole document; text that is not JSON is the one JSON-parse error,
// "KIND: not valid json: WHERE" (e.g. "invalid challenge: not valid json: c.json").
nlohmann::json parse(std::string_view text, const char* kind, const std::string& where);
const nlohmann::json& need(const nlohmann::json& j, const char* key, const char* kind, const std::string& where);
Hash32 hash(const nlohmann::json& j, const char* key, const char* kind, const std::string& where);
uint64_t u64(const nlohmann::json& j, const char* key, const char* kind, const std::string& where);
std::string str(const nlohmann::json& j, const char* key, const char* kind, const std::string& where);
// A number under `key`; errors name the field PREFIX.key (just key without a prefix).
double number(const nlohmann::json& j, const char* key, const char* kind, const std::string& where,
              const std::string& prefix = "");
// A value already taken out (an array element, a nested field) that must be a
// non-negative integer that fits int64; errors name it as field `name`.
int64_t count(const nlohmann::json& v, const std::string& name, const char* kind, const std::string& where);
// The array under `key`: "field 'KEY' is not an array" otherwise (the one owner of those words).
const nlohmann::json& array(const nlohmann::json& j, const char* key, const char* kind, const std::string& where);
// An array of hex hashes under `key`, at most `max` long.
std::vector<Hash32> hashes(const nlohmann::json& j, const char* key, size_t max, const char* kind,
                           const std::string& where);

// The JSON array of hex hashes that `hashes` reads back.
nlohmann::json hex_array(const std::vector<Hash32>& v);
// One spelling only: any key of the object `j` not in `keys` is an error
// "unknown field 'PREFIX.key'" (just 'key' without a prefix); a non-object
// is "expected an object".
void only_keys(const nlohmann::json& j, std::initializer_list<const char*> keys, const char* kind,
               const std::string& where, const std::string& prefix = "");

// The readers above bound to one error kind, so a parser names its kind once:
// `constexpr jsonf::Fields F{"invalid proof"};` then `F.need(j, "leaf", where)`.
struct Fields {
  const char* kind;
  [[noreturn]] void bad(const std::string& why, const std::string& where) const { jsonf::bad(kind, why, where); }
  nlohmann::json parse(std::string_view text, const std::string& where) const { return jsonf::parse(text, kind, where); }
  const nlohmann::json& need(const nlohmann::json& j, const char* key, const std::string& where) const {
    return jsonf::need(j, key, kind, where);
  }
  Hash32 hash(const nlohmann::json& j, const char* key, const std::string& where) const {
    return jsonf::hash(j, key, kind, where);
  }
  uint64_t u64(const nlohmann::json& j, const char* key, const std::string& where) const {
    return jsonf::u64(j, key, kind, where);
  }
  std::string str(const nlohmann::json& j, const char* key, const std::string& where) const {
    return jsonf::str(j, key, kind, where);
  }
  double number(const nlohmann::json& j, const char* key, const std::string& where, const std::string& prefix = "") const {
    return jsonf::number(j, key, kind, where, prefix);
  }
  int64_t count(const nlohmann::json& v, const std::string& name, const std::string& where) const {
    return jsonf::count(v, name, kind, where);
  }
  const nlohmann::json& array(const nlohmann::json& j, const char* key, const std::string& where) const {
    return jsonf::array(j, key, kind, where);
  }
  std::vector<Hash32> hashes(const nlohmann::json& j, const char* key, size_t max, const std::string& where) const {
    return jsonf::hashes(j, key, max, kind, where);
  }
  void only_keys(const nlohmann::json& j, std::initializer_list<const char*> keys, const std::string& where,
                 const std::string& prefix = "") const {
    jsonf::only_keys(j, keys, kind, where, prefix);
  }
};

}  // namespace wit::jsonf
