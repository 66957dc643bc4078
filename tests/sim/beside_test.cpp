// beside_test.cpp: two jobs on one platform (SimOptions::beside_hosts): a copy of a job on other
// hosts shares the links the two have in common, and nothing else.
//
// Expected values come from the platform's alpha-beta routes (fair shares of one link by hand);
// the phase-0 case is an identity of max-min sharing (two equal flows on one link each get half),
// so it checks the wiring of the second job, not SimGrid.
#include <catch2/catch.hpp>

#include "model/analytic/analytic.hpp"
#include "model/ir/collective.hpp"
#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

TEST_CASE(
    "a copy of a ring job across the same switch link: started together it doubles the "
    "bandwidth term, started later it costs less, never less than alone") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("islands.xml"));
    const std::vector<int> hosts = {platform.find_host("a-0"), platform.find_host("b-0")};
    const double n = 2e8;
    model::Plan plan = test::collectives_only_plan(hosts, {}, n, {{"ring", {0, 1}}});
    plan.rounds = 3;
    sim::SimOptions alone;
    sim::SimOptions together;
    together.beside_hosts = {"a-1", "b-1"};
    together.beside_phases = 1;
    sim::SimOptions phased = together;
    phased.beside_phases = 4;
    const auto hop = model::slowest_ring_hop(hosts, platform);
    const auto a = sim::simulate(plan, platform, alone);
    const auto t = sim::simulate(plan, platform, together);
    const auto p = sim::simulate(plan, platform, phased);
    return nlohmann::json{
        a.round_s,     t.round_s,         p.round_s, p.extra.at("beside"),
        hop.latency_s, hop.bandwidth_Bps, n,         t.extra.at("beside").at("hosts")}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  const double alone = v[0], together = v[1], phased = v[2];
  const double alpha = v[4], beta = v[5], n = v[6];
  // A ring of 2: 2 steps of alpha + (N/2)/beta alone; with the copy's flow in each direction
  // of the split-duplex link from the start, each flow gets beta/2.
  CHECK(alone == Approx(2 * (alpha + (n / 2) / beta)).epsilon(1e-6));
  CHECK(together == Approx(2 * (alpha + (n / 2) / (beta / 2))).epsilon(1e-6));
  CHECK(v[7] == nlohmann::json({"a-1", "b-1"}));
  const auto& beside = v[3];
  CHECK(beside.at("round_alone_s").get<double>() == Approx(alone).epsilon(1e-9));
  REQUIRE(beside.at("phases").size() == 4);
  double sum = 0;
  for (size_t k = 0; k < 4; ++k) {
    const auto& phase = beside.at("phases")[k];
    CHECK(phase.at("offset_s").get<double>() == Approx(alone * static_cast<double>(k) / 4));
    const double round = phase.at("round_s");
    CHECK(round >= alone * (1 - 1e-9));
    CHECK(round <= together * (1 + 1e-9));
    sum += round;
  }
  CHECK(phased == Approx(sum / 4).epsilon(1e-12));
  CHECK(beside.at("phases")[0].at("round_s").get<double>() == Approx(together).epsilon(1e-9));
  // A copy that starts later shares the link for only part of the first round.
  CHECK(phased < together * (1 - 1e-3));
  CHECK(phased > alone * (1 + 1e-3));
}

TEST_CASE("a copy of a job on hosts whose routes share no link leaves its rounds unchanged") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    auto o = test::options(2, 64, 1, "ring");
    o.step_overhead_s = 1e-4;
    const auto plan = test::make_test_plan("sync", o, platform, 6);
    sim::SimOptions beside;
    beside.beside_hosts = {"n1-gpu0", "n1-gpu1"};
    beside.beside_phases = 3;
    const auto a = sim::simulate(plan, platform, sim::SimOptions{});
    const auto b = sim::simulate(plan, platform, beside);
    return nlohmann::json{a.round_s, b.round_s, a.compute_s, b.compute_s,
                          platform.hosts[static_cast<size_t>(plan.worker_hosts[0])].name}
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  REQUIRE(v[4] == "n0-gpu0");  // the job is node n0's, its copy node n1's
  CHECK(v[1].get<double>() == Approx(v[0].get<double>()).epsilon(1e-9));
  CHECK(v[3].get<double>() == Approx(v[2].get<double>()).epsilon(1e-9));
}

TEST_CASE("beside_hosts: bad hosts, too few, no phases, an asynchronous job: input errors") {
  struct Case {
    std::vector<std::string> hosts;
    int phases;
    std::string strategy;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"n1-gpu0", "nowhere"}, 2, "sync", "beside_hosts: expected hosts of"},
      {{"n1-gpu0"}, 2, "sync", "beside_hosts: expected at least the 2 worker host(s)"},
      {{"n1-gpu0", "n1-gpu0"}, 2, "sync", "beside_hosts: expected each host once"},
      {{"n1-gpu0", "n1-gpu1"}, 0, "sync", "beside_phases: expected at least 1 offset"},
      {{"n1-gpu0", "n1-gpu1"}, 2, "async-ps", "beside_hosts: expected a synchronous strategy"}};
  for (const Case& c : cases) {
    const auto result = test::in_child([&] {
      const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
      auto o = test::options(2, 64, 1, c.strategy == "async-ps" ? "ps" : "ring");
      o.servers = 1;
      const auto plan = test::make_test_plan(c.strategy, o, platform, 6);
      sim::SimOptions options;
      options.origin = "job.yaml";
      options.beside_hosts = c.hosts;
      options.beside_phases = c.phases;
      sim::simulate(plan, platform, options);
      return std::string("no error");
    });
    INFO(c.expected);
    CHECK(result.kind == "InputError");
    CHECK(result.text.find("job.yaml") != std::string::npos);
    CHECK(result.text.find(c.expected) != std::string::npos);
  }
}
