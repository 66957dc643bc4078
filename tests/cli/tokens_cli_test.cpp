// tokens_cli_test.cpp: a target in tokens through the CLI: predict's rows say steps, tokens/s,
// days and GPU-hours (as model/ir/token_target.cpp computes them from the row), a job without it
// prints no such thing, and every bad token target is one line naming file and key, exit 2.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using nlohmann::json;
using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {
// Llama-3-70B (sequence 8192), sync on 4 workers at a global batch of 512 sequences, with the
// step's compute and communication given (what-if keys), so that the time is known exactly.
const std::string kTokensJob =
    "workload: llama3-70b\nstrategies: [sync]\nworkers: 4\nbatch: 512\ncompute_s: 10\n"
    "comm_s: 2\ncheck_memory: false\n";
}  // namespace

TEST_CASE("tokens: predict says steps, tokens/s, days and GPU-hours of each row") {
  const std::string file = write_temp_file("llama-15t.yaml", kTokensJob + "tokens: 15T\n");
  const auto r = run_tauplan({"predict", file, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.out);
  CHECK(doc["context"]["convergence"].get<std::string>().rfind("tokens: 1.5e+13 tokens", 0) == 0);
  REQUIRE(doc["results"].size() == 1);
  const json& row = doc["results"][0];
  // 15e12 / 8192 / 512 = 3,576,278.69 steps, rounded up.
  CHECK(row["rounds"] == 3576279);
  const json& t = row["tokens"];
  const double total_s = row["total_s"];
  CHECK(total_s == Approx(3576279 * row["round_s"].get<double>()));
  CHECK(t["target_tokens"] == 15e12);
  CHECK(t["steps"] == 3576279);
  CHECK(t["tokens_per_s"].get<double>() == 15e12 / total_s);
  CHECK(t["days"].get<double>() == total_s / 86400);
  CHECK(t["gpu_hours"].get<double>() == total_s * 4 / 3600);

  const auto table = run_tauplan({"predict", file});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("3,576,279 steps, ") != std::string::npos);
  CHECK(table.out.find(" tokens/s, ") != std::string::npos);
  CHECK(table.out.find(" GPU-h") != std::string::npos);
}

TEST_CASE("tokens: a job without a token target prints no token summary") {
  const std::string file =
      write_temp_file("llama-iterations.yaml", kTokensJob + "iterations: 100\n");
  const auto r = run_tauplan({"predict", file, "--json"});
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.out);
  CHECK(doc["results"][0]["rounds"] == 100);
  CHECK_FALSE(doc["results"][0].contains("tokens"));
  const auto table = run_tauplan({"predict", file});
  CHECK(table.out.find("GPU-h") == std::string::npos);
}

TEST_CASE("tokens: help-keys lists the job key and the inventory keys") {
  const auto r = run_tauplan({"help-keys"});
  REQUIRE(r.exit_code == 0);
  for (const char* key : {"\ntokens ", "\ntarget.tokens ", "\ntarget.dataset_tokens "})
    CHECK(r.out.find(key) != std::string::npos);
}

TEST_CASE("tokens: bad token targets are one line naming file and key, exit 2") {
  const struct {
    std::string name, text, fragment;
  } jobs[] = {
      {"negative.yaml", kTokensJob + "tokens: -15T\n", "tokens: expected tokens ("},
      {"zero.yaml", kTokensJob + "tokens: 0\n", "tokens: expected tokens ("},
      {"junk.yaml", kTokensJob + "tokens: lots\n", "tokens: expected tokens ("},
      {"suffix.yaml", kTokensJob + "tokens: 15P\n", "tokens: expected tokens ("},
      {"nan.yaml", kTokensJob + "tokens: .nan\n", "tokens: expected tokens ("},
      {"inf.yaml", kTokensJob + "tokens: .inf\n", "tokens: expected tokens ("},
      {"both.yaml", kTokensJob + "tokens: 15T\niterations: 100\n",
       "tokens: expected tokens or iterations"},
      {"mlp.yaml", "workload: fashion-mlp\ntokens: 15T\n",
       "tokens: expected a transformer workload"},
  };
  for (const auto& c : jobs) {
    const std::string file = write_temp_file(c.name, c.text);
    INFO(c.name);
    expect_bad_input({"predict", file}, file + ": " + c.fragment);
  }
  const std::string node =
      "node_types:\n  - {name: h200, gpu_model: H200-SXM-141GB, gpus_per_node: 8, nodes: 1, "
      "price_per_hour: 28, network: {bandwidth: 3.2Tbps, latency: 2us}}\n";
  const struct {
    std::string name, text, fragment;
  } inventories[] = {
      {"inv-both.yaml", "workload: llama3-70b\ntarget: {tokens: 15T, epochs: 1}\n" + node,
       "target.tokens: expected target.tokens or target.epochs"},
      {"inv-junk.yaml", "workload: llama3-70b\ntarget: {tokens: 15 trillion}\n" + node,
       "target.tokens: expected tokens ("},
      {"inv-mlp.yaml", "workload: fashion-mlp\ntarget: {tokens: 15T}\n" + node,
       "target.tokens: expected a transformer workload"},
      {"inv-dataset.yaml",
       "workload: llama3-70b\ntarget: {epochs: 1, dataset_tokens: 2T, dataset_samples: 9}\n" + node,
       "target.dataset_tokens: expected"},
  };
  const std::string scratch =
      std::filesystem::path(write_temp_file("tokens-scratch", "")).parent_path().string();
  for (const auto& c : inventories) {
    const std::string file = write_temp_file(c.name, c.text);
    INFO(c.name);
    const auto r = run_tauplan({"plan", file, "--no-plot", "--recheck", "0"}, scratch);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file + ": " + c.fragment) != std::string::npos);
    CHECK(r.out.empty());
  }
}
