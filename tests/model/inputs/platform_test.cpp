// platform_test.cpp: natural host order, crossbar routes, store-and-forward, hashing.
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

TEST_CASE("store-and-forward: a message's last packet once more on every link but the narrowest") {
  // Route h0 -> h2: h0's up link then h2's down link, both 2e9 B/s: one more packet at 2e9.
  auto p = model::make_crossbar_platform({1, 1, 1}, 2e9, 3e-6);
  const model::Route& r = p.route(0, 2);
  CHECK(r.forwarding_s_per_byte == Approx(1 / 2e9).epsilon(1e-12));
  // Pipes by default: nothing added.
  CHECK(p.forwarding_s(r.forwarding_s_per_byte, 1e6) == 0);
  CHECK(p.message_latency_s(r, 1e6) == Approx(6e-6).epsilon(1e-12));
  p.packet_bytes = 9000;
  CHECK(p.forwarding_s(r.forwarding_s_per_byte, 1e6) == Approx(9000 / 2e9).epsilon(1e-12));
  // A message smaller than a packet is its own last packet; no bytes, nothing.
  CHECK(p.forwarding_s(r.forwarding_s_per_byte, 4000) == Approx(4000 / 2e9).epsilon(1e-12));
  CHECK(p.forwarding_s(r.forwarding_s_per_byte, 0) == 0);
  CHECK(p.message_latency_s(r, 1e6) == Approx(6e-6 + 9000 / 2e9).epsilon(1e-12));
  // A route of links 1e7, 3e7, 3e7 and 1e7 B/s (a NIC, two uplinks, a NIC): the sum of 1 / rate
  // less the narrowest's, 1 / 1e7 + 2 / 3e7.
  std::vector<model::Link> links = {{"nic-a", 1e7, 5e-4, model::LinkSharing::SplitDuplex},
                                    {"up-a", 3e7, 5e-4, model::LinkSharing::SplitDuplex},
                                    {"up-b", 3e7, 5e-4, model::LinkSharing::SplitDuplex},
                                    {"nic-b", 1e7, 5e-4, model::LinkSharing::SplitDuplex}};
  model::Route across;
  across.links = {0, 1, 2, 3};
  model::total_route(across, links);
  CHECK(across.latency_s == Approx(2e-3).epsilon(1e-12));
  CHECK(across.bandwidth_Bps == 1e7);
  CHECK(across.forwarding_s_per_byte == Approx(1 / 1e7 + 2 / 3e7).epsilon(1e-12));
  model::Route none;
  model::total_route(none, links);
  CHECK(none.forwarding_s_per_byte == 0);
}

TEST_CASE("FNV-1a hash is stable") {
  CHECK(model::fnv1a_hex("") == "cbf29ce484222325");
  CHECK(model::fnv1a_hex("a") == "af63dc4c8601ec8c");
}
