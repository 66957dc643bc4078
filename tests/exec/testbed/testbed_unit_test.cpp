// testbed_unit_test.cpp: the testbed's pure parts, without root: the spec of a platform (rank
// order, routes, the scale identity, MTU and queues), its bad inputs, max-min fair shares, the
// calibration's pair cover and link fits, and the calibrated platform loaded back by SimGrid.
// Platforms come from sim's loader (one per process: ctest runs each TEST_CASE alone) or are
// made in code.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "exec/testbed/netcal.hpp"
#include "exec/testbed/spec.hpp"
#include "model/base/error.hpp"
#include "sim/platform_loader.hpp"

using namespace tauplan;
using namespace tauplan::testbed;

namespace {

const std::string kPlatforms = TAUPLAN_PLATFORM_DIR;

/// Routes given as link lists for every ordered pair (a model::RouteOracle for hand-made
/// platforms).
class TableRoutes : public model::RouteOracle {
 public:
  TableRoutes(std::vector<model::Link> links, std::map<std::pair<int, int>, std::vector<int>> table)
      : links_(std::move(links)), table_(std::move(table)) {}
  model::Route route(int src, int dst) const override {
    model::Route r;
    r.links = table_.at({src, dst});
    r.bandwidth_Bps = 1e300;
    for (int l : r.links) {
      r.latency_s += links_[static_cast<std::size_t>(l)].latency_s;
      r.bandwidth_Bps =
          std::min(r.bandwidth_Bps, links_[static_cast<std::size_t>(l)].bandwidth_Bps);
    }
    return r;
  }

 private:
  std::vector<model::Link> links_;
  std::map<std::pair<int, int>, std::vector<int>> table_;
};

model::Link link(const std::string& name, double bandwidth, double latency,
                 model::LinkSharing sharing) {
  model::Link l;
  l.name = name;
  l.bandwidth_Bps = bandwidth;
  l.latency_s = latency;
  l.sharing = sharing;
  return l;
}

/// A SimGrid cluster with a backbone, by hand: hosts c0..c3, private split-duplex links (UP and
/// DOWN halves) and one shared backbone: c_a -> c_b = [a_UP, backbone, b_DOWN].
model::Platform backbone_platform(double private_Bps, double backbone_Bps, double latency_s) {
  model::Platform p;
  p.source_file = "<backbone in code>";
  for (int h = 0; h < 4; ++h) {
    model::Host host;
    host.name = "c" + std::to_string(h);
    host.speed_flops = 1e9;
    host.node = host.name;
    host.properties["node"] = host.name;
    host.properties["role"] = "worker";
    p.hosts.push_back(host);
    p.links.push_back(link("c" + std::to_string(h) + "_link_UP", private_Bps, latency_s,
                           model::LinkSharing::SplitDuplex));
    p.links.push_back(link("c" + std::to_string(h) + "_link_DOWN", private_Bps, latency_s,
                           model::LinkSharing::SplitDuplex));
  }
  p.links.push_back(link("backbone", backbone_Bps, latency_s / 2, model::LinkSharing::Shared));
  std::map<std::pair<int, int>, std::vector<int>> table;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) table[{a, b}] = {2 * a, 8, 2 * b + 1};
  p.routes = std::make_shared<TableRoutes>(p.links, table);
  return p;
}

/// Two hosts joined by a chain of `links` links.
model::Platform chain_platform(int links) {
  model::Platform p;
  p.source_file = "<chain in code>";
  for (const char* name : {"a", "b"}) {
    model::Host host;
    host.name = name;
    host.speed_flops = 1e9;
    p.hosts.push_back(host);
  }
  std::vector<int> forward;
  std::vector<int> back;
  for (int l = 0; l < links; ++l) {
    p.links.push_back(link("l" + std::to_string(l), 1e7, 1e-3, model::LinkSharing::Shared));
    forward.push_back(l);
    back.insert(back.begin(), l);
  }
  p.routes = std::make_shared<TableRoutes>(
      p.links, std::map<std::pair<int, int>, std::vector<int>>{{{0, 1}, forward}, {{1, 0}, back}});
  return p;
}

std::vector<std::string> route_link_names(const Spec& spec, int a, int b) {
  std::vector<std::string> names;
  for (int l : spec.route(a, b).links)
    names.push_back(spec.links[static_cast<std::size_t>(l)].name);
  return names;
}

