// Data-parallel training on c10d: a ProcessGroupGloo over a TCPStore
// rendezvous (torchrun's environment variables), the data-parallel side of
// THE training step (step.h), and the local launcher behind --nproc.
#define USE_C10D_GLOO 1
#include "wit/train/dist.h"

#include "wit/run/shards.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "wit/model/state_impl.h"
#include "wit/train/step.h"
#include "wit/cmd/cli.h"
#include "wit/hash/tags.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"
#include "wit/run/sketch.h"
#include "wit/hash/hash.h"
#include "wit/train/trainer.h"

namespace wit {

namespace {

std::string one_line(std::string s) {
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

long env_int(const char* name, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw Error(std::string(name) + " is not set", "environment");
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi)
    throw Error(std::string(name) + "=" + v + " is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi),
                "environment");
  return x;
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0; }

}  // namespace

DistEnv dist_env_from_environment(double timeout_s) {
  DistEnv e;
  e.timeout_s = timeout_s;
  const char* ws = std::getenv("WORLD_SIZE");
  if (!ws || !*ws) return e;
  e.world = int(env_int("WORLD_SIZE", 1, 4096));
  if (e.world == 1) return e;
  e.rank = int(env_int("RANK", 0, e.world - 1));
  const char* a = std::getenv("MASTER_ADDR");
  if (!a || !*a) throw Error("MASTER_ADDR is not set", "environment");
  e.addr = a;
  e.port = int(env_int("MASTER_PORT", 1, 65535));
  return e;
}

struct Dist::Impl {
  int rank = 0, world = 1;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  Traffic traffic;
  // Sharded optimizer state: owner rank of each parameter (name order), and
  // its offset in the global index of the sketches.
  bool sharded = false;
  std::vector<int> owner;
  std::vector<uint64_t> offset;
  bool owns(size_t i) const { return owner[i] == rank; }
  // Fully sharded (--shard=full): the plan, each unit's parameters, and how
  // gradients are reduce-scattered (fan-in of send/recv, or a W = 2 all-reduce
  // and slice, which sums the same two addends; bench/dist.sh measures both).
  std::optional<ShardPlan> full;
  std::vector<std::vector<size_t>> unit_params;
  bool rs_allreduce = false;

  int64_t step = 0;  // the step being computed
  std::function<void(int64_t, int, float*, size_t)> serve_fn;
  // Test only (tests/cli/torch_fsdp.sh): WIT_TEST_KILL_AT=R:gather:S or
  // R:scatter:S kills rank R (SIGKILL) in the middle of step S, just before
  // the second parameter gather or gradient reduce-scatter of that step.
  std::string kill_what;
  int64_t kill_step = -1;
  int kill_count = 0;
  void maybe_die(const char* what) {
    if (kill_step != step || kill_what != what) return;
    if (++kill_count == 2) ::raise(SIGKILL);
  }

  std::vector<float> gather_losses(const std::vector<float>& mine, int64_t B);
  void gather_unit(TrainState::Impl& s, size_t u);
  void release_unit(TrainState::Impl& s, size_t u);
  std::vector<torch::Tensor> reduce_scatter(size_t u, const std::vector<torch::Tensor>& mine);
  std::vector<double> gather_partials(const std::vector<double>& mine);

