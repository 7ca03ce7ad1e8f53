// TorchScript models: describing a module for a new run, loading the run's
// module once per process (checked against the manifest), and its forward
// with a TrainState's parameters in the module's slots. docs/model.md.
#include "wit/model/script_model.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "wit/model/state_impl.h"
#include "wit/data/commitment.h"
#include "wit/run/manifest.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/model/script.h"

namespace wit {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string decl_text(const TensorDecl& d) { return "'" + d.name + "' " + dtype_name(d.dtype) + " " + shape_text(d.shape); }

DType dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat64: return DType::kF64;
    case torch::kFloat32: return DType::kF32;
    case torch::kFloat16: return DType::kF16;
    case torch::kBFloat16: return DType::kBF16;
    case torch::kInt64: return DType::kI64;
    case torch::kInt32: return DType::kI32;
    case torch::kInt16: return DType::kI16;
    case torch::kInt8: return DType::kI8;
    case torch::kUInt8: return DType::kU8;
    case torch::kBool: return DType::kBool;
    default: throw Error(std::string("a tensor of unsupported dtype ") + c10::toString(t.scalar_type()), "model");
  }
}

TensorDecl decl_of(const std::string& name, const torch::Tensor& t) {
  return {name, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), dtype_of(t)};
}

// The first line of a LibTorch error, for a one-line message.
std::string first_line(const std::exception& e) {
  std::string s = e.what();
  return s.substr(0, s.find('\n'));
}

// In eval mode (no dropout), or with `train` in training mode.
torch::jit::Module load_file(const std::string& path, bool train = false) {
  if (!std::filesystem::is_regular_file(path))
    throw Error("no TorchScript model file", path, "a TorchScript run keeps its model as RUN/model.pt");
  // One interpreter path for every call: the profiling executor would
  // specialise and fuse after a few calls, so the first steps of a run and
  // a replay of a later step could round differently.
  static const bool plain = [] {
    torch::jit::setGraphExecutorOptimize(false);
    return true;
  }();
  (void)plain;
  try {
    torch::jit::Module m = torch::jit::load(path);
    m.train(train);  // eval: no dropout or other training-mode randomness
    return m;
  } catch (const c10::Error& e) {
    throw Error("not a TorchScript model file (" + first_line(e) + ")", path);
  } catch (const std::exception& e) {
    throw Error("not a TorchScript model file (" + first_line(e) + ")", path);
  }
}

void check_forward_schema(const torch::jit::Module& m, const std::string& path) {
  const std::string want = "forward(self, tokens: Tensor) -> Tensor";
  auto method = m.find_method("forward");
  if (!method) throw Error("the module has no forward method; wit needs " + want, path);
  const c10::FunctionSchema& s = method->function().getSchema();
  const auto& args = s.arguments();
  const auto& rets = s.returns();
  const bool ok = args.size() == 2 && args[1].type()->kind() == c10::TypeKind::TensorType && rets.size() == 1 &&
                  rets[0].type()->kind() == c10::TypeKind::TensorType;
  if (!ok) {
    std::ostringstream have;
    have << s;
    throw Error("the module's forward is " + have.str() + "; wit needs " + want + " (int64 tokens [B, L] to logits [B, L, V])",
                path);
  }
}

// Every tensor constant in the module's compiled methods, named
// "<submodule>.<method>#<k>" (the root's as "<method>#<k>").
std::vector<TensorDecl> tensor_constants(const torch::jit::Module& root) {
  std::vector<TensorDecl> out;
  for (const auto& nm : root.named_modules()) {
    for (const auto& method : nm.value.get_methods()) {
      const std::string base = (nm.name.empty() ? "" : nm.name + ".") + method.name() + "#";
      size_t k = 0;
      std::function<void(torch::jit::Block*)> walk = [&](torch::jit::Block* b) {
        for (torch::jit::Node* n : b->nodes()) {
          if (n->kind() == c10::prim::Constant && n->outputs().size() == 1 &&
              n->output()->type()->kind() == c10::TypeKind::TensorType) {
            if (auto iv = torch::jit::toIValue(n->output()); iv && iv->isTensor())
              out.push_back(decl_of(base + std::to_string(k++), iv->toTensor()));
          }
          for (torch::jit::Block* sub : n->blocks()) walk(sub);
        }
      };
      walk(method.graph()->block());
    }
  }
  return out;
}

