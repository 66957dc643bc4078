// notices_test.cpp: what tauplan does not do silently: a key the convergence model ignores, a
// simulation that extrapolates rounds, a memory check skipped for a host without GPU props are
// each one "tauplan: note:" line on stderr, once; a row without a baseline has a null speedup.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

const std::string kFixtures = TAUPLAN_SOURCE_DIR "/tests/fixtures/bad/";

}  // namespace

TEST_CASE("notices: a convergence key the model ignores is named once") {
  const auto r =
      run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload", "fashion-mlp",
                   "--convergence", "critical-batch", "--min_steps", "100", "--critical_batch",
                   "10", "--iterations", "5", "--rounds", "7"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err,
              "tauplan: note: <command line>: iterations, rounds ignored: convergence: "
              "critical-batch reads only min_steps, critical_batch, drift\n") == 1);
  CHECK(count(r.err, "tauplan: note:") == 1);
  // Without the ignored keys, no note.
  const auto quiet = run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload",
                                  "fashion-mlp", "--convergence", "critical-batch", "--min_steps",
                                  "100", "--critical_batch", "10"});
  CHECK(quiet.exit_code == 0);
  CHECK(count(quiet.err, "tauplan: note:") == 0);
}

TEST_CASE("notices: a simulation that extrapolates rounds says so once") {
  const auto r = run_tauplan({"simulate", "--platform", "test-crossbar-4", "--workload",
                              "fashion-mlp", "--iterations", "40", "--sim_rounds", "3"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err,
              "tauplan: note: <command line>: sim_rounds 3 < the 40 rounds of 'single': "
              "total_s adds the remaining rounds x the mean simulated round\n") == 1);
  CHECK(count(r.err, "tauplan: note:") == 1);  // three strategies extrapolate, one note
  const auto all = run_tauplan({"simulate", "--platform", "test-crossbar-4", "--workload",
                                "fashion-mlp", "--iterations", "4", "--sim_rounds", "4"});
  CHECK(all.exit_code == 0);
  CHECK(count(all.err, "tauplan: note:") == 0);
}

TEST_CASE("notices: a memory check skipped for a host without GPU props is said once") {
  const auto r =
      run_tauplan({"predict", "--platform", kFixtures + "p-full-missing-route.xml", "--workload",
                   "fashion-mlp", "--workers", "2", "--strategies", "single,sync"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err, "tauplan: note: memory check skipped for host a of ") == 1);
  CHECK(count(r.err, "tauplan: note:") == 1);
  const auto off =
      run_tauplan({"predict", "--platform", kFixtures + "p-full-missing-route.xml", "--workload",
                   "fashion-mlp", "--workers", "2", "--check_memory", "false"});
  CHECK(count(off.err, "tauplan: note:") == 0);
}

TEST_CASE("a row without a baseline has a null speedup, and '-' in the table") {
  const auto r = run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload",
                              "fashion-mlp", "--strategies", "sync", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto row = nlohmann::json::parse(r.out).at("results").at(0);
  CHECK(row.at("speedup").is_null());
  const auto table = run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload",
                                  "fashion-mlp", "--strategies", "sync"});
  CHECK(table.out.find(" -  analytic") != std::string::npos);
  const auto both = run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload",
                                 "fashion-mlp", "--strategies", "single,sync", "--json"});
  REQUIRE(both.exit_code == 0);
  CHECK(nlohmann::json::parse(both.out).at("results").at(1).at("speedup").is_number());
}
