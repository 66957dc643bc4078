// token_target_test.cpp: targets in tokens (model/ir/token_target.hpp): the count's suffixes and
// its bad values, tokens -> samples -> steps -> days in closed form, the job key with the
// refusals of a second target and of a workload without tokens (the inventory's token keys:
// study/plan/planner_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "model/base/error.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"
#include "model/ir/strategy.hpp"
#include "model/ir/token_target.hpp"

using namespace tauplan;

namespace {
// The message of the InputError that `f` throws ("" when none).
template <typename F>
std::string token_error_of(F f) {
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
    const std::string message =
        token_error_of([bad] { model::parse_tokens(bad, "job.yaml", "tokens"); });
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
    const std::string message = token_error_of(
        [&] { model::convergence_model(job(std::string("tokens: 15T\n") + other + "\n"), llama); });
    INFO(message);
    CHECK(message.rfind("job.yaml: tokens: expected tokens or ", 0) == 0);
  }
  CHECK(token_error_of([&] {
          model::convergence_model(job("tokens: -1T\n"), llama);
        }).rfind("job.yaml: tokens: expected tokens (", 0) == 0);
  const model::Workload mlp = model::load_workload("fashion-mlp");
  const std::string message =
      token_error_of([&] { model::convergence_model(job("tokens: 15T\n"), mlp); });
  CHECK(message.rfind("job.yaml: tokens: expected a transformer workload", 0) == 0);
  CHECK(message.find("sample_unit image") != std::string::npos);
}
