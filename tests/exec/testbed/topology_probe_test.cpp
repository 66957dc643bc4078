// topology_probe_test.cpp: the topology probe against networks whose answers are known: a
// ProbeNetwork that answers from a testbed Spec (round trips = the routes' latencies there and
// back, rates = max-min fair shares on its links), exactly or with deterministic noise. Checks
// neighbour joining on tree metrics, max-min fair shares against closed forms, and that probing
// every shipped testbed platform gives back its routes' latencies and bandwidths and its sharing
// (concurrent patterns predicted by the probed tree against the Spec's own fair shares), never
// reading the platform's links. One SimGrid platform per process: ctest runs each case alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "exec/testbed/spec.hpp"
#include "exec/testbed/topology_probe.hpp"
#include "sim/platform_loader.hpp"

using namespace tauplan;
using namespace tauplan::testbed;

namespace {

const std::string kPlatforms = TAUPLAN_PLATFORM_DIR;

/// Answers probes from a Spec: what an ideal network of that description would measure, with
/// relative noise of up to `noise` (deterministic) on every answer.
class SpecProbes : public exec::ProbeNetwork {
 public:
  SpecProbes(Spec spec, double noise) : spec_(std::move(spec)), noise_(noise) {}
  int host_count() const override { return static_cast<int>(spec_.hosts.size()); }
  std::vector<double> round_trips(int a, int b, int count) override {
    double rtt = 0;
    for (int l : spec_.route(a, b).links)
      rtt += spec_.links[static_cast<std::size_t>(l)].latency_s;
    for (int l : spec_.route(b, a).links)
      rtt += spec_.links[static_cast<std::size_t>(l)].latency_s;
    std::vector<double> out;
    for (int i = 0; i < count; ++i)
      out.push_back(rtt * (1 + noise_ * (jitter() + 1) / 2));  // echoes only come late
    ++round_trip_calls;
    return out;
  }
  std::vector<double> concurrent_rates(const std::vector<std::pair<int, int>>& flows,
                                       double /*duration_s*/, double /*warmup_s*/) override {
    // The interface's rule, as the MPI probes enforce it: distinct pairs of distinct hosts.
    std::set<std::pair<int, int>> distinct(flows.begin(), flows.end());
    if (distinct.size() != flows.size())
      throw std::invalid_argument("SpecProbes: a flow given twice");
    for (const auto& [src, dst] : flows)
      if (src == dst) throw std::invalid_argument("SpecProbes: a flow from a host to itself");
    std::vector<double> rates = max_min_rates(spec_, flows);
    for (double& r : rates)
      r *= 1 - noise_ * (jitter() + 1) / 2;  // TCP gets a little less, never more
    ++rate_calls;
    return rates;
  }
  std::string method() const override { return "max-min fair shares on a Spec (test)"; }
  const Spec& spec() const { return spec_; }
  int round_trip_calls = 0;
  int rate_calls = 0;

 private:
  /// A value in [-1, 1].
  double jitter() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
  }
  Spec spec_;
  double noise_;
  unsigned long long state_ = 1;
};

std::vector<std::string> names_of(const Spec& spec) {
  std::vector<std::string> names;
  for (const SpecHost& h : spec.hosts)
    names.push_back(h.name);
  return names;
}

double spec_latency(const Spec& spec, int a, int b) {
  double sum = 0;
  for (int l : spec.route(a, b).links)
    sum += spec.links[static_cast<std::size_t>(l)].latency_s;
  return sum;
}

/// Concurrent patterns that load shared links: every host to the next (a ring), every host but
/// the last to the last, every host to a host half the list away, and each host to each of three
/// others at once.
std::vector<std::vector<std::pair<int, int>>> patterns(int n) {
  std::vector<std::vector<std::pair<int, int>>> out(4);
  for (int i = 0; i < n; ++i) {
    out[0].push_back({i, (i + 1) % n});
    if (i != n - 1) out[1].push_back({i, n - 1});
    out[2].push_back({i, (i + n / 2) % n});
  }
  for (int i = 0; i < n && i < 6; ++i)
    for (int k = 1; k <= 3; ++k)
      out[3].push_back({i, (i + k * 2 + 1) % n});
  for (auto& pattern : out) {  // no flow from a host to itself, no flow twice
    std::set<std::pair<int, int>> seen;
    std::vector<std::pair<int, int>> kept;
    for (const auto& f : pattern)
      if (f.first != f.second && seen.insert(f).second) kept.push_back(f);
    pattern = kept;
  }
  return out;
}

