// Sharded checkpoints: the index and its shard files.
#include "wit/run/shards.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"

namespace wit {

namespace {

std::string strip_safetensors(const std::string& path) {
  const std::string suf = ".safetensors";
  if (path.size() > suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0)
    return path.substr(0, path.size() - suf.size());
  return path;
}

}  // namespace

std::vector<int> shard_owners(const std::vector<uint64_t>& sizes, int world) {
  uint64_t total = 0;
  for (uint64_t n : sizes) total += n;
  std::vector<int> owner;
  uint64_t at = 0;
  for (uint64_t n : sizes) {
    const uint64_t w = uint64_t(world);
    owner.push_back(total == 0 ? 0 : int(std::min<uint64_t>(w - 1, (2 * at + n) * w / (2 * total))));
    at += n;
  }
  return owner;
}

std::vector<std::vector<std::string>> model_units(const ModelConfig& c) {
  const std::vector<ParamSpec> specs = model_params(c);
  std::vector<std::vector<std::string>> units;
  if (c.scripted()) {
    units.emplace_back();
    for (const auto& p : specs) units.back().push_back(p.name);
    return units;
  }
  units.push_back({"wpe", "wte"});
  for (int64_t l = 0; l < c.n_layer; l++) {
    const std::string pre = "h." + std::to_string(l) + ".";
    units.emplace_back();
    for (const auto& p : specs)
      if (p.name.rfind(pre, 0) == 0) units.back().push_back(p.name);
  }
  units.push_back({"lnf.bias", "lnf.weight", "wte"});
  return units;
}

std::vector<int> ShardPlan::owners() const {
  std::vector<int> o;
  for (int r = 0; r < world; r++)
    for (size_t i = bounds[size_t(r)]; i < bounds[size_t(r) + 1]; i++) o.push_back(r);
  return o;
}

nlohmann::json ShardPlan::to_json() const {
  return {{"mode", "full"}, {"world", world}, {"bounds", bounds}, {"units", units}};
}

ShardPlan ShardPlan::from_json(const nlohmann::json& j, const ModelConfig& c, const std::string& where) {
  auto bad = [&](const std::string& why) { throw Error("invalid manifest: sharding: " + why, where); };
  if (!j.is_object()) bad("not an object");
  jsonf::only_keys(j, {"mode", "world", "bounds", "units"}, "invalid manifest: sharding", where);
  if (j.value("mode", std::string()) != "full") bad("'mode' must be \"full\"");
  ShardPlan p;
  if (!j.contains("world") || !j["world"].is_number_integer() || j["world"].get<int64_t>() < 2 ||
      j["world"].get<int64_t>() > 4096)
    bad("'world' must be an integer in 2..4096");
  p.world = int(j["world"].get<int64_t>());
  const size_t n = model_params(c).size();
  if (!j.contains("bounds") || !j["bounds"].is_array() || j["bounds"].size() != size_t(p.world) + 1)
    bad("'bounds' must list world + 1 parameter indices");
  for (const auto& b : j["bounds"]) {
    if (!b.is_number_integer() || b.get<int64_t>() < 0 || uint64_t(b.get<int64_t>()) > n)
      bad("'bounds' holds a value that is not a parameter index");
    p.bounds.push_back(size_t(b.get<int64_t>()));
  }
  if (p.bounds.front() != 0 || p.bounds.back() != n || !std::is_sorted(p.bounds.begin(), p.bounds.end()))
    bad("'bounds' must rise from 0 to the number of parameters (" + std::to_string(n) + ")");
  if (!j.contains("units") || !j["units"].is_array()) bad("'units' must be a list of lists of parameter names");
  for (const auto& u : j["units"]) {
    if (!u.is_array()) bad("'units' must be a list of lists of parameter names");
    p.units.emplace_back();
    for (const auto& name : u) {
      if (!name.is_string()) bad("'units' must be a list of lists of parameter names");
      p.units.back().push_back(name.get<std::string>());
    }
  }
  if (p.units != model_units(c)) bad("'units' are not the model's units (docs/distributed.md)");
  return p;
}

ShardPlan plan_shards(const ModelConfig& c, int world) {
  std::vector<uint64_t> sizes;
  for (const auto& p : model_params(c)) sizes.push_back(p.numel());
  const std::vector<int> owner = shard_owners(sizes, world);
  ShardPlan p;
  p.world = world;
  p.bounds.assign(size_t(world) + 1, 0);
  // bounds[r + 1] = the first parameter past rank r's range.
  for (int r = 0; r < world; r++)
    p.bounds[size_t(r) + 1] = size_t(std::count_if(owner.begin(), owner.end(), [&](int o) { return o <= r; }));
  p.units = model_units(c);
  return p;
}

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
