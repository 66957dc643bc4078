// async_simulation_test.cpp: asynchronous parameter servers in SimGrid against the bottleneck
// formula (worker-, server- and link-bound, computed by hand here and by the analytic engine),
// one worker against single, the staleness bound, stragglers and failures; and time-budget
// local SGD against the analytic engine.
//
// Platform: platforms/test-ps.xml (workers h0..h3 at 1e12 flop/s on 1e10 B/s links, server ps0
// at 1e12 flop/s on a 1e9 B/s link, 10 us per link): a worker <-> server transfer of S bytes is
// 20 us + S / 1e9 under CM02 without crosstraffic; and platforms/testbed-ps-dual.xml under a
// rendezvous for two loaded servers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "model/analytic/analytic.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

const std::string kTestPs = std::string(TAUPLAN_PLATFORM_DIR) + "/test-ps.xml";

model::Workload workload(double parameters, double update_flop_per_parameter = 0) {
  model::Workload w = test::round_workload();
  w.parameters = parameters;
  w.flop_per_sample = 1e9;
  w.update_flop_per_parameter = update_flop_per_parameter;
  w.layers.clear();
  return w;
}

model::StrategyOptions async_options(int workers, double batch, int staleness = 0) {
  model::StrategyOptions o = test::options(workers, batch);
  o.collective.clear();
  o.staleness_bound = staleness;
  return o;
}

double transfer(double bytes) {
  return 20e-6 + bytes / 1e9;
}

struct Rows {
  nlohmann::json analytic;
  nlohmann::json simgrid;
};

/// Plans `strategy` on test-ps with `iterations` serial steps and runs both engines.
Rows run_both(const std::string& strategy, const model::StrategyOptions& o,
              const model::Workload& w, double iterations, sim::SimOptions sim_options = {}) {
  const auto result = test::in_child(
      [=] { return test::analyze_and_simulate(kTestPs, strategy, o, w, iterations, sim_options); });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  return {j[0], j[1]};
}

/// async-ps with two servers on testbed-ps-dual as MPI runs it (rendezvous above 64 KiB):
/// `workers` workers, 1 MB gradients, a 1 ms step; the analytic row, then SimGrid's.
nlohmann::json dual_servers_under_rendezvous(int workers, double iterations) {
  const std::string xml = test::with_root_zone_props(
      test::file_text(std::string(TAUPLAN_PLATFORM_DIR) + "/testbed-ps-dual.xml"),
      "<prop id=\"message_protocol\" value=\"rendezvous\"/>"
      "<prop id=\"eager_limit_bytes\" value=\"65536\"/>");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tauplan-async-dual-" + std::to_string(workers) +
                                                 "-" + std::to_string(::getpid()) + ".xml"))
          .string();
  std::ofstream(path) << xml;
  model::StrategyOptions o = async_options(workers, 10);
  o.servers = 2;
  model::Workload w = workload(2.5e5);
  w.flop_per_sample = 1e5;  // 1e6 flop a step: 1 ms at 1 Gf
  const auto result = test::in_child([=] {
    return test::analyze_and_simulate(path, "async-ps", o, w, iterations, sim::SimOptions());
  });
  std::filesystem::remove(path);
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  return result.json();
}

}  // namespace

TEST_CASE("async in SimGrid: worker-bound throughput is K / T") {
  // N = 4e5 B: transfers of 0.42 ms; C = 0.1 s; apply 2e5 flop = 0.2 us.
  const auto rows = run_both("async-ps", async_options(4, 100), workload(1e5), 100);
  const double T = 0.1 + 2 * transfer(4e5) + 2e5 / 1e12;
  CHECK(rows.simgrid["round_s"].get<double>() == Approx(T / 4).epsilon(1e-6));
  CHECK(rows.analytic["round_s"].get<double>() == Approx(T / 4).epsilon(1e-12));
  CHECK(rows.analytic["bottleneck"] == "workers");
  CHECK(rows.simgrid["staleness_mean"].get<double>() == Approx(3).epsilon(0.02));
  CHECK(rows.simgrid["staleness_max"].get<long long>() <= 3);
  CHECK(rows.simgrid["simulated_rounds"] == rows.simgrid["rounds"]);
  CHECK(rows.simgrid["total_s"].get<double>() > 0);
}

