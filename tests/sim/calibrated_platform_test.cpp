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
#include "model/ir/strategy.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

/// A calibration of `hosts` workers of `w`: C(b) = 0.5 ms + the update + b x 1 ms.
model::Calibration calibration_of(const model::Workload& w, int hosts) {
  model::Calibration c;
  c.hosts = hosts;
  c.workload = w.name;
  c.flop_per_sample = w.flop_per_sample;
  c.update_flop = w.parameters * w.update_flop_per_parameter;
  c.per_sample_s = 1e-3;
  c.step_intercept_s = 5e-4 + c.update_flop / c.speed_flops();
  c.calibrated_from = "test";
  c.date = "2026-01-01T00:00:00Z";
  return c;
}

/// `c` written as a platform file, loaded by SimGrid, the file removed.
model::Platform load_calibration(const model::Calibration& c) {
  const std::string path = "/tmp/tauplan-calibrated-" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << model::calibration_xml(c);
  model::Platform platform = sim::load_platform(path);
  std::remove(path.c_str());
  return platform;
}

}  // namespace

TEST_CASE("a calibrated platform reproduces C(b) and alpha + K S / beta, slow worker included") {
  const auto result = test::in_child([] {
    const model::Workload w = test::round_workload();
    model::Calibration c = calibration_of(w, 4);
    c.r2_compute = 0.99;
    c.alpha_s = 1e-5;
    c.beta_Bps = 2e9;
    c.r2_comm = 0.98;
    c.slowdowns = {2, 1, 1, 1};
    const model::Platform platform = load_calibration(c);
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

TEST_CASE("an exchange-calibrated platform charges async-ps two messages and the server's apply") {
  // exec/exchange_calibration.hpp's conversion: one-way messages t = a + S / b become alpha = 2a
  // and beta = b / 2; the server's measured apply 2c + d S becomes its flop per message c x speed
  // and per byte d x speed less the optimizer's apply flop per byte (model::server_apply_flop).
  const double a = 4e-5, b = 3e9, c_s = 5e-6, d_s = 2e-10;
  const auto result = test::in_child([=] {
    const model::Workload w = test::round_workload();
    const double gradient_bytes = w.gradient_bytes();
    model::Calibration c = calibration_of(w, 1);
    c.alpha_s = 2 * a;
    c.beta_Bps = b / 2;
    c.server_flop_per_message = c_s * c.speed_flops();
    c.server_flop_per_byte = d_s * c.speed_flops() - model::server_apply_flop(w) / gradient_bytes;
    const model::Platform platform = load_calibration(c);
    model::StrategyOptions o = test::options(1, 16);
    o.collective.clear();
    const model::Plan plan = test::make_test_plan("async-ps", o, platform, 10);
    return nlohmann::json{model::analyze(plan, platform).round_s,
                          sim::simulate(plan, platform, sim::SimOptions{}).round_s, gradient_bytes,
                          c.step_overhead_s()}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  const double s = v[2];
  const double overhead = v[3];
  // One worker: its step (overhead and 16 samples; the update is the server's), the push, the
  // apply, the pull.
  const double expected = overhead + 16 * 1e-3 + 2 * (a + s / b) + (2 * c_s + d_s * s);
  CHECK(v[0].get<double>() == Approx(expected).epsilon(1e-9));
  CHECK(v[1].get<double>() == Approx(expected).epsilon(1e-6));
}

TEST_CASE("a layout-calibrated platform times a ring all-reduce of its group as the fit") {
  // validate's layout calibration: the all-reduce over groups of g threads took lat + S / bw;
  // the worker links (model::ring_allreduce_link) make a ring all-reduce of g workers take just
  // that, in the analytic engine and in SimGrid, and the props read back.
  const double lat = 3e-5, bw = 4e9;
  for (int group : {2, 4}) {
    const auto result = test::in_child([=] {
      const model::Workload w = test::round_workload();
      model::Calibration c = calibration_of(w, 4);
      c.alpha_s = 1e-5;
      c.beta_Bps = 2e9;
      c.peer_group = group;
      c.peer_latency_s = lat;
      c.peer_bandwidth_Bps = bw;
      const model::Platform platform = load_calibration(c);
      const model::Calibration back = model::read_calibration(platform);
      const model::Plan plan =
          test::make_test_plan("sync", test::options(group, 64, 1, "ring"), platform, 10);
      return nlohmann::json{model::analyze(plan, platform).comm_s,
                            sim::simulate(plan, platform, sim::SimOptions{}).comm_s,
                            w.gradient_bytes(),
                            back.peer_group,
                            back.peer_latency_s,
                            back.peer_bandwidth_Bps}
          .dump();
    });
    REQUIRE(result.kind == "ok");
    const auto v = result.json();
    const double expected = lat + v[2].get<double>() / bw;
    INFO("group " << group);
    CHECK(v[0].get<double>() == Approx(expected).epsilon(1e-9));
    CHECK(v[1].get<double>() == Approx(expected).epsilon(1e-6));
    CHECK(v[3] == group);
    CHECK(v[4].get<double>() == lat);
    CHECK(v[5].get<double>() == bw);
  }
}
