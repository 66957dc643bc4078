// simulator_test.cpp: the simulator against closed forms where they hold, against hand-computed
// fair shares where they do not, and its behaviour with stragglers, failures and deadlocks.
//
// Every simulation runs in a forked child (SimGrid: one Engine per process); expected values are
// computed in the parent from the platform's alpha-beta routes and the plan's costs.
#include <catch2/catch.hpp>

#include <cmath>

#include "model/analytic/analytic.hpp"
#include "model/ir/collective.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sg_engine.hpp"
#include "sim/sim_job.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

nlohmann::json row_json(const model::ResultRow& row) {
  return model::to_json(row);
}

/// Seconds as text that parses back to the same double.
std::string exact(double seconds) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", seconds);
  return buffer;
}

std::vector<int> first_workers(const model::Platform& p, int k) {
  auto all = p.worker_hosts();
  all.resize(static_cast<size_t>(k));
  return all;
}

}  // namespace

TEST_CASE("ring all-reduce equals 2(K-1)(alpha + N/(K beta)) under CM02 without crosstraffic") {
  const double sizes[] = {1e6, 64.0 * 1024 * 1024, 1e9};
  const int ks[] = {2, 3, 5, 8};
  for (const char* mode : {"step", "step without reuse", "coarse"}) {
    const auto result = test::in_child([&] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      sim::SimOptions options;
      options.granularity =
          std::string(mode) == "coarse" ? sim::Granularity::Coarse : sim::Granularity::Step;
      options.reuse_steps = std::string(mode) != "step without reuse";
      nlohmann::json out = nlohmann::json::array();
      for (int k : ks)
        for (double n : sizes) {
          const auto hosts = first_workers(platform, k);
          std::vector<int> group;
          for (int i = 0; i < k; ++i)
            group.push_back(i);
          const auto plan = test::collectives_only_plan(hosts, {}, n, {{"ring", group}});
          const auto row = sim::simulate(plan, platform, options);
          const auto hop = model::slowest_ring_hop(hosts, platform);
          // Across the two nodes with 4 GPUs on each (K = 8) the ring runs as 4 channels of
          // N/4 each; every host's private link still carries N/K per step.
          const auto channels = model::ring_channel_orders(hosts, platform).size();
          out.push_back({k, n, row.round_s, row.comm_s, hop.latency_s, hop.bandwidth_Bps,
                         row.extra["flows_started"], row.extra.value("flows_reused", 0LL),
                         channels});
        }
      return out.dump();
    });
    REQUIRE(result.kind == "ok");
    for (const auto& c : result.json()) {
      const double k = c[0], n = c[1], alpha = c[4], beta = c[5];
      const double expected = 2 * (k - 1) * (alpha + n / (k * beta));
      INFO(mode << " K=" << k << " N=" << n);
      CHECK(alpha == Approx(2e-6));
      CHECK(beta == Approx(25e9));
      CHECK(c[2].get<double>() == Approx(expected).epsilon(1e-6));
      CHECK(c[3].get<double>() == Approx(expected).epsilon(1e-6));
      // Flows actually run: every step, only the first of each phase, or one per pair.
      const long long started = c[6], reused = c[7], channels = c[8];
      CHECK(channels == (k == 8 ? 4 : 1));
      const auto members = static_cast<long long>(k);
      const long long kk = members * channels;  // flows per ring step
      if (std::string(mode) == "step without reuse") {
        CHECK(started == 2 * (members - 1) * kk);
        CHECK(reused == 0);
      } else if (std::string(mode) == "step") {
        CHECK(started == 2 * kk);
        CHECK(started + reused == 2 * (members - 1) * kk);
      } else {
        // One flow per (source, destination) and phase: with channels, the channels' hops
        // inside a node repeat the cycle of the node's GPUs (K pairs) and each channel crosses
        // between the nodes between its own pair of GPUs (K more).
        CHECK(started == 2 * (channels == 1 ? members : 2 * members));
      }
    }
  }
}

