// TrainState over LibTorch tensors: creation from the seed, checkpoints and sketches.
#include "wit/model/state.h"
#include "wit/model/config_in_effect.h"

#include <torch/torch.h>

#include <ATen/Version.h>

#include <c10/core/CPUAllocator.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "wit/model/script_model.h"
#include "wit/model/state_impl.h"
#include "wit/run/state_root.h"
#include "wit/model/device.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/model_spec.h"
#include "wit/run/sketch.h"

namespace wit {

TrainState::TrainState() : impl_(new Impl) {}
TrainState::~TrainState() = default;
TrainState::TrainState(TrainState&&) noexcept = default;
TrainState& TrainState::operator=(TrainState&&) noexcept = default;

torch::Device parse_device(const std::string& device) {
  check_device(device);  // the one rule of what a --device value may be
  return device == "cpu" ? torch::Device(torch::kCPU) : torch::Device(device);
}

void TrainState::Impl::setup(const ModelConfig& c, const std::string& dev) {
  cfg = c;
  specs = model_params(c);
  device = parse_device(dev);
  script = c.scripted() ? load_script_model(c, device) : nullptr;
  index.clear();
  for (size_t i = 0; i < specs.size(); i++) index[specs[i].name] = i;
}

TrainState TrainState::initial(const ModelConfig& c, ByteView seed, const std::string& device) {
  TrainState st;
  Impl& s = *st.impl_;
  s.setup(c, device);
  for (const auto& p : s.specs) {
    auto t = torch::empty(p.shape, torch::kFloat32);
    init_param(p, seed, t.data_ptr<float>());
    s.params.push_back(t.to(s.device).set_requires_grad(true));
    s.m.push_back(torch::zeros(p.shape, torch::TensorOptions().dtype(torch::kFloat32).device(s.device)));
    s.v.push_back(torch::zeros(p.shape, torch::TensorOptions().dtype(torch::kFloat32).device(s.device)));
  }
  s.step = 0;
  return st;
}

TrainState TrainState::from_tensors(const ModelConfig& c, const std::vector<TensorView>& tensors,
                                    const std::string& where, const std::string& device, bool params_only) {
  TrainState st;
  Impl& s = *st.impl_;
  s.setup(c, device);
  std::map<std::string, const TensorView*> by_name;
  for (const auto& t : tensors) by_name[t.name] = &t;
  // A released model carries parameters only; a checkpoint carries the full state.
  s.params_only = params_only && !by_name.count(kStepTensor);
  const char* what = s.params_only ? "model" : "state";
  auto take = [&](const std::string& name, const std::vector<int64_t>& shape) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw Error(std::string(what) + " lacks tensor '" + name + "'", where);
    const TensorView& t = *it->second;
    if (t.dtype != DType::kF32 || t.shape != shape)
      throw Error("tensor '" + name + "' has the wrong dtype or shape for this model", where);
    auto out = torch::empty(shape, torch::kFloat32);
    std::memcpy(out.data_ptr<float>(), t.data.data, t.data.size);
    by_name.erase(it);
    return out.to(s.device);
  };
  auto zeros = [&](const std::vector<int64_t>& shape) {
    return torch::zeros(shape, torch::TensorOptions().dtype(torch::kFloat32).device(s.device));
  };
  for (const auto& p : s.specs) {
    s.params.push_back(take(p.name, p.shape).set_requires_grad(true));
    s.m.push_back(s.params_only ? zeros(p.shape) : take(moment_name('m', p.name), p.shape));
    s.v.push_back(s.params_only ? zeros(p.shape) : take(moment_name('v', p.name), p.shape));
  }
  if (!s.params_only) {
    auto it = by_name.find(kStepTensor);
    if (it == by_name.end() || it->second->dtype != DType::kI64 || it->second->shape != std::vector<int64_t>{1})
      throw Error(std::string("state lacks an I64[1] tensor '") + kStepTensor + "'", where);
    s.step = int64_t(get_le64(it->second->data.data));
    if (s.step < 0) throw Error("state has a negative step", where);
    by_name.erase(it);
  }
  if (!by_name.empty()) throw Error(std::string(what) + " has an unexpected tensor '" + by_name.begin()->first + "'", where);
  return st;
}

TrainState TrainState::load(const ModelConfig& c, const std::string& path, const std::string& device,
                            bool params_only) {
  Safetensors f = Safetensors::open(path);
  return from_tensors(c, f.tensors(), path, device, params_only);
}

bool TrainState::params_only() const { return impl_->params_only; }

TrainState TrainState::clone() const {
  TrainState st;
  Impl& s = *st.impl_;
  const Impl& o = *impl_;
  s.cfg = o.cfg;
  s.script = o.script;
  s.specs = o.specs;
  s.device = o.device;
  s.index = o.index;
  s.step = o.step;
  s.params_only = o.params_only;
  for (size_t i = 0; i < o.params.size(); i++) {
    s.params.push_back(o.params[i].detach().clone().set_requires_grad(true));
    s.m.push_back(o.m[i].clone());
    s.v.push_back(o.v[i].clone());
  }
  return st;
}

int64_t TrainState::step() const { return impl_->step; }

const std::vector<torch::Tensor>& TrainState::Impl::cpu(const std::vector<torch::Tensor>& ts,
                                                        std::vector<torch::Tensor>& cache) const {
  cache.clear();
  for (const auto& t : ts) cache.push_back(t.detach().to(torch::kCPU).contiguous());
  return cache;
}

