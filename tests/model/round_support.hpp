// round_support.hpp: what the model's and the simulator's test fixtures start from alike
// (tests/model/test_support.hpp, tests/sim/sim_test_support.hpp): a workload of round numbers
// and a job's strategy options.
#pragma once

#include <string>

#include "model/inputs/workload.hpp"
#include "model/ir/strategy.hpp"

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

/// An asynchronous parameter-server case: `parameters` of 4 bytes, 1e9 flop per sample, the
/// optimizer's default update (2 flop per parameter), no layers; options of `workers` workers at
/// batch 100 with no collective (async-ps pushes and pulls its own shards).
inline model::Workload async_test_workload(double parameters) {
  model::Workload w = round_numbers_workload(1e9);
  w.parameters = parameters;
  w.update_flop_per_parameter = 0;
  w.layers.clear();
  return w;
}
inline model::StrategyOptions async_test_options(int workers) {
  model::StrategyOptions o = test_options(workers, 100, 1, "");
  o.collective.clear();
  return o;
}

}  // namespace tauplan::test