TEST_CASE("single, sync and local-sgd give the analytic round time on an uncontended platform") {
  struct Case {
    std::string strategy;
    std::string collective;
    int workers;
    bool overlap;
  };
  const std::vector<Case> cases = {{"single", "ring", 1, false},
                                   {"sync", "ring", 4, false},
                                   {"sync", "ring", 4, true},
                                   {"local-sgd", "ring", 4, false},
                                   {"sync", "ps", 4, false},
                                   {"local-sgd", "tree", 6, false},
                                   {"local-sgd", "sparknet", 4, false},
                                   {"sync", "hierarchical", 8, false},
                                   {"local-sgd", "hierarchical", 8, false}};
  for (const char* mode : {"step", "coarse"}) {
    const auto result = test::in_child([&] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      sim::SimOptions options;
      options.granularity =
          std::string(mode) == "coarse" ? sim::Granularity::Coarse : sim::Granularity::Step;
      nlohmann::json out = nlohmann::json::array();
      for (const Case& c : cases) {
        auto o = test::options(c.workers, 64, 4, c.collective);
        o.overlap = c.overlap;
        o.step_overhead_s = 1e-4;
        const auto plan = test::make_test_plan(c.strategy, o, platform, 12);
        const auto analytic = model::analyze(plan, platform);
        const auto simulated = sim::simulate(plan, platform, options);
        out.push_back({c.strategy + "/" + c.collective + (c.overlap ? "/overlap" : ""),
                       row_json(analytic), row_json(simulated)});
      }
      return out.dump();
    });
    REQUIRE(result.kind == "ok");
    for (const auto& c : result.json()) {
      INFO(mode << " " << c[0].get<std::string>());
      const auto& analytic = c[1];
      const auto& simulated = c[2];
      CHECK(simulated["engine"] == "simgrid");
      CHECK(simulated["round_s"].get<double>() ==
            Approx(analytic["round_s"].get<double>()).epsilon(1e-6));
      CHECK(simulated["compute_s"].get<double>() ==
            Approx(analytic["compute_s"].get<double>()).epsilon(1e-6));
      CHECK(simulated["comm_s"].get<double>() ==
            Approx(analytic["comm_s"].get<double>()).epsilon(1e-6).margin(1e-12));
      CHECK(simulated["total_s"].get<double>() ==
            Approx(analytic["total_s"].get<double>()).epsilon(1e-6));
      CHECK(simulated["rounds"] == analytic["rounds"]);
      CHECK(simulated["network_model"] == "CM02");
      CHECK(simulated["sim_mode"] == mode);
    }
  }
}

TEST_CASE("a shared uplink: parameter-server traffic gets fair shares and exceeds the analytic") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("islands.xml"));
    std::vector<int> workers;
    for (const char* name : {"a-0", "a-1", "a-2", "a-3"})
      workers.push_back(platform.find_host(name));
    const int server = platform.find_host("ps-0");
    const double n = 1e8;
    const auto plan = test::collectives_only_plan(workers, {server}, n, {{"ps", {0, 1, 2, 3}}});
    const auto row = sim::simulate(plan, platform, sim::SimOptions{});
    const auto analytic = model::analyze(plan, platform);
    const auto& route = platform.route(workers[0], server);
    const auto& back = platform.route(server, workers[0]);
    return nlohmann::json{row.comm_s,
                          analytic.comm_s,
                          route.latency_s,
                          route.bandwidth_Bps,
                          back.latency_s,
                          back.bandwidth_Bps,
                          n}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  const double simulated = v[0], analytic = v[1], n = v[6];
  // 4 pushes share the 10 GB/s uplink (2.5 GB/s each), then 4 pulls share it again (it is a
  // plain, half-duplex link): each phase is latency + 4 N / uplink bandwidth.
  const double push = v[2].get<double>() + 4 * n / v[3].get<double>();
  const double pull = v[4].get<double>() + 4 * n / v[5].get<double>();
  CHECK(v[3].get<double>() == Approx(10e9));
  CHECK(simulated == Approx(push + pull).epsilon(1e-6));
  CHECK(simulated > 1.5 * analytic);
}