/// Probes `platform_file`'s testbed through SpecProbes and checks latencies, bandwidths,
/// sharing and the check pairs against the Spec; returns the probed topology.
ProbedTopology probe_and_compare(const std::string& platform_file, double noise, double tolerance) {
  const model::Platform platform = sim::load_platform(kPlatforms + "/" + platform_file);
  SpecProbes network(make_spec(platform, Options{}), noise);
  const Spec& spec = network.spec();
  const int n = static_cast<int>(spec.hosts.size());
  TopologyProbeRequest request;
  const ProbedTopology t = probe_topology(network, names_of(spec), request, [](const auto&) {});
  INFO(platform_file << " noise " << noise << ": " << to_json(t).dump(1));
  CHECK(network.round_trip_calls == n * (n - 1) / 2);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      INFO(spec.hosts[static_cast<std::size_t>(a)].name
           << " -> " << spec.hosts[static_cast<std::size_t>(b)].name);
      CHECK(t.route_latency_s(a, b) == Approx(spec_latency(spec, a, b)).epsilon(tolerance + noise));
      CHECK(t.predict_rates({{a, b}})[0] ==
            Approx(max_min_rates(spec, {{a, b}})[0]).epsilon(tolerance + noise));
    }
  for (const auto& pattern : patterns(n)) {
    const std::vector<double> truth = max_min_rates(spec, pattern);
    const std::vector<double> probed = t.predict_rates(pattern);
    for (std::size_t f = 0; f < pattern.size(); ++f) {
      INFO("pattern flow " << pattern[f].first << " -> " << pattern[f].second);
      CHECK(probed[f] == Approx(truth[f]).epsilon(tolerance + noise));
    }
  }
  for (const PairCheck& c : t.checks)
    CHECK(c.predicted_shared == c.measured_shared);
  CHECK(t.warnings.empty());
  return t;
}

/// Host names grouped by the switch the probe hangs them off.
std::set<std::set<std::string>> groups_of(const ProbedTopology& t) {
  std::map<int, std::set<std::string>> by_switch;
  for (std::size_t h = 0; h < t.hosts.size(); ++h)
    by_switch[t.switch_of(static_cast<int>(h))].insert(t.hosts[h]);
  std::set<std::set<std::string>> out;
  for (const auto& [s, names] : by_switch)
    out.insert(names);
  return out;
}

}  // namespace

TEST_CASE("neighbour joining gives back a tree from its additive distances") {
  // Leaves 0, 1 on switch u (pendants 1 and 2), leaves 2, 3 on switch v (3 and 4), u - v 5.
  const std::vector<std::vector<double>> d = {
      {0, 3, 9, 10}, {3, 0, 10, 11}, {9, 10, 0, 7}, {10, 11, 7, 0}};
  const std::vector<ProbedEdge> edges = neighbor_joining(d);
  REQUIRE(edges.size() == 5);  // 4 pendants and one internal edge: an unrooted binary tree
  double sum = 0;
  for (const ProbedEdge& e : edges)
    sum += e.latency_s;
  CHECK(sum == Approx(1 + 2 + 3 + 4 + 5));
  std::map<int, double> pendant;
  for (const ProbedEdge& e : edges)
    if (e.a < 4) pendant[e.a] = e.latency_s;
  CHECK(pendant[0] == Approx(1));
  CHECK(pendant[1] == Approx(2));
  CHECK(pendant[2] == Approx(3));
  CHECK(pendant[3] == Approx(4));
  CHECK_THROWS_AS(neighbor_joining({{0, 1}, {2, 0}}), std::invalid_argument);
  CHECK_THROWS_AS(neighbor_joining({{0}}), std::invalid_argument);
  const std::vector<ProbedEdge> two = neighbor_joining({{0, 4}, {4, 0}});
  REQUIRE(two.size() == 1);
  CHECK(two[0].latency_s == Approx(4));
}

TEST_CASE("a star of equal hosts contracts to one switch") {
  // Five hosts 2 apart: neighbour joining makes internal edges of length 0, all merged.
  std::vector<std::vector<double>> d(5, std::vector<double>(5, 2.0));
  for (int i = 0; i < 5; ++i)
    d[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)] = 0;
  const std::vector<ProbedEdge> edges = contract_short_edges(neighbor_joining(d), 5, 1e-9);
  REQUIRE(edges.size() == 5);
  for (const ProbedEdge& e : edges) {
    CHECK(e.b == 5);
    CHECK(e.latency_s == Approx(1));
  }
}

