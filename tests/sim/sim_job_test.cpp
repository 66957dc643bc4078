// sim_job_test.cpp: the simulator's job keys, straggler and failure entries, trace JSON.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "model/base/chrome_trace.hpp"
#include "model/base/error.hpp"
#include "model/ir/job.hpp"
#include "sim/sim_job.hpp"

using namespace tauplan;

TEST_CASE("sim declares its keys once, without clashing with the model's") {
  std::set<std::string> names;
  for (const auto& spec : model::model_job_keys())
    names.insert(spec.name);
  for (const auto& spec : sim::sim_job_keys()) {
    INFO(spec.name);
    CHECK(names.insert(spec.name).second);
    CHECK(!spec.help.empty());
  }
  for (const char* key : {"network_model", "sim_mode", "sim_rounds", "stragglers", "failures",
                          "failure_restart_s", "trace", "crosstraffic", "tcp_gamma"})
    CHECK(names.count(key) == 1);
}

TEST_CASE("a job's sim keys become options") {
  auto specs = model::model_job_keys();
  for (const auto& spec : sim::sim_job_keys())
    specs.push_back(spec);
  const auto job = model::parse_job_yaml(
      "network_model: LV08\nsim_mode: coarse\nsim_rounds: 7\nstragglers: [gpu-1:2:0.5]\n"
      "failures: [gpu-2@30s, '*~2h']\nfailure_restart_s: 90s\nseed: 5\n",
      "job.yaml", ".", specs);
  const auto network = sim::network_options(job);
  CHECK(network.model == "LV08");
  CHECK(network.origin == "job.yaml");
  const auto options = sim::sim_options(job);
  CHECK(options.granularity == sim::Granularity::Coarse);
  CHECK(options.sim_rounds == 7);
  REQUIRE(options.stragglers.size() == 1);
  CHECK(options.stragglers[0].host == "gpu-1");
  CHECK(options.stragglers[0].factor == 2);
  REQUIRE(options.failures.size() == 2);
  CHECK(options.failures[0].at_s == 30);
  CHECK(options.failures[1].host == "*");
  CHECK(options.failures[1].mtbf_s == 7200);
  CHECK(options.restart_s == 90);
  CHECK(options.seed == 5);

  CHECK_THROWS_AS(model::parse_job_yaml("network_model: ns3\n", "job.yaml", ".", specs),
                  InputError);
}

TEST_CASE("straggler and failure entries are checked, naming the file and key") {
  const auto s = sim::parse_straggler("n0-gpu3:2.5:0.25", {"job.yaml", "stragglers"});
  CHECK(s.host == "n0-gpu3");
  CHECK(s.factor == 2.5);
  CHECK(s.fraction == 0.25);
  CHECK(sim::parse_straggler("h:3", {"job.yaml", "stragglers"}).fraction == 1);
  for (const char* bad : {"gpu", ":2:0.5", "h:0:0.5", "h:2:1.5", "h:x:0.5", "h:2:"}) {
    INFO(bad);
    try {
      sim::parse_straggler(bad, {"job.yaml", "stragglers"});
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == "job.yaml");
      CHECK(e.key() == "stragglers");
    }
  }
  CHECK(sim::parse_failure("h@1.5s", {"job.yaml", "failures"}).at_s == 1.5);
  CHECK(sim::parse_failure("h~10min", {"job.yaml", "failures"}).mtbf_s == 600);
  for (const char* bad : {"h", "h@", "@3s", "h~0", "h@3parsecs", "h@1s~2s"}) {
    INFO(bad);
    CHECK_THROWS_AS(sim::parse_failure(bad, {"job.yaml", "failures"}), InputError);
  }
}

TEST_CASE("Chrome trace JSON parses and keeps names and times") {
  model::ChromeTrace trace;
  trace.name_process(1, "sync \"quoted\"");
  trace.name_thread(1, 0, "w0 gpu-0");
  trace.span(1, 0, "forward\nbackward", "compute", 0.5, 0.25, {{"round", "0"}});
  trace.instant(1, 0, "host failure", "fault", 1.0);
  const auto json = nlohmann::json::parse(trace.json());
  const auto& events = json["traceEvents"];
  REQUIRE(events.size() == 6);
  CHECK(events[0]["args"]["name"] == "sync \"quoted\"");
  CHECK(events[4]["ph"] == "X");
  CHECK(events[4]["ts"].get<double>() == Approx(5e5));
  CHECK(events[4]["dur"].get<double>() == Approx(2.5e5));
  CHECK(events[4]["name"] == "forward\nbackward");
  CHECK(events[5]["ph"] == "i");
  CHECK_THROWS_AS(trace.write("/nonexistent-dir/trace.json"), InputError);
}
