// store_and_forward_test.cpp: links that forward a packet at a time (the root zone's prop
// packet_bytes: model::Platform::packet_bytes, sim/platform_loader.cpp), against closed forms
// worked out by hand.
//
// Platforms are written here: a crossbar of hosts h0..h{K-1}, each with a private split-duplex
// link (its NIC) of its own bandwidth and latency L; a route from h_i to h_j is h_i's link up,
// then h_j's down, latency 2L, CM02, plain protocol. A store-and-forward link receives a whole
// packet before it sends it on, so a transfer of S bytes with packets of P bytes pays, beyond
// the pipe (2L + S / the narrower link), its last packet (min(S, P) bytes) serialised on the
// other link: min(S, P) / that link's bandwidth. Without the prop nothing changes (the
// existing closed forms of rendezvous_test.cpp and simulator_test.cpp).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/ir/collective.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

/// The crossbar described above, host i's link at bandwidths[i]; `zone_props` go into the root
/// zone; with `server` the last host is a parameter server.
std::string crossbar_platform(const std::vector<double>& bandwidths_Bps, double latency_s,
                              const std::string& zone_props, bool server = false) {
  return test::crossbar_platform(bandwidths_Bps,
                                 std::vector<double>(bandwidths_Bps.size(), latency_s), zone_props,
                                 server, "forwarding");
}

std::string packets(double bytes) {
  return fmt::format("    <prop id=\"packet_bytes\" value=\"{:g}\"/>\n", bytes);
}

}  // namespace

TEST_CASE("a transfer alone pays its last packet once more on the faster link of its route") {
  // h0's link at 1e7 B/s, the server h1's at 2e7: the narrower link is h0's, the other h1's.
  const double latency = 1e-3, slow = 1e7, fast = 2e7, packet = 9000;
  for (const double bytes : {1e6, 4000.0}) {
    for (const bool forwarding : {true, false}) {
      const auto result = test::in_child([&] {
        const std::string path =
            crossbar_platform({slow, fast}, latency, forwarding ? packets(packet) : "", true);
        return test::one_collective(path, "ps", bytes, sim::Granularity::Step).dump();
      });
      INFO(result.text);
      REQUIRE(result.kind == "ok");
      const auto v = result.json();
      CHECK(v.at("packet_bytes").get<double>() == (forwarding ? packet : 0));
      // A push h0 -> h1 and a pull h1 -> h0, each 2L + bytes / slow + its forwarding.
      const double forwarded = forwarding ? std::min(bytes, packet) / fast : 0;
      const double expected = 2 * (2 * latency + bytes / slow + forwarded);
      CHECK(v.at("sim").get<double>() == Approx(expected).epsilon(1e-9));
      CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("a ring's every step pays its chunk's forwarding, as the analytic formula (identity)") {
  const double latency = 2e-3, bandwidth = 1.25e7, packet = 8948, n = 4e6;
  const auto result = test::in_child([&] {
    const std::string path =
        crossbar_platform({bandwidth, bandwidth, bandwidth, bandwidth}, latency, packets(packet));
    return test::one_collective(path, "ring", n, sim::Granularity::Step).dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  const double k = 4;
  // Every hop two links of one bandwidth: the chunk's last packet serialised once more.
  const double expected = 2 * (k - 1) * (2 * latency + packet / bandwidth + n / k / bandwidth);
  CHECK(v.at("sim").get<double>() == Approx(expected).epsilon(1e-9));
  CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
}

TEST_CASE("a packet size that is not a number of bytes is refused, naming the prop") {
  for (const std::string bad : {"-1", "lots", "1e30"}) {
    const auto result = test::in_child([&] {
      const std::string path = crossbar_platform(
          {1e7, 1e7}, 1e-3, "    <prop id=\"packet_bytes\" value=\"" + bad + "\"/>\n");
      (void)sim::load_platform(path);
      return std::string("loaded");
    });
    INFO(result.text);
    CHECK(result.kind == "InputError");
    CHECK(result.text.find("packet_bytes") != std::string::npos);
    CHECK(result.text.find(bad) != std::string::npos);
  }
}
