// round_support.hpp: what the model's and the simulator's test fixtures start from alike
// (tests/model/test_support.hpp, tests/sim/sim_test_support.hpp): a workload of round numbers
// and a job's strategy options.
#pragma once

#include <string>

#include "model/strategy.hpp"
#include "model/workload.hpp"

namespace tauplan::test {

/// Round numbers so that tests can compute times by hand: 1e6 parameters of 4 bytes
/// (N = 4e6 B), `flop_per_sample` flop per sample.
inline model::Workload round_numbers_workload(double flop_per_sample) {
  model::Workload w;
  w.name = "round";
  w.source = "<test>";
  w.parameters = 1e6;
  w.bytes_per_parameter = 4;
  w.flop_per_sample = flop_per_sample;
  return w;
}

/// The options of a test job: `workers`, `batch`, `tau` and `collective`, file "<test>".
inline model::StrategyOptions test_options(int workers, double batch, int tau,
                                           const std::string& collective) {
  model::StrategyOptions o;
  o.file = "<test>";
  o.workers = workers;
  o.batch = batch;
  o.tau = tau;
  o.collective = collective;
  return o;
}

}  // namespace tauplan::test
