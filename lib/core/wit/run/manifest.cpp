// The run manifest: JSON form, validation, run id and the learning-rate schedule.
#include "wit/run/manifest.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <functional>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

Hash32 seed_commitment(ByteView seed) { return hash_tagged(tags::kSeedCommit, seed); }

Problem seed_problem(const Manifest& mf, ByteView seed) {
  if (seed_commitment(seed) == mf.seed_commitment) return std::nullopt;
  return "the revealed seed does not match the manifest's seed commitment";
}

json Manifest::to_json() const {
  json j = {
      {"format", kManifestFormat},
      {"version", kManifestVersion},
      {"model", model.to_json()},
      {"optimizer", {{"name", "adamw"}, {"lr", opt.lr}, {"beta1", opt.beta1}, {"beta2", opt.beta2},
                     {"eps", opt.eps}, {"weight_decay", opt.weight_decay}, {"grad_clip", opt.grad_clip}}},
      {"schedule", {{"name", "warmup-cosine"}, {"warmup", schedule.warmup}, {"min_lr_ratio", schedule.min_lr_ratio}}},
      {"batch_size", batch_size},
      {"steps", steps},
      {"checkpoint_every", checkpoint_every},
      {"head_every", head_every},
      {"fingerprint", {{"sketch_k", fp.sketch_k}, {"sketch_seed", fp.sketch_seed.hex()},
                       {"probe_every", fp.probe_every}, {"probe_records", fp.probe_records},
                       {"probe_dim", fp.probe_dim}}},
      {"data", {{"root", data_root.hex()}, {"n", data_n}, {"reader", data_reader.to_json()}}},
      {"seed_commitment", seed_commitment.hex()},
      {"nonce", nonce ? json(nonce->hex()) : json(nullptr)},
      {"trainer_key", trainer_key.hex()},
      {"software", software.is_null() ? json::object() : software},
  };
  // Off by default and then absent: the manifests (and run ids) of runs
  // without them are those of earlier versions, byte for byte.
  if (micro_batch > 0) j["micro_batch"] = micro_batch;
  if (dropout > 0) j["dropout"] = dropout;
  if (train_mode) j["train_mode"] = true;
  if (sharding) j["sharding"] = sharding->to_json();
  return j;
}

std::string Manifest::dump() const { return to_json().dump(2) + "\n"; }

Hash32 Manifest::run_id() const { return hash_tagged(tags::kManifest, ByteView(dump())); }

namespace {

struct Reader {
  const std::string& where;
  [[noreturn]] void bad(const std::string& why) const { throw Error("invalid manifest: " + why, where); }
  const json& obj(const json& j, const char* k) const {
    if (!j.contains(k) || !j[k].is_object()) bad(std::string("missing object '") + k + "'");
    return j[k];
  }
  int64_t integer(const json& j, const char* k, int64_t lo, int64_t hi) const {
    if (!j.contains(k) || !j[k].is_number_integer()) bad(std::string("'") + k + "' must be an integer");
    int64_t v = j[k].get<int64_t>();
    if (v < lo || v > hi) bad(std::string("'") + k + "' out of range");
    return v;
  }
  double number(const json& j, const char* k, double lo, double hi) const {
    if (!j.contains(k) || !j[k].is_number()) bad(std::string("'") + k + "' must be a number");
    double v = j[k].get<double>();
    if (!(v >= lo && v <= hi)) bad(std::string("'") + k + "' out of range");
    return v;
  }
  Hash32 hash(const json& j, const char* k) const {
    Hash32 h;
    if (!j.contains(k) || !j[k].is_string() || !Hash32::from_hex(j[k].get<std::string>(), h))
      bad(std::string("'") + k + "' must be 64 hex digits");
    return h;
  }
};

}  // namespace

