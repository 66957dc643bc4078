// token_target_test.cpp: targets in tokens (model/ir/token_target.hpp): the count's suffixes and
// its bad values, tokens -> samples -> steps -> days in closed form, the job key and the
// inventory keys with the refusals of a second target and of a workload without tokens.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "model/base/error.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"
#include "model/ir/strategy.hpp"
#include "model/ir/token_target.hpp"
#include "model/planning/inventory.hpp"

using namespace tauplan;

namespace {
// The message of the InputError that `f` throws ("" when none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

model::Job job(const std::string& yaml) {
  return model::parse_job_yaml(yaml, "job.yaml", "", model::model_job_keys(), {});
}

std::string inventory_text(const std::string& workload, const std::string& target) {
  return "workload: " + workload + "\ntarget: " + target +
         "\nnode_types:\n"
         "  - {name: h200, gpu_model: H200-SXM-141GB, gpus_per_node: 8, nodes: 1, "
         "price_per_hour: 28, network: {bandwidth: 3.2Tbps, latency: 2us}}\n";
}
}  // namespace

TEST_CASE("tokens: suffixes K, M, G or B, T and plain numbers") {
  CHECK(model::parse_tokens("15T", "f", "tokens") == 15e12);
  CHECK(model::parse_tokens("2.5B", "f", "tokens") == 2.5e9);
  CHECK(model::parse_tokens("300G", "f", "tokens") == 300e9);
  CHECK(model::parse_tokens("7M", "f", "tokens") == 7e6);
  CHECK(model::parse_tokens("4K", "f", "tokens") == 4e3);
  CHECK(model::parse_tokens("3e11", "f", "tokens") == 3e11);
  CHECK(model::parse_tokens("1000", "f", "tokens") == 1000);
  CHECK(model::parse_tokens("1e18", "f", "tokens") == 1e18);
}

TEST_CASE("tokens: negative, zero, junk, NaN, inf and too many are refused naming file and key") {
  for (const char* bad : {"-5T", "-1", "0", "0T", "T", "", "abc", "15X", "15t", "15TT", "1.5e",
                          "nan", "NaN", "inf", "-inf", "infT", "0x10", "1e19", "2000000T"}) {
    const std::string message = error_of([bad] { model::parse_tokens(bad, "job.yaml", "tokens"); });
    INFO("value: '" << bad << "' message: " << message);
    CHECK(message.rfind("job.yaml: tokens: expected tokens", 0) == 0);
  }
}

TEST_CASE("tokens -> samples -> steps -> days in closed form (Llama-3-70B, 15T, batch 512)") {
  // 15e12 / 8192 = 1,831,054,687.5 sequences; / 512 = 3,576,278.69 steps, rounded up.
  CHECK(15e12 / 8192 / 512 == Approx(3576278.686523));
  CHECK(model::steps_for_tokens(15e12, 8192, 512) == 3576279);
  const model::Workload llama = model::load_workload("llama3-70b");
  REQUIRE(llama.transformer);
  CHECK(llama.transformer->sequence == 8192);
  const auto convergence = model::convergence_model(job("tokens: 15T\nbatch: 512\n"), llama);
  const auto* tokens = dynamic_cast<const model::TokenConvergence*>(convergence.get());
  REQUIRE(tokens);
  CHECK(tokens->tokens() == 15e12);
  CHECK(tokens->sequence() == 8192);
  CHECK(convergence->serial_steps(512) == 15e12 / 8192 / 512);
  // The engines round the step count up (rounds_from_steps), as steps_for_tokens does.
  CHECK(model::rounds_from_steps(convergence->serial_steps(512), "job.yaml") == 3576279);
  // Local SGD: K b tau samples per round.
  CHECK(convergence->local_sgd_rounds(64, 8, 1) == 15e12 / 8192 / 512);
  // A step of 10 s on 512 GPUs.
  const double step_s = 10;
  const double total_s = 3576279 * step_s;
  const model::TokenSummary s = model::summarise_tokens(15e12, 3576279, total_s, 512);
  CHECK(s.steps == 3576279);
  CHECK(s.days == total_s / 86400);
  CHECK(s.days == Approx(413.9212));
  CHECK(s.tokens_per_s == 15e12 / total_s);
  CHECK(s.gpu_hours == total_s * 512 / 3600);
  CHECK(s.gpu_hours == Approx(5086263.5));
  CHECK(model::to_text(s) == "3,576,279 steps, 419K tokens/s, 413.92 d, 5,086,263 GPU-h");
}

