// node_fabric_test.cpp: the Selene platform's routes through SimGrid are what its header says, and
// the node fabric read off them (model/inputs/node_fabric.hpp) rebuilds the same routes at any
// size.
#include <catch2/catch.hpp>

#include "model/inputs/node_fabric.hpp"
#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

TEST_CASE("selene-a100: NVLink inside a node, one HDR rail per GPU across, rebuilt at any size") {
  const auto result = test::in_child([] {
    const model::Platform platform =
        sim::load_platform(std::string(TAUPLAN_PLATFORM_DIR) + "/selene-a100.xml");
    const int a = platform.find_host("n0-gpu0"), b = platform.find_host("n0-gpu5");
    const int c = platform.find_host("n1-gpu3");
    const model::Route& inside = platform.route(a, b);
    const model::Route& across = platform.route(a, c);
    const model::NodeFabric fabric = model::node_fabric_of(platform);
    const model::Platform large = model::make_node_fabric_platform(fabric, 384);
    nlohmann::json out = {{"workers", platform.worker_hosts().size()},
                          {"inside_latency", inside.latency_s},
                          {"inside_bandwidth", inside.bandwidth_Bps},
                          {"inside_links", inside.links.size()},
                          {"across_latency", across.latency_s},
                          {"across_bandwidth", across.bandwidth_Bps},
                          {"across_links", across.links.size()},
                          {"gpus_per_node", fabric.gpus_per_node},
                          {"large_workers", large.worker_hosts().size()},
                          {"large_inside_latency", large.route(3000, 3007).latency_s},
                          {"large_inside_bandwidth", large.route(3000, 3007).bandwidth_Bps},
                          {"large_across_latency", large.route(5, 3071).latency_s},
                          {"large_across_bandwidth", large.route(5, 3071).bandwidth_Bps},
                          {"profile", fabric.gpu.properties.at("compute_profile")}};
    return out.dump();
  });
  INFO(result.kind << " " << result.text);
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  CHECK(j["workers"] == 32);
  CHECK(j["inside_latency"].get<double>() == Approx(2.8e-6));
  CHECK(j["inside_bandwidth"].get<double>() == Approx(3e11));
  CHECK(j["inside_links"] == 2);
  CHECK(j["across_latency"].get<double>() == Approx(4e-6));
  CHECK(j["across_bandwidth"].get<double>() == Approx(2.5e10));
  CHECK(j["across_links"] == 4);
  CHECK(j["gpus_per_node"] == 8);
  CHECK(j["large_workers"] == 3072);
  CHECK(j["large_inside_latency"].get<double>() == Approx(2.8e-6));
  CHECK(j["large_inside_bandwidth"].get<double>() == Approx(3e11));
  CHECK(j["large_across_latency"].get<double>() == Approx(4e-6));
  CHECK(j["large_across_bandwidth"].get<double>() == Approx(2.5e10));
  CHECK(j["profile"] == "a100-sxm-bf16-fitted");
}