// Where the module refers to its parameters other than through their own
// slots. A list holding a parameter itself (nn.GRU's and nn.LSTM's
// _flat_weights) is refreshed before every forward; any other reference
// would keep the file's values while wit trains its own tensors (forward
// would compute with stale weights, or the parameter would get no gradient),
// and so would tensors in containers that are neither parameters nor
// buffers: refused, saying what to change.
std::vector<ScriptModel::ListSlot> parameter_references(const torch::jit::Module& m,
                                                        const std::vector<std::string>& names,  // sorted
                                                        const std::string& path) {
  std::map<const c10::TensorImpl*, size_t> impl_of;
  std::map<const void*, size_t> storage_of;
  for (const auto& p : m.named_parameters(true)) {
    const size_t i = size_t(std::lower_bound(names.begin(), names.end(), p.name) - names.begin());
    impl_of[p.value.unsafeGetTensorImpl()] = i;
    if (p.value.has_storage() && p.value.storage().data()) storage_of[p.value.storage().data()] = i;
  }
  std::vector<ScriptModel::ListSlot> out;
  // `where`: "" for an attribute itself, else the kind of container it is in.
  std::function<void(const c10::IValue&, const std::string&, const char*)> walk = [&](const c10::IValue& v,
                                                                                   const std::string& at,
                                                                                   const char* where) {
    if (v.isTensor()) {
      const torch::Tensor& t = v.toTensor();
      if (auto it = impl_of.find(t.unsafeGetTensorImpl()); it != impl_of.end())
        throw Error("attribute '" + at + "' holds parameter '" + names[it->second] + "'" +
                        (*where ? std::string(" inside a ") + where : std::string(" under another name")) +
                        ", where wit cannot put the trained values: use the parameter itself in forward, or hold "
                        "such references in a list (as nn.GRU's _flat_weights)",
                    path);
      if (t.has_storage() && t.storage().data())
        if (auto it = storage_of.find(t.storage().data()); it != storage_of.end())
          throw Error("attribute '" + at + "' shares storage with parameter '" + names[it->second] +
                          "' (a view or copy made before saving), so forward would use the file's values, not the "
                          "trained ones: compute it from the parameter in forward",
                      path);
      if (*where)
        throw Error("attribute '" + at + "' holds a tensor inside a " + where +
                        " that is neither a parameter nor a buffer; wit binds and checks a module's tensors as "
                        "parameters and buffers: register it as a buffer or compute it in forward",
                    path);
      return;
    }
    if (v.isList()) {
      c10::impl::GenericList list = v.toList();
      for (size_t k = 0; k < list.size(); k++) {
        const c10::IValue e = list.get(k);
        const bool in_lists = !*where || !std::strcmp(where, "list");
        if (in_lists && e.isTensor() && impl_of.count(e.toTensor().unsafeGetTensorImpl()))
          out.push_back({list, k, impl_of[e.toTensor().unsafeGetTensorImpl()]});
        else
          walk(e, at + "[" + std::to_string(k) + "]", in_lists ? "list" : where);
      }
    } else if (v.isTuple()) {
      const auto& elems = v.toTupleRef().elements();
      for (size_t k = 0; k < elems.size(); k++) walk(elems[k], at + "[" + std::to_string(k) + "]", "tuple");
    } else if (v.isGenericDict()) {
      for (const auto& kv : v.toGenericDict()) walk(kv.value(), at + "[...]", "dict");
    } else if (v.isObject() && !v.isModule()) {
      const auto obj = v.toObject();
      for (size_t k = 0; k < obj->slots().size(); k++) walk(obj->getSlot(k), at + "." + obj->type()->getAttributeName(k), "object");
    }
  };
  for (const auto& a : m.named_attributes(true)) {
    if (a.value.isModule() || std::binary_search(names.begin(), names.end(), a.name)) continue;
    walk(a.value, a.name, "");
  }
  return out;
}

