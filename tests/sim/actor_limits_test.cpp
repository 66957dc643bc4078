// actor_limits_test.cpp: the simulator's stacks past its live-actor limit (sim/simulator.hpp,
// SimOptions::guarded_actor_limit). With the limit lowered to 2, the 8 workers (and the runners)
// get unguarded 256 KiB stacks for the whole simulation; it must give the same round as with
// guarded stacks (stacks change memory mappings, never results) and say so in its row.
#include <catch2/catch.hpp>

// GCC 12 reports -Wnull-dereference inside nlohmann's inlined getters (a false positive).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

TEST_CASE("actors past the guarded limit get unguarded stacks and the same result") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    model::StrategyOptions o = test::options(8, 8);
    o.layout.tensor = 4;
    o.layout.pipeline = 2;
    o.layout.micro_batches = 4;
    const model::Workload w = model::load_workload("gpt2-small");
    const model::Plan plan = model::make_plan("mesh", o, w, platform, model::FixedCounts(1));
    const model::ResultRow guarded = sim::simulate(plan, platform, sim::SimOptions{});
    sim::SimOptions few;
    few.guarded_actor_limit = 2;
    const model::ResultRow unguarded = sim::simulate(plan, platform, few);
    return nlohmann::json{{"guarded", guarded.round_s},
                          {"guarded_flag", guarded.extra.contains("unguarded_stacks")},
                          {"unguarded", unguarded.round_s},
                          {"unguarded_flag", unguarded.extra.value("unguarded_stacks", false)}}
        .dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto out = result.json();
  CHECK_FALSE(out["guarded_flag"].get<bool>());
  CHECK(out["unguarded_flag"].get<bool>());
  // The second simulation runs later on the same engine clock: times agree to rounding.
  CHECK(out["unguarded"].get<double>() == Approx(out["guarded"].get<double>()).epsilon(1e-12));
}
