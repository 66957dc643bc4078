// test_support.hpp: small fixtures for model tests (a hand-made workload, options, layouts).
#pragma once

#include "model/inputs/mesh.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/round_support.hpp"

namespace tauplan::test {

/// A workload with round numbers so that tests can compute times by hand:
/// 1e6 parameters of 4 bytes (N = 4e6 B), 1e9 flop per sample.
inline model::Workload round_workload() {
  return round_numbers_workload(1e9);
}

inline model::StrategyOptions options(int workers, double batch, int tau = 1,
                                      const std::string& collective = "ring") {
  return test_options(workers, batch, tau, collective);
}

/// The layout of `d` data, `t` tensor and `p` pipeline ranks with `m` micro-batches.
inline model::Layout layout(int d, int t, int p, int m = 1) {
  model::Layout l;
  l.data = d;
  l.tensor = t;
  l.pipeline = p;
  l.micro_batches = m;
  return l;
}

}  // namespace tauplan::test
