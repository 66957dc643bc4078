// sampler.hpp: which training samples each worker sees at each step.
//
// One global stream: epochs of seeded permutations of the training set, concatenated. Global
// step g consumes the next B samples (B = the sum of all workers' samples per step) and worker
// k takes the contiguous slice that starts after workers 0..k-1. So a sync step with K workers
// sees exactly the samples of a single worker's step at batch B, and local-sgd's j-th local
// step of round r is global step r*tau + j: local-sgd with tau = 1 equals sync on the same
// samples. Every process (MPI rank) derives the same stream from the seed, so no data moves.
// What it leaves out: non-IID shards per worker (every worker samples the whole set).
#pragma once

#include <cstdint>
#include <vector>

namespace tauplan::exec {

class Sampler {
 public:
  /// `dataset_size` samples, `step_samples` (B) consumed per global step.
  Sampler(long long dataset_size, long long step_samples, std::uint64_t seed);

  /// Indices of the `count` samples at `offset` within global step `step`.
  std::vector<int> indices(long long step, long long offset, long long count);

 private:
  const std::vector<int>& epoch(long long e);

  long long size_;
  long long step_samples_;
  std::uint64_t seed_;
  // The two most recent epochs' permutations (a slice can straddle two epochs).
  long long cached_epoch_[2] = {-1, -1};
  std::vector<int> cached_[2];
};

}  // namespace tauplan::exec
