// timed_steps.hpp: one worker's replica of the MLP taking real training steps on random
// batches of the data (sampling, forward, backward, SGD), timed on the wall clock: the step the
// calibrations time (exec/calibrate.hpp) and the compute the exchange probe runs between a
// worker's pushes (exec/exchange_calibration.hpp). What it leaves out: the sampler's order of a
// real run (rows are drawn at random with replacement) and evaluation.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "exec/dataset.hpp"
#include "exec/mlp.hpp"

namespace tauplan::exec {

/// One worker's replica taking training steps on random batches, timed on the wall clock.
class TimedSteps {
 public:
  TimedSteps(const Dataset& data, const MlpShape& shape, std::uint64_t init_seed,
             std::uint64_t sample_seed, int largest_batch)
      : data_(data),
        mlp_(shape),
        rng_(sample_seed),
        pick_(0, data.train_size() - 1),
        x_(static_cast<std::size_t>(largest_batch) * static_cast<std::size_t>(data.features)),
        y_(static_cast<std::size_t>(largest_batch)) {
    mlp_.init(init_seed);
  }
  /// Seconds of `steps` steps at batch b (sampling, forward, backward, update).
  double run(int b, int steps) {
    const auto features = static_cast<std::size_t>(data_.features);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      for (int i = 0; i < b; ++i) {
        const long long row = pick_(rng_);
        std::memcpy(x_.data() + static_cast<std::size_t>(i) * features, data_.train_row(row),
                    features * sizeof(float));
        y_[static_cast<std::size_t>(i)] = data_.train_y[static_cast<std::size_t>(row)];
      }
      mlp_.forward_backward(x_.data(), y_.data(), b);
      mlp_.sgd_step(0.01f);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  const Dataset& data_;
  Mlp mlp_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<long long> pick_;
  std::vector<float> x_;
  std::vector<int> y_;
};

}  // namespace tauplan::exec