TEST_CASE("async in SimGrid: server-bound throughput is 1 / t_apply") {
  // update 5e5 flop per parameter: 5e10 flop per update, 0.05 s on ps0.
  const auto rows = run_both("async-ps", async_options(4, 100), workload(1e5, 5e5), 200);
  CHECK(rows.simgrid["round_s"].get<double>() == Approx(0.05).epsilon(1e-6));
  CHECK(rows.analytic["round_s"].get<double>() == Approx(0.05).epsilon(1e-12));
  CHECK(rows.analytic["bottleneck"] == "server ps0 processor");
  CHECK(rows.simgrid["servers_detail"][0]["apply_busy"].get<double>() > 0.95);
  CHECK(rows.simgrid["staleness_mean"].get<double>() == Approx(3).epsilon(0.02));
}

TEST_CASE("async in SimGrid: link-bound throughput is 1 / (alpha + N / B) of the server link") {
  // N = 4e7 B: 0.04002 s through ps0's 1e9 B/s link; C = 0.01 s.
  const auto rows = run_both("async-ps", async_options(4, 10), workload(1e7), 200);
  const double t = transfer(4e7);
  CHECK(rows.simgrid["round_s"].get<double>() == Approx(t).epsilon(1e-6));
  CHECK(rows.analytic["round_s"].get<double>() == Approx(t).epsilon(1e-12));
  CHECK(rows.analytic["bottleneck"] == "server ps0 link in");
  CHECK(rows.simgrid["servers_detail"][0]["receive_busy"].get<double>() > 0.95);
  // Pulls and pushes queue at two tied FIFO queues: a worker reads, then waits for the next
  // push slot: D = ceil(T / t) t = 3 t (T = 2.25 t), staleness 2.
  CHECK(rows.analytic["staleness_mean"].get<double>() == Approx(2).epsilon(1e-9));
  CHECK(rows.simgrid["staleness_mean"].get<double>() == Approx(2).epsilon(0.01));
}

TEST_CASE("async in SimGrid under a rendezvous: two loaded servers serve different workers") {
  // testbed-ps-dual (workers on 1.25e7 B/s NICs, two servers on 5e7 B/s links, 3 ms routes) as
  // MPI runs it (rendezvous above 64 KiB): four workers, 1 MB gradients, a 1 ms step. Each
  // server's one thread bounds the rate (analytic: a push held for its half alone, its reply's
  // handshake, the apply). A worker's two pushes share its NIC, but its two replies come back one
  // at a time (the second server's thread waits for the worker's clear-to-send while the first
  // reply flows), so the servers fall out of step and each takes another worker's push at the
  // NIC's full rate; with replies at once as well, both servers would serve the same worker at
  // half its rate, in lockstep (the rule before 2ea53b5, when SimGrid made about half the rate).
  const auto rows = dual_servers_under_rendezvous(4, 300);
  CHECK(rows[0]["bottleneck"].get<std::string>().find("thread") != std::string::npos);
  CHECK(rows[1]["round_s"].get<double>() == Approx(rows[0]["round_s"].get<double>()).epsilon(0.03));
}

TEST_CASE("async in SimGrid under a rendezvous: one worker's replies from two servers in turn") {
  // testbed-ps-dual as MPI runs it (rendezvous above 64 KiB): one worker on a 1.25e7 B/s NIC, two
  // servers, 1 MB gradients (shards of 0.5 MB: 40 ms each on the NIC), a 1 ms step. The two
  // pushes, posted at once, share the NIC and end together after 80 ms of bytes; the replies then
  // come one at a time (the worker receives one message at a time), 80 ms more. So a cycle is
  // at least the step and 160 ms of bytes; pushes leaving in turn would let the first reply come
  // back while the second push flows (about 120 ms of bytes). The analytic engine agrees.
  const auto rows = dual_servers_under_rendezvous(1, 50);
  const double simgrid = rows[1]["round_s"].get<double>();
  CHECK(simgrid >= 1e-3 + 4 * 0.5e6 / 1.25e7);
  CHECK(simgrid == Approx(rows[0]["round_s"].get<double>()).epsilon(0.05));
}

TEST_CASE("async in SimGrid with one worker equals single") {
  model::Workload w = workload(1e5, 2);
  auto o = async_options(1, 100);
  o.comm_s = 0;
  const auto async = run_both("async-ps", o, w, 50);
  const auto single = run_both("single", test::options(1, 100), w, 50);
  CHECK(async.simgrid["round_s"].get<double>() ==
        Approx(single.simgrid["round_s"].get<double>()).epsilon(1e-9));
  CHECK(async.simgrid["total_s"].get<double>() ==
        Approx(single.simgrid["total_s"].get<double>()).epsilon(1e-9));
  CHECK(async.simgrid["rounds"] == single.simgrid["rounds"]);
  CHECK(async.simgrid["staleness_max"] == 0);
}