TEST_CASE("tokens: a job without it keeps its convergence model") {
  const model::Workload llama = model::load_workload("llama3-70b");
  const auto convergence = model::convergence_model(job("iterations: 100\n"), llama);
  CHECK(dynamic_cast<const model::TokenConvergence*>(convergence.get()) == nullptr);
  CHECK(convergence->serial_steps(512) == 100);
}

TEST_CASE("tokens: beside another target key, or on a workload without tokens, is refused") {
  const model::Workload llama = model::load_workload("llama3-70b");
  for (const char* other : {"iterations: 100", "rounds: 10", "convergence: critical-batch",
                            "min_steps: 10", "critical_batch: 5", "convergence_table: t.csv"}) {
    const std::string message = error_of(
        [&] { model::convergence_model(job(std::string("tokens: 15T\n") + other + "\n"), llama); });
    INFO(message);
    CHECK(message.rfind("job.yaml: tokens: expected tokens or ", 0) == 0);
  }
  CHECK(error_of([&] {
          model::convergence_model(job("tokens: -1T\n"), llama);
        }).rfind("job.yaml: tokens: expected tokens (", 0) == 0);
  const model::Workload mlp = model::load_workload("fashion-mlp");
  const std::string message =
      error_of([&] { model::convergence_model(job("tokens: 15T\n"), mlp); });
  CHECK(message.rfind("job.yaml: tokens: expected a transformer workload", 0) == 0);
  CHECK(message.find("sample_unit image") != std::string::npos);
}

TEST_CASE("tokens: the inventory's target.tokens and epochs over target.dataset_tokens") {
  const model::Inventory inv =
      model::parse_inventory_yaml(inventory_text("llama3-70b", "{tokens: 15T}"), "inv.yaml", "");
  CHECK(inv.target.convergence == "tokens");
  CHECK(inv.target.tokens == 15e12);
  CHECK(inv.target.sequence == 8192);
  const auto convergence = model::target_convergence(inv);
  CHECK(model::rounds_from_steps(convergence->serial_steps(512), "inv.yaml") == 3576279);

  // 1.5 epochs of 2T tokens: the same target as 3T tokens.
  const model::Inventory epochs = model::parse_inventory_yaml(
      inventory_text("llama3-70b", "{epochs: 1.5, dataset_tokens: 2T}"), "inv.yaml", "");
  CHECK(epochs.target.convergence == "epochs");
  CHECK(epochs.target.dataset_samples == 2e12 / 8192);
  CHECK(epochs.target.tokens == 3e12);
  CHECK(model::target_convergence(epochs)->serial_steps(512) == Approx(3e12 / 8192 / 512));
}

TEST_CASE("tokens: bad inventory token targets name the file and key") {
  const struct {
    std::string workload, target, prefix;
  } cases[] = {
      {"llama3-70b", "{tokens: 15T, epochs: 1}",
       "inv.yaml: target.tokens: expected target.tokens or target.epochs"},
      {"llama3-70b", "{tokens: 15T, dataset_samples: 5}", "inv.yaml: target.tokens: expected"},
      {"llama3-70b", "{tokens: 15T, convergence: epochs}", "inv.yaml: target.tokens: expected"},
      {"llama3-70b", "{tokens: 15T, min_steps: 5, critical_batch: 5}",
       "inv.yaml: target.tokens: expected"},
      {"llama3-70b", "{tokens: 0}", "inv.yaml: target.tokens: expected tokens"},
      {"llama3-70b", "{tokens: -3T}", "inv.yaml: target.tokens: expected tokens"},
      {"llama3-70b", "{tokens: .nan}", "inv.yaml: target.tokens: expected tokens"},
      {"llama3-70b", "{tokens: 15Q}", "inv.yaml: target.tokens: expected tokens"},
      {"llama3-70b", "{tokens: [1, 2]}", "inv.yaml: target.tokens: "},
      {"fashion-mlp", "{tokens: 15T}", "inv.yaml: target.tokens: expected a transformer workload"},
      {"llama3-70b", "{epochs: 1, dataset_tokens: 2T, dataset_samples: 5}",
       "inv.yaml: target.dataset_tokens: expected"},
      {"llama3-70b", "{dataset_tokens: 2T}", "inv.yaml: target.epochs: expected"},
      {"llama3-70b", "{epochs: 1, dataset_tokens: 0.5K0}",
       "inv.yaml: target.dataset_tokens: expected tokens"},
      {"fashion-mlp", "{epochs: 1, dataset_tokens: 2T}",
       "inv.yaml: target.dataset_tokens: expected a transformer"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(
        [&] { model::parse_inventory_yaml(inventory_text(c.workload, c.target), "inv.yaml", ""); });
    INFO(c.target << " -> " << message);
    CHECK(message.rfind(c.prefix, 0) == 0);
  }
}
