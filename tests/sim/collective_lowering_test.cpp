// collective_lowering_test.cpp: collectives as staged flows (pure C++, no SimGrid engine).
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "sim/collective_lowering.hpp"
#include "tests/model/collective_support.hpp"

using namespace tauplan;
using test::call;

namespace {

model::Platform crossbar(int hosts) {
  return model::make_crossbar_platform(std::vector<double>(static_cast<size_t>(hosts), 1e12), 1e9,
                                       10e-6);
}

double stage_bytes(const sim::FlowStage& stage) {
  double total = 0;
  for (const auto& f : stage.flows)
    total += f.bytes;
  return total * static_cast<double>(stage.repeat);
}

}  // namespace

TEST_CASE("every model collective has a lowering, and unknown names are input errors") {
  const auto lowered = sim::collective_lowering_names();
  for (const auto& name : model::collective_algorithm_names())
    CHECK(std::find(lowered.begin(), lowered.end(), name) != lowered.end());
  CHECK_THROWS_AS(sim::collective_lowering("butterfly", "job.yaml"), InputError);
}

TEST_CASE("ring: 2(K-1) steps of K flows of N/K to the right neighbour") {
  const auto platform = crossbar(5);
  for (int k : {2, 3, 5}) {
    std::vector<int> hosts;
    for (int i = 0; i < k; ++i)
      hosts.push_back(i);
    const auto program =
        sim::lower_collective("ring", call(hosts, 6e6), platform, sim::Granularity::Step);
    CHECK(program.coordinator_host == 0);
    CHECK(program.flow_count() == 2LL * (k - 1) * k);
    for (const auto& stage : program.stages) {
      CHECK(stage.repeat == k - 1);
      for (const auto& flow : stage.flows) {
        CHECK(flow.dst_host == (flow.src_host + 1) % k);
        CHECK(flow.bytes == Approx(6e6 / k));
      }
    }
  }
  CHECK(sim::lower_collective("ring", call({3}, 6e6), platform, sim::Granularity::Step)
            .stages.empty());
}

TEST_CASE("coarse: one flow per pair and phase, same bytes, the merged steps' latency added") {
  const auto platform = crossbar(8);
  const auto c = call({0, 1, 2, 3, 4, 5, 6, 7}, 8e6);
  for (const auto& name : sim::collective_lowering_names()) {
    auto with_servers = c;
    with_servers.servers = {7};
    const auto step = sim::lower_collective(name, with_servers, platform, sim::Granularity::Step);
    const auto coarse =
        sim::lower_collective(name, with_servers, platform, sim::Granularity::Coarse);
    REQUIRE(step.stages.size() == coarse.stages.size());
    for (size_t i = 0; i < step.stages.size(); ++i) {
      INFO(name << " stage " << step.stages[i].phase);
      CHECK(coarse.stages[i].repeat == 1);
      CHECK(stage_bytes(coarse.stages[i]) == Approx(stage_bytes(step.stages[i])));
      std::set<std::pair<int, int>> pairs;
      for (const auto& f : coarse.stages[i].flows)
        pairs.emplace(f.src_host, f.dst_host);
      CHECK(pairs.size() == coarse.stages[i].flows.size());
      const double route_latency = platform.route(0, 1).latency_s;
      CHECK(coarse.stages[i].extra_latency_s ==
            Approx(static_cast<double>(step.stages[i].repeat - 1) * route_latency));
    }
  }
}

TEST_CASE("parameter server: push N/s to each server, pull back, self-flows left out") {
  const auto platform = crossbar(6);
  const auto program = sim::lower_collective("ps", call({0, 1, 2, 4}, 8e6, {4, 5}), platform,
                                             sim::Granularity::Step);
  CHECK(program.coordinator_host == 4);
  REQUIRE(program.stages.size() == 2);
  CHECK(program.stages[0].phase == "push");
  // 4 workers x 2 servers, minus worker 4 -> server 4.
  CHECK(program.stages[0].flows.size() == 7);
  for (const auto& f : program.stages[0].flows)
    CHECK(f.bytes == Approx(4e6));
  for (const auto& f : program.stages[1].flows)
    CHECK((f.src_host == 4 || f.src_host == 5));
}

TEST_CASE("tree: reduce levels deepest first, then broadcast levels from the root") {
  const auto platform = crossbar(6);
  const auto program = sim::lower_collective("tree", call({0, 1, 2, 3, 4, 5}, 1e6), platform,
                                             sim::Granularity::Step);
  // Heap of 6: depth 0 parent {0}, depth 1 parents {1, 2}.
  REQUIRE(program.stages.size() == 4);
  CHECK(program.stages[0].phase == "reduce depth 1");
  CHECK(program.stages[0].flows.size() == 3);  // 3,4 -> 1 and 5 -> 2
  CHECK(program.stages[1].flows.size() == 2);  // 1,2 -> 0
  CHECK(program.stages[2].phase == "broadcast depth 0");
  for (const auto& f : program.stages[1].flows)
    CHECK(f.dst_host == 0);
  for (const auto& f : program.stages[2].flows)
    CHECK(f.src_host == 0);
}

TEST_CASE("hierarchical: intra-node rings, G inter-node rings, equal node sizes required") {
  auto platform = crossbar(8);
  for (size_t h = 0; h < 8; ++h)
    platform.hosts[h].node = h < 4 ? "a" : "b";
  const auto program = sim::lower_collective("hierarchical", call({0, 1, 2, 3, 4, 5, 6, 7}, 8e6),
                                             platform, sim::Granularity::Step);
  REQUIRE(program.stages.size() == 3);
  CHECK(program.stages[0].repeat == 3);        // G - 1
  CHECK(program.stages[0].flows.size() == 8);  // two rings of 4
  CHECK(program.stages[1].repeat == 2);        // 2 (M - 1)
  CHECK(program.stages[1].flows.size() == 8);  // four rings of 2
  for (const auto& f : program.stages[1].flows)
    CHECK(f.bytes == Approx(1e6));  // N / (G M)
  for (const auto& f : program.stages[1].flows)
    CHECK(platform.hosts[static_cast<size_t>(f.src_host)].node !=
          platform.hosts[static_cast<size_t>(f.dst_host)].node);

  platform.hosts[3].node = "b";
  CHECK_THROWS_AS(sim::lower_collective("hierarchical", call({0, 1, 2, 3, 4, 5, 6, 7}, 8e6),
                                        platform, sim::Granularity::Step),
                  InputError);
}
