// calibrated_platform_test.cpp: the platform `tauplan calibrate` writes, loaded by SimGrid,
// reproduces the fits it was written from: C(b) = intercept + b x per-sample cost per step (with
// an emulated slow worker s times slower at everything), and the threads combine
// T(K, S) = alpha + K S / beta as a parameter server with the one reducer, in the analytic engine
// and in the simulation alike.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/analytic/analytic.hpp"
#include "model/inputs/calibration.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

TEST_CASE("a calibrated platform reproduces C(b) and alpha + K S / beta, slow worker included") {
  const auto result = test::in_child([] {
    const model::Workload w = test::round_workload();
    model::Calibration c;
    c.hosts = 4;
    c.workload = w.name;
    c.flop_per_sample = w.flop_per_sample;
    c.update_flop = w.parameters * w.update_flop_per_parameter;
    c.per_sample_s = 1e-3;
    c.step_intercept_s = 5e-4 + c.update_flop / c.speed_flops();
    c.r2_compute = 0.99;
    c.alpha_s = 1e-5;
    c.beta_Bps = 2e9;
    c.r2_comm = 0.98;
    c.calibrated_from = "test";
    c.date = "2026-01-01T00:00:00Z";
    c.slowdowns = {2, 1, 1, 1};
    const std::string path = "/tmp/tauplan-calibrated-" + std::to_string(getpid()) + ".xml";
    std::ofstream(path) << model::calibration_xml(c);
    const model::Platform platform = sim::load_platform(path);
    std::remove(path.c_str());
    const model::Calibration back = model::read_calibration(platform);
    model::StrategyOptions o = test::options(4, 64, 1, "ps");
    o.servers = 1;
    const model::Plan plan = test::make_test_plan("sync", o, platform, 10);
    const auto analytic = model::analyze(plan, platform);
    const auto simulated = sim::simulate(plan, platform, sim::SimOptions{});
    return nlohmann::json{analytic.round_s,
                          simulated.round_s,
                          analytic.comm_s,
                          simulated.comm_s,
                          back.slowdowns,
                          back.step_overhead_s(),
                          c.update_flop / c.speed_flops()}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  const double update_s = v[6];
  // 16 samples per worker; h0 is twice as slow at everything: overhead, samples and update.
  const double compute = 2 * (5e-4 + 16 * 1e-3);
  const double comm = 1e-5 + 4 * 4e6 / 2e9;
  const double update = 2 * update_s;
  CHECK(v[2].get<double>() == Approx(comm).epsilon(1e-9));
  CHECK(v[0].get<double>() == Approx(compute + comm + update).epsilon(1e-9));
  CHECK(v[1].get<double>() == Approx(v[0].get<double>()).epsilon(1e-6));
  CHECK(v[3].get<double>() == Approx(comm).epsilon(1e-6));
  CHECK(v[4] == nlohmann::json{2, 1, 1, 1});
  CHECK(v[5].get<double>() == Approx(5e-4).epsilon(1e-12));
}
