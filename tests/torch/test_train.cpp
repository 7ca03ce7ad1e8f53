// The training step and state with LibTorch: seeded init matches the torch-free
// regeneration, steps are bit-identical for identical inputs, checkpoints
// round-trip, and training actually learns.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>

#include <filesystem>

#include "wit/base/error.h"
#include "wit/model/fingerprint.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/run/shards.h"
#include "wit/model/state.h"
#include "script_modules.h"

using namespace wit;

namespace {

Manifest tiny_manifest() {
  Manifest m;
  m.model.n_layer = 2;
  m.model.n_head = 2;
  m.model.d_model = 32;
  m.model.context = 32;
  m.batch_size = 4;
  m.steps = 40;
  m.schedule.warmup = 2;
  m.opt.lr = 3e-3;
  m.fp.sketch_k = 128;
  m.fp.probe_dim = 16;
  m.fp.sketch_seed.b[0] = 9;
  return m;
}

BatchRecords batch_a() {
  return {"the quick brown fox jumps over the lazy dog", "hello, world", "",
          "a record longer than the context window of thirty-two bytes, truncated"};
}

}  // namespace

TEST_CASE("the torch initial state is the seeded init of model_spec", "[torch]") {
  set_torch_threads(1);
  Manifest m = tiny_manifest();
  Bytes seed(32, 3);
  TrainState st = TrainState::initial(m.model, ByteView(seed));
  CHECK(st.step() == 0);
  CHECK(st.root() == initial_state_root(m.model, ByteView(seed)));
}

TEST_CASE("a training step is bit-identical for identical inputs", "[torch]") {
  set_torch_threads(2);
  Manifest m = tiny_manifest();
  Bytes seed(32, 4);
  TrainState a = TrainState::initial(m.model, ByteView(seed));
  TrainState b = a.clone();
  for (int i = 0; i < 3; i++) {
    StepOutput oa = train_step(m, a, batch_a());
    StepOutput ob = train_step(m, b, batch_a());
    CHECK(oa.losses == ob.losses);
    CHECK(oa.grad_norm == ob.grad_norm);
    CHECK(a.root() == b.root());
  }
  CHECK(a.step() == 3);
  auto sa = a.sketches(m), sb = b.sketches(m);
  CHECK(sa.w == sb.w);
  CHECK(sa.m == sb.m);
  CHECK(sa.v == sb.v);
  // Other data gives another state.
  TrainState c = TrainState::initial(m.model, ByteView(seed));
  BatchRecords other = batch_a();
  other[1] = "hello, wurld";
  train_step(m, c, other);
  TrainState d = TrainState::initial(m.model, ByteView(seed));
  StepOutput od = train_step(m, d, batch_a());
  CHECK(c.root() != d.root());
  CHECK(od.losses.size() == 4);
  CHECK(od.lr == Approx(m.lr_at(1)));
}

TEST_CASE("checkpoints round-trip and training resumes identically", "[torch]") {
  set_torch_threads(1);
  Manifest m = tiny_manifest();
  Bytes seed(32, 5);
  TrainState st = TrainState::initial(m.model, ByteView(seed));
  train_step(m, st, batch_a());
  train_step(m, st, batch_a());
  auto dir = std::filesystem::temp_directory_path() / ("wit-torch-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s2.safetensors").string();
  st.save(path);
  TrainState back = TrainState::load(m.model, path);
  CHECK(back.step() == 2);
  CHECK(back.root() == st.root());
  train_step(m, st, batch_a());
  train_step(m, back, batch_a());
  CHECK(back.root() == st.root());
  // A model of another shape is refused with a clear error.
  Manifest other = m;
  other.model.d_model = 64;
  CHECK_THROWS_AS(TrainState::load(other.model, path), Error);
  // Parameters alone load as a released model; the full state is still required by default.
  std::vector<TensorView> params;
  for (const auto& t : st.tensors())
    if (t.name.rfind("adam.", 0) != 0 && t.name != kStepTensor) params.push_back(t);
  const std::string released = (dir / "released.safetensors").string();
  write_safetensors(released, params);
  CHECK_THROWS_AS(TrainState::load(m.model, released), Error);
  TrainState rel = TrainState::load(m.model, released, "cpu", true);
  CHECK(rel.params_only());
  CHECK(rel.sketches(m).w == st.sketches(m).w);
  std::filesystem::remove_all(dir);
}

TEST_CASE("training learns: the loss on a repeated batch falls", "[torch]") {
  set_torch_threads(2);
  Manifest m = tiny_manifest();
  Bytes seed(32, 6);
  TrainState st = TrainState::initial(m.model, ByteView(seed));
  float first = 0, last = 0;
  for (int i = 0; i < 30; i++) {
    StepOutput o = train_step(m, st, batch_a());
    if (i == 0) first = o.mean_loss;
    last = o.mean_loss;
    CHECK(std::isfinite(o.grad_norm));
  }
  INFO("first loss " << first << ", last " << last);
  CHECK(first == Approx(std::log(257.0)).epsilon(0.1));  // about uniform over the vocabulary
  CHECK(last < 0.7 * first);
}

TEST_CASE("probe fingerprints are deterministic and move with the weights", "[torch]") {
  set_torch_threads(1);
  Manifest m = tiny_manifest();
  Bytes seed(32, 7);
  TrainState st = TrainState::initial(m.model, ByteView(seed));
  BatchRecords probe = {"probe one", "probe two"};
  auto p0 = probe_fingerprint(m, st, probe);
  CHECK(p0.size() == size_t(m.fp.probe_dim));
  CHECK(p0 == probe_fingerprint(m, st, probe));
  train_step(m, st, batch_a());
  CHECK(p0 != probe_fingerprint(m, st, probe));
}