std::vector<TensorView> TrainState::tensors() const {
  Impl& s = *impl_;
  s.cpu(s.params, s.cpu_params);
  s.cpu(s.m, s.cpu_m);
  s.cpu(s.v, s.cpu_v);
  put_le64(s.step_bytes, uint64_t(s.step));
  std::vector<TensorView> out;
  auto view = [](const torch::Tensor& t) {
    return ByteView(reinterpret_cast<const uint8_t*>(t.data_ptr<float>()), size_t(t.numel()) * 4);
  };
  for (size_t i = 0; i < s.specs.size(); i++) {
    out.push_back({s.specs[i].name, DType::kF32, s.specs[i].shape, view(s.cpu_params[i])});
    out.push_back({moment_name('m', s.specs[i].name), DType::kF32, s.specs[i].shape, view(s.cpu_m[i])});
    out.push_back({moment_name('v', s.specs[i].name), DType::kF32, s.specs[i].shape, view(s.cpu_v[i])});
  }
  out.push_back({kStepTensor, DType::kI64, {1}, ByteView(s.step_bytes, 8)});
  return out;
}

Hash32 TrainState::root() const { return state_root(tensors()); }

void TrainState::save(const std::string& path) const { write_safetensors(path, tensors()); }

TrainState::Sketches TrainState::sketches(const Manifest& mf) const {
  const Impl& s = *impl_;
  Sketches out;
  const uint64_t k = uint64_t(mf.fp.sketch_k);
  auto one = [&](const std::vector<torch::Tensor>& ts, const char* use) {
    SketchSpec spec{k, sketch_seed(mf.fp.sketch_seed, use)};
    std::vector<double> acc(k, 0.0);
    uint64_t offset = 0;
    for (const auto& t : ts) {
      auto c = t.detach().to(torch::kCPU).contiguous();
      sketch_add(spec, c.data_ptr<float>(), uint64_t(c.numel()), offset, acc.data());
      offset += uint64_t(c.numel());
    }
    return std::vector<float>(acc.begin(), acc.end());
  };
  out.w = one(s.params, "weights");
  out.m = one(s.m, "adam.m");
  out.v = one(s.v, "adam.v");
  return out;
}

namespace {

// LibTorch's CPU allocator with transparent huge pages for large blocks. A
// 124M-parameter state is 1.5 GB; with 4 KiB pages every fresh tensor (a
// state loaded or cloned, a step's activations) costs a page fault per 4 KiB,
// most of a verifier's time on a VM (bench/gpt2.sh). Blocks of 2 MiB or more
// are 2 MiB-aligned and madvise(MADV_HUGEPAGE)'d, which the kernel honours
// when transparent_hugepage is "madvise" or "always"; smaller ones keep the
// default 64-byte alignment. Where the memory lies never changes a result.
void free_block(void* p) { std::free(p); }

struct HugePageTensorAllocator final : c10::Allocator {
  static constexpr size_t kHuge = size_t(2) << 20;
  c10::DataPtr allocate(size_t n) const override {
    const bool huge = n >= kHuge;
    void* p = nullptr;
    if (::posix_memalign(&p, huge ? kHuge : 64, n == 0 ? 1 : n) != 0) throw std::bad_alloc();
    if (huge) advise_huge_pages(p, n);
    return {p, p, &free_block, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }
};

}  // namespace

void set_torch_threads(unsigned n) {
  // OpenBLAS's own threads split a matrix product's reductions in an order
  // that depends on their count, which LibTorch's thread setting does not
  // control: parameters with an exactly-zero gradient (an attention key's
  // bias) then get Adam updates of pure rounding noise that differ between
  // machines far beyond what calibration measures, and the threads fight
  // LibTorch's own (a step gets 2x slower). One BLAS thread, whatever the
  // environment says, makes the step a function of LibTorch's thread count alone.
  static const bool blas_pinned = [] {
    using SetThreads = void (*)(int);
    if (auto f = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(1);
    static HugePageTensorAllocator huge_pages;
    c10::SetCPUAllocator(&huge_pages, /*priority=*/1);
    return true;
  }();
  (void)blas_pinned;
  if (n) torch::set_num_threads(int(n));
  // Inter-op parallelism is unused (one op at a time) and can be set only once per process.
  static const bool once = [] {
    try {
      torch::set_num_interop_threads(1);
    } catch (const std::exception&) {
    }
    return true;
  }();
  (void)once;
}

RunConfig current_run_config(const std::string& device, int world) {
  RunConfig c;
  c.device = device;
  c.threads = unsigned(std::max(1, torch::get_num_threads()));
  c.world = world;
  // The kernel set ATen dispatches to, as ATen itself reports it ("CPU
  // capability usage: AVX2"): its automatic choice is not always the best
  // the CPU has (this LibTorch picks AVX2 on AVX-512 machines).
  c.cpu_capability = aten_capability_in_effect();
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  if (auto at = config.find(key); at != std::string::npos) {
    std::string cap = config.substr(at + key.size(), config.find('\n', at) - at - key.size());
    for (char& ch : cap) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (cap == "default" || cap == "avx2" || cap == "avx512") c.cpu_capability = cap;
  }
  using CoreName = char* (*)();
  if (auto f = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    c.blas = "openblas";
    if (const char* n = f()) c.blas_core = n;
  }
  if (const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA")) c.onednn_isa = isa;
  c.torch_version = torch_version();
  return c;
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

bool cuda_available() { return torch::cuda::is_available(); }

}  // namespace wit