TEST_CASE("two jobs' rings crossing one switch link share it and exceed the analytic") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("islands.xml"));
    std::vector<int> workers;
    for (const char* name : {"a-0", "b-0", "a-1", "b-1"})
      workers.push_back(platform.find_host(name));
    const double n = 2e8;
    const auto plan =
        test::collectives_only_plan(workers, {}, n, {{"ring", {0, 1}}, {"ring", {2, 3}}});
    const auto row = sim::simulate(plan, platform, sim::SimOptions{});
    const auto analytic = model::analyze(plan, platform);
    const auto hop = model::slowest_ring_hop({workers[0], workers[1]}, platform);
    return nlohmann::json{row.round_s,
                          analytic.round_s,
                          hop.latency_s,
                          hop.bandwidth_Bps,
                          n,
                          row.extra.value("flows_reused", 0LL)}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  CHECK(v[5] == 0);  // the rings overlap: every step runs as flows
  const double simulated = v[0], analytic = v[1], alpha = v[2], beta = v[3], n = v[4];
  // Each direction of the split-duplex inter link carries one flow of each ring per step:
  // 2 steps of (alpha + (N/2) / (beta/2)).
  CHECK(beta == Approx(10e9));
  CHECK(simulated == Approx(2 * (alpha + (n / 2) / (beta / 2))).epsilon(1e-6));
  CHECK(analytic == Approx(2 * (alpha + (n / 2) / beta)).epsilon(1e-9));
  CHECK(simulated > 1.5 * analytic);
}

TEST_CASE("a heterogeneous sync step is the slowest worker's compute plus the collective") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("mixed_speeds.xml"));
    nlohmann::json out;
    for (const auto split : {model::BatchSplit::Even, model::BatchSplit::Speed}) {
      auto o = test::options(4, 64);
      o.split = split;
      const auto plan = test::make_test_plan("sync", o, platform, 3);
      const auto row = sim::simulate(plan, platform, sim::SimOptions{});
      nlohmann::json computes = nlohmann::json::array();
      for (size_t w = 0; w < plan.worker_hosts.size(); ++w)
        computes.push_back(plan.worker_samples[w] * test::round_workload().flop_per_sample /
                           platform.hosts[static_cast<size_t>(plan.worker_hosts[w])].speed_flops);
      const auto hop = model::slowest_ring_hop(plan.worker_hosts, platform);
      out.push_back({row.round_s, computes, hop.latency_s, hop.bandwidth_Bps,
                     model::analyze(plan, platform).round_s});
    }
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const double n = test::round_workload().gradient_bytes();
  for (const auto& c : result.json()) {
    double slowest = 0;
    for (const auto& t : c[1])
      slowest = std::max(slowest, t.get<double>());
    const double alpha = c[2], beta = c[3];
    const double ring = 2 * 3 * (alpha + n / (4 * beta));
    CHECK(c[0].get<double>() == Approx(slowest + ring).epsilon(1e-6));
    CHECK(c[0].get<double>() == Approx(c[4].get<double>()).epsilon(1e-6));
  }
  // The speed split balances the work, so its step is shorter than the even split's.
  const auto all = result.json();
  CHECK(all[1][0].get<double>() < all[0][0].get<double>());
}

TEST_CASE("a straggler slows its steps by its factor on a seeded fraction of them") {
  auto run = [](const std::string& straggler, unsigned long long seed) {
    return test::in_child([=] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      const auto plan = test::make_test_plan("local-sgd", test::options(4, 16, 8), platform, 8);
      sim::SimOptions options;
      options.seed = seed;
      if (!straggler.empty())
        options.stragglers.push_back(sim::parse_straggler(straggler, {"<test>", "stragglers"}));
      const auto row = sim::simulate(plan, platform, options);
      const double c = 16 * test::round_workload().flop_per_sample /
                       platform.hosts[static_cast<size_t>(plan.worker_hosts[0])].speed_flops;
      return nlohmann::json{row_json(row), c}.dump();
    });
  };
  const auto base = run("", 1);
  const auto always = run("n0-gpu1:3:1", 1);
  const auto half = run("n0-gpu1:3:0.5", 7);
  const auto half_again = run("n0-gpu1:3:0.5", 7);
  const auto half_other = run("n0-gpu1:3:0.5", 8);
  for (const auto* r : {&base, &always, &half, &half_again, &half_other})
    REQUIRE(r->kind == "ok");
  const double c = base.json()[1];
  const double base_round = base.json()[0]["round_s"];
  const double comm = base_round - 8 * c;  // one round: 8 local steps, then averaging
  CHECK(comm > 0);
  // Always slow: 8 steps x 3 on the straggler, which is now the slowest worker.
  CHECK(always.json()[0]["round_s"].get<double>() == Approx(8 * 3 * c + comm).epsilon(1e-6));
  // Half the steps, drawn from the seed: the row says how many were slow.
  const auto half_row = half.json()[0];
  const auto& detail = half_row["workers_detail"][1];
  const long long slow = detail["slow_steps"];
  CHECK(detail["steps"] == 8);
  CHECK(slow >= 0);
  CHECK(slow <= 8);
  const double expected = std::max(8.0, 8.0 + 2.0 * static_cast<double>(slow)) * c + comm;
  CHECK(half_row["round_s"].get<double>() == Approx(expected).epsilon(1e-6));
  CHECK(half.text == half_again.text);
  CHECK(half_other.json()[0]["workers_detail"][1].contains("slow_steps"));
}