TEST_CASE("async in SimGrid: a straggler under a staleness bound sets everyone's pace") {
  // h0 takes every step 4 times slower; with s = 1 no worker runs more than 1 step ahead.
  sim::SimOptions options;
  options.stragglers.push_back(sim::parse_straggler("h0:4:1", {"<test>", "stragglers"}));
  const auto bounded = run_both("async-ps", async_options(4, 100, 1), workload(1e5), 400, options);
  const double T_fast = 0.1 + 2 * transfer(4e5) + 2e5 / 1e12;
  const double T_slow = T_fast + 0.3;
  // The slow worker sometimes queues behind a fast one's transfer at ps0: within 1%.
  CHECK(bounded.simgrid["round_s"].get<double>() == Approx(T_slow / 4).epsilon(1e-2));
  CHECK(bounded.simgrid["round_s"].get<double>() >= T_slow / 4);
  CHECK(bounded.simgrid["clock_skew_max"].get<long long>() <= 1);
  CHECK(bounded.simgrid["staleness_max"].get<long long>() <=
        bounded.simgrid["staleness_version_bound"].get<long long>());
  CHECK(bounded.simgrid["staleness_version_bound"] == 9);
  // Unbounded: the fast workers go on: X = 3 / T_fast + 1 / T_slow.
  const auto free = run_both("async-ps", async_options(4, 100), workload(1e5), 400, options);
  CHECK(free.simgrid["round_s"].get<double>() ==
        Approx(1 / (3 / T_fast + 1 / T_slow)).epsilon(1e-2));
  CHECK(free.simgrid["workers_detail"][0]["slow_steps"] ==
        free.simgrid["workers_detail"][0]["steps"]);
}

TEST_CASE("async in SimGrid: a failing worker loses its update in flight and rejoins") {
  sim::SimOptions options;
  options.restart_s = 1;
  options.failures.push_back(sim::parse_failure("h1@0.35s", {"<test>", "failures"}));
  const auto base = run_both("async-ps", async_options(4, 100), workload(1e5), 100);
  const auto failed = run_both("async-ps", async_options(4, 100), workload(1e5), 100, options);
  const auto& row = failed.simgrid;
  REQUIRE(row["failures"].size() == 1);
  CHECK(row["failures"][0]["host"] == "h1");
  CHECK(row["failures"][0]["stall_s"].get<double>() == Approx(1));
  CHECK(row["updates_dropped"] == 1);
  CHECK(row["simulated_rounds"] == base.simgrid["simulated_rounds"]);
  // The others go on meanwhile: the job loses less than the restart.
  const double lost = row["total_s"].get<double>() - base.simgrid["total_s"].get<double>();
  CHECK(lost > 0);
  CHECK(lost < 1);
  // A server failure stalls every worker for the restart.
  sim::SimOptions server;
  server.restart_s = 1;
  server.failures.push_back(sim::parse_failure("ps0@0.35s", {"<test>", "failures"}));
  const auto stalled = run_both("async-ps", async_options(4, 100), workload(1e5), 100, server);
  CHECK(stalled.simgrid["total_s"].get<double>() > base.simgrid["total_s"].get<double>() + 0.9);
  // Failures faster than a cycle: a result that says it gave up, not a hang.
  sim::SimOptions storm;
  storm.restart_s = 0;
  storm.failures.push_back(sim::parse_failure("h2~0.01s", {"<test>", "failures"}));
  const auto gave_up = run_both("async-ps", async_options(4, 100), workload(1e5), 100, storm);
  CHECK(gave_up.simgrid.contains("gave_up"));
}

TEST_CASE("time-budget local SGD in SimGrid equals the analytic round with per-worker steps") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("mixed_speeds.xml"));
    auto o = test::options(4, 64);
    o.round_budget_s = 0.1;  // 64 x 1e10 flop: 6.4 ms on a fast host, 16 ms on a slow one
    const auto plan = test::make_test_plan("local-sgd", o, platform, 100);
    nlohmann::json out = {model::to_json(model::analyze(plan, platform)),
                          model::to_json(sim::simulate(plan, platform, {}))};
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  CHECK(j[0]["local_steps"] == std::vector<int>{15, 15, 6, 6});
  CHECK(j[1]["round_s"].get<double>() == Approx(j[0]["round_s"].get<double>()).epsilon(1e-6));
  CHECK(j[1]["rounds"] == j[0]["rounds"]);
}
