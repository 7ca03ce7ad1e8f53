// The committed data order: which records form batch s, derived from (run id,
// revealed seed) with a ChaCha20 stream, so every party computes batch s alone.
// Epoch e is a uniform permutation of the n records; batch s takes B
// consecutive positions of it; the last partial batch of an epoch is dropped.
#pragma once
#include <cstdint>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

class DataOrder {
 public:
  DataOrder(const Hash32& run_id, ByteView seed, uint64_t n_records, uint64_t batch_size);
  uint64_t steps_per_epoch() const { return spe_; }
  // Record indices of batch `step` (1-based), in batch order.
  std::vector<uint64_t> batch(int64_t step);
  // Steps (1-based, up to `last_step`) whose batch contains record `index`.
  std::vector<int64_t> steps_using(uint64_t index, int64_t last_step);

 private:
  const std::vector<uint64_t>& epoch(uint64_t e);
  Hash32 run_id_;
  Bytes seed_;
  uint64_t n_, b_, spe_;
  uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<uint64_t> perm_;
};

// The probe set: `count` distinct record indices chosen by the seed.
std::vector<uint64_t> probe_indices(const Hash32& run_id, ByteView seed, uint64_t n_records, uint64_t count);

}  // namespace wit