TEST_CASE("a failing host restarts the round from the last averaged parameters") {
  auto run = [](const std::vector<std::string>& failures, double restart_s) {
    return test::in_child([=] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      const auto plan = test::make_test_plan("local-sgd", test::options(4, 16, 4), platform, 12);
      sim::SimOptions options;
      options.restart_s = restart_s;
      for (const auto& f : failures)
        options.failures.push_back(sim::parse_failure(f, {"<test>", "failures"}));
      return row_json(sim::simulate(plan, platform, options)).dump();
    });
  };
  const auto base = run({}, 0);
  REQUIRE(base.kind == "ok");
  const double round = base.json()["round_s"];
  const long long rounds = base.json()["rounds"];
  REQUIRE(rounds == 3);

  // Fails half-way through round 1 (the second round): that round's work is lost, the job
  // stalls for the restart, then the round runs again.
  const double t = 1.5 * round;
  const double restart = 0.25 * round;
  const auto failed = run({"n0-gpu2@" + exact(t)}, restart);
  REQUIRE(failed.kind == "ok");
  const auto row = failed.json();
  REQUIRE(row["failures"].size() == 1);
  const auto& fault = row["failures"][0];
  CHECK(fault["host"] == "n0-gpu2");
  CHECK(fault["round"] == 1);
  CHECK(fault["time_s"].get<double>() == Approx(t).epsilon(1e-9));
  CHECK(fault["lost_work_s"].get<double>() == Approx(t - round).epsilon(1e-6));
  CHECK(fault["stall_s"].get<double>() == Approx(restart).epsilon(1e-9));
  CHECK(row["time_lost_s"].get<double>() == Approx(t - round + restart).epsilon(1e-6));
  CHECK(row["total_s"].get<double>() == Approx(3 * round + (t - round) + restart).epsilon(1e-6));

  // A host the job does not use fails: nothing changes, and the row says so.
  const auto unused = run({"ps-0@" + exact(t)}, restart);
  REQUIRE(unused.kind == "ok");
  CHECK(unused.json()["total_s"].get<double>() == Approx(3 * round).epsilon(1e-9));
  CHECK(unused.json()["failures"][0]["outcome"].get<std::string>().find("ignored") == 0);

  // Failures at a rate: a result, never a crash; too frequent ones are reported as given up.
  const auto rate = run({"*~" + exact(2 * round)}, restart);
  REQUIRE(rate.kind == "ok");
  CHECK(rate.json()["total_s"].get<double>() >= 3 * round);
  const auto storm = run({"*~" + exact(round / 50)}, 0);
  REQUIRE(storm.kind == "ok");
  CHECK(storm.json().contains("gave_up"));
}

