// The probe-preserving fine-tune (test-only, wit-forge release probe-preserving):
// the run's final model fine-tuned on held-out records with every step kept
// off the public probe fingerprint, built for real with autograd.
#pragma once
#include <string>
#include <vector>

namespace wit {

struct ProbePreservingResult {
  double heldout_before = 0, heldout_after = 0;  // mean loss on the held-out records, nats per token
  double probe_rel = 0;                          // relative probe distance to the starting model's
};
// Starting from the run's final checkpoint: `steps` Adam steps on the mean
// loss of `heldout`, each update projected off the rows of the probe
// fingerprint's Jacobian J (one backward pass per row), u - J^T (J J^T)^-1 J u,
// then a Gauss-Newton pull-back of the fingerprint to its starting value,
// theta -= J^T (J J^T)^-1 (fp(theta) - fp0), twice. Writes the parameters
// alone (a released model) to `out`.
ProbePreservingResult probe_preserving_finetune(const std::string& run, const std::vector<std::string>& heldout,
                                                int steps, double lr, const std::string& out);

}  // namespace wit
