// rendezvous_test.cpp: messages under a rendezvous protocol (sim/rendezvous.hpp), against
// closed forms worked out by hand.
//
// Platforms are written here: hosts h0..h{K-1}, hop i a split-duplex link from h_i to h_{i+1}
// (its reverse half carries the clear-to-send back), every route one link, CM02 (a transfer of
// S bytes alone on a link takes latency + S / bandwidth; bandwidths are kept under CM02's TCP
// window bound, 4 MiB / (2 latency)). With a rendezvous a message above the eager limit costs
// 3 latencies + S / bandwidth alone. On a ring whose hops are alike no host gets ahead of its
// neighbours, so each step costs that (an identity: the analytic engine's formula). With one
// slow hop of latency c, the host before it has its next step's data early and sends its
// request while its slow neighbour is still receiving: after the first step (3c + d) every step
// costs 2c + d, so 2(K-1) steps take c + 2(K-1)(2c + d), d = chunk / bandwidth (worked out from
// the recurrence of entry times: request at entry, clear-to-send once the receiver has entered,
// bytes after it; with fast hops of 1-2 ms against 10 ms the fast hosts never hold the slow
// pair back). The request and the clear-to-send carry sim::kControlMessageBytes each (h): a
// message alone pays exactly 2h / bandwidth more; in a collective, where some of them overlap,
// the closed forms are checked within 2h / bandwidth per message (the analytic formulas leave
// h out).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/analytic/analytic.hpp"
#include "model/ir/collective.hpp"
#include "sim/platform_loader.hpp"
#include "sim/rendezvous.hpp"
#include "sim/sg_engine.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

/// A ring platform as described above; `zone_props` go into the root zone, `server` makes the
/// last host a parameter server.
std::string ring_platform(const std::vector<double>& latencies_s, double bandwidth_Bps,
                          const std::string& zone_props, bool server = false) {
  const size_t k = latencies_s.size();
  std::string xml = test::platform_head(k, zone_props, server);
  const size_t hops = k == 2 ? 1 : k;  // two hosts: one link, one half each way
  for (size_t i = 0; i < hops; ++i)
    xml += fmt::format(
        "    <link id=\"hop-{}\" bandwidth=\"{:.17g}Bps\" latency=\"{:.17g}s\" "
        "sharing_policy=\"SPLITDUPLEX\"/>\n",
        i, bandwidth_Bps, latencies_s[i]);
  for (size_t i = 0; i < hops; ++i) {
    const size_t j = (i + 1) % k;
    xml += fmt::format(
        "    <route src=\"h{0}\" dst=\"h{1}\" symmetrical=\"NO\"><link_ctn id=\"hop-{0}\" "
        "direction=\"UP\"/></route>\n",
        i, j);
    xml += fmt::format(
        "    <route src=\"h{1}\" dst=\"h{0}\" symmetrical=\"NO\"><link_ctn id=\"hop-{0}\" "
        "direction=\"DOWN\"/></route>\n",
        i, j);
  }
  xml += "  </zone>\n</platform>\n";
  const std::string path = fmt::format("/tmp/tauplan-rendezvous-test-{}.xml", getpid());
  std::ofstream(path) << xml;
  return path;
}

/// Hosts h0..h{K-1} on a star (test::crossbar_platform): host i's NIC of `bandwidth_Bps` and
/// latencies_s[i]; a host's messages to any other host leave over the same link.
std::string star_platform(const std::vector<double>& latencies_s, double bandwidth_Bps,
                          const std::string& zone_props) {
  return test::crossbar_platform(std::vector<double>(latencies_s.size(), bandwidth_Bps),
                                 latencies_s, zone_props, false, "rendezvous-star");
}

/// To run in a child: one step of `flows` under the rendezvous of the platform at `path`,
/// driven by sim::run_rendezvous_steps; the simulated time when every message has arrived.
double one_rendezvous_step(const std::string& path, const std::vector<sim::Flow>& flows) {
  const model::Platform platform = sim::load_platform(path);
  const auto& hosts = sim::detail::loaded_hosts();
  sim::FlowStage stage;
  stage.phase = "test";
  stage.flows = flows;
  double done_s = -1;
  simgrid::s4u::Actor::create("rendezvous-step", hosts.front(), [&] {
    std::vector<simgrid::s4u::CommPtr> comms;
    long long started = 0;
    const std::vector<const sim::FlowStage*> steps = {&stage};
    sim::run_rendezvous_steps(
        steps, platform.protocol, hosts, comms, [] { return false; }, started);
    done_s = simgrid::s4u::Engine::get_clock();
  });
  sim::detail::run_engine_checked("test");
  return done_s;
}

const std::string kRendezvous =
    "    <prop id=\"message_protocol\" value=\"rendezvous\"/>\n"
    "    <prop id=\"eager_limit_bytes\" value=\"65536\"/>\n";

}  // namespace