struct Described {
  std::vector<TensorDecl> params, buffers;
  std::vector<ScriptModel::ListSlot> lists;  // see parameter_references
};

// Parameters and every other tensor (buffers, tensor attributes, constants),
// sorted by name; refuses parameters that share storage (tied weights).
Described describe(const torch::jit::Module& m, const std::string& path) {
  Described d;
  std::map<const void*, std::string> storages;
  for (const auto& p : m.named_parameters(true)) {
    d.params.push_back(decl_of(p.name, p.value));
    const torch::Tensor& t = p.value;
    if (t.numel() > 1 && t.stride(0) != 0) {  // a slim file's stride-0 placeholders share nothing that is trained
      auto [it, fresh] = storages.emplace(t.storage().data(), p.name);
      if (!fresh)
        throw Error("parameters '" + it->second + "' and '" + p.name +
                        "' share storage (tied weights); wit trains every parameter slot on its own: tie them in "
                        "forward instead (e.g. F.linear(x, self.wte.weight))",
                    path);
    }
  }
  std::vector<std::string> param_names;
  for (const auto& p : d.params) param_names.push_back(p.name);
  std::sort(param_names.begin(), param_names.end());
  for (const auto& a : m.named_attributes(true)) {
    if (!a.value.isTensor() || std::binary_search(param_names.begin(), param_names.end(), a.name)) continue;
    d.buffers.push_back(decl_of(a.name, a.value.toTensor()));
  }
  d.lists = parameter_references(m, param_names, path);
  for (auto& c : tensor_constants(m)) d.buffers.push_back(std::move(c));
  auto by_name = [](const TensorDecl& a, const TensorDecl& b) { return a.name < b.name; };
  std::sort(d.params.begin(), d.params.end(), by_name);
  std::sort(d.buffers.begin(), d.buffers.end(), by_name);
  if (const Problem why = tensors_problem(d.params, d.buffers)) throw Error(*why, path);
  return d;
}

// The first difference between what the manifest binds and what the file declares.
void check_decls(const char* what, const std::vector<TensorDecl>& bound, const std::vector<TensorDecl>& file,
                 const std::string& path) {
  for (size_t i = 0; i < std::max(bound.size(), file.size()); i++) {
    if (i < bound.size() && i < file.size() && bound[i] == file[i]) continue;
    if (i >= file.size() || (i < bound.size() && bound[i].name < file[i].name))
      throw Error(std::string("the model file lacks the run's ") + what + " " + decl_text(bound[i]), path);
    if (i >= bound.size() || file[i].name < bound[i].name)
      throw Error(std::string("the model file has a ") + what + " the run does not bind: " + decl_text(file[i]), path);
    throw Error(std::string("the model file's ") + what + " " + decl_text(file[i]) + " differs from the run's " +
                    decl_text(bound[i]),
                path);
  }
}

// Name and value of every attribute that is not a parameter, in order; the
// first one whose value differs between two calls names the change.
std::vector<std::pair<std::string, Hash32>> attribute_values(const torch::jit::Module& m,
                                                             const std::vector<std::string>& param_names) {
  std::vector<std::pair<std::string, Hash32>> out;
  for (const auto& a : m.named_attributes(true)) {
    if (std::binary_search(param_names.begin(), param_names.end(), a.name) || a.value.isModule()) continue;
    Blake2b h;
    const c10::IValue& v = a.value;
    if (v.isTensor()) {
      const torch::Tensor t = v.toTensor().detach().to(torch::kCPU).contiguous();
      h.update(ByteView(reinterpret_cast<const uint8_t*>(t.data_ptr()), size_t(t.nbytes())));
      std::ostringstream meta;
      meta << c10::toString(t.scalar_type()) << t.sizes();
      h.update(ByteView(meta.str()));
    } else if (v.isInt() || v.isDouble() || v.isBool() || v.isString() || v.isNone()) {
      std::ostringstream s;
      s << v.tagKind() << ":" << v;
      h.update(ByteView(s.str()));
    } else {
      h.update(ByteView(v.tagKind()));
    }
    out.emplace_back(a.name, h.final());
  }
  return out;
}