  // Runs a collective; a dead or stuck peer becomes one clear wit::Error.
  template <class F>
  void collective(const char* what, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      f();
    } catch (const c10::Error& e) {
      throw Error(std::string("lost contact with the other ranks during ") + what +
                      " (a rank died, hung past the timeout or diverged): " + one_line(e.what_without_backtrace()),
                  "rank " + std::to_string(rank));
    } catch (const std::exception& e) {
      throw Error(std::string("lost contact with the other ranks during ") + what + ": " + one_line(e.what()),
                  "rank " + std::to_string(rank));
    }
    traffic.comm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

Dist::Dist(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dist::~Dist() = default;
int Dist::rank() const { return impl_->rank; }
int Dist::world() const { return impl_->world; }
const Dist::Traffic& Dist::traffic() const { return impl_->traffic; }

std::unique_ptr<Dist> Dist::connect(const DistEnv& env) {
  // A peer that dies mid-send closes its socket: the send must fail (and the
  // rank report the lost peer, exit 2), not end this process by SIGPIPE (141).
  ::signal(SIGPIPE, SIG_IGN);
  auto impl = std::make_unique<Impl>();
  impl->rank = env.rank;
  impl->world = env.world;
  const auto timeout = std::chrono::milliseconds(int64_t(env.timeout_s * 1000));
  const std::string where = env.addr + ":" + std::to_string(env.port) + " (rank " + std::to_string(env.rank) + ")";
  try {
    c10d::TCPStoreOptions so;
    so.port = uint16_t(env.port);
    so.isServer = env.rank == 0;
    so.numWorkers = size_t(env.world);
    so.waitWorkers = true;
    so.timeout = timeout;
    impl->store = c10::make_intrusive<c10d::TCPStore>(env.addr, so);
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (is_loopback(env.addr))
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 1;
    impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, env.rank, env.world, opts);
  } catch (const c10::Error& e) {
    throw Error("rendezvous failed: " + one_line(e.what_without_backtrace()), where);
  } catch (const std::exception& e) {
    throw Error(std::string("rendezvous failed: ") + one_line(e.what()), where);
  }
  if (const char* k = std::getenv("WIT_TEST_KILL_AT"); k && *k) {
    int r = -1;
    char what[16] = {0};
    long long st = -1;
    if (std::sscanf(k, "%d:%15[a-z]:%lld", &r, what, &st) == 3 && r == env.rank) {
      impl->kill_what = what;
      impl->kill_step = st;
    }
  }
  return std::unique_ptr<Dist>(new Dist(std::move(impl)));
}

void Dist::set_serve_fn(std::function<void(int64_t, int, float*, size_t)> fn) { impl_->serve_fn = std::move(fn); }

std::pair<int64_t, int64_t> Dist::rows(int64_t B) const {
  return share_rows(B, impl_->world, impl_->rank);
}

std::vector<uint64_t> Dist::gather_u64(uint64_t mine) {
  Impl& d = *impl_;
  auto in = torch::tensor({int64_t(mine)}, torch::kInt64);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < d.world; r++) out[0].push_back(torch::empty({1}, torch::kInt64));
  std::vector<at::Tensor> inv{in};
  d.collective("a gather of statistics", [&] { d.pg->allgather(out, inv)->wait(); });
  std::vector<uint64_t> all;
  for (int r = 0; r < d.world; r++) all.push_back(uint64_t(out[0][size_t(r)].item<int64_t>()));
  return all;
}

void Dist::broadcast(std::string& bytes) {
  Impl& d = *impl_;
  auto n = torch::tensor({int64_t(bytes.size())}, torch::kInt64);
  d.collective("broadcast", [&] {
    std::vector<at::Tensor> v{n};
    d.pg->broadcast(v)->wait();
  });
  const int64_t size = n.item<int64_t>();
  auto buf = torch::empty({size}, torch::kUInt8);
  if (d.rank == 0) std::memcpy(buf.data_ptr<uint8_t>(), bytes.data(), size_t(size));
  d.collective("broadcast", [&] {
    std::vector<at::Tensor> v{buf};
    d.pg->broadcast(v)->wait();
  });
  bytes.assign(reinterpret_cast<const char*>(buf.data_ptr<uint8_t>()), size_t(size));
}

std::vector<float> Dist::Impl::gather_losses(const std::vector<float>& mine, int64_t B) {
  // All-gather, padded to the largest share; the shares are in batch order.
  const int64_t W = world;
  const int64_t most = (B + W - 1) / W;
  auto in = torch::zeros({most}, torch::kFloat32);
  std::memcpy(in.data_ptr<float>(), mine.data(), 4 * mine.size());
  std::vector<std::vector<at::Tensor>> out(1);
  for (int64_t r = 0; r < W; r++) out[0].push_back(torch::empty({most}, torch::kFloat32));
  std::vector<at::Tensor> inv{in};
  collective("the gather of per-example losses", [&] { pg->allgather(out, inv)->wait(); });
  traffic.witness_bytes += uint64_t((W - 1) * most * 4);
  std::vector<float> all;
  for (int64_t r = 0; r < W; r++) {
    const int64_t q = B / W, n = q + (r < B % W ? 1 : 0);
    const float* p = out[0][size_t(r)].data_ptr<float>();
    all.insert(all.end(), p, p + n);
  }
  return all;
}

void Dist::Impl::gather_unit(TrainState::Impl& s, size_t u) {
  // One broadcast per owner of the unit's parameters (rank order), into one
  // buffer whose slices become the parameters for this unit's compute.
  for (int r = 0; r < world; r++) {
    std::vector<size_t> idx;
    int64_t n = 0;
    for (size_t i : unit_params[u])
      if (owner[i] == r) {
        idx.push_back(i);
        n += int64_t(s.specs[i].numel());
      }
    if (idx.empty()) continue;
    torch::Tensor buf;
    if (r == rank) {
      std::vector<torch::Tensor> flat;
      for (size_t i : idx) flat.push_back(s.params[i].detach().reshape({-1}).to(torch::kCPU));
      buf = torch::cat(flat);
      if (serve_fn) serve_fn(step, rank, buf.data_ptr<float>(), size_t(buf.numel()));
      maybe_die("gather");
    } else {
      buf = torch::empty({n}, torch::kFloat32);
    }
    collective("the parameter gather", [&] {
      std::vector<at::Tensor> v{buf};
      c10d::BroadcastOptions o;
      o.rootRank = r;
      pg->broadcast(v, o)->wait();
    });
    if (r == rank) {
      traffic.param_bytes += uint64_t((world - 1) * n * 4);
      continue;
    }
    buf = buf.to(s.device);
    int64_t off = 0;
    for (size_t i : idx) {
      const int64_t k = int64_t(s.specs[i].numel());
      s.params[i] = buf.slice(0, off, off + k).view(s.specs[i].shape).detach().set_requires_grad(true);
      off += k;
    }
  }
}

void Dist::Impl::release_unit(TrainState::Impl& s, size_t u) {
  for (size_t i : unit_params[u])
    if (!owns(i)) s.params[i] = torch::Tensor();
}

std::vector<torch::Tensor> Dist::Impl::reduce_scatter(size_t u, const std::vector<torch::Tensor>& mine) {
  const std::vector<size_t>& idx = unit_params[u];
  std::vector<torch::Tensor> sum(idx.size());
  auto flat_of = [&](int r) {
    std::vector<torch::Tensor> flat;
    for (size_t j = 0; j < idx.size(); j++)
      if (owner[idx[j]] == r || r < 0) flat.push_back(mine[j].reshape({-1}).to(torch::kCPU));
    return flat.empty() ? torch::Tensor() : torch::cat(flat);
  };
  auto scatter_back = [&](const torch::Tensor& total, bool all) {
    int64_t off = 0;
    for (size_t j = 0; j < idx.size(); j++) {
      if (!all && owner[idx[j]] != rank) continue;
      const int64_t n = mine[j].numel();
      if (owner[idx[j]] == rank) sum[j] = total.slice(0, off, off + n).view(mine[j].sizes()).to(mine[j].device());
      off += n;
    }
  };
  if (rs_allreduce) {
    // All-reduce the whole unit and keep the owned slices (W = 2: the same two addends).
    torch::Tensor buf = flat_of(-1);
    collective("the gradient reduce-scatter", [&] {
      std::vector<at::Tensor> v{buf};
      pg->allreduce(v)->wait();
    });
    traffic.grad_bytes += uint64_t(2 * (world - 1) * buf.numel() * 4 / world);
    scatter_back(buf, true);
    return sum;
  }
  // Fan-in: each rank sends an owner that owner's part of its gradients; the
  // owner adds what it gets in rank order, its own in its place.
  maybe_die("scatter");
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<torch::Tensor> sends;
  std::vector<torch::Tensor> recvs(static_cast<size_t>(world));
  const int tag = int(u);
  collective("the gradient reduce-scatter", [&] {
    for (int r = 0; r < world; r++) {
      if (r == rank) continue;
      torch::Tensor part = flat_of(r);
      if (!part.defined()) continue;
      sends.push_back(part);
      std::vector<at::Tensor> v{part};
      works.push_back(pg->send(v, r, tag));
      traffic.grad_bytes += uint64_t(part.numel() * 4);
    }
    torch::Tensor own = flat_of(rank);
    if (own.defined()) {
      for (int q = 0; q < world; q++) {
        if (q == rank) {
          recvs[size_t(q)] = own;
          continue;
        }
        recvs[size_t(q)] = torch::empty_like(own);
        std::vector<at::Tensor> v{recvs[size_t(q)]};
        works.push_back(pg->recv(v, q, tag));
      }
    }
    for (auto& w : works) w->wait();
  });
  if (!recvs[0].defined()) return sum;
  torch::Tensor total = recvs[0];
  for (int q = 1; q < world; q++) total = total + recvs[size_t(q)];
  scatter_back(total, false);
  return sum;
}

std::vector<double> Dist::Impl::gather_partials(const std::vector<double>& mine) {
  auto in = torch::tensor({mine.at(0)}, torch::kFloat64);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < world; r++) out[0].push_back(torch::empty({1}, torch::kFloat64));
  std::vector<at::Tensor> inv{in};
  collective("the gather of gradient norms", [&] { pg->allgather(out, inv)->wait(); });
  traffic.grad_bytes += uint64_t((world - 1) * 8);
  std::vector<double> all;
  for (int r = 0; r < world; r++) all.push_back(out[0][size_t(r)].item<double>());
  return all;
}