Manifest Manifest::from_json(const json& j, const std::string& where) {
  Reader r{where};
  if (!j.is_object()) r.bad("not a json object");
  if (j.value("format", std::string()) != kManifestFormat) throw Error("not a wit run manifest (format is not \"wit.run\")", where);
  if (!j.contains("version") || !j["version"].is_number_integer()) r.bad("missing version");
  if (j["version"].get<int64_t>() != kManifestVersion)
    throw Error("unsupported manifest version " + j["version"].dump() + " (this wit reads version " +
                    std::to_string(kManifestVersion) + ")",
                where,
                j["version"].get<int64_t>() == 1 ? "version 1 runs trained on a file-order tree; train the run again"
                                                 : "");
  Manifest m;
  m.model = ModelConfig::from_json(r.obj(j, "model"), where);
  const json& o = r.obj(j, "optimizer");
  if (o.value("name", std::string()) != "adamw") r.bad("optimizer name must be \"adamw\"");
  m.opt.lr = r.number(o, "lr", 0, 10);
  m.opt.beta1 = r.number(o, "beta1", 0, 0.999999);
  m.opt.beta2 = r.number(o, "beta2", 0, 0.999999);
  m.opt.eps = r.number(o, "eps", 0, 1);
  m.opt.weight_decay = r.number(o, "weight_decay", 0, 10);
  m.opt.grad_clip = r.number(o, "grad_clip", 0, 1e9);
  const json& s = r.obj(j, "schedule");
  if (s.value("name", std::string()) != "warmup-cosine") r.bad("schedule name must be \"warmup-cosine\"");
  m.schedule.warmup = r.integer(s, "warmup", 0, kMaxSteps);
  m.schedule.min_lr_ratio = r.number(s, "min_lr_ratio", 0, 1);
  m.batch_size = r.integer(j, "batch_size", 1, 1 << 20);
  // A billion steps is far beyond any run (GPT-3 took under 10^6); a larger
  // value is a typo that would make every step index and log size absurd.
  m.steps = r.integer(j, "steps", 1, kMaxSteps);
  m.checkpoint_every = r.integer(j, "checkpoint_every", 1, kMaxSteps);
  m.head_every = r.integer(j, "head_every", 1, kMaxSteps);
  const json& f = r.obj(j, "fingerprint");
  m.fp.sketch_k = r.integer(f, "sketch_k", 64, 1 << 24);
  if (m.fp.sketch_k & (m.fp.sketch_k - 1)) r.bad("'sketch_k' must be a power of two");
  m.fp.sketch_seed = r.hash(f, "sketch_seed");
  m.fp.probe_every = r.integer(f, "probe_every", 1, kMaxSteps);
  m.fp.probe_records = r.integer(f, "probe_records", 1, 1 << 16);
  m.fp.probe_dim = r.integer(f, "probe_dim", 1, 1 << 20);
  const json& d = r.obj(j, "data");
  for (auto it = d.begin(); it != d.end(); ++it)
    if (it.key() != "root" && it.key() != "n" && it.key() != "reader") r.bad("unknown key 'data." + it.key() + "'");
  m.data_root = r.hash(d, "root");
  m.data_n = uint64_t(r.integer(d, "n", 1, INT64_MAX));
  if (!d.contains("reader")) r.bad("missing data reader");
  m.data_reader = ReaderSpec::from_json(d["reader"], where);
  if (uint64_t(m.batch_size) > m.data_n) r.bad("batch_size is larger than the dataset");
  if (m.model.scripted() && m.model.tokens != token_mode_for(m.data_reader))
    r.bad(std::string("model.tokens must be \"") + token_mode_name(token_mode_for(m.data_reader)) +
          "\" for this data (\"u16\" or \"u32\" for the tokens reader's 2- or 4-byte ids, else \"bytes\")");
  m.seed_commitment = r.hash(j, "seed_commitment");
  if (j.contains("nonce") && !j["nonce"].is_null()) m.nonce = r.hash(j, "nonce");
  if (!j.contains("trainer_key") || !j["trainer_key"].is_string() ||
      !PublicKey::from_hex(j["trainer_key"].get<std::string>(), m.trainer_key))
    r.bad("'trainer_key' must be 64 hex digits");
  m.software = j.value("software", json::object());
  if (j.contains("micro_batch")) {
    m.micro_batch = r.integer(j, "micro_batch", 1, 1 << 20);
    if (m.micro_batch >= m.batch_size) r.bad("'micro_batch' must be below batch_size (omit it for no accumulation)");
  }
  if (j.contains("dropout")) {
    if (!j["dropout"].is_number() || !(j["dropout"].get<double>() > 0 && j["dropout"].get<double>() < 1))
      r.bad("'dropout' must be a number above 0 and below 1 (omit it for no dropout)");
    m.dropout = j["dropout"].get<double>();
    if (m.model.scripted())
      r.bad("'dropout' is the built-in GPT's rate; a TorchScript model's dropout is its own: set \"train_mode\": true");
  }
  if (j.contains("train_mode")) {
    if (j["train_mode"] != true) r.bad("'train_mode' must be true (omit it for eval mode)");
    m.train_mode = true;
    if (!m.model.scripted())
      r.bad("'train_mode' runs a TorchScript model in training mode; the built-in GPT takes a \"dropout\" rate");
  }
  if (j.contains("sharding")) {
    m.sharding = ShardPlan::from_json(j["sharding"], m.model, where);
    if (m.batch_size < m.sharding->world) r.bad("batch_size is smaller than the sharding's world size");
  }
  return m;
}