Hash32 attribute_digest(const torch::jit::Module& m, const std::vector<std::string>& param_names) {
  Blake2b h;
  for (const auto& [name, d] : attribute_values(m, param_names)) h.update_field(ByteView(name)).update(ByteView(d.data(), 32));
  return h.final();
}

std::mutex g_cache_mutex;
std::map<std::string, std::shared_ptr<ScriptModel>> g_cache;

}  // namespace

ModelConfig describe_module(const std::string& path) {
  torch::jit::Module m = load_file(path);
  check_forward_schema(m, path);
  Described d = describe(m, path);
  ModelConfig c;
  c.arch = Arch::kTorchScript;
  c.file = model_file_digest(path);
  c.params = std::move(d.params);
  c.buffers = std::move(d.buffers);
  if (c.params.empty()) throw Error("the module has no parameters to train", path);
  c.init = default_init_rules();
  c.decay = default_decay_rules();
  c.module_path = path;
  return c;
}

std::shared_ptr<ScriptModel> load_script_model(const ModelConfig& c, torch::Device device, bool train) {
  if (c.module_path.empty())
    throw Error("the run's TorchScript model file is not at hand", "model",
                "a TorchScript run keeps it as RUN/model.pt, and response bundles as member model.pt");
  const std::string key = c.module_path + "|" + c.file.hex() + "|" + device.str() + (train ? "|train" : "|eval");
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  if (auto it = g_cache.find(key); it != g_cache.end()) return it->second;
  const std::string& path = c.module_path;
  if (!std::filesystem::is_regular_file(path))
    throw Error("no TorchScript model file", path, "a TorchScript run keeps its model as RUN/model.pt");
  const Hash32 digest = model_file_digest(path);
  if (digest != c.file)
    throw Error("the model file is not the run's model (its digest is " + digest.hex() + "; the run binds " +
                    c.file.hex() + ")",
                path);
  auto sm = std::make_shared<ScriptModel>();
  sm->path = path;
  sm->train = train;
  sm->module = load_file(path, train);
  check_forward_schema(sm->module, path);
  Described d = describe(sm->module, path);
  check_decls("parameter", c.params, d.params, path);
  check_decls("buffer", c.buffers, d.buffers, path);
  sm->module.to(device);
  for (const auto& p : c.params) sm->param_names.push_back(p.name);
  sm->attrs = attribute_digest(sm->module, sm->param_names);
  sm->lists = std::move(d.lists);
  for (const auto& p : c.params) {
    torch::jit::Module owner = sm->module;
    std::string rest = p.name;
    for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1))
      owner = owner.attr(rest.substr(0, dot)).toModule();
    sm->slots.emplace_back(owner, rest);
  }
  g_cache[key] = sm;
  return sm;
}

void fill_params(ScriptModel& m, const std::vector<torch::Tensor>& params) {
  for (size_t i = 0; i < m.slots.size(); i++) m.slots[i].first.setattr(m.slots[i].second, params[i]);
  for (auto& l : m.lists) l.list.set(l.index, params[l.param]);
}

torch::Tensor script_forward(ScriptModel& m, const std::vector<torch::Tensor>& params, const torch::Tensor& idx) {
  torch::jit::setGraphExecutorOptimize(false);  // the setting is per thread: every thread that runs forward
  fill_params(m, params);
  torch::Tensor out = m.module.forward({idx}).toTensor();
  // A module with state of its own (a call counter, a buffer it writes)
  // would train differently from its replay, which starts from a fresh load.
  if (attribute_digest(m.module, m.param_names) != m.attrs) {
    std::string which = "?";
    torch::jit::Module fresh = load_file(m.path, m.train);
    fresh.to(out.device());
    const auto before = attribute_values(fresh, m.param_names), now = attribute_values(m.module, m.param_names);
    for (size_t i = 0; i < std::min(before.size(), now.size()); i++)
      if (before[i] != now[i]) {
        which = now[i].first;
        break;
      }
    throw Error("the model changed its attribute '" + which +
                    "' during forward; a model's only state is its parameters (docs/model.md)",
                m.path);
  }
  return out;
}