StepOutput Dist::step(const Manifest& mf, TrainState& state, const BatchRecords& batch, ByteView seed,
                       const BatchRecords* own_batch) {
  Impl& d = *impl_;
  d.step = state.step() + 1;
  const int64_t B = int64_t(batch.size()), W = d.world;
  if (B < W)
    throw Error("a batch of " + std::to_string(B) + " records cannot be split over " + std::to_string(W) + " ranks",
                "batch_size");
  if (d.full) {
    TrainState::Impl& s = state.impl();
    FullShardComm comm;
    comm.ranks = {d.rank};
    comm.gather = [&](size_t u) { d.gather_unit(s, u); };
    comm.release = [&](size_t u) { d.release_unit(s, u); };
    comm.reduce_scatter = [&](size_t u, std::vector<std::vector<torch::Tensor>>& c) { return d.reduce_scatter(u, c.at(0)); };
    comm.gather_partials = [&](const std::vector<double>& mine) { return d.gather_partials(mine); };
    comm.gather_losses = [&](const std::vector<float>& mine) { return d.gather_losses(mine, B); };
    comm.own_batch = own_batch;
    StepOutput out = train_step_full(mf, state, batch, comm, seed);
    d.traffic.steps++;
    return out;
  }
  StepSplit split;
  std::tie(split.lo, split.hi) = rows(B);
  split.reduce_grads = [&](std::vector<torch::Tensor>& grads) {
    // One all-reduce (sum) of every gradient, flattened on the CPU.
    std::vector<torch::Tensor> flat;
    for (const auto& g : grads) flat.push_back(g.reshape({-1}).to(torch::kCPU));
    auto buf = torch::cat(flat);
    d.collective("the gradient all-reduce", [&] {
      std::vector<at::Tensor> v{buf};
      d.pg->allreduce(v)->wait();
    });
    // Ring all-reduce: each rank sends 2 (W - 1) / W of the buffer.
    d.traffic.grad_bytes += uint64_t(2 * (W - 1) * buf.numel() * 4 / W);
    int64_t off = 0;
    for (auto& g : grads) {
      const int64_t n = g.numel();
      g = buf.slice(0, off, off + n).view(g.sizes()).to(g.device());
      off += n;
    }
  };
  split.gather_losses = [&](const std::vector<float>& mine) { return d.gather_losses(mine, B); };
  if (d.sharded) {
    for (size_t i = 0; i < d.owner.size(); i++) split.owned.push_back(d.owns(i));
    split.after_update = [&] {
      // Every owner sends its updated parameters to the others (one broadcast per rank).
      TrainState::Impl& s = state.impl();
      for (int r = 0; r < W; r++) {
        std::vector<torch::Tensor> flat;
        for (size_t i = 0; i < d.owner.size(); i++)
          if (d.owner[i] == r) flat.push_back(s.params[i].detach().reshape({-1}).to(torch::kCPU));
        if (flat.empty()) continue;
        auto buf = torch::cat(flat);
        d.collective("the parameter exchange", [&] {
          std::vector<at::Tensor> v{buf};
          c10d::BroadcastOptions o;
          o.rootRank = r;
          d.pg->broadcast(v, o)->wait();
        });
        if (r == d.rank) {
          d.traffic.grad_bytes += uint64_t((W - 1) * buf.numel() * 4);
          continue;
        }
        int64_t off = 0;
        for (size_t i = 0; i < d.owner.size(); i++) {
          if (d.owner[i] != r) continue;
          auto& p = s.params[i];
          const int64_t n = p.numel();
          p.detach().copy_(buf.slice(0, off, off + n).view(p.sizes()));
          off += n;
        }
      }
    };
  }
  StepOutput out = train_step_split(mf, state, batch, &split, seed);
  d.traffic.steps++;
  return out;
}