Problem manifest_form_problem(const Manifest& m, std::string_view text) {
  if (m.dump() != text) return "manifest is not in canonical form";
  return std::nullopt;
}

Manifest Manifest::load(const std::string& path) {
  std::string text = read_file(path);
  const json j = jsonf::parse(text, "invalid manifest", path);
  Manifest m = from_json(j, path);
  // The run id is the hash of the canonical text; a file that is not in
  // canonical form would give a different id than the one its log names.
  if (const Problem p = manifest_form_problem(m, text)) throw Error(*p + " (edited by hand?)", path);
  // A TorchScript run keeps its bound model file beside the manifest.
  if (m.model.scripted()) m.model.module_path = (std::filesystem::path(path).parent_path() / kModelFileName).string();
  return m;
}

double Manifest::lr_at(int64_t step) const {
  if (schedule.warmup > 0 && step <= schedule.warmup) return opt.lr * double(step) / double(schedule.warmup);
  const double span = double(std::max<int64_t>(1, steps - schedule.warmup));
  const double t = std::min(1.0, double(step - schedule.warmup) / span);
  const double min_lr = opt.lr * schedule.min_lr_ratio;
  return min_lr + 0.5 * (opt.lr - min_lr) * (1.0 + std::cos(M_PI * t));
}

TrainConfig TrainConfig::load(const std::string& path) {
  std::string text = read_file(path);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error("invalid training config: not a json object", path);
  static const char* allowed[] = {"model", "optimizer", "schedule", "batch_size", "steps", "checkpoint_every",
                                  "head_every", "fingerprint", "seed", "nonce", "micro_batch", "dropout",
                                  "train_mode"};
  TrainConfig c;
  c.overrides = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(std::begin(allowed), std::end(allowed), it.key()) == std::end(allowed))
      throw Error("invalid training config: unknown key '" + it.key() + "'", path);
    if (it.key() == "seed") {
      Bytes b;
      if (!it->is_string() || !from_hex(it->get<std::string>(), b) || b.size() != 32)
        throw Error("invalid training config: 'seed' must be 64 hex digits", path);
      c.seed = b;
    } else if (it.key() == "nonce") {
      Hash32 h;
      if (!it->is_string() || !Hash32::from_hex(it->get<std::string>(), h))
        throw Error("invalid training config: 'nonce' must be 64 hex digits", path);
      c.nonce = h;
    } else {
      // The sections are objects; any other value would reach the defaults' merge as a raw type error.
      const std::string k = it.key();
      if ((k == "model" || k == "optimizer" || k == "schedule" || k == "fingerprint") && !it->is_object())
        throw Error("invalid training config: '" + k + "' must be an object, not " + it->type_name(), path);
      c.overrides[k] = *it;
    }
  }
  return c;
}

