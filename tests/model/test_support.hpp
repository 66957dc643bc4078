// test_support.hpp: small fixtures for model tests (a hand-made workload, options).
#pragma once

#include "model/strategy.hpp"
#include "model/workload.hpp"

namespace tauplan::test {

/// A workload with round numbers so that tests can compute times by hand:
/// 1e6 parameters of 4 bytes (N = 4e6 B), 1e9 flop per sample.
inline model::Workload round_workload() {
  model::Workload w;
  w.name = "round";
  w.source = "<test>";
  w.parameters = 1e6;
  w.bytes_per_parameter = 4;
  w.flop_per_sample = 1e9;
  return w;
}

inline model::StrategyOptions options(int workers, double batch, int tau = 1,
                                      const std::string& collective = "ring") {
  model::StrategyOptions o;
  o.file = "<test>";
  o.workers = workers;
  o.batch = batch;
  o.tau = tau;
  o.collective = collective;
  return o;
}

}  // namespace tauplan::test
