// private_links_test.cpp: the memoised private ops of sim/private_links.hpp.
//
// The order analysis and the signatures are checked on hand-made rounds and crossbar
// platforms. The simulator's use of them is checked as an identity: a layout simulated with
// memoised private ops (the default) gives the round that every flow simulated one by one
// (sim_reuse_steps: false) gives, to 1e-9, on an NVLink-and-leaves fixture whose leaf uplinks
// are 2:1 oversubscribed, so that the data-parallel flows contend while the memoised tensor
// all-reduces do not; and the flows it says it represents are the flows the other run started.
#include <catch2/catch.hpp>

#include "model/inputs/platform.hpp"
#include "sim/platform_loader.hpp"
#include "sim/private_links.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

/// A round of `ops` ops with no links, edges or worker sequences yet.
sim::RoundOrder empty_round(int ops) {
  sim::RoundOrder order;
  order.links.assign(static_cast<size_t>(ops), {});
  order.succs.assign(static_cast<size_t>(ops), {});
  order.next_on_worker.assign(static_cast<size_t>(ops), -1);
  return order;
}

sim::FlowProgram ring_program(const std::vector<int>& hosts, double bytes) {
  sim::FlowProgram program;
  program.stages.push_back(sim::ring_stage("reduce-scatter", hosts, bytes, 3));
  return program;
}

}  // namespace

TEST_CASE("private links: ops sharing a link are private only when ordered") {
  SECTION("a chain through a successor edge and a worker's sequence") {
    // 0 (link 7) -> 1 (compute) ..worker.. 2 (compute) -> 3 (link 7)
    sim::RoundOrder order = empty_round(4);
    order.links[0] = {7};
    order.links[3] = {7};
    order.succs[0] = {1};
    order.next_on_worker[1] = 2;
    order.succs[2] = {3};
    const auto result = sim::private_link_ops(order);
    CHECK(result[0]);
    CHECK(result[3]);
    CHECK_FALSE(result[1]);  // no links: nothing to memoise
  }
  SECTION("two unordered ops on one link are not private; an op on its own link is") {
    sim::RoundOrder order = empty_round(3);
    order.links[0] = {1, 2};
    order.links[1] = {2};
    order.links[2] = {3};
    const auto result = sim::private_link_ops(order);
    CHECK_FALSE(result[0]);
    CHECK_FALSE(result[1]);
    CHECK(result[2]);
  }
  SECTION("a link shared with an unordered op spoils only the ops on that link") {
    // 0 -> 1 on link 5 (a chain); 2 on links 5 and 6 unordered with both; 3 on link 6 alone
    // with 2. 4 on link 9, ordered after 0 and 1, shares nothing with 2.
    sim::RoundOrder order = empty_round(5);
    order.links[0] = {5};
    order.links[1] = {5};
    order.links[2] = {5, 6};
    order.links[3] = {6};
    order.links[4] = {9};
    order.succs[0] = {1};
    order.succs[1] = {4};
    const auto result = sim::private_link_ops(order);
    CHECK_FALSE(result[0]);
    CHECK_FALSE(result[1]);
    CHECK_FALSE(result[2]);
    CHECK_FALSE(result[3]);
    CHECK(result[4]);
  }
}

TEST_CASE("private links: signatures are equal exactly for programs alike link by link") {
  // Hosts 0-7 on private 25 GB/s, 1 us links; hosts 8-11 on 10 GB/s links.
  std::vector<double> speeds(12, 1e12);
  model::Platform crossbar = model::make_crossbar_platform(speeds, 25e9, 1e-6);
  model::Platform slower = model::make_crossbar_platform(speeds, 25e9, 1e-6);
  const std::string a = sim::program_signature(ring_program({0, 1, 2, 3}, 1e6), crossbar);
  CHECK(a == sim::program_signature(ring_program({4, 5, 6, 7}, 1e6), crossbar));
  CHECK(a != sim::program_signature(ring_program({4, 5, 6, 7}, 2e6), crossbar));
  CHECK(a != sim::program_signature(ring_program({0, 1, 2}, 1e6), crossbar));
  slower.links[8 * 2].bandwidth_Bps = 10e9;  // host 8's up link
  const std::string b = sim::program_signature(ring_program({8, 9, 10, 11}, 1e6), slower);
  CHECK(a != b);
  // The same hosts in another order cross other links but alike ones: equal.
  CHECK(a == sim::program_signature(ring_program({3, 1, 0, 2}, 1e6), crossbar));
  // Two flows into one host share its down link: another pattern than a ring.
  sim::FlowProgram fan;
  fan.stages.push_back({"fan", {{0, 2, 1e6}, {1, 2, 1e6}}, 1, 0, {}});
  sim::FlowProgram pairs;
  pairs.stages.push_back({"pairs", {{0, 2, 1e6}, {1, 3, 1e6}}, 1, 0, {}});
  CHECK(sim::program_signature(fan, crossbar) != sim::program_signature(pairs, crossbar));
  CHECK(sim::program_links(fan, crossbar).size() == 3);  // two up links, one down link
}

TEST_CASE(
    "private links: memoised tensor all-reduces give the flow-by-flow round on a contended "
    "fabric (identity), and count the flows they stand for") {
  for (const std::string network : {"CM02", "LV08"})
    for (bool sequence_parallel : {true, false}) {
      const auto result = test::in_child([&] {
        const auto platform = sim::load_platform(test::fixture("nvlink_leaves.xml"), network);
        const model::Workload w = model::load_workload("gpt2-small");
        model::StrategyOptions o = test::options(16, 16);
        o.layout.data = 2;
        o.layout.tensor = 4;
        o.layout.pipeline = 2;
        o.layout.micro_batches = 4;
        o.layout.sequence_parallel = sequence_parallel;
        o.check_memory = false;
        const model::Plan plan = model::make_plan("mesh", o, w, platform, model::FixedCounts(1));
        sim::SimOptions memoised;
        sim::SimOptions every_flow;
        every_flow.reuse_steps = false;
        const model::ResultRow fast = sim::simulate(plan, platform, memoised);
        const model::ResultRow slow = sim::simulate(plan, platform, every_flow);
        return nlohmann::json{
            {"fast", fast.round_s},
            {"slow", slow.round_s},
            {"memoised", fast.extra.contains("flows_memoised") ? fast.extra.at("flows_memoised")
                                                               : nlohmann::json(0)},
            {"represented", fast.extra["flows_represented"]},
            {"slow_started", slow.extra["flows_started"]},
            {"fast_started", fast.extra["flows_started"]}}
            .dump();
      });
      INFO(network << (sequence_parallel ? " sp " : " no sp ") << result.text);
      REQUIRE(result.kind == "ok");
      const auto out = result.json();
      CHECK(out["fast"].get<double>() == Approx(out["slow"].get<double>()).epsilon(1e-9));
      CHECK(out["represented"] == out["slow_started"]);
      if (sequence_parallel) {
        // Only the tensor group's all-reduces cross NVLink: memoised after their first call.
        CHECK(out["memoised"].get<long long>() > 0);
        CHECK(out["fast_started"].get<long long>() < out["slow_started"].get<long long>() / 2);
      }
    }
}