Manifest make_manifest(const TrainConfig& cfg, const Commitment& data, const PublicKey& key,
                       const Hash32& seed_commit, const json& software, const std::string& where,
                       const ModelConfig* scripted) {
  Manifest m;
  m.data_root = data.root;
  m.data_n = data.n;
  m.data_reader = data.reader;
  m.seed_commitment = seed_commit;
  m.nonce = cfg.nonce;
  m.trainer_key = key;
  m.software = software;
  // The default sketch seed is public and tied to the data; a config may fix its own.
  m.fp.sketch_seed = hash_tagged(tags::kSketchSeed, ByteView(data.root.data(), 32));
  const json given_model = cfg.overrides.value("model", json::object());
  if (scripted) {
    m.model = *scripted;
    m.model.arch = Arch::kTorchScript;
    m.model.tokens = token_mode_for(data.reader);
    for (const char* k : {"arch", "file", "params", "buffers", "tokens"})
      if (given_model.contains(k))
        throw Error(std::string("invalid training config: 'model.") + k + "' is set by --model, not by the config", where);
    for (const char* k : {"vocab", "context"})
      if (!given_model.contains(k))
        throw Error(std::string("invalid training config: a --model run declares 'model.") + k + "'", where);
  } else if (given_model.value("arch", std::string()) == "torchscript") {
    throw Error("invalid training config: a TorchScript model is given with --model FILE, not in the config", where);
  } else if (data.reader.kind == ReaderKind::kTokens) {
    throw Error(std::string("the data is token ids (") + token_mode_name(token_mode_for(data.reader)) + ", the tokens reader) and " +
                    kBuiltinByteLevel,
                where);
  }
  json j = m.to_json();
  // The optional fields (absent by default) are known keys; 0, 0.0 and false
  // are their off values, as if omitted.
  json overrides = cfg.overrides;
  for (const char* k : {"micro_batch", "dropout", "train_mode"}) {
    if (!overrides.contains(k)) continue;
    const json& v = overrides[k];
    if ((v.is_number() && v.get<double>() == 0) || v == false) overrides.erase(k);
    else j[k] = nullptr;  // known to the check below; merge_patch sets it
  }
  // A misspelt key inside an object would otherwise vanish into the defaults.
  std::function<void(const json&, const json&, const std::string&)> known = [&](const json& def, const json& over,
                                                                              const std::string& at) {
    for (auto it = over.begin(); it != over.end(); ++it) {
      if (!def.contains(it.key())) throw Error("invalid training config: unknown key '" + at + it.key() + "'", where);
      if (it->is_object() && def[it.key()].is_object()) known(def[it.key()], *it, at + it.key() + ".");
    }
  };
  known(j, overrides, "");
  // A TorchScript model's init and decay rules from the config come first,
  // the defaults after them (docs/model.md): a config names only what differs.
  for (const char* k : {"init", "decay"})
    if (scripted && given_model.contains(k) && given_model[k].is_array())
      for (const auto& rule : j["model"][k]) overrides["model"][k].push_back(rule);
  j.merge_patch(overrides);
  // The start/end token: 256 for bytes; for token ids the vocabulary's last
  // (GPT-2's <|endoftext|> is 50256 of 50257) unless the config names one.
  if (scripted && !given_model.contains("pad") && j["model"]["vocab"].is_number_integer())
    j["model"]["pad"] = m.model.tokens != TokenMode::kBytes ? j["model"]["vocab"].get<int64_t>() - 1 : ModelConfig::kPad;
  Manifest out = Manifest::from_json(j, where);
  if (scripted) out.model.module_path = scripted->module_path;
  return out;
}

}  // namespace wit