void expect_input_error(const std::function<void()>& make,
                        const std::vector<std::string>& fragments) {
  try {
    make();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO(what);
    for (const std::string& f : fragments)
      CHECK(what.find(f) != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("a testbed of test-ps: rank order, every route, and the scale an identity") {
  const model::Platform platform = sim::load_platform(kPlatforms + "/test-ps.xml");
  const Spec spec = make_spec(platform, Options{});
  REQUIRE(spec.hosts.size() == 5);
  const std::vector<std::string> names = {"h0", "h1", "h2", "h3", "ps0"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(spec.hosts[i].name == names[i]);
    CHECK(spec.hosts[i].netns == "tp-r" + std::to_string(i));
    CHECK(spec.hosts[i].address == "10.211.0." + std::to_string(i + 1));
  }
  CHECK(spec.hosts[4].role == "server");
  // Default scale: the fastest link (1e10 B/s) over the fastest rate the fabric shapes at the
  // MTU it gets. At MTU 9000 that is 1e10 / 7.5e7 = 133, where the slowest link (1e9 B/s) sends
  // 7500 bytes a millisecond: MTU 4500, scale 267, 3750 bytes: MTU 3000, scale 400, 2500 bytes:
  // MTU 1500, scale 800, where it stays.
  CHECK(spec.mtu == 1500);
  CHECK(spec.scale == Approx(1e10 / Limits{}.max_rate_Bps(1500)).epsilon(1e-12));
  CHECK(spec.scale == Approx(800));
  CHECK(spec.routes.size() == 20);
  CHECK(spec.links.size() == 10);  // five split-duplex links, two halves each
  CHECK(route_link_names(spec, 0, 4) == std::vector<std::string>{"h0-link_UP", "ps0-link_DOWN"});
  CHECK(route_link_names(spec, 4, 2) == std::vector<std::string>{"ps0-link_UP", "h2-link_DOWN"});
  // The identity --scale promises: every alpha-beta transfer takes exactly F times as long.
  for (const SpecRoute& r : spec.routes)
    for (double bytes : {1.0, 1e6, 1e9}) {
      const double testbed = r.latency_s + bytes / r.bandwidth_Bps;
      const double platform_time = r.platform_latency_s + bytes / r.platform_bandwidth_Bps;
      CHECK(testbed == Approx(spec.scale * platform_time).epsilon(1e-12));
    }
  for (const SpecLink& l : spec.links) {
    CHECK(l.wire_rate_Bps == Approx(l.bandwidth_Bps * 1500 / (1500 - 52)));
    CHECK(l.queue_bytes >= 16 * 1500);
    CHECK(l.queue_bytes >= l.wire_rate_Bps * 0.05 * (1 - 1e-12));
  }
}

TEST_CASE("the spec's JSON reads back the same") {
  const Spec spec = make_spec(backbone_platform(2e7, 2e7, 2e-3), Options{});
  const Spec back = spec_from_json(to_json(spec));
  CHECK(to_json(back) == to_json(spec));
  CHECK(back.route(3, 1).links == spec.route(3, 1).links);
}

TEST_CASE(
    "a host list picks and orders the hosts, and unknown, repeated or too few are bad input") {
  const model::Platform platform = model::make_crossbar_platform({1e9, 1e9, 1e9, 1e9}, 1e7, 1e-3);
  Options options;
  options.hosts = {"h2", "h0"};
  const Spec spec = make_spec(platform, options);
  REQUIRE(spec.hosts.size() == 2);
  CHECK(spec.hosts[0].name == "h2");
  CHECK(spec.hosts[1].name == "h0");
  CHECK(route_link_names(spec, 0, 1) == std::vector<std::string>{"h2_link_UP", "h0_link_DOWN"});
  CHECK(spec.scale == 1);  // every link under the largest rate: no scaling by default

  options.hosts = {"h0", "h9"};
  expect_input_error([&] { make_spec(platform, options); },
                     {"<built-in crossbar>", "--hosts", "h9"});
  options.hosts = {"h1", "h1"};
  expect_input_error([&] { make_spec(platform, options); }, {"--hosts", "h1 twice"});
  options.hosts = {"h1"};
  expect_input_error([&] { make_spec(platform, options); }, {"--hosts", "at least 2 hosts"});
  options.hosts = {};
  options.prefix = "x-";
  expect_input_error([&] { make_spec(platform, options); }, {"--prefix", "\"x-\""});
}

TEST_CASE("the MTU: the largest a slow link still sends in a millisecond") {
  CHECK(choose_mtu(1e8) == 9000);
  CHECK(choose_mtu(9e6) == 9000);
  CHECK(choose_mtu(8.9e6) == 4500);
  CHECK(choose_mtu(3e6) == 3000);
  CHECK(choose_mtu(2.9e6) == 1500);
  CHECK(choose_mtu(1e3) == 1500);
  // A slow link makes the MTU smaller, and the fastest rate the fabric shapes with it, so the
  // default scale grows: test-two-nodes' 1e11 B/s GPU links next to its 1e9 B/s NICs. At the
  // scale 1e11 / (rate at 9000) the NICs would send 7.5e5 B/s, too slow for 9000 bytes a
  // millisecond; at MTU 1500 the fabric shapes 1.25e7 B/s, so the scale is 1e11 / 1.25e7 = 8000.
  const model::Platform two = sim::load_platform(kPlatforms + "/test-two-nodes.xml");
  const Spec spec = make_spec(two, Options{});
  CHECK(spec.mtu == 1500);
  CHECK(spec.scale == Approx(1e11 / Limits{}.max_rate_Bps(1500)));
  CHECK(spec.scale == Approx(8000));
}

TEST_CASE("prefixes: tp, up to 3 lower-case letters or digits, then '-'") {
  for (const char* good : {"tp-", "tpt-", "tpt1-", "tp99-"})
    CHECK_NOTHROW(check_prefix(good, "<test>"));
  for (const char* bad : {"", "tp", "x-", "TP-", "tp_-", "tpabcd-", "tp--", "tp-x"})
    CHECK_THROWS_AS(check_prefix(bad, "<test>"), InputError);
}

TEST_CASE("links the host cannot emulate at the chosen scale are bad input naming the link") {
  const model::Platform fast = model::make_crossbar_platform({1e9, 1e9}, 1e10, 1e-5);
  Options options;
  options.scale = 10;  // 1e10 / 10 = 1e9 B/s: faster than the host shapes at MTU 9000 (7.5e7)
  expect_input_error([&] { make_spec(fast, options); },
                     {"<built-in crossbar>", "link h0_link_UP", "at MTU 9000", "--scale 133.333"});
  options.scale = 0;  // default: just fast enough
  CHECK(make_spec(fast, options).scale == Approx(1e10 / 7.5e7));
  options.scale = -1;
  expect_input_error([&] { make_spec(fast, options); }, {"--scale", "a positive number"});
  options.scale = 1e6;  // 1e10 / 1e6 = 1e4 B/s: slower than a packet's worth of TCP timers
  expect_input_error([&] { make_spec(fast, options); }, {"link h0_link_UP", "at least 65536"});

  const model::Platform slow = model::make_crossbar_platform({1e9, 1e9}, 1e6, 0.5);
  options.scale = 3;  // route latency 2 x 0.5 s x 3 = 3 s: longer than the testbed holds
  expect_input_error([&] { make_spec(slow, options); }, {"route h0 -> h1", "at most 2 s"});
}

TEST_CASE("a route of more links than the testbed forwards is bad input") {
  CHECK_NOTHROW(make_spec(chain_platform(8), Options{}));
  expect_input_error([&] { make_spec(chain_platform(9), Options{}); },
                     {"<chain in code>", "route a -> b", "at most 8 links", "9 links"});
}

TEST_CASE("max-min fair shares: a shared NIC halves, the rest goes to the flow alone") {
  const model::Platform platform = sim::load_platform(kPlatforms + "/test-two-nodes.xml");
  Options options;
  options.scale = 8000;
  const Spec spec = make_spec(platform, options);
  const int n0g0 = spec.find_host("n0-gpu0");
  const int n0g1 = spec.find_host("n0-gpu1");
  const int n1g0 = spec.find_host("n1-gpu0");
  const int n1g1 = spec.find_host("n1-gpu1");
  const double nic = 1e9 / 8000;
  const double gpu_link = 1e11 / 8000;
  auto rates = max_min_rates(spec, {{n0g0, n1g1}, {n0g1, n1g1}});
  CHECK(rates[0] == Approx(nic / 2));
  CHECK(rates[1] == Approx(nic / 2));
  // A third flow inside n1 shares only n1-gpu1's link, which the two above use nic in total of.
  rates = max_min_rates(spec, {{n0g0, n1g1}, {n0g1, n1g1}, {n1g0, n1g1}});
  CHECK(rates[2] == Approx(gpu_link - nic));
  // Opposite directions of a split-duplex NIC do not contend.
  rates = max_min_rates(spec, {{n0g0, n1g0}, {n1g1, n0g1}});
  CHECK(rates[0] == Approx(nic));
  CHECK(rates[1] == Approx(nic));
}

TEST_CASE("max-min fair shares: both directions of a shared backbone contend") {
  const Spec spec = make_spec(backbone_platform(2e7, 2e7, 2e-3), Options{});
  auto rates = max_min_rates(spec, {{0, 1}, {1, 0}});
  CHECK(rates[0] == Approx(1e7));
  CHECK(rates[1] == Approx(1e7));
  rates = max_min_rates(spec, {{0, 1}});
  CHECK(rates[0] == Approx(2e7));
}

TEST_CASE("the calibration's pairs observe every link of test-ps") {
  const model::Platform platform = sim::load_platform(kPlatforms + "/test-ps.xml");
  const Spec spec = make_spec(platform, Options{});
  const auto pairs = covering_pairs(spec);
  CHECK(pairs.size() <= 6);
  std::vector<bool> narrowest(spec.links.size(), false);
  for (const auto& [a, b] : pairs) {
    const SpecRoute& r = spec.route(a, b);
    for (int l : r.links)
      if (spec.links[static_cast<std::size_t>(l)].bandwidth_Bps <= r.bandwidth_Bps * (1 + 1e-9))
        narrowest[static_cast<std::size_t>(l)] = true;
  }
  // In test-ps every link is the narrowest of some route, so each must be on a measured one.
  for (std::size_t l = 0; l < narrowest.size(); ++l) {
    INFO(spec.links[l].name);
    CHECK(narrowest[l]);
  }
}

TEST_CASE("MPI alphas scale every link's TCP latency by one factor, store-and-forward apart") {
  const Spec spec = make_spec(backbone_platform(2e7, 1e7, 4e-3), Options{});
  std::vector<RouteMeasurement> tcp;
  for (const auto& [a, b] : covering_pairs(spec)) {
    RouteMeasurement m;
    m.src = a;
    m.dst = b;
    m.round_trip_s = spec.route(a, b).latency_s + spec.route(b, a).latency_s;
    m.bandwidth_Bps = spec.route(a, b).bandwidth_Bps;
    tcp.push_back(m);
  }
  std::vector<std::string> warnings;
  const std::vector<LinkFit> tcp_links = fit_links(spec, tcp, warnings);
  REQUIRE(warnings.empty());
  // Route c0 -> c1 is c0's up link, the backbone, c1's down link, all fitted at 1e7 B/s (the
  // private links a lower bound: no route has them narrowest), so a full packet (spec.mtu less
  // 52 bytes of headers) is serialised twice more than the pipe model counts.
  REQUIRE(spec.scale == 1);
  for (int l : spec.route(0, 1).links)
    REQUIRE(tcp_links[static_cast<std::size_t>(l)].bandwidth_Bps == Approx(1e7).epsilon(1e-9));
  CHECK(route_forwarding_s(spec, tcp_links, 0, 1) ==
        Approx(2 * (spec.mtu - kTcpIpHeaderBytes) / 1e7).epsilon(1e-9));
  // Messages paying exactly 3 one-way latencies 10% longer than TCP's (a rendezvous) and one
  // packet's store-and-forward on every measured route: the factor per trip is 1.1, or 3.3 when
  // a message is taken as one trip.
  std::vector<RouteMeasurement> mpi = tcp;
  for (RouteMeasurement& m : mpi)
    m.fit.intercept =
        3 * 1.1 * m.round_trip_s / 2 + route_forwarding_s(spec, tcp_links, m.src, m.dst);
  std::vector<LinkFit> links = tcp_links;
  CHECK(scale_latencies_to_messages(spec, mpi, tcp, 1, links, warnings) ==
        Approx(3.3).epsilon(1e-12));
  links = tcp_links;
  CHECK(scale_latencies_to_messages(spec, mpi, tcp, 3, links, warnings) ==
        Approx(1.1).epsilon(1e-12));
  CHECK(warnings.empty());
  CHECK_THROWS_AS(scale_latencies_to_messages(spec, mpi, tcp, 0, links, warnings),
                  std::invalid_argument);
  // Every route, measured or not, is 1.1 times its TCP latency: its links scaled alike.
  for (const SpecRoute& r : spec.routes) {
    double scaled = 0, before = 0;
    for (int l : r.links) {
      scaled += links[static_cast<std::size_t>(l)].latency_s;
      before += tcp_links[static_cast<std::size_t>(l)].latency_s;
    }
    CHECK(scaled == Approx(1.1 * before).epsilon(1e-12));
  }
  // One route 30% above the rest: the factor moves a little, and that route is named.
  REQUIRE(mpi.size() >= 2);
  mpi[0].fit.intercept *= 1.3;
  links = tcp_links;
  const double factor = scale_latencies_to_messages(spec, mpi, tcp, 3, links, warnings);
  CHECK(factor > 1.1);
  CHECK(factor < 1.1 * 1.3);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("route " + spec.hosts[static_cast<std::size_t>(mpi[0].src)].name) == 0);
  // Lists that do not match (in length, or in their routes' order) are a programming error.
  std::vector<RouteMeasurement> reordered = mpi;
  std::swap(reordered.front(), reordered.back());
  CHECK_THROWS_WITH(scale_latencies_to_messages(spec, reordered, tcp, 3, links, warnings),
                    Catch::Contains("scale_latencies_to_messages: message and TCP routes differ"));
  mpi.pop_back();
  CHECK_THROWS_AS(scale_latencies_to_messages(spec, mpi, tcp, 3, links, warnings),
                  std::invalid_argument);
}

TEST_CASE("a route's transfers: its rate from the quiet repeats, stalled ones above the line") {
  const Spec spec = make_spec(backbone_platform(2e7, 1e7, 4e-3), Options{});
  RouteMeasurement m;
  m.src = 0;
  m.dst = 1;
  // The route's rate (1e7 B/s) and 9 ms on top; transfers of up to 2 MB, every size once a
  // round, three rounds; two repeats in three stall by 2 to 12 ms (retransmissions), so the
  // median of a size's three is a stalled one, and each size keeps one quiet repeat.
  int repeat = 0;
  for (int round = 0; round < 3; ++round)
    for (double bytes : {4e5, 8e5, 1.2e6, 1.6e6, 2e6}) {
      const double stall = (repeat++ % 3 != 0) ? 2e-3 + 1e-3 * (repeat % 11) : 0;
      m.samples.push_back({bytes, 9e-3 + bytes / 1e7 + stall});
    }
  fit_transfers(spec, m);
  CHECK(m.bandwidth_Bps == Approx(1e7).epsilon(1e-9));
  CHECK(m.fit.intercept == Approx(9e-3).epsilon(1e-9));
  for (double r : m.fit.residuals)
    CHECK(r >= -1e-12);
  // Transfers that do not take longer when larger are an error naming the route.
  RouteMeasurement flat = m;
  for (TransferSample& sample : flat.samples)
    sample.seconds = 0.01 - sample.bytes * 1e-10;
  try {
    fit_transfers(spec, flat);
    FAIL("a shrinking time was fitted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("did not grow with size on " + spec.hosts[0].name) !=
          std::string::npos);
  }
}

TEST_CASE("link fits reproduce exact measurements and the calibrated platform loads back") {
  const Spec spec = make_spec(backbone_platform(2e7, 1e7, 4e-3), Options{});
  NetworkCalibration cal;
  cal.date = "2026-11-23T00:00:00Z";
  cal.commit = "test";
  // Exact measurements of every covering route, with 0.2 ms added to each round trip (the
  // testbed's floor) and bandwidths 1% under the configured ones.
  for (const auto& [a, b] : covering_pairs(spec)) {
    RouteMeasurement m;
    m.src = a;
    m.dst = b;
    m.round_trip_s = spec.route(a, b).latency_s + spec.route(b, a).latency_s + 2e-4;
    m.bandwidth_Bps = 0.99 * spec.route(a, b).bandwidth_Bps;
    m.fit.r2 = 1;
    cal.routes.push_back(m);
  }
  std::vector<std::string> warnings;
  cal.links = fit_links(spec, cal.routes, warnings);
  CHECK(warnings.empty());
  for (const RouteMeasurement& m : cal.routes) {
    double round_trip = 0;
    for (int l : spec.route(m.src, m.dst).links)
      round_trip += cal.links[static_cast<std::size_t>(l)].latency_s;
    for (int l : spec.route(m.dst, m.src).links)
      round_trip += cal.links[static_cast<std::size_t>(l)].latency_s;
    CHECK(round_trip == Approx(m.round_trip_s).epsilon(1e-12));
  }
  // The backbone (1e7 B/s) is every route's narrowest link; the private links never are, so
  // their bandwidth is a lower bound.
  int backbone = -1;
  for (std::size_t l = 0; l < spec.links.size(); ++l)
    if (spec.links[l].name == "backbone") backbone = static_cast<int>(l);
  REQUIRE(backbone >= 0);
  CHECK(cal.links[static_cast<std::size_t>(backbone)].bandwidth_Bps == Approx(0.99e7));
  CHECK_FALSE(cal.links[static_cast<std::size_t>(backbone)].bandwidth_lower_bound);
  CHECK(cal.links[static_cast<std::size_t>(backbone == 0 ? 1 : 0)].bandwidth_lower_bound);

  // Without MPI messages the protocol is plain: no protocol props.
  CHECK(calibrated_platform_xml(spec, cal).find("message_protocol") == std::string::npos);
  // With them, the platform says that messages above the eager limit follow a rendezvous.
  cal.eager_limit_bytes = 65536;
  // And that its links forward store-and-forward, packets of the testbed's MTU less headers.
  CHECK(calibrated_platform_xml(spec, cal).find("packet_bytes") == std::string::npos);
  cal.packet_bytes = spec.mtu - kTcpIpHeaderBytes;
  const std::string xml = calibrated_platform_xml(spec, cal);
  const std::string path = "/tmp/tauplan-testbed-unit-calibrated.xml";
  std::ofstream(path) << xml;
  const model::Platform loaded = sim::load_platform(path);
  REQUIRE(loaded.hosts.size() == 4);
  CHECK(loaded.protocol.rendezvous);
  CHECK(loaded.protocol.eager_limit_bytes == 65536);
  CHECK(loaded.packet_bytes == spec.mtu - kTcpIpHeaderBytes);
  for (const SpecRoute& r : spec.routes) {
    const int a = loaded.find_host(spec.hosts[static_cast<std::size_t>(r.src)].name);
    const int b = loaded.find_host(spec.hosts[static_cast<std::size_t>(r.dst)].name);
    const model::Route& route = loaded.route(a, b);
    REQUIRE(route.links.size() == r.links.size());
    double latency = 0;
    for (int l : r.links)
      latency += cal.links[static_cast<std::size_t>(l)].latency_s;
    // Split-duplex halves are written as one link with their mean latency; here both halves
    // of a private link get the same correction by symmetry, so sums agree.
    CHECK(route.latency_s == Approx(latency).epsilon(1e-9));
    CHECK(route.bandwidth_Bps == Approx(0.99e7).epsilon(1e-9));
    CHECK(loaded.links[static_cast<std::size_t>(route.links[1])].sharing ==
          model::LinkSharing::Shared);
    CHECK(loaded.links[static_cast<std::size_t>(route.links[0])].sharing ==
          model::LinkSharing::SplitDuplex);
  }
  CHECK(loaded.hosts[0].properties.at("role") == "worker");
  CHECK(xml.find("<prop id=\"testbed_scale\" value=\"1\"/>") != std::string::npos);
  std::remove(path.c_str());
}

namespace {

int link_index(const Spec& spec, const std::string& name) {
  for (std::size_t l = 0; l < spec.links.size(); ++l)
    if (spec.links[l].name == name) return static_cast<int>(l);
  FAIL("no link " << name);
  return -1;
}

/// Every link at its testbed rate, those no route shows at the fastest single route through
/// them (what fit_links writes for them: a lower bound).
std::vector<LinkFit> single_route_fits(const Spec& spec) {
  const std::vector<int> hidden = links_no_route_shows(spec);
  std::vector<LinkFit> fits;
  for (std::size_t l = 0; l < spec.links.size(); ++l) {
    LinkFit fit;
    fit.link = static_cast<int>(l);
    fit.bandwidth_Bps = spec.links[l].bandwidth_Bps;
    fit.bandwidth_from = "the testbed";
    if (std::count(hidden.begin(), hidden.end(), static_cast<int>(l))) {
      double fastest = 0;
      for (const SpecRoute& r : spec.routes)
        if (std::count(r.links.begin(), r.links.end(), static_cast<int>(l)))
          fastest = std::max(fastest, r.bandwidth_Bps);
      fit.bandwidth_Bps = fastest;
      fit.bandwidth_lower_bound = true;
    }
    fits.push_back(fit);
  }
  return fits;
}

}  // namespace

TEST_CASE("links no single route shows: the fat tree's uplinks and server link filled by flows") {
  // testbed-fattree-2to1: 12.5 MB/s NICs under 25 MB/s leaf uplinks, 50 MB/s server link and
  // server NICs; ps0 -> ps1 shows the server NICs (a tie counts as the narrowest).
  const Spec spec =
      make_spec(sim::load_platform(kPlatforms + "/testbed-fattree-2to1.xml"), Options{});
  REQUIRE(spec.scale == Approx(1));
  std::vector<std::string> hidden;
  for (int l : links_no_route_shows(spec))
    hidden.push_back(spec.links[static_cast<std::size_t>(l)].name);
  std::sort(hidden.begin(), hidden.end());
  CHECK(hidden == std::vector<std::string>{"leaf0-uplink_DOWN", "leaf0-uplink_UP",
                                           "leaf1-uplink_DOWN", "leaf1-uplink_UP",
                                           "leaf2-uplink_DOWN", "leaf2-uplink_UP",
                                           "leaf3-uplink_DOWN", "leaf3-uplink_UP",
                                           "server-link_DOWN", "server-link_UP"});

  // An uplink: three flows from three hosts of its leaf, 37.5 MB/s without it (>= 1.25 x 25).
  const int uplink = link_index(spec, "leaf0-uplink_UP");
  const FillMeasurement up = plan_fill(spec, uplink);
  CHECK(up.fills);
  CHECK(up.headroom_Bps == Approx(3 * 12.5e6));
  REQUIRE(up.flows.size() == 3);
  std::set<int> sources;
  for (const auto& [src, dst] : up.flows) {
    sources.insert(src);
    const std::vector<int>& links = spec.route(src, dst).links;
    CHECK(std::count(links.begin(), links.end(), uplink) == 1);
  }
  CHECK(sources.size() == 3);
  // On the testbed's links, the flows are held back by the uplink alone.
  double fair = 0;
  for (double r : max_min_rates(spec, up.flows))
    fair += r;
  CHECK(fair == Approx(25e6));

  // Into the servers: five flows (two from each of two leaves), split over ps0 and ps1 (a
  // server NIC is 50).
  const FillMeasurement in = plan_fill(spec, link_index(spec, "server-link_DOWN"));
  CHECK(in.fills);
  CHECK(in.flows.size() == 5);
  CHECK(in.headroom_Bps == Approx(62.5e6));
  // Capped flows: one flow cannot fill an uplink.
  CHECK_FALSE(plan_fill(spec, uplink, 1).fills);
  CHECK_THROWS_AS(plan_fill(spec, -1), std::invalid_argument);
}

TEST_CASE("links no single route shows: at 4:1 no traffic fills the server link") {
  // At 4:1 (12.5 MB/s uplinks) the uplinks are shown by single routes, and no traffic fills the
  // server link: the four uplinks give it 50 MB/s, its own rate, short of the margin.
  const Spec four =
      make_spec(sim::load_platform(kPlatforms + "/testbed-fattree-4to1.xml"), Options{});
  std::vector<std::string> hidden4;
  for (int l : links_no_route_shows(four))
    hidden4.push_back(four.links[static_cast<std::size_t>(l)].name);
  std::sort(hidden4.begin(), hidden4.end());
  CHECK(hidden4 == std::vector<std::string>{"server-link_DOWN", "server-link_UP"});
  const FillMeasurement blocked = plan_fill(four, link_index(four, "server-link_UP"));
  CHECK_FALSE(blocked.fills);
  CHECK(blocked.headroom_Bps == Approx(50e6));
}

TEST_CASE("fills set the links no route shows: the flows' total or a bound that holds none back") {
  const Spec spec =
      make_spec(sim::load_platform(kPlatforms + "/testbed-fattree-2to1.xml"), Options{});
  const int uplink = link_index(spec, "leaf0-uplink_UP");
  const int server = link_index(spec, "server-link_DOWN");
  std::vector<LinkFit> fits = single_route_fits(spec);
  REQUIRE(fits[static_cast<std::size_t>(uplink)].bandwidth_lower_bound);
  CHECK(fits[static_cast<std::size_t>(uplink)].bandwidth_Bps == Approx(12.5e6));

  FillMeasurement up = plan_fill(spec, uplink);
  up.rates_Bps = {8.3e6, 8.2e6, 8.4e6};  // 24.9 MB/s in all
  std::vector<std::string> warnings;
  fill_lower_bounds(spec, {up}, fits, warnings);
  CHECK(warnings.empty());
  const LinkFit& filled = fits[static_cast<std::size_t>(uplink)];
  CHECK(filled.bandwidth_Bps == Approx(24.9e6));
  CHECK(filled.bandwidth_filled);
  CHECK_FALSE(filled.bandwidth_lower_bound);
  CHECK(filled.bandwidth_from.rfind("3 flows at once: l0-h", 0) == 0);
  // A link a route shows is left as it is, whatever its fill says.
  const int nic = link_index(spec, "l0-h0-nic_UP");
  FillMeasurement odd = up;
  odd.link = nic;
  fill_lower_bounds(spec, {odd}, fits, warnings);
  CHECK(fits[static_cast<std::size_t>(nic)].bandwidth_Bps == Approx(12.5e6));
  CHECK_FALSE(fits[static_cast<std::size_t>(nic)].bandwidth_filled);

  // A fill under the single route (a slowed run) keeps the bound, with a warning naming it.
  std::vector<LinkFit> slowed = single_route_fits(spec);
  FillMeasurement slow = up;
  slow.rates_Bps = {4e6, 4e6, 4e6};
  fill_lower_bounds(spec, {slow}, slowed, warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("leaf0-uplink_UP") != std::string::npos);
  CHECK(slowed[static_cast<std::size_t>(uplink)].bandwidth_lower_bound);
  CHECK(slowed[static_cast<std::size_t>(uplink)].bandwidth_Bps == Approx(12.5e6));

  // Not fillable (as if): the largest of the bound, the measured total and the fair total of the
  // flows on the links as fitted (uplinks at their single-route bound) without it.
  std::vector<LinkFit> bounded = single_route_fits(spec);
  FillMeasurement in = plan_fill(spec, server);
  in.fills = false;
  in.rates_Bps.assign(in.flows.size(), 1e6);  // 5 MB/s measured, under what they could get
  fill_lower_bounds(spec, {in}, bounded, warnings);
  Spec fitted = spec;
  for (const LinkFit& f : single_route_fits(spec))
    fitted.links[static_cast<std::size_t>(f.link)].bandwidth_Bps = f.bandwidth_Bps;
  fitted.links[static_cast<std::size_t>(server)].bandwidth_Bps = 1e300;
  double clear = 0;
  for (double r : max_min_rates(fitted, in.flows))
    clear += r;
  CHECK(clear > 12.5e6);
  CHECK(bounded[static_cast<std::size_t>(server)].bandwidth_Bps == Approx(clear));
  CHECK(bounded[static_cast<std::size_t>(server)].bandwidth_lower_bound);
  CHECK(bounded[static_cast<std::size_t>(server)].bandwidth_from.find("no traffic") !=
        std::string::npos);

  // A fill short of its flows' fair total on the testbed (25 MB/s here) by more than 3% runs
  // again, three runs at most.
  FillMeasurement again = up;
  again.runs = 1;
  again.rates_Bps = {8e6, 8e6, 8e6};  // 24.0 MB/s: 4% short
  CHECK(fill_runs_again(spec, again));
  again.runs = kFillRuns;
  CHECK_FALSE(fill_runs_again(spec, again));
  again.runs = 1;
  again.rates_Bps = {8.1e6, 8.2e6, 8.2e6};  // 24.5 MB/s: 2% short
  CHECK_FALSE(fill_runs_again(spec, again));

  // A fill whose rates do not match its flows is refused.
  FillMeasurement broken = up;
  broken.rates_Bps.pop_back();
  CHECK_THROWS_AS(fill_lower_bounds(spec, {broken}, fits, warnings), std::invalid_argument);

  // The written platform says where the filled rate came from; the JSON keeps the fill.
  NetworkCalibration cal;
  cal.links = fits;
  up.runs = 2;
  cal.fills = {up};
  const nlohmann::json doc = to_json(cal, spec);
  REQUIRE(doc.at("fills").size() == 1);
  CHECK(doc["fills"][0].at("link") == "leaf0-uplink_UP");
  CHECK(doc["fills"][0].at("runs") == 2);
  CHECK(doc["fills"][0].at("aggregate_Bps").get<double>() == Approx(24.9e6));
  CHECK(doc["fills"][0].at("flows").size() == 3);
  const std::string xml = calibrated_platform_xml(spec, cal);
  CHECK(xml.find("value=\"filled by 3 flows at once: l0-h") != std::string::npos);
}

TEST_CASE("an MPI route's fit: its messages' lower envelope, the least overhead of the smallest") {
  // Messages of 128 KiB to 8 MiB over a 12.5 MB/s route, three passes, each paying 12 ms on
  // top; the second and third passes stalled by 30 ms on every message but the 2 MiB ones (as a
  // machine's stall does): 10 of 18 messages pay 42 ms, so the median over all messages of
  // t - S / rate (the rule before) reads 42 ms, and a least-squares line through all 18 reads
  // 28.7 ms; the lower envelope and the least overhead of the smallest messages
  // see through the stalls.
  const std::vector<double> sizes{131072, 262144, 524288, 1048576, 2097152, 8388608};
  std::vector<TransferSample> samples;
  for (int pass = 0; pass < 3; ++pass)
    for (double bytes : sizes)
      samples.push_back(
          {bytes, 0.012 + bytes / 12.5e6 + ((pass > 0 && bytes != 2097152) ? 0.030 : 0.0)});
  const MessageFit fit = fit_messages(samples, "a -> b");
  CHECK(fit.bandwidth_Bps == Approx(12.5e6).epsilon(1e-9));
  CHECK(fit.alpha_s == Approx(0.012).epsilon(1e-9));
  // The line written: alpha and 1 / rate, with the messages' R^2 about it (the stalls leave
  // residuals) and their largest relative residual, 30 ms of a stalled 128 KiB message's 52.5 ms.
  CHECK(fit.line.intercept == fit.alpha_s);
  CHECK(fit.line.slope == Approx(1 / 12.5e6).epsilon(1e-12));
  CHECK(fit.line.r2 < 1);
  CHECK(fit.line.max_relative_residual == Approx(0.030 / (0.042 + 131072 / 12.5e6)).epsilon(1e-9));
  // Messages 2 ms faster than their bytes at their rate (a one-way time less half a round trip
  // that the machine stretched): no overhead left, a measurement error naming the route.
  std::vector<TransferSample> bare;
  for (double bytes : sizes)
    bare.push_back({bytes, bytes / 12.5e6 - 0.002});
  try {
    fit_messages(bare, "a -> b");
    FAIL("no error");
  } catch (const tauplan::MeasurementError& e) {
    CHECK_THAT(e.what(), Catch::Contains("route a -> b: MPI messages of 131072 bytes took no "
                                         "longer than their bytes"));
    CHECK_THAT(e.what(), Catch::Contains("measure again"));
  }
  // Times that do not grow with the size, and one size only: measurement errors too.
  std::vector<TransferSample> flat;
  for (double bytes : sizes)
    flat.push_back({bytes, 0.05});
  CHECK_THROWS_AS(fit_messages(flat, "a -> b"), tauplan::MeasurementError);
  CHECK_THROWS_AS(fit_messages({{131072, 0.02}, {131072, 0.03}}, "a -> b"),
                  tauplan::MeasurementError);
  CHECK_THROWS_AS(fit_messages({}, "a -> b"), std::invalid_argument);  // a bug
}

TEST_CASE("links fitted to MPI messages: bandwidths from the messages, latencies from TCP") {
  const Spec spec = make_spec(backbone_platform(2e7, 1e7, 4e-3), Options{});
  std::vector<RouteMeasurement> tcp, messages;
  for (const auto& [a, b] : covering_pairs(spec)) {
    RouteMeasurement m;
    m.src = a;
    m.dst = b;
    m.round_trip_s = spec.route(a, b).latency_s + spec.route(b, a).latency_s + 2e-4;
    m.bandwidth_Bps = 0.8 * spec.route(a, b).bandwidth_Bps;  // TCP read slow, as under steal
    tcp.push_back(m);
    m.round_trip_s = 0.03;  // 2 alpha: not a sum of the links' latencies
    m.bandwidth_Bps = 0.99 * spec.route(a, b).bandwidth_Bps;
    messages.push_back(m);
  }
  std::vector<std::string> warnings{"an earlier warning"};
  std::vector<std::string> tcp_warnings;
  const std::vector<LinkFit> by_tcp = fit_links(spec, tcp, tcp_warnings);
  warnings.insert(warnings.end(), tcp_warnings.begin(), tcp_warnings.end());
  const std::size_t before = warnings.size();
  const std::vector<LinkFit> links = fit_links_to_messages(spec, messages, tcp, warnings);
  REQUIRE(links.size() == by_tcp.size());
  for (std::size_t l = 0; l < links.size(); ++l) {
    // Latencies are TCP's fit (the messages' 30 ms round trips would give others), bandwidths
    // the messages' rates (the backbone, every route's narrowest link, at 0.99e7).
    CHECK(links[l].latency_s == Approx(by_tcp[l].latency_s).epsilon(1e-12));
    CHECK(links[l].bandwidth_Bps == Approx(by_tcp[l].bandwidth_Bps / 0.8 * 0.99).epsilon(1e-9));
  }
  CHECK(warnings.size() == before);
  // Round trips too short for the links' configured latencies (each link's is clamped to 0, with
  // a warning): fitted to the messages, the same warnings come out and none is added twice.
  std::vector<RouteMeasurement> short_trips = tcp;
  for (RouteMeasurement& m : short_trips)
    m.round_trip_s = 1e-6;
  std::vector<std::string> clamped;
  fit_links(spec, short_trips, clamped);
  REQUIRE(!clamped.empty());
  std::vector<std::string> seen = clamped;
  fit_links_to_messages(spec, messages, short_trips, seen);
  CHECK(seen == clamped);
  std::vector<std::string> fresh;
  fit_links_to_messages(spec, messages, short_trips, fresh);
  CHECK(fresh == clamped);
  // Lists of other routes or lengths are a bug.
  std::vector<RouteMeasurement> shorter = messages;
  shorter.pop_back();
  CHECK_THROWS_AS(fit_links_to_messages(spec, shorter, tcp, warnings), std::invalid_argument);
  std::swap(messages.front(), messages.back());
  CHECK_THROWS_WITH(fit_links_to_messages(spec, messages, tcp, warnings),
                    Catch::Contains("message and TCP routes differ"));
}

TEST_CASE("MPI message sizes: sorted, each once, the largest left out where it would be long") {
  std::vector<std::string> left_out;
  const std::vector<double> defaults{131072, 262144, 524288, 1048576, 2097152, 8388608};
  // At 12.5 MB/s (testbed-ps8's slowest route) 8 MiB take 0.67 s: every size is kept.
  CHECK(message_sizes(defaults, 12.5e6, 1.0, left_out) == defaults);
  CHECK(left_out.empty());
  // At a time scale of 2 (6.25 MB/s) 8 MiB would take 1.34 s: left out, with a line that says so.
  const std::vector<double> at_scale_2(defaults.begin(), defaults.end() - 1);
  CHECK(message_sizes(defaults, 6.25e6, 1.0, left_out) == at_scale_2);
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::Contains("MPI messages of 8388608 bytes left out: 1.342 s"));
  // Unsorted, repeated: sorted and each once; however slow the route, two sizes are kept.
  left_out.clear();
  CHECK(message_sizes({2097152, 131072, 2097152, 524288}, 1e3, 1.0, left_out) ==
        std::vector<double>{131072, 524288});
  CHECK(left_out.size() == 1);
  CHECK_THROWS_AS(message_sizes({131072, 131072}, 12.5e6, 1.0, left_out), std::invalid_argument);
  CHECK_THROWS_AS(message_sizes(defaults, 0, 1.0, left_out), std::invalid_argument);
}
