// latency_jitter_test.cpp: SimOptions::latency_jitter (sim/latency_jitter.hpp) against a closed
// form worked by hand, and its refusals.
//
// A ring of 3 on a crossbar (test::crossbar_platform: h_i -> h_j over nic-i then nic-j), CM02,
// the eager protocol (a step barrier; a transfer alone takes its route's latency + S / bandwidth).
// Each of the 2(K-1) steps moves a chunk n/K over every hop i -> i+1 at once, each flow alone on
// its links' directions, so a step takes max_i (l_i f(nic-i_UP) + l_{i+1} f(nic-{i+1}_DOWN)) +
// n / K / B, with f the round's factors (LatencyJitter::factors, in the order of the links' names;
// SimGrid makes a split-duplex link two, NAME_UP and NAME_DOWN, each drawn on its own). The
// expected rounds are computed from the factors, not from the simulator. The refusals: an
// asynchronous strategy, beside_hosts, sim_mode coarse and a latency_file (a bandwidth_file is
// fine).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "sim/latency_jitter.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

constexpr double kBandwidth = 1e8, kBytes = 3e6;
const std::vector<double> kLatencies = {1e-3, 2e-3, 3e-3};

/// To run in a child: the ring's rounds with `jitter` (mean, shortest, longest), then the
/// same plan again without it, and the expected mean, shortest and longest from the factors.
nlohmann::json ring_rounds(double jitter, long long rounds, unsigned long long seed,
                           bool reuse_steps = false) {
  const std::string path = test::crossbar_platform(std::vector<double>(3, kBandwidth), kLatencies,
                                                   "", false, "latency-jitter");
  const model::Platform platform = sim::load_platform(path);
  model::Plan plan = test::collectives_only_plan({0, 1, 2}, {}, kBytes, {{"ring", {0, 1, 2}}});
  plan.rounds = rounds;
  sim::SimOptions options;
  options.latency_jitter = jitter;
  options.seed = seed;
  options.reuse_steps = reuse_steps;
  const model::ResultRow jittered = sim::simulate(plan, platform, options);
  options.latency_jitter = 0;
  const model::ResultRow plain = sim::simulate(plan, platform, options);

  // Where the halves of nic-0..2 stand among every link of the platform, by name (a split-duplex
  // link is two links to SimGrid, NAME_UP and NAME_DOWN); -1 if missing.
  std::vector<std::string> names;
  for (const auto* link : simgrid::s4u::Engine::get_instance()->get_all_links())
    names.push_back(link->get_name());
  std::sort(names.begin(), names.end());
  auto index_of = [&](const std::string& name) {
    const auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) throw std::runtime_error("no link " + name);
    return static_cast<size_t>(found - names.begin());
  };
  std::vector<size_t> up(3), down(3);
  for (size_t i = 0; i < 3; ++i) {
    up[i] = index_of("nic-" + std::to_string(i) + "_UP");
    down[i] = index_of("nic-" + std::to_string(i) + "_DOWN");
  }
  const double k = 3, steps = 2 * (k - 1), chunk_s = kBytes / k / kBandwidth;
  double sum = 0, shortest = 1e300, longest = 0;
  for (long long r = 0; r < rounds; ++r) {
    const std::vector<double> f = sim::LatencyJitter::factors(jitter, seed, r, names.size());
    double step = 0;
    for (size_t i = 0; i < 3; ++i) {
      const size_t j = (i + 1) % 3;
      step = std::max(step, kLatencies[i] * f[up[i]] + kLatencies[j] * f[down[j]]);
    }
    const double round = steps * (step + chunk_s);
    sum += round;
    shortest = std::min(shortest, round);
    longest = std::max(longest, round);
  }
  return {{"mean", jittered.round_s},
          {"min", jittered.extra.at("round_s_min")},
          {"max", jittered.extra.at("round_s_max")},
          {"reported", jittered.extra.value("latency_jitter", 0.0)},
          {"plain", plain.round_s},
          {"plain_spread", plain.extra.at("round_s_max").get<double>() -
                               plain.extra.at("round_s_min").get<double>()},
          {"expected_mean", sum / static_cast<double>(rounds)},
          {"expected_min", shortest},
          {"expected_max", longest},
          {"unjittered", steps * (kLatencies[1] + kLatencies[2] + chunk_s)}};
}

/// The jittered ring's mean, shortest and longest round (ring_rounds) against the closed form.
void check_mean_min_max_against_closed_form(const nlohmann::json& v) {
  for (const char* what : {"mean", "min", "max"})
    CHECK(v.at(what).get<double>() ==
          Approx(v.at(std::string("expected_") + what).get<double>()).epsilon(1e-9));
}

}  // namespace

TEST_CASE("latency jitter: each round's links get their drawn latencies, then their own back") {
  const auto result = test::in_child([] { return ring_rounds(0.05, 16, 7).dump(); });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  check_mean_min_max_against_closed_form(v);
  // The draws differ from round to round: the rounds are not all alike.
  CHECK(v.at("max").get<double>() > v.at("min").get<double>() * (1 + 1e-4));
  CHECK(v.at("reported").get<double>() == 0.05);
  // The next simulation in the process sees the platform's own latencies again.
  CHECK(v.at("plain").get<double>() == Approx(v.at("unjittered").get<double>()).epsilon(1e-9));
  CHECK(v.at("plain_spread").get<double>() == Approx(0).margin(1e-12));
}