TEST_CASE("max-min fair shares match their closed forms") {
  // Three flows on a link of 9: 3 each. Flow 0 also crosses a link of 1: it gets 1, the others
  // split the remaining 8.
  CHECK(max_min_fair({{0}, {0}, {0}}, {9}) == std::vector<double>{3, 3, 3});
  const std::vector<double> r = max_min_fair({{0, 1}, {0}, {0}}, {9, 1});
  CHECK(r[0] == Approx(1));
  CHECK(r[1] == Approx(4));
  CHECK(r[2] == Approx(4));
  // Infinite capacity: unlimited; a flow on no link: unlimited.
  CHECK(std::isinf(max_min_fair({{0}}, {std::numeric_limits<double>::infinity()})[0]));
  CHECK(std::isinf(max_min_fair({{}}, {5})[0]));
}

TEST_CASE("probing testbed-two-nodes gives back its routes and its shared uplinks") {
  const ProbedTopology t = probe_and_compare("testbed-two-nodes.xml", 0, 0.01);
  CHECK(groups_of(t) ==
        std::set<std::set<std::string>>{{"n0-h0", "n0-h1", "n0-h2"}, {"n1-h0", "n1-h1", "n1-h2"}});
}

TEST_CASE("probing testbed-ps gives back its routes and its server link") {
  const ProbedTopology t = probe_and_compare("testbed-ps.xml", 0, 0.01);
  CHECK(groups_of(t) ==
        std::set<std::set<std::string>>{{"h0", "h1", "h2", "h3", "h4", "h5"}, {"ps0", "ps1"}});
}

TEST_CASE("probing testbed-ps8 with noise gives back its routes and sharing within the noise") {
  probe_and_compare("testbed-ps8.xml", 0.02, 0.02);
}

TEST_CASE("probing the 2:1 fat tree gives back its leaves, uplinks and server link") {
  const ProbedTopology t = probe_and_compare("testbed-fattree-2to1.xml", 0, 0.01);
  std::set<std::set<std::string>> leaves;
  for (int l = 0; l < 4; ++l) {
    std::set<std::string> leaf;
    for (int h = 0; h < 4; ++h)
      leaf.insert("l" + std::to_string(l) + "-h" + std::to_string(h));
    leaves.insert(leaf);
  }
  leaves.insert({"ps0", "ps1"});
  CHECK(groups_of(t) == leaves);
  CHECK(t.nodes - 18 == 6);  // 4 leaves, the spine, the server switch
}

TEST_CASE("probing the 4:1 fat tree with noise gives back its routes and sharing") {
  probe_and_compare("testbed-fattree-4to1.xml", 0.02, 0.02);
}

TEST_CASE("probing checks its hosts") {
  const model::Platform platform = sim::load_platform(kPlatforms + "/testbed-two-nodes.xml");
  SpecProbes network(make_spec(platform, Options{}), 0);
  CHECK_THROWS_AS(probe_topology(network, {"a"}, {}, [](const auto&) {}), std::invalid_argument);
  CHECK_THROWS_AS(probe_topology(network, {"a", "b"}, {}, [](const auto&) {}),
                  std::invalid_argument);
}

TEST_CASE("two hosts: one edge, no switch, no check, the platform SimGrid loads back") {
  const model::Platform platform = sim::load_platform(kPlatforms + "/testbed-two-nodes.xml");
  Options options;
  options.hosts = {"n0-h0", "n1-h2"};
  SpecProbes network(make_spec(platform, options), 0);
  const ProbedTopology t =
      probe_topology(network, names_of(network.spec()), {}, [](const auto&) {});
  CHECK(t.nodes == 2);
  REQUIRE(t.edges.size() == 1);
  REQUIRE(t.links.size() == 2);
  CHECK(t.links[0].name == "n0-h0-to-n1-h2");
  CHECK(t.checks.empty());
  // 2 ms + 2 ms + 2 ms + 2 ms one way; the quarter-rate uplink of n1 (1.25e7 B/s) both ways.
  CHECK(t.route_latency_s(0, 1) == Approx(0.008));
  CHECK(t.links[0].bandwidth_Bps == Approx(1.25e7));
  CHECK(t.links[1].bandwidth_Bps == Approx(1.25e7));
}