TEST_CASE("large tensors come 2 MiB-aligned (huge pages), small ones 64-byte aligned", "[train]") {
  wit::set_torch_threads(1);  // installs wit's CPU allocator, once per process
  for (size_t bytes : {size_t(2) << 20, size_t(5) << 20, (size_t(64) << 20) + 4}) {
    INFO(bytes << " bytes");
    CHECK(wit::fresh_tensor_address(bytes) % (size_t(2) << 20) == 0);
  }
  for (size_t bytes : {size_t(4), size_t(4096), (size_t(2) << 20) - 4}) {
    INFO(bytes << " bytes");
    CHECK(wit::fresh_tensor_address(bytes) % 64 == 0);
  }
}

TEST_CASE("gradient accumulation is the data-parallel arithmetic, and dropout replays from the seed", "[torch]") {
  set_torch_threads(1);
  Manifest plain = tiny_manifest();
  Manifest accum = plain;
  accum.micro_batch = 2;  // two micro-batches of the 4 rows
  Bytes seed(32, 5);
  const TrainState init = TrainState::initial(plain.model, ByteView(seed));
  // Micro-batches [0, 2) and [2, 4), each a gradient of its rows' loss / B,
  // summed g1 + g2: the operations of two emulated ranks, bit for bit.
  TrainState a = init.clone(), b = init.clone(), c = init.clone();
  for (int i = 0; i < 2; i++) {
    const StepOutput oa = train_step(accum, a, batch_a());
    const StepOutput ob = train_step_emulating(plain, b, batch_a(), 2);
    const StepOutput oc = train_step(plain, c, batch_a());
    CHECK(oa.losses == ob.losses);
    CHECK(oa.grad_norm == ob.grad_norm);
    CHECK(oa.mean_loss == ob.mean_loss);
    // The unsplit step: the same loss scaling, equal up to rounding.
    CHECK(std::abs(oa.grad_norm - oc.grad_norm) <= 1e-4f * oc.grad_norm);
    CHECK(std::abs(oa.mean_loss - oc.mean_loss) <= 1e-5f * oc.mean_loss);
  }
  CHECK(a.root() == b.root());

  Manifest drop = plain;
  drop.dropout = 0.3;
  TrainState d = init.clone();
  CHECK_THROWS_WITH(train_step(drop, d, batch_a()), Catch::Contains("draws dropout from its seed"));
  TrainState d1 = init.clone(), d2 = init.clone(), other = init.clone(), e = init.clone();
  Bytes seed2 = seed;
  seed2[0] ^= 1;
  train_step(drop, d1, batch_a(), ByteView(seed));
  train_step(drop, d2, batch_a(), ByteView(seed));
  train_step(drop, other, batch_a(), ByteView(seed2));
  train_step(plain, e, batch_a(), ByteView(seed));
  CHECK(d1.root() == d2.root());     // the same seed: the same masks
  CHECK(d1.root() != other.root());  // another seed: other masks
  CHECK(d1.root() != e.root());      // dropout is on
  // Probes run in eval mode: the same weights give the same fingerprint
  // whatever the manifest's dropout.
  const BatchRecords probe = {"probe one", "probe two"};
  CHECK(probe_fingerprint(drop, d1, probe) == probe_fingerprint(plain, d1, probe));
}

TEST_CASE("a fully sharded step, emulated in one process: deterministic, the data-parallel losses, close updates",
          "[torch][fsdp]") {
  set_torch_threads(1);
  Manifest plain = tiny_manifest();
  plain.opt.grad_clip = 0;  // no clipping: the norm's order does not enter the update
  Manifest full = plain;
  full.sharding = plan_shards(full.model, 2);
  Bytes seed(32, 7);
  const TrainState init = TrainState::initial(plain.model, ByteView(seed));
  TrainState a = init.clone(), b = init.clone(), c = init.clone();
  for (int i = 0; i < 3; i++) {
    // train_step of a sharded manifest is its emulation, whatever world is asked for.
    const StepOutput oa = train_step(full, a, batch_a());
    const StepOutput ob = train_step_emulating(full, b, batch_a(), 1);
    const StepOutput oc = train_step_emulating(plain, c, batch_a(), 2);
    CHECK(oa.losses == ob.losses);
    CHECK(oa.grad_norm == ob.grad_norm);
    // The forward, unit by unit, is the data-parallel forward: the same losses, bit for bit
    // (step 1; later steps start from weights that differ by rounding).
    if (i == 0) CHECK(oa.losses == oc.losses);
    CHECK(std::abs(oa.grad_norm - oc.grad_norm) <= 1e-4f * oc.grad_norm);
  }
  CHECK(a.root() == b.root());
  // The gradient sums are associated otherwise: equal to rounding, not bit for bit.
  const auto ta = a.tensors(), tc = c.tensors();
  double most = 0;
  for (size_t i = 0; i < ta.size(); i++) {
    if (ta[i].dtype != DType::kF32) continue;
    const float* x = reinterpret_cast<const float*>(ta[i].data.data);
    const float* y = reinterpret_cast<const float*>(tc[i].data.data);
    for (size_t j = 0; j < ta[i].data.size / 4; j++) most = std::max(most, double(std::abs(x[j] - y[j])));
  }
  CHECK(most < 1e-5);
  // A plan for another model is refused by the step.
  Manifest bad = full;
  bad.model.n_layer = 3;
  TrainState d = TrainState::initial(bad.model, ByteView(seed));
  CHECK_THROWS(train_step(bad, d, batch_a()));
}