bool Dist::sharded() const { return impl_->sharded; }
bool Dist::full() const { return bool(impl_->full); }

void Dist::full_shard(TrainState& state, const ShardPlan& plan) {
  Impl& d = *impl_;
  TrainState::Impl& s = state.impl();
  if (plan.world != d.world)
    throw Error("the run is sharded over " + std::to_string(plan.world) + " ranks, not " + std::to_string(d.world),
                "WORLD_SIZE", "resume with --nproc " + std::to_string(plan.world));
  // Every rank makes the plan itself; all must agree with the manifest's
  // (rank 0's) before step 1, or every rank stops.
  ShardPlan own = plan_shards(s.cfg, d.world);
  if (const char* skew = std::getenv("WIT_TEST_SHARD_SKEW"); skew && std::atoi(skew) == d.rank && d.rank > 0) {
    // Test only (tests/cli/torch_dist.sh): this rank cuts its range one tensor later.
    if (own.bounds.size() > 2 && own.bounds[1] < own.bounds[2]) own.bounds[1]++;
  }
  const Hash32 h = hash_tagged(tags::kShardPlan, ByteView(own.to_json().dump()));
  auto in = torch::empty({32}, torch::kUInt8);
  std::memcpy(in.data_ptr<uint8_t>(), h.data(), 32);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < d.world; r++) out[0].push_back(torch::empty({32}, torch::kUInt8));
  std::vector<at::Tensor> inv{in};
  d.collective("the check of the shard plan", [&] { d.pg->allgather(out, inv)->wait(); });
  const Hash32 want = hash_tagged(tags::kShardPlan, ByteView(plan.to_json().dump()));
  for (int r = 0; r < d.world; r++)
    if (std::memcmp(out[0][size_t(r)].data_ptr<uint8_t>(), want.data(), 32) != 0)
      throw Error("rank " + std::to_string(r) + " cuts the parameters into other ranges or units than the run's manifest "
                  "(a different wit or model on that rank?); no step was taken",
                  "rank " + std::to_string(d.rank));
  d.owner = plan.owners();
  d.offset.clear();
  uint64_t at = 0;
  for (const auto& sp : s.specs) {
    d.offset.push_back(at);
    at += sp.numel();
  }
  d.unit_params.clear();
  for (const auto& unit : plan.units) {
    d.unit_params.emplace_back();
    for (const auto& name : unit) d.unit_params.back().push_back(s.index.at(name));
  }
  if (const char* rs = std::getenv("WIT_REDUCE_SCATTER"); rs && std::string(rs) == "allreduce") {
    if (d.world != 2) throw Error("WIT_REDUCE_SCATTER=allreduce sums in Gloo's order, reproducible at 2 ranks only", "environment");
    d.rs_allreduce = true;
  }
  // Only this rank's range stays: its parameters, their moments.
  for (size_t i = 0; i < s.params.size(); i++)
    if (!d.owns(i)) s.params[i] = s.m[i] = s.v[i] = torch::Tensor();
  s.cpu_params.clear();
  s.cpu_m.clear();
  s.cpu_v.clear();
  d.full = plan;
  d.sharded = true;
}

