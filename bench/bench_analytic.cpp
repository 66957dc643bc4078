// bench_analytic.cpp: analytic evaluations per second (issue target: > 1e6/s at K = 8, one core).
//
// Three levels, each at K = 8 and K = 1024 on a crossbar platform:
//   Evaluate            longest path over an already compiled plan (what a what-if loop re-runs
//                       when only a duration changes),
//   CompileAndEvaluate  costing every op (routes, alpha-beta collectives) + longest path: one
//                       full analytic evaluation of a given Plan,
//   GenerateAndAnalyze  building the Plan from the job's choices as well (what a planner's
//                       search pays per configuration).
#include <benchmark/benchmark.h>

#include "model/analytic/analytic.hpp"
#include "model/ir/strategy.hpp"

namespace {

using namespace tauplan;

struct Setup {
  model::Platform platform;
  model::Workload workload;
  model::StrategyOptions options;
  model::CriticalBatch convergence{1000, 512, 0.2};
};

Setup make_setup(int workers, const std::string& collective) {
  Setup s;
  std::vector<double> speeds(static_cast<size_t>(workers));
  for (size_t i = 0; i < speeds.size(); ++i)
    speeds[i] = 1e13 * (1.0 + 0.5 * static_cast<double>(i % 3));
  s.platform = model::make_crossbar_platform(speeds, 12.5e9, 5e-6);
  s.workload.name = "resnet-50-like";
  s.workload.parameters = 25.6e6;
  s.workload.flop_per_sample = 24.6e9;
  s.options.workers = workers;
  s.options.batch = 32.0 * workers;
  s.options.tau = 8;
  s.options.collective = collective;
  s.options.split = model::BatchSplit::Speed;
  return s;
}

void BM_Evaluate(benchmark::State& state, const char* strategy) {
  Setup s = make_setup(static_cast<int>(state.range(0)), "ring");
  const auto plan = model::make_plan(strategy, s.options, s.workload, s.platform, s.convergence);
  const auto compiled = model::compile(plan, s.platform);
  for (auto _ : state)
    benchmark::DoNotOptimize(model::evaluate(compiled));
  state.SetItemsProcessed(state.iterations());
}

void BM_CompileAndEvaluate(benchmark::State& state, const char* strategy) {
  Setup s = make_setup(static_cast<int>(state.range(0)), "ring");
  const auto plan = model::make_plan(strategy, s.options, s.workload, s.platform, s.convergence);
  for (auto _ : state)
    benchmark::DoNotOptimize(model::evaluate(model::compile(plan, s.platform)));
  state.SetItemsProcessed(state.iterations());
}

void BM_GenerateAndAnalyze(benchmark::State& state, const char* strategy) {
  Setup s = make_setup(static_cast<int>(state.range(0)), "ring");
  for (auto _ : state) {
    const auto plan = model::make_plan(strategy, s.options, s.workload, s.platform, s.convergence);
    benchmark::DoNotOptimize(model::analyze(plan, s.platform));
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(BM_Evaluate, sync, "sync")->Arg(8)->Arg(1024);
BENCHMARK_CAPTURE(BM_Evaluate, local_sgd, "local-sgd")->Arg(8)->Arg(1024);
BENCHMARK_CAPTURE(BM_CompileAndEvaluate, sync, "sync")->Arg(8)->Arg(1024);
BENCHMARK_CAPTURE(BM_CompileAndEvaluate, local_sgd, "local-sgd")->Arg(8)->Arg(1024);
BENCHMARK_CAPTURE(BM_GenerateAndAnalyze, sync, "sync")->Arg(8)->Arg(1024);
