// Data order and probe choice from (run id, seed).
#include "wit/run/order.h"

#include <algorithm>

#include "wit/base/error.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

namespace wit {

DataOrder::DataOrder(const Hash32& run_id, ByteView seed, uint64_t n, uint64_t b)
    : run_id_(run_id), seed_(seed.data, seed.data + seed.size), n_(n), b_(b), spe_(b ? n / b : 0) {
  if (b == 0 || spe_ == 0) throw Error("batch size " + std::to_string(b) + " does not fit " + std::to_string(n) + " records", "data order");
}

const std::vector<uint64_t>& DataOrder::epoch(uint64_t e) {
  if (e != cached_epoch_) {
    uint8_t eb[8];
    put_le64(eb, e);
    perm_ = random_permutation(derive_key(tags::kDataOrder, {ByteView(run_id_.data(), 32), ByteView(seed_), ByteView(eb, 8)}), n_);
    cached_epoch_ = e;
  }
  return perm_;
}

std::vector<uint64_t> DataOrder::batch(int64_t step) {
  if (step < 1) throw Error("step numbers start at 1", "data order");
  const uint64_t s = uint64_t(step - 1), e = s / spe_, pos = (s % spe_) * b_;
  const auto& p = epoch(e);
  return std::vector<uint64_t>(p.begin() + int64_t(pos), p.begin() + int64_t(pos + b_));
}

std::vector<int64_t> DataOrder::steps_using(uint64_t index, int64_t last_step) {
  std::vector<int64_t> out;
  if (last_step < 1) return out;
  const uint64_t epochs = (uint64_t(last_step) - 1) / spe_ + 1;
  for (uint64_t e = 0; e < epochs; e++) {
    const auto& p = epoch(e);
    const uint64_t at = uint64_t(std::find(p.begin(), p.end(), index) - p.begin());
    if (at >= spe_ * b_) continue;  // in the dropped tail of this epoch
    const int64_t step = int64_t(e * spe_ + at / b_ + 1);
    if (step <= last_step) out.push_back(step);
  }
  return out;
}

std::vector<uint64_t> probe_indices(const Hash32& run_id, ByteView seed, uint64_t n, uint64_t count) {
  auto p = random_permutation(derive_key(tags::kProbeChoice, {ByteView(run_id.data(), 32), seed}), n);
  p.resize(std::min<uint64_t>(count, n));
  return p;
}

}  // namespace wit
