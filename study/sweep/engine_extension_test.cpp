// engine_extension_test.cpp: an engine defined here, outside the tree, is found by the studies
// through its capabilities, with no change to study/ (issue 25: "predictions from every
// registered engine chosen by capability").
//
// half-compute-test predicts: it is the closed form on the same plans with every row's compute
// halved (round and total shortened by the same seconds), and it shares the process. Once
// registered, predictors() lists it after the built-in ones, at its one network model; a sweep
// takes it as --engine and runs its points in this process, and its rows are the closed form's
// with compute / 2. The closed form a study needs (first_predictor: the first engine that shares
// the process) is still analytic, registered before it. It has no verb of the command line, so
// the studies that run each engine in a child process leave it out, and a sweep whose points
// need children refuses it.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "model/base/error.hpp"
#include "model/ir/engine.hpp"
#include "study/common/engines.hpp"
#include "study/common/study_test_support.hpp"
#include "study/sweep/sweep.hpp"

using namespace tauplan;

namespace {

class HalfComputeEngine : public model::Engine {
 public:
  const char* name() const override { return "half-compute-test"; }
  const char* verb() const override { return "predict-half-compute-test"; }
  const char* description() const override { return "test: the closed form, compute halved"; }
  model::EngineCapabilities capabilities() const override {
    model::EngineCapabilities can;
    can.predicts = true;
    can.shares_process = true;
    return can;
  }
  std::vector<model::ResultRow> run(const model::JobInputs& inputs,
                                    model::RunContext& context) const override {
    std::vector<model::ResultRow> rows = model::make_analytic_engine()->run(inputs, context);
    for (model::ResultRow& row : rows) {
      const double saved_s = row.compute_s / 2;
      row.compute_s -= saved_s;
      row.round_s -= saved_s;
      row.total_s = static_cast<double>(row.rounds) * row.round_s;
      row.engine = name();
    }
    return rows;
  }
};

/// Registers the test engine once in this process.
void register_half_compute() {
  static const bool registered = [] {
    study::register_engine(std::make_unique<HalfComputeEngine>());
    return true;
  }();
  (void)registered;
}

}  // namespace

TEST_CASE("engine extension: a predicting engine registered here is chosen by its capabilities") {
  register_half_compute();
  std::vector<std::string> labels;
  for (const study::Predictor& p : study::predictors(study::NetworkModels::Each))
    labels.push_back(p.label);
  CHECK(labels ==
        std::vector<std::string>{"analytic", "simgrid_cm02", "simgrid_lv08", "half-compute-test"});
  CHECK(study::predicting_engine_names() ==
        std::vector<std::string>{"analytic", "simgrid", "half-compute-test"});
  // The closed form a study needs is the first engine that shares the process: analytic.
  const std::vector<study::Predictor> engines = study::predictors(study::NetworkModels::Default);
  const std::size_t closed = study::first_predictor(
      engines, [](const model::EngineCapabilities& can) { return can.shares_process; }, "test");
  CHECK(engines[closed].label == "analytic");
  // No registered engine injects failures and shares the process: a logic error naming who
  // asked.
  CHECK_THROWS_WITH(study::first_predictor(
                        engines,
                        [](const model::EngineCapabilities& can) {
                          return can.shares_process && can.injects_failures;
                        },
                        "the asker"),
                    Catch::Contains("the asker"));
  // It has no verb of the command line: the studies that run each engine in a child process
  // (validate, validate --testbed) leave it out.
  std::vector<std::string> in_children;
  for (const study::Predictor& p :
       study::predictors(study::NetworkModels::Each, study::RunsIn::ChildProcess))
    in_children.push_back(p.label);
  CHECK(in_children == std::vector<std::string>{"analytic", "simgrid_cm02", "simgrid_lv08"});
  // Its name is taken once.
  CHECK_THROWS_AS(study::register_engine(std::make_unique<HalfComputeEngine>()),
                  std::invalid_argument);
}

TEST_CASE("engine extension: a sweep runs the registered engine in this process") {
  register_half_compute();
  const test::Scratch scratch("engine-extension-sweep");
  const std::string job =
      scratch.write("job.yaml", "platform: " + test::source_path("platforms/test-crossbar-4.xml") +
                                    "\nworkload: fashion-mlp\nstrategies: [sync]\n");
  study::SweepRequest request;
  request.job_file = job;
  request.sets = {"workers=2,4"};
  request.quiet = true;
  request.fresh = true;
  request.engine = "analytic";
  request.out = scratch.path("analytic");
  const study::SweepOutcome analytic = study::run_sweep(request);
  request.engine = "half-compute-test";
  request.out = scratch.path("half");
  const study::SweepOutcome half = study::run_sweep(request);
  REQUIRE(half.failed == 0);
  CHECK(half.document.at("context").at("evaluation") == "in process");
  const auto& a = analytic.document.at("results");
  const auto& h = half.document.at("results");
  REQUIRE(a.size() == 2);
  REQUIRE(h.size() == 2);
  // A swept platform key needs a child per point: the engine, having no verb, is refused.
  request.sets = {"workers=2,4", "network_model=CM02,LV08"};
  request.out = scratch.path("refused");
  try {
    study::run_sweep(request);
    FAIL("a sweep in child processes took an engine without a verb");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--engine") != std::string::npos);
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(h[i].dump());
    const double compute_s = a[i].at("compute_s").get<double>();
    REQUIRE(compute_s > 0);
    CHECK(h[i].at("engine") == "half-compute-test");
    CHECK(h[i].at("compute_s").get<double>() == Approx(compute_s / 2));
    CHECK(h[i].at("round_s").get<double>() ==
          Approx(a[i].at("round_s").get<double>() - compute_s / 2));
  }
}