std::vector<float> Dist::probe(const Manifest& mf, TrainState& state, const BatchRecords& probe) {
  Impl& d = *impl_;
  if (!d.full) return d.rank == 0 ? probe_fingerprint(mf, state, probe) : std::vector<float>{};
  // Unit by unit, as the step gathers them; rank 0 computes.
  TrainState::Impl& s = state.impl();
  std::vector<float> fp;
  probe_fingerprint_units(mf, state, probe, d.rank == 0,
                          [&](size_t u) { d.gather_unit(s, u); }, [&](size_t u) { d.release_unit(s, u); }, fp);
  return fp;
}

void Dist::shard(TrainState& state) {
  partition(state);
  Impl& d = *impl_;
  TrainState::Impl& s = state.impl();
  for (size_t i = 0; i < s.params.size(); i++)
    if (!d.owns(i)) s.m[i] = s.v[i] = torch::Tensor();  // another rank's optimizer state
  // The views tensors() handed out (rank 0 encoded the state for the others) would keep them alive.
  s.cpu_params.clear();
  s.cpu_m.clear();
  s.cpu_v.clear();
  d.sharded = true;
}

void Dist::partition(const TrainState& state) {
  Impl& d = *impl_;
  const TrainState::Impl& s = state.impl();
  std::vector<uint64_t> sizes;
  for (const auto& sp : s.specs) sizes.push_back(sp.numel());
  d.owner = shard_owners(sizes, d.world);
  d.offset.clear();
  uint64_t at = 0;
  for (uint64_t n : sizes) {
    d.offset.push_back(at);
    at += n;
  }
}