void check_model(const ModelConfig& c, const std::string& device, bool train_mode) {
  if (!c.scripted()) return;
  const torch::Device dev = parse_device(device);
  std::shared_ptr<ScriptModel> m = load_script_model(c, dev);
  const int64_t L = std::min<int64_t>(c.context, 4);
  auto idx = torch::full({2, L}, c.pad, torch::TensorOptions().dtype(torch::kLong).device(dev));
  std::vector<torch::Tensor> params;
  for (const auto& p : c.params)
    params.push_back(torch::zeros(p.shape, torch::TensorOptions().device(dev)).set_requires_grad(true));
  c10::IValue out;
  try {
    fill_params(*m, params);
    out = m->module.forward({idx});
  } catch (const std::exception& e) {
    throw Error("the module's forward failed on int64 tokens [2, " + std::to_string(L) + "] (" + first_line(e) + ")",
                c.module_path);
  }
  const std::string want = "float32 logits [2, " + std::to_string(L) + ", " + std::to_string(c.vocab) + "] (vocab " +
                           std::to_string(c.vocab) + ")";
  if (!out.isTensor()) throw Error("the module's forward did not return a tensor; wit needs " + want, c.module_path);
  const torch::Tensor t = out.toTensor();
  const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (shape != std::vector<int64_t>{2, L, c.vocab} || t.scalar_type() != torch::kFloat32)
    throw Error("the module's forward returned " + std::string(c10::toString(t.scalar_type())) + " " + shape_text(shape) +
                    " for tokens [2, " + std::to_string(L) + "]; wit needs " + want,
                c.module_path);
  // Every parameter reaches the logits: the training step differentiates
  // the loss by each one, and one that forward never uses (or uses through a
  // copy wit cannot refresh) would fail only at the first step.
  std::vector<torch::Tensor> grads(params.size());
  if (t.requires_grad()) {
    try {
      grads = torch::autograd::grad({t.sum()}, params, {}, false, false, /*allow_unused=*/true);
    } catch (const std::exception& e) {
      throw Error("the module's backward failed on int64 tokens [2, " + std::to_string(L) + "] (" + first_line(e) + ")",
                  c.module_path);
    }
  }
  for (size_t i = 0; i < grads.size(); i++)
    if (!grads[i].defined())
      throw Error("parameter '" + c.params[i].name +
                      "' gets no gradient: forward does not use it, or uses a copy of it that wit cannot refresh "
                      "(a cache made before saving); use the parameter in forward, or remove it",
                  c.module_path);
  // The training-mode copy the step runs: state it writes in training mode
  // only (BatchNorm's running statistics) is refused now, not at step 1.
  if (train_mode) {
    try {
      script_forward(*load_script_model(c, dev, true), params, idx);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error("the module's training-mode forward failed on int64 tokens [2, " + std::to_string(L) + "] (" +
                      first_line(e) + ")",
                  c.module_path);
    }
  }
}

std::string describe_training(const std::string& config_path, const std::string& model_path,
                              const std::string& commit_path, const std::string& device) {
  const TrainConfig cfg = TrainConfig::load(config_path);
  Commitment data;  // without --data: byte records, and a size that bounds nothing the model depends on
  if (!commit_path.empty()) data = Commitment::load(commit_path);
  else data.n = uint64_t(1) << 40;
  std::optional<ModelConfig> scripted;
  if (!model_path.empty()) scripted = describe_module(model_path);
  const Manifest mf = make_manifest(cfg, data, PublicKey{}, Hash32{}, nlohmann::json::object(), config_path,
                                    scripted ? &*scripted : nullptr);
  check_model(mf.model, device, mf.train_mode);
  return (model_path.empty() ? "" : model_path + ": ") + describe_params(mf.model);
}

}  // namespace wit
