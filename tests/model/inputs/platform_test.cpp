// platform_test.cpp: natural host order, crossbar routes, hashing.
#include <catch2/catch.hpp>

#include "model/inputs/platform.hpp"

using namespace tauplan;

TEST_CASE("hosts are ordered naturally: gpu-2 before gpu-10") {
  CHECK(model::natural_less("gpu-2", "gpu-10"));
  CHECK_FALSE(model::natural_less("gpu-10", "gpu-2"));
  CHECK(model::natural_less("n1-gpu3", "n10-gpu0"));
  CHECK(model::natural_less("a", "b"));
  CHECK_FALSE(model::natural_less("h1", "h1"));
  model::Platform p = model::make_crossbar_platform({1, 1, 1}, 1, 1);
  p.hosts[0].name = "gpu-10";
  p.hosts[1].name = "gpu-2";
  p.hosts[2].name = "gpu-1";
  CHECK(p.worker_hosts() == std::vector<int>{2, 1, 0});
}

TEST_CASE("crossbar routes: up link of the source then down link of the destination") {
  const auto p = model::make_crossbar_platform({1, 1, 1}, 2e9, 3e-6);
  const auto& r = p.route(0, 2);
  CHECK(r.links == std::vector<int>{0, 5});
  CHECK(r.latency_s == Approx(6e-6));
  CHECK(r.bandwidth_Bps == 2e9);
  CHECK(p.route(1, 1).links.empty());
  CHECK(p.find_host("h2") == 2);
  CHECK(p.find_host("nope") == -1);
}

TEST_CASE("FNV-1a hash is stable") {
  CHECK(model::fnv1a_hex("") == "cbf29ce484222325");
  CHECK(model::fnv1a_hex("a") == "af63dc4c8601ec8c");
}