TrainState::Sketches Dist::sketches(const Manifest& mf, const TrainState& state) {
  Impl& d = *impl_;
  const TrainState::Impl& s = state.impl();
  const int64_t k = mf.fp.sketch_k;
  auto acc = torch::zeros({3 * k}, torch::kFloat64);
  double* a = acc.data_ptr<double>();
  const char* uses[3] = {"weights", "adam.m", "adam.v"};
  for (int u = 0; u < 3; u++) {
    SketchSpec spec{uint64_t(k), sketch_seed(mf.fp.sketch_seed, uses[u])};
    const std::vector<torch::Tensor>& ts = u == 0 ? s.params : u == 1 ? s.m : s.v;
    for (size_t i = 0; i < ts.size(); i++) {
      if (!d.owns(i)) continue;
      auto c = ts[i].detach().to(torch::kCPU).contiguous();
      sketch_add(spec, c.data_ptr<float>(), uint64_t(c.numel()), d.offset[i], a + u * k);
    }
  }
  d.collective("the sketch all-reduce", [&] {
    std::vector<at::Tensor> v{acc};
    d.pg->allreduce(v)->wait();
  });
  d.traffic.witness_bytes += uint64_t(2 * (d.world - 1) * 3 * k * 8 / d.world);
  TrainState::Sketches out;
  out.w.assign(a, a + k);
  out.m.assign(a + k, a + 2 * k);
  out.v.assign(a + 2 * k, a + 3 * k);
  return out;
}

namespace {

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

}  // namespace

// This rank's tensors (the parameters it owns with their moments; rank 0 also
// wit.step), named as in a whole checkpoint, and every rank's names.
struct Dist::Owned {
  std::vector<torch::Tensor> keep;
  std::vector<TensorView> mine;
  std::vector<std::vector<std::string>> names;
  uint8_t step_bytes[8];
};