TEST_CASE("a message alone: three latencies above the eager limit, one at or below it") {
  const double latency = 4e-3, bandwidth = 5e7;
  for (const double bytes : {1e6, 6e4}) {
    const auto result = test::in_child([&] {
      const std::string path = ring_platform({latency, latency}, bandwidth, kRendezvous, true);
      return test::one_collective(path, "ps", bytes, sim::Granularity::Step).dump();
    });
    INFO(result.text);
    REQUIRE(result.kind == "ok");
    const auto v = result.json();
    CHECK(v.at("rendezvous").get<bool>());
    CHECK(v.at("eager").get<double>() == 65536);
    // One worker, one server: a push then a pull, each one message of all the bytes.
    const bool rendezvous = bytes > 65536;
    const double expected = 2 * ((rendezvous ? 3 : 1) * latency + bytes / bandwidth);
    const double headers = rendezvous ? 2 * 2 * sim::kControlMessageBytes / bandwidth : 0;
    CHECK(v.at("sim").get<double>() == Approx(expected + headers).epsilon(1e-12));
    CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("a ring of like hops pays three latencies a step, as the analytic formula (identity)") {
  const double latency = 2e-3, bandwidth = 1e8, n = 4e6;
  for (const auto granularity : {sim::Granularity::Step, sim::Granularity::Coarse}) {
    const auto result = test::in_child([&] {
      const std::string path =
          ring_platform({latency, latency, latency, latency}, bandwidth, kRendezvous);
      return test::one_collective(path, "ring", n, granularity).dump();
    });
    INFO(result.text);
    REQUIRE(result.kind == "ok");
    const auto v = result.json();
    const double k = 4;
    const double expected = 2 * (k - 1) * (3 * latency + n / k / bandwidth);
    const double headers = 2 * (k - 1) * k * 2 * sim::kControlMessageBytes / bandwidth;
    CHECK(v.at("sim").get<double>() >= expected);
    CHECK(v.at("sim").get<double>() <= expected + headers);
    CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("a ring of 2 sends its chunks as eager pieces: one latency a step, not three") {
  // The two ranks send each other their chunks at once; exec sends such an exchange as pieces
  // below the eager limit (exec/mpi_peers.hpp), which need no clear-to-send. A ring of 3 on the
  // same links still pays the rendezvous's three (the test's control).
  const double latency = 3e-3, bandwidth = 1e8, n = 4e6;
  for (const std::size_t k : {std::size_t{2}, std::size_t{3}}) {
    for (const auto granularity : {sim::Granularity::Step, sim::Granularity::Coarse}) {
      const auto result = test::in_child([&] {
        const std::string path =
            ring_platform(std::vector<double>(k, latency), bandwidth, kRendezvous);
        return test::one_collective(path, "ring", n, granularity).dump();
      });
      INFO("K=" << k << " " << result.text);
      REQUIRE(result.kind == "ok");
      const auto v = result.json();
      const double kd = static_cast<double>(k);
      const double trips = k == 2 ? 1 : 3;
      const double expected = 2 * (kd - 1) * (trips * latency + n / kd / bandwidth);
      const double headers =
          k == 2 ? 0 : 2 * (kd - 1) * kd * 2 * sim::kControlMessageBytes / bandwidth;
      CHECK(v.at("sim").get<double>() >= expected * (1 - 1e-12));
      CHECK(v.at("sim").get<double>() <= expected * (1 + 1e-12) + headers);
      CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("a ring with one slow hop: after the first step each costs two latencies, not three") {
  // With a queued window as well: a clear-to-send goes back over the reverse half of the link its
  // neighbour sent on, not the one its sender's bytes leave by, and here no request meets its
  // sender's bytes of the step before on their link either: the closed form stands.
  const double fast = 1e-3, slow = 1e-2, bandwidth = 1e8, n = 3e6;
  for (const std::string window : {"", "    <prop id=\"queued_window_bytes\" value=\"1e7\"/>\n"}) {
    const auto result = test::in_child([&] {
      const std::string path = ring_platform({fast, fast, slow}, bandwidth, kRendezvous + window);
      return test::one_collective(path, "ring", n, sim::Granularity::Step).dump();
    });
    INFO(window << " -> " << result.text);
    REQUIRE(result.kind == "ok");
    const auto v = result.json();
    const double k = 3, d = n / k / bandwidth, h = sim::kControlMessageBytes / bandwidth;
    const double expected = slow + 2 * (k - 1) * (2 * slow + d);
    CHECK(v.at("sim").get<double>() >= expected);
    CHECK(v.at("sim").get<double>() <= expected + 2 * (k - 1) * k * 2 * h);
    // The analytic formula charges every step an isolated message's three latencies.
    CHECK(v.at("analytic").get<double>() == Approx(2 * (k - 1) * (3 * slow + d)).epsilon(1e-12));
  }
}

TEST_CASE("a clear-to-send waits behind its sender's queued bytes, up to the queued window") {
  // Worked by hand (headers of kControlMessageBytes left out, within 1e-7 s). NICs of 1e8 B/s;
  // latencies 1, 1, 4 ms: routes h0 <-> h1 of 2 ms, h0 <-> h2 of 5 ms. One step: h0 sends 1e6 B
  // to h1 (10 ms on the wire), h2 sends 2e5 B to h0 (2 ms). h1's clear-to-send reaches h0 at
  // 4 ms; h0's bytes join nic-0's queue then, which they leave by 14 ms. h2's request reaches h0
  // at 5 ms; h0's clear-to-send to h2 leaves over nic-0 too, after w = min(14 - 5 ms, W / 1e8);
  // it reaches h2 at 10 ms + w, whose bytes reach h0 at 17 ms + w; h1 has its bytes at 16 ms.
  // The step ends at 17 ms + w: 17 without the prop, 22 with W = 5e5 B, 26 with W = 1e7 B (the
  // whole queue, 9 ms).
  struct Case {
    std::string window_prop;
    double expected_s;
  };
  const std::vector<Case> cases = {
      {"", 17e-3},
      {"    <prop id=\"queued_window_bytes\" value=\"0\"/>\n", 17e-3},
      {"    <prop id=\"queued_window_bytes\" value=\"5e5\"/>\n", 22e-3},
      {"    <prop id=\"queued_window_bytes\" value=\"1e7\"/>\n", 26e-3},
  };
  for (const Case& c : cases) {
    const auto result = test::in_child([&] {
      const std::string path = star_platform({1e-3, 1e-3, 4e-3}, 1e8, kRendezvous + c.window_prop);
      return fmt::format("{:.17g}", one_rendezvous_step(path, {{0, 1, 1e6}, {2, 0, 2e5}}));
    });
    INFO(c.window_prop << " -> " << result.text);
    REQUIRE(result.kind == "ok");
    CHECK(std::stod(result.text) == Approx(c.expected_s).margin(1e-7));
  }
}

TEST_CASE("without protocol props a platform's messages are plain: one latency each") {
  const double latency = 2e-3, bandwidth = 1e8, n = 3e6;
  const auto result = test::in_child([&] {
    const std::string path = ring_platform({latency, latency, 5 * latency}, bandwidth, "");
    return test::one_collective(path, "ring", n, sim::Granularity::Step).dump();
  });
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  CHECK_FALSE(v.at("rendezvous").get<bool>());
  const double expected = 2 * 2 * (5 * latency + n / 3 / bandwidth);
  CHECK(v.at("sim").get<double>() == Approx(expected).epsilon(1e-12));
  CHECK(v.at("analytic").get<double>() == Approx(expected).epsilon(1e-12));
}

TEST_CASE("bad protocol props are one-line input errors naming the file and the prop") {
  struct Case {
    std::string props;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"    <prop id=\"message_protocol\" value=\"fast\"/>\n",
       "zone world prop message_protocol: expected plain or rendezvous, got fast"},
      {"    <prop id=\"message_protocol\" value=\"rendezvous\"/>\n",
       "zone world prop eager_limit_bytes: expected the largest message"},
      {"    <prop id=\"message_protocol\" value=\"rendezvous\"/>\n"
       "    <prop id=\"eager_limit_bytes\" value=\"-1\"/>\n",
       "zone world prop eager_limit_bytes: expected a number of bytes"},
      {"    <prop id=\"message_protocol\" value=\"rendezvous\"/>\n"
       "    <prop id=\"eager_limit_bytes\" value=\"64k\"/>\n",
       "zone world prop eager_limit_bytes: expected a number of bytes"},
      {"    <prop id=\"eager_limit_bytes\" value=\"65536\"/>\n",
       "zone world prop eager_limit_bytes: expected no eager limit unless"},
      {"    <prop id=\"queued_window_bytes\" value=\"1e5\"/>\n",
       "zone world prop queued_window_bytes: expected no queued window unless"},
      {kRendezvous + "    <prop id=\"queued_window_bytes\" value=\"-1\"/>\n",
       "zone world prop queued_window_bytes: expected a number of bytes"},
      {kRendezvous + "    <prop id=\"queued_window_bytes\" value=\"big\"/>\n",
       "zone world prop queued_window_bytes: expected a number of bytes"},
  };
  for (const Case& c : cases) {
    std::string path;
    const auto result = test::in_child([&] {
      path = ring_platform({1e-3, 1e-3, 1e-3}, 1e8, c.props);
      sim::load_platform(path);
      return std::string("loaded");
    });
    INFO(c.props << " -> " << result.text);
    CHECK(result.kind == "InputError");
    CHECK(result.text.find("/tmp/tauplan-rendezvous-test-") == 0);
    CHECK(result.text.find(c.needle) != std::string::npos);
    CHECK(result.text.find('\n') == std::string::npos);
  }
}