TEST_CASE("sim_rounds limits the simulated rounds and extrapolates the total") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const auto plan = test::make_test_plan("sync", test::options(4, 64), platform, 50);
    sim::SimOptions options;
    options.sim_rounds = 3;
    const auto limited = sim::simulate(plan, platform, options);
    const auto full = sim::simulate(plan, platform, sim::SimOptions{});
    return nlohmann::json{row_json(limited), row_json(full)}.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  CHECK(v[0]["simulated_rounds"] == 3);
  CHECK(v[0]["extrapolated"] == true);
  CHECK(v[1]["simulated_rounds"] == 50);
  CHECK(v[1]["extrapolated"] == false);
  // Two simulations in one process: the second measures from its own start.
  CHECK(v[0]["round_s"].get<double>() == Approx(v[1]["round_s"].get<double>()).epsilon(1e-9));
  CHECK(v[0]["total_s"].get<double>() == Approx(v[1]["total_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("same job and seed give byte-identical results and traces") {
  auto run = [] {
    return test::in_child([] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      const auto plan = test::make_test_plan("local-sgd", test::options(4, 16, 4), platform, 40);
      sim::SimOptions options;
      options.seed = 11;
      options.restart_s = 0.01;
      options.stragglers.push_back(sim::parse_straggler("n0-gpu3:2:0.3", {"<test>", "stragglers"}));
      options.failures.push_back(sim::parse_failure("*~0.05s", {"<test>", "failures"}));
      model::ChromeTrace trace;
      const auto row = sim::simulate(plan, platform, options, &trace, 1);
      return row_json(row).dump() + "\n" + trace.json();
    });
  };
  const auto first = run();
  const auto second = run();
  REQUIRE(first.kind == "ok");
  CHECK(first.text == second.text);
  CHECK(first.text.find("host failure") != std::string::npos);
}

TEST_CASE("the Chrome trace has one track per worker with compute and communication spans") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const auto plan = test::make_test_plan("sync", test::options(4, 64, 1, "ps"), platform, 2);
    model::ChromeTrace trace;
    sim::simulate(plan, platform, sim::SimOptions{}, &trace, 3);
    return trace.json();
  });
  REQUIRE(result.kind == "ok");
  const auto trace = nlohmann::json::parse(result.text);
  int threads = 0, compute = 0, comm = 0;
  for (const auto& e : trace["traceEvents"]) {
    CHECK(e["pid"] == 3);
    if (e["name"] == "thread_name") ++threads;
    if (e["ph"] == "X") {
      CHECK(e["dur"].get<double>() >= 0);
      if (e["cat"] == "compute") ++compute;
      if (e["cat"] == "comm") ++comm;
    }
  }
  CHECK(threads == 5);         // 4 workers and the parameter server
  CHECK(compute == 2 * 4);     // 2 rounds x 4 workers
  CHECK(comm == 2 * (4 + 1));  // the all-reduce on every worker's and the server's track
}

TEST_CASE("LV08 is recorded and differs from the alpha-beta figure") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"), "LV08");
    const auto plan = test::make_test_plan("sync", test::options(4, 64), platform, 1);
    const auto row = sim::simulate(plan, platform, sim::SimOptions{});
    nlohmann::json extra = sim::context_extra(sim::SimOptions{});
    return nlohmann::json{row_json(row), model::analyze(plan, platform).round_s, extra}.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  CHECK(v[0]["network_model"] == "LV08");
  CHECK(v[2]["network/model"] == "LV08");
  CHECK(v[2]["simgrid_version"] == "3.32.0");
  CHECK(v[0]["round_s"].get<double>() > v[1].get<double>() * (1 + 1e-4));
}

TEST_CASE("a deadlock is an error, not a silent success") {
  const auto result = test::in_child([] {
    sim::load_platform(test::fixture("two_nodes.xml"));
    const auto& hosts = sim::detail::loaded_hosts();
    simgrid::s4u::Actor::create("waits-forever", hosts.front(), [] {
      simgrid::s4u::Mailbox::by_name("nobody-sends-here")->get<int>();
    });
    sim::detail::run_engine_checked("test");
    return std::string("finished");
  });
  CHECK(result.kind == "SimulationError");
  CHECK(result.text.find("deadlock") != std::string::npos);
}

TEST_CASE("simulating on a platform that was not loaded into SimGrid is an input error") {
  const auto result = test::in_child([] {
    const auto made = model::make_crossbar_platform({1e12, 1e12}, 1e9, 1e-6);
    const auto plan = test::make_test_plan("sync", test::options(2, 8), made, 1);
    sim::simulate(plan, made, sim::SimOptions{});
    return std::string("simulated");
  });
  CHECK(result.kind == "InputError");
  CHECK(result.text.find("platform") != std::string::npos);
}