void Dist::owned(const TrainState& state, Owned& o) const {
  const Impl& d = *impl_;
  const TrainState::Impl& s = state.impl();
  auto view = [&](const std::string& name, const std::vector<int64_t>& shape, const torch::Tensor& t) {
    o.keep.push_back(t.detach().to(torch::kCPU).contiguous());
    const auto& c = o.keep.back();
    o.mine.push_back({name, DType::kF32, shape,
                      ByteView(reinterpret_cast<const uint8_t*>(c.data_ptr<float>()), size_t(c.numel()) * 4)});
  };
  o.keep.reserve(3 * s.specs.size());
  o.names.assign(size_t(d.world), {});
  for (size_t i = 0; i < s.specs.size(); i++) {
    const auto& sp = s.specs[i];
    for (const std::string& n : {sp.name, moment_name('m', sp.name), moment_name('v', sp.name)})
      o.names[size_t(d.owner[i])].push_back(n);
    if (!d.owns(i)) continue;
    view(sp.name, sp.shape, s.params[i]);
    view(moment_name('m', sp.name), sp.shape, s.m[i]);
    view(moment_name('v', sp.name), sp.shape, s.v[i]);
  }
  o.names[0].push_back(kStepTensor);
  put_le64(o.step_bytes, uint64_t(s.step));
  if (d.rank == 0) o.mine.push_back({kStepTensor, DType::kI64, {1}, ByteView(o.step_bytes, 8)});
}

NamedLeaves Dist::gather_leaves(const Owned& o) {
  Impl& d = *impl_;
  const int W = d.world;
  // Each rank hashes only what it owns; the leaf hashes (32 bytes a tensor,
  // whatever the model's size) are all that crosses the network.
  const NamedLeaves local = tensor_leaves(o.mine);
  std::map<std::string, Hash32> by_name(local.begin(), local.end());
  size_t most = 0;
  for (const auto& n : o.names) most = std::max(most, n.size());
  auto in = torch::zeros({int64_t(most * 32)}, torch::kUInt8);
  const std::vector<std::string>& my_names = o.names[size_t(d.rank)];
  for (size_t j = 0; j < my_names.size(); j++)
    std::memcpy(in.data_ptr<uint8_t>() + 32 * j, by_name.at(my_names[j]).data(), 32);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < W; r++) out[0].push_back(torch::empty({int64_t(most * 32)}, torch::kUInt8));
  std::vector<at::Tensor> inv{in};
  d.collective("the gather of tensor leaf hashes", [&] { d.pg->allgather(out, inv)->wait(); });
  d.traffic.witness_bytes += uint64_t((W - 1) * most * 32);
  NamedLeaves leaves;
  for (int r = 0; r < W; r++) {
    const uint8_t* p = out[0][size_t(r)].data_ptr<uint8_t>();
    for (size_t j = 0; j < o.names[size_t(r)].size(); j++) {
      Hash32 h;
      std::memcpy(h.data(), p + 32 * j, 32);
      leaves.emplace_back(o.names[size_t(r)][j], h);
    }
  }
  return leaves;
}

Hash32 Dist::state_root(const TrainState& state) {
  Owned o;
  owned(state, o);
  NamedLeaves leaves = gather_leaves(o);
  return impl_->rank == 0 ? state_root_of_leaves(std::move(leaves)).root : Hash32{};
}

Hash32 Dist::checkpoint(const TrainState& state, const std::string& path) {
  Impl& d = *impl_;
  const TrainState::Impl& s = state.impl();
  const int W = d.world;
  Owned o;
  owned(state, o);
  // The shard is durable before its leaves leave this rank, so an index
  // (written after the gather) never names a shard that is not on disk.
  write_safetensors(shard_file_path(path, d.rank, W), o.mine);
  NamedLeaves leaves = gather_leaves(o);
  if (d.rank != 0) return Hash32{};
  nlohmann::json shards = nlohmann::json::array();
  for (int r = 0; r < W; r++) {
    std::vector<std::string> sorted = o.names[size_t(r)];
    std::sort(sorted.begin(), sorted.end());
    shards.push_back({{"file", base_name(shard_file_path(path, r, W))}, {"tensors", sorted}});
  }
  // The state root of every tensor, exactly as for an unsharded checkpoint.
  const Hash32 root = state_root_of_leaves(std::move(leaves)).root;
  nlohmann::json index = {{"format", kShardIndexFormat}, {"version", 1}, {"step", s.step},
                          {"root", root.hex()}, {"shards", shards}};
  write_file_atomic(shard_index_path(path), index.dump(1) + "\n");
  return root;
}