TEST_CASE("latency jitter: step reuse asked for, every round still gets its own draw") {
  // sim_reuse_steps (on by default) memoises a private op's time; with jitter that time would be
  // one round's draw, so the jitter turns it off: the rounds still match the closed form.
  const auto result = test::in_child([] { return ring_rounds(0.05, 16, 7, true).dump(); });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  check_mean_min_max_against_closed_form(v);
}

TEST_CASE("latency jitter: the same seed draws the same rounds, another seed others") {
  const auto a = test::in_child([] { return ring_rounds(0.05, 8, 3).dump(); });
  const auto b = test::in_child([] { return ring_rounds(0.05, 8, 3).dump(); });
  const auto c = test::in_child([] { return ring_rounds(0.05, 8, 4).dump(); });
  REQUIRE(a.kind == "ok");
  REQUIRE(b.kind == "ok");
  REQUIRE(c.kind == "ok");
  CHECK(a.json().at("mean").get<double>() == b.json().at("mean").get<double>());
  CHECK(a.json().at("mean").get<double>() != c.json().at("mean").get<double>());
}

TEST_CASE("latency jitter: refused for an asynchronous strategy and beside another job") {
  for (const bool asynchronous : {true, false}) {
    const auto result = test::in_child([asynchronous] {
      const std::string path = test::crossbar_platform(std::vector<double>(3, kBandwidth),
                                                       kLatencies, "", false, "latency-jitter-bad");
      const model::Platform platform = sim::load_platform(path);
      model::Plan plan = test::collectives_only_plan({0, 1}, {}, kBytes, {{"ring", {0, 1}}});
      plan.asynchronous = asynchronous;
      sim::SimOptions options;
      options.latency_jitter = 0.05;
      if (!asynchronous) options.beside_hosts = {"h2", "h0"};
      options.origin = "job.yaml";
      sim::simulate(plan, platform, options);
      return std::string("no error");
    });
    INFO(result.text);
    CHECK(result.kind == "InputError");
    CHECK_THAT(result.text, Catch::Contains("job.yaml") && Catch::Contains("latency_jitter"));
    CHECK_THAT(result.text, Catch::Contains(asynchronous ? "asynchronous" : "beside_hosts"));
  }
}

namespace {

/// To run in a child: the ring of 2 on the crossbar, its nic-0 given `profile_attribute` (a
/// bandwidth_file or latency_file of two points, written beside the platform) when not empty,
/// simulated with jitter 0.05 in `mode`.
std::string jittered_ring_of_two(const std::string& profile_attribute, sim::Granularity mode) {
  std::string path = test::crossbar_platform(std::vector<double>(3, kBandwidth), kLatencies, "",
                                             false, "latency-jitter-refusal");
  if (!profile_attribute.empty()) {
    std::string xml = test::file_text(path);
    const std::string link = "<link id=\"nic-0\" ";
    const size_t at = xml.find(link);
    if (at == std::string::npos) throw std::runtime_error("no nic-0 in " + path);
    // A profile's path is relative (the platform's folder, here /tmp).
    const std::string profile =
        fmt::format("tauplan-latency-jitter-{}-{}.txt", profile_attribute, getpid());
    const bool latency = profile_attribute == "latency_file";
    std::ofstream("/tmp/" + profile) << (latency ? "0 0.001\n1 0.002\n" : "0 1e8\n1 5e7\n");
    xml.insert(at + link.size(), profile_attribute + "=\"" + profile + "\" ");
    path += "." + profile_attribute + ".xml";
    std::ofstream(path) << xml;
  }
  const model::Platform platform = sim::load_platform(path);
  model::Plan plan = test::collectives_only_plan({0, 1}, {}, kBytes, {{"ring", {0, 1}}});
  plan.rounds = 4;
  sim::SimOptions options;
  options.latency_jitter = 0.05;
  options.granularity = mode;
  options.origin = "job.yaml";
  sim::simulate(plan, platform, options);
  return "no error";
}

}  // namespace

TEST_CASE(
    "latency jitter: refused in coarse mode and on a latency profile, not on a bandwidth "
    "profile") {
  struct Case {
    const char* profile;
    sim::Granularity mode;
    const char* refusal;  // what the one-line error names; nullptr: the job runs
  };
  // The plain step-mode ring runs: the refusals are the profile's and the mode's.
  for (const Case& c : {Case{"", sim::Granularity::Coarse, "sim_mode coarse"},
                        Case{"latency_file", sim::Granularity::Step, "latency_file"},
                        Case{"bandwidth_file", sim::Granularity::Step, nullptr},
                        Case{"", sim::Granularity::Step, nullptr}}) {
    const auto result = test::in_child([c] { return jittered_ring_of_two(c.profile, c.mode); });
    INFO(c.profile << " " << sim::to_string(c.mode) << ": " << result.text);
    if (c.refusal == nullptr) {
      CHECK(result.kind == "ok");
      CHECK(result.text == "no error");
    } else {
      CHECK(result.kind == "InputError");
      CHECK_THAT(result.text,
                 Catch::Contains("job.yaml: latency_jitter") && Catch::Contains(c.refusal));
    }
  }
}