/// Two switches of two hosts each, made in code (SimGrid may load one platform per process, and
/// this test loads the probed one): a0, a1 on switch A, b0, b1 on switch B, NICs of 1e7 B/s and
/// 1 ms (split duplex), A's uplink 4e6 B/s and 2 ms, B's 6e6 B/s and 1 ms.
class TwoSwitchRoutes : public model::RouteOracle {
 public:
  explicit TwoSwitchRoutes(std::vector<model::Link> links) : links_(std::move(links)) {}
  model::Route route(int src, int dst) const override {
    model::Route r;
    r.links.push_back(2 * src);  // src's NIC up
    if (src / 2 != dst / 2) {    // across: src's uplink up, dst's uplink down
      r.links.push_back(8 + 2 * (src / 2));
      r.links.push_back(8 + 2 * (dst / 2) + 1);
    }
    r.links.push_back(2 * dst + 1);  // dst's NIC down
    model::total_route(r, links_);
    return r;
  }

 private:
  std::vector<model::Link> links_;
};

model::Platform two_switches() {
  model::Platform p;
  p.source_file = "<two switches in code>";
  auto add_link = [&p](const std::string& name, double bandwidth, double latency) {
    model::Link l;
    l.name = name;
    l.bandwidth_Bps = bandwidth;
    l.latency_s = latency;
    l.sharing = model::LinkSharing::SplitDuplex;
    p.links.push_back(l);
  };
  for (const char* name : {"a0", "a1", "b0", "b1"}) {
    model::Host host;
    host.name = name;
    host.node = name;
    host.speed_flops = 1e9;
    host.properties["role"] = "worker";
    p.hosts.push_back(host);
    add_link(std::string(name) + "_UP", 1e7, 1e-3);
    add_link(std::string(name) + "_DOWN", 1e7, 1e-3);
  }
  add_link("A_UP", 4e6, 2e-3);
  add_link("A_DOWN", 4e6, 2e-3);
  add_link("B_UP", 6e6, 1e-3);
  add_link("B_DOWN", 6e6, 1e-3);
  p.routes = std::make_shared<TwoSwitchRoutes>(p.links);
  return p;
}

TEST_CASE("the probed platform loads in SimGrid with the probed routes, rates and latencies") {
  SpecProbes network(make_spec(two_switches(), Options{}), 0);
  const Spec& spec = network.spec();
  const ProbedTopology t = probe_topology(network, names_of(spec), {}, [](const auto&) {});
  CHECK(t.nodes == 6);  // two switches
  // a0 -> b0: 1 + 2 + 1 + 1 ms; the narrowest link A's uplink.
  CHECK(t.route_latency_s(0, 2) == Approx(0.005));
  CHECK(t.predict_rates({{0, 2}})[0] == Approx(4e6));
  // Two flows out of switch A share its uplink (B's, at 6e6 B/s, has room for both).
  const std::vector<double> shared = t.predict_rates({{0, 2}, {1, 3}});
  CHECK(shared[0] == Approx(2e6));
  CHECK(shared[1] == Approx(2e6));
  std::vector<SpecHost> hosts = spec.hosts;
  hosts[0].properties["note"] = "a & b <c> \"d\"";  // escaped where written
  NetworkCalibration messages;
  messages.mpi_latency_factor = 1.5;
  messages.eager_limit_bytes = 65536;
  const std::string xml = probed_platform_xml(t, hosts, messages, "the test's hosts -- as given");
  const std::string path =
      (std::filesystem::temp_directory_path() / "tauplan-probed-two-switches.xml").string();
  std::ofstream(path) << xml;
  const model::Platform loaded = sim::load_platform(path);
  REQUIRE(loaded.hosts.size() == spec.hosts.size());
  CHECK(loaded.hosts[0].properties.at("note") == "a & b <c> \"d\"");
  CHECK(loaded.protocol.rendezvous);
  CHECK(loaded.protocol.eager_limit_bytes == Approx(65536));
  for (std::size_t a = 0; a < spec.hosts.size(); ++a)
    for (std::size_t b = 0; b < spec.hosts.size(); ++b) {
      if (a == b) continue;
      const model::Route r = loaded.routes->route(static_cast<int>(a), static_cast<int>(b));
      CHECK(r.links.size() == t.routes[a][b].size());
      // Latencies x the MPI factor; the narrowest link the probed one.
      CHECK(r.latency_s ==
            Approx(1.5 * t.route_latency_s(static_cast<int>(a), static_cast<int>(b))));
      CHECK(r.bandwidth_Bps ==
            Approx(t.predict_rates({{static_cast<int>(a), static_cast<int>(b)}})[0]));
    }
  std::vector<SpecHost> missing(hosts.begin() + 1, hosts.end());
  CHECK_THROWS_AS(probed_platform_xml(t, missing, messages, ""), std::invalid_argument);
}