std::optional<TrainState> load_sharded_checkpoint(const ModelConfig& c, const std::string& path,
                                                  const std::string& device) {
  const std::string ip = shard_index_path(path);
  if (!std::filesystem::exists(ip)) return std::nullopt;
  const ShardedCheckpoint sc = ShardedCheckpoint::open(ip);
  TrainState st = TrainState::from_tensors(c, sc.tensors, ip, device);
  if (st.root() != sc.root) throw Error("checkpoint shards do not add up to the index's root", ip);
  return st;
}

std::optional<TrainState> load_run_checkpoint(const ModelConfig& c, const std::string& path,
                                              const std::string& device) {
  if (std::filesystem::exists(path)) return TrainState::load(c, path, device);
  return load_sharded_checkpoint(c, path, device);
}

std::optional<TrainState> logged_checkpoint(const ModelConfig& c, const std::string& path, int64_t step,
                                            const Hash32& state_root, const std::string& device) {
  std::optional<TrainState> st;
  try {
    st = load_run_checkpoint(c, path, device);
  } catch (const Error&) {
    return std::nullopt;  // damaged on disk: not the state the log binds
  }
  if (!st || st->step() != step || st->root() != state_root) return std::nullopt;
  return st;
}

// ---------------------------------------------------------------- launcher

namespace {

int free_port(const std::string& addr) {
  const Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  if (!fd.ok()) throw Error("cannot open a socket to find a free port", addr);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  ::inet_pton(AF_INET, is_loopback(addr) ? "127.0.0.1" : "0.0.0.0", &sa.sin_addr);
  socklen_t len = sizeof sa;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    throw Error("cannot find a free port", addr);
  return ntohs(sa.sin_port);  // the socket closes here: the port is free for the store
}

}  // namespace

std::optional<int> launch_local_ranks(unsigned nproc, char** argv) {
  if (nproc <= 1) return std::nullopt;
  if (const char* r = std::getenv("RANK"); r && *r) return std::nullopt;  // we are a rank already
  if (nproc > 256) throw Error("--nproc " + std::to_string(nproc) + " is more than 256 local ranks", "--nproc");
  const char* a = std::getenv("MASTER_ADDR");
  const std::string addr = a && *a ? a : "127.0.0.1";
  const char* p = std::getenv("MASTER_PORT");
  const std::string port = p && *p ? std::string(p) : std::to_string(free_port(addr));
  std::map<pid_t, unsigned> ranks;
  for (unsigned r = 0; r < nproc; r++) {
    pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("cannot start rank ") + std::to_string(r) + ": " + std::strerror(errno), "--nproc");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the ranks never outlive their launcher
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", addr.c_str(), 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::setenv("WIT_LOCAL_LAUNCH", "1", 1);
      ::execv("/proc/self/exe", argv);
      std::fprintf(stderr, "%s: error: cannot start rank %u: %s\n", cli::tool_name().c_str(), r, std::strerror(errno));
      ::_exit(2);
    }
    ranks[pid] = r;
  }
  // Like torchrun: the first rank to fail stops the others; its status is ours.
  int rc = 0;
  bool failed = false;
  while (!ranks.empty()) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = ranks.find(pid);
    if (it == ranks.end()) continue;
    const unsigned r = it->second;
    ranks.erase(it);
    const bool bad = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!bad || failed) continue;
    failed = true;
    if (WIFEXITED(st)) {
      rc = WEXITSTATUS(st);
    } else {
      rc = cli::kError;
      std::fprintf(stderr, "%s: error: rank %u was killed by signal %d: local ranks\n", cli::tool_name().c_str(), r,
                   WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    for (const auto& [other, _] : ranks) ::kill(other, SIGTERM);
  }
  return rc;
}

}  // namespace wit
