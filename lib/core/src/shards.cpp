// Sharded checkpoints: the index and its shard files.
#include "wit/shards.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "wit/error.h"
#include "wit/io.h"
#include "wit/json_fields.h"

namespace wit {

namespace {

std::string strip_safetensors(const std::string& path) {
  const std::string suf = ".safetensors";
  if (path.size() > suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0)
    return path.substr(0, path.size() - suf.size());
  return path;
}

}  // namespace

std::string shard_index_path(const std::string& path) { return strip_safetensors(path) + ".index.json"; }

std::string shard_file_path(const std::string& path, int rank, int world) {
  return strip_safetensors(path) + ".shard-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".safetensors";
}

ShardIndex ShardIndex::parse(const std::string& text, const std::string& ip) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) { throw Error("invalid checkpoint index: " + why, ip); };
  if (j.is_discarded() || !j.is_object()) bad("not a json object");
  jsonf::only_keys(j, {"format", "version", "root", "shards", "step"}, "invalid checkpoint index", ip);
  if (!j.contains("format") || j["format"] != kShardIndexFormat) bad("format is not \"" + std::string(kShardIndexFormat) + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != 1)
    bad("unsupported version");
  ShardIndex x;
  if (!j.contains("root") || !j["root"].is_string() || !Hash32::from_hex(j["root"].get<std::string>(), x.root))
    bad("'root' is not 64 hex digits");
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<int64_t>() < 0) bad("'step' is not a step");
  x.step = j["step"].get<int64_t>();
  if (!j.contains("shards") || !j["shards"].is_array() || j["shards"].empty()) bad("no shards");
  for (const auto& sh : j["shards"]) {
    if (!sh.is_object() || sh.size() != 2 || !sh.contains("file") || !sh["file"].is_string() || !sh.contains("tensors") ||
        !sh["tensors"].is_array())
      bad("a shard is not {\"file\", \"tensors\"}");
    const std::string f = sh["file"].get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f[0] == '.') bad("shard file '" + f + "'");
    std::vector<std::string> names;
    for (const auto& t : sh["tensors"]) {
      if (!t.is_string()) bad("a tensor name is not a string");
      names.push_back(t.get<std::string>());
    }
    std::sort(names.begin(), names.end());
    x.shards.emplace_back(f, std::move(names));
  }
  return x;
}

ShardedCheckpoint ShardedCheckpoint::open(const std::string& ip) {
  const ShardIndex x = ShardIndex::parse(read_file(ip), ip);
  ShardedCheckpoint c;
  c.index_path = ip;
  c.root = x.root;
  c.step = x.step;
  const std::string dir = ip.substr(0, ip.find_last_of('/') + 1);
  std::set<std::string> seen;
  for (const auto& [f, want] : x.shards) {
    c.files.push_back(Safetensors::open(dir + f));
    std::vector<std::string> got;
    for (const auto& t : c.files.back().tensors()) {
      got.push_back(t.name);
      if (!seen.insert(t.name).second) throw Error("tensor '" + t.name + "' is in two shards", dir + f);
    }
    if (got != want) throw Error("checkpoint shard holds other tensors than its index says", dir + f);
    c.tensors.insert(c.tensors.end(), c.files.back().tensors().begin(), c.files.back().tensors().end());
  }
  std::sort(c.tensors.begin(), c.tensors.end(), [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  return c;
}

}  // namespace wit
