// Typed JSON field access with one-line errors (json_fields.h).
#include "wit/base/json_fields.h"

#include <algorithm>

#include "wit/base/error.h"

namespace wit::jsonf {

using nlohmann::json;

void bad(const char* kind, const std::string& why, const std::string& where) {
  throw Error(std::string(kind) + ": " + why, where);
}

json parse(std::string_view text, const char* kind, const std::string& where) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) bad(kind, "not valid json", where);
  return j;
}

const json& need(const json& j, const char* key, const char* kind, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(kind, std::string("missing field '") + key + "'", where);
  return j[key];
}

Hash32 hash(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = need(j, key, kind, where);
  Hash32 h;
  if (!v.is_string() || !Hash32::from_hex(v.get<std::string>(), h))
    bad(kind, std::string("field '") + key + "' is not 64 hex digits", where);
  return h;
}

uint64_t u64(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = need(j, key, kind, where);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    bad(kind, std::string("field '") + key + "' is not a non-negative integer", where);
  return v.get<uint64_t>();
}

std::string str(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = need(j, key, kind, where);
  if (!v.is_string()) bad(kind, std::string("field '") + key + "' is not a string", where);
  return v.get<std::string>();
}

double number(const json& j, const char* key, const char* kind, const std::string& where, const std::string& prefix) {
  const json& v = need(j, key, kind, where);
  if (!v.is_number()) bad(kind, "field '" + (prefix.empty() ? "" : prefix + ".") + key + "' is not a number", where);
  return v.get<double>();
}

int64_t count(const json& v, const std::string& name, const char* kind, const std::string& where) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(INT64_MAX)) return int64_t(v.get<uint64_t>());
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  bad(kind, "field '" + name + "' is not a non-negative integer", where);
}

const json& array(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = need(j, key, kind, where);
  if (!v.is_array()) bad(kind, std::string("field '") + key + "' is not an array", where);
  return v;
}

std::vector<Hash32> hashes(const json& j, const char* key, size_t max, const char* kind, const std::string& where) {
  const json& v = array(j, key, kind, where);
  if (v.size() > max) bad(kind, std::string("field '") + key + "' has more than " + std::to_string(max) + " hashes", where);
  std::vector<Hash32> out;
  for (const auto& e : v) {
    Hash32 h;
    if (!e.is_string() || !Hash32::from_hex(e.get<std::string>(), h))
      bad(kind, std::string("a hash in '") + key + "' is not 64 hex digits", where);
    out.push_back(h);
  }
  return out;
}

json hex_array(const std::vector<Hash32>& v) {
  json a = json::array();
  for (const auto& h : v) a.push_back(h.hex());
  return a;
}

void only_keys(const json& j, std::initializer_list<const char*> keys, const char* kind, const std::string& where,
               const std::string& prefix) {
  if (!j.is_object()) bad(kind, "expected an object", where);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
      bad(kind, "unknown field '" + (prefix.empty() ? "" : prefix + ".") + it.key() + "'", where);
}

}  // namespace wit::jsonf
