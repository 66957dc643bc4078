// collective_test.cpp: each algorithm's analytic cost against its alpha-beta form, by hand.
#include <catch2/catch.hpp>

#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "tests/model/collective_support.hpp"

using namespace tauplan;
using test::call;

TEST_CASE("ring all-reduce costs 2(K-1)(alpha + N/(K beta)) for several K and N") {
  for (int k : {2, 3, 4, 8, 16}) {
    const auto platform = model::make_crossbar_platform(
        std::vector<double>(static_cast<size_t>(k), 1e12), 2.5e9, 5e-6);
    std::vector<int> hosts;
    for (int i = 0; i < k; ++i)
      hosts.push_back(i);
    for (double n : {1e3, 4e6, 1e9}) {
      const double expected = 2.0 * (k - 1) * (10e-6 + n / (k * 2.5e9));
      CHECK(model::collective_algorithm("ring").time_s(call(hosts, n), platform) ==
            Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("ring all-reduce uses the slowest hop of the ring") {
  // host links: h0..h2 at 10 GB/s, h3 at 1 GB/s: every hop into or out of h3 runs at 1 GB/s.
  model::Platform platform = model::make_crossbar_platform({1, 1, 1, 1}, 10e9, 1e-6);
  platform.links[6].bandwidth_Bps = 1e9;  // h3 up
  platform.links[7].bandwidth_Bps = 1e9;  // h3 down
  platform.routes = std::make_shared<model::CrossbarRoutes>(
      platform.links, std::vector<int>{0, 2, 4, 6}, std::vector<int>{1, 3, 5, 7});
  const double n = 8e6;
  CHECK(model::collective_algorithm("ring").time_s(call({0, 1, 2, 3}, n), platform) ==
        Approx(2.0 * 3 * (2e-6 + n / (4 * 1e9))).epsilon(1e-12));
}

TEST_CASE("parameter server is bounded by the server's link") {
  // 4 workers with 10 GB/s links, one server (h4) with a 1 GB/s link; routes are 20 us.
  model::Platform platform = model::make_crossbar_platform(
      {1, 1, 1, 1, 1}, 10e9, 10e-6, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Worker,
       model::HostRole::Worker, model::HostRole::Server});
  platform.links[8].bandwidth_Bps = 1e9;
  platform.links[9].bandwidth_Bps = 1e9;
  platform.routes = std::make_shared<model::CrossbarRoutes>(
      platform.links, std::vector<int>{0, 2, 4, 6, 8}, std::vector<int>{1, 3, 5, 7, 9});
  const double n = 4e6;
  // push: 4 flows of N share the server's 1 GB/s down link; pull: the same through its up link.
  const double expected = 2 * (20e-6 + 4 * n / 1e9);
  CHECK(model::collective_algorithm("ps").time_s(call({0, 1, 2, 3}, n, {4}), platform) ==
        Approx(expected).epsilon(1e-12));
  // SparkNet's driver: broadcast N to each worker, collect N from each: the same bound here.
  CHECK(model::collective_algorithm("sparknet").time_s(call({0, 1, 2, 3}, n, {4}), platform) ==
        Approx(expected).epsilon(1e-12));
}

TEST_CASE("parameter server sharded over two servers halves the server-link load") {
  const auto platform = model::make_crossbar_platform(
      {1, 1, 1, 1, 1, 1}, 1e9, 10e-6, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Worker,
       model::HostRole::Worker, model::HostRole::Server, model::HostRole::Server});
  const double n = 4e6;
  // each server receives 4 shards of N/2 through its 1 GB/s link: 2N / 1e9 per phase.
  CHECK(model::collective_algorithm("ps").time_s(call({0, 1, 2, 3}, n, {4, 5}), platform) ==
        Approx(2 * (20e-6 + 4 * (n / 2) / 1e9)).epsilon(1e-12));
}

TEST_CASE("binary tree: two children share the parent's link at each level") {
  const auto platform = model::make_crossbar_platform({1, 1, 1, 1}, 1e9, 10e-6);
  const double n = 1e6;
  // heap: 0 <- {1, 2}, 1 <- {3}. Reduce: level 1 (1 child) 20us + N/B, level 0 (2 children)
  // 20us + 2N/B; the broadcast mirrors it.
  const double expected = 2 * ((20e-6 + n / 1e9) + (20e-6 + 2 * n / 1e9));
  CHECK(model::collective_algorithm("tree").time_s(call({0, 1, 2, 3}, n), platform) ==
        Approx(expected).epsilon(1e-12));
}

TEST_CASE("hierarchical all-reduce on two nodes of two workers") {
  // A crossbar with node names n0,n0,n1,n1: intra and inter hops cost the same, so the
  // phases are (G-1)(alpha + N/(G beta)) twice and 2(M-1)(alpha + N/(G M beta)).
  auto platform = model::make_crossbar_platform({1, 1, 1, 1}, 1e9, 10e-6);
  platform.hosts[1].node = "n0";
  platform.hosts[2].node = "n1";
  platform.hosts[3].node = "n1";
  const double n = 8e6;
  const double intra = 1 * (20e-6 + n / (2 * 1e9));
  const double inter = 2 * 1 * (20e-6 + n / (4 * 1e9));
  CHECK(model::collective_algorithm("hierarchical").time_s(call({0, 1, 2, 3}, n), platform) ==
        Approx(2 * intra + inter).epsilon(1e-12));
}

TEST_CASE("under a rendezvous, rings of 2 pay one latency a step, longer rings three") {
  // exec sends a two-way exchange (a ring of 2, and hierarchical's rings of 2 within and across
  // nodes) as pieces below the eager limit (exec/mpi_peers.hpp); other ring steps are
  // rendezvous messages: request, clear-to-send and bytes, three one-way latencies.
  for (int k : {2, 3, 4}) {
    auto platform =
        model::make_crossbar_platform(std::vector<double>(static_cast<size_t>(k), 1), 1e9, 10e-6);
    platform.protocol.rendezvous = true;
    platform.protocol.eager_limit_bytes = 65536;
    std::vector<int> hosts;
    for (int i = 0; i < k; ++i)
      hosts.push_back(i);
    const double n = 8e6, trips = k == 2 ? 1 : 3;
    const double expected = 2.0 * (k - 1) * (trips * 20e-6 + n / (k * 1e9));
    CHECK(model::collective_algorithm("ring").time_s(call(hosts, n), platform) ==
          Approx(expected).epsilon(1e-12));
  }
  // Two nodes of two: every ring of the hierarchy has two members.
  auto platform = model::make_crossbar_platform({1, 1, 1, 1}, 1e9, 10e-6);
  platform.hosts[1].node = "n0";
  platform.hosts[2].node = "n1";
  platform.hosts[3].node = "n1";
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = 65536;
  const double n = 8e6;
  const double intra = 1 * (20e-6 + n / (2 * 1e9));
  const double inter = 2 * 1 * (20e-6 + n / (4 * 1e9));
  CHECK(model::collective_algorithm("hierarchical").time_s(call({0, 1, 2, 3}, n), platform) ==
        Approx(2 * intra + inter).epsilon(1e-12));
  CHECK(platform.protocol.latency_trips(n) == 3);
  CHECK(platform.protocol.latency_trips(n, true) == 1);
  CHECK(platform.protocol.latency_trips(6e4) == 1);
}

TEST_CASE("a single participant costs nothing and unknown algorithms are input errors") {
  const auto platform = model::make_crossbar_platform({1, 1}, 1e9, 1e-6);
  for (const auto& name : model::collective_algorithm_names())
    if (name != "ps" && name != "sparknet")
      CHECK(model::collective_algorithm(name).time_s(call({0}, 1e6), platform) == 0);
  CHECK_THROWS_AS(model::collective_algorithm("butterfly", "job.yaml"), InputError);
  CHECK_THROWS_WITH(model::collective_algorithm("butterfly", "job.yaml"),
                    Catch::Contains("job.yaml: collective"));
}

namespace {
/// Four hosts h0..h3 on nodes a (h0, h1) and b (h2, h3), each with a private split-duplex link
/// (links 2i up, 2i + 1 down) of 10 GB/s and 1 us.
model::Platform two_nodes_of_two() {
  model::Platform platform = model::make_crossbar_platform({1, 1, 1, 1}, 10e9, 1e-6);
  for (size_t i = 0; i < platform.hosts.size(); ++i)
    platform.hosts[i].node = i < 2 ? "a" : "b";
  return platform;
}
}  // namespace

TEST_CASE("ring channels: one per GPU of a node when every node holds as many, one otherwise") {
  const model::Platform platform = two_nodes_of_two();
  using Orders = std::vector<std::vector<size_t>>;
  // Channel j starts every node's segment at its j-th host, so each channel leaves a node
  // through another host's link.
  CHECK(model::ring_channel_orders({0, 1, 2, 3}, platform) == Orders{{0, 1, 2, 3}, {1, 0, 3, 2}});
  // Nodes in first-seen order, hosts in the group's order within a node.
  CHECK(model::ring_channel_orders({0, 2, 1, 3}, platform) == Orders{{0, 2, 1, 3}, {2, 0, 3, 1}});
  CHECK(model::ring_channel_orders({0, 1}, platform) == Orders{{0, 1}});        // one node
  CHECK(model::ring_channel_orders({0, 2}, platform) == Orders{{0, 1}});        // one per node
  CHECK(model::ring_channel_orders({0, 1, 2}, platform) == Orders{{0, 1, 2}});  // 2 and 1
  // Both hosts of node a leave it through one shared link (one NIC): one channel.
  model::Platform shared_nic = two_nodes_of_two();  // a copy would keep the cached routes
  shared_nic.routes = std::make_shared<model::CrossbarRoutes>(
      shared_nic.links, std::vector<int>{0, 0, 4, 6}, std::vector<int>{1, 3, 5, 7});
  CHECK(model::ring_channel_orders({0, 1, 2, 3}, shared_nic) == Orders{{0, 1, 2, 3}});
}

TEST_CASE("ring channels: the most loaded link of a step decides the ring's time") {
  const model::Platform platform = two_nodes_of_two();
  const double n = 8e6;
  // Two channels of n/2; every host's up and down link carries one chunk of n/(4 * 2) from
  // each channel per step: n/4 per link per step, as one ring would.
  const double expected = 2.0 * 3 * (2e-6 + n / (4 * 10e9));
  CHECK(model::collective_algorithm("ring").time_s(call({0, 1, 2, 3}, n), platform) ==
        Approx(expected).epsilon(1e-12));
  CHECK(model::ring_steps_s(n, 6, {0, 1, 2, 3}, platform) == Approx(expected).epsilon(1e-12));
  // Each node's hops inside it also cross a shared 1 GB/s switch link: both channels' hops
  // inside node a (h0 -> h1 in channel 0, h1 -> h0 in channel 1) load it with a chunk each, so
  // a step takes 2 n/8 over 1 GB/s, twice what either channel's slowest hop alone would say.
  class SwitchedRoutes : public model::RouteOracle {
   public:
    explicit SwitchedRoutes(const model::Platform& platform) : platform_(platform) {}
    model::Route route(int src, int dst) const override {
      model::Route route;
      const bool inside = platform_.hosts[static_cast<size_t>(src)].node ==
                          platform_.hosts[static_cast<size_t>(dst)].node;
      route.links = {2 * src};
      if (inside) route.links.push_back(8 + (src < 2 ? 0 : 1));
      route.links.push_back(2 * dst + 1);
      route.bandwidth_Bps = inside ? 1e9 : 10e9;
      route.latency_s = 2e-6;
      return route;
    }

   private:
    const model::Platform& platform_;
  };
  model::Platform switched = two_nodes_of_two();
  switched.links.push_back({"switch-a", 1e9, 0, model::LinkSharing::Shared});
  switched.links.push_back({"switch-b", 1e9, 0, model::LinkSharing::Shared});
  switched.routes = std::make_shared<SwitchedRoutes>(switched);
  CHECK(model::ring_channel_orders({0, 1, 2, 3}, switched).size() == 2);
  CHECK(model::ring_steps_s(n, 6, {0, 1, 2, 3}, switched) ==
        Approx(6 * (2e-6 + 2 * (n / 8) / 1e9)).epsilon(1e-12));
}
