// bench_sim.cpp: how long simulations take (wall time of sim::simulate, one core).
//
// Targets (issue 3): one 64 MiB ring all-reduce over 1024 workers, step-accurate, under 2 s;
// 100 local-sgd rounds of 256 workers in coarse mode under 1 s. Platforms are crossbar clusters
// written to a temporary file (100 Tflop/s hosts, private 25 GB/s, 1 us links), CM02 without
// crosstraffic. Each iteration runs in a forked child (one SimGrid Engine per process); the
// platform load is reported as a counter, not timed.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

// GCC 12 reports -Wnull-dereference inside nlohmann's inlined getters (a false positive).
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>

#include "model/convergence/convergence.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/strategy.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"

namespace {

using namespace tauplan;
using Clock = std::chrono::steady_clock;

std::string crossbar_xml(int hosts) {
  char path[] = "/tmp/tauplan-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) std::abort();
  close(fd);
  std::ofstream out(path);
  out << "<?xml version='1.0'?>\n"
         "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n"
         "  <cluster id=\"c\" prefix=\"gpu-\" radical=\"0-"
      << hosts - 1
      << "\" suffix=\"\" speed=\"100Tf\" bw=\"25GBps\" lat=\"1us\">\n"
         "    <prop id=\"gpu_memory_bytes\" value=\"80GB\"/>\n"
         "  </cluster>\n"
         "</platform>\n";
  return path;
}

/// Runs `body` in a child; returns its JSON ({"wall_s": ..., ...}), or {} if it failed.
nlohmann::json in_child(const std::function<nlohmann::json()>& body) {
  std::fflush(nullptr);
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    std::string text;
    try {
      text = body().dump();
    } catch (const std::exception& e) {
      text = nlohmann::json{{"error", e.what()}}.dump();
    }
    if (write(fd[1], text.data(), text.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fd[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (text.empty()) return {};
  return nlohmann::json::parse(text);
}

void report(benchmark::State& state, const nlohmann::json& r) {
  if (!r.contains("wall_s")) {
    state.SkipWithError(r.value("error", std::string("simulation child failed")).c_str());
    return;
  }
  state.SetIterationTime(r.value("wall_s", 0.0));
  state.counters["simulated_s"] = r.value("simulated_s", 0.0);
  state.counters["flows"] = r.value("flows", 0.0);
  state.counters["flows_reused"] = r.value("flows_reused", 0.0);
  state.counters["load_s"] = r.value("load_s", 0.0);
}

nlohmann::json timed(const std::string& xml,
                     const std::function<model::Plan(const model::Platform&)>& make,
                     const sim::SimOptions& options) {
  const auto t0 = Clock::now();
  const model::Platform platform = sim::load_platform(xml);
  const model::Plan plan = make(platform);
  const auto t1 = Clock::now();
  const model::ResultRow row = sim::simulate(plan, platform, options);
  const auto t2 = Clock::now();
  return {{"wall_s", std::chrono::duration<double>(t2 - t1).count()},
          {"load_s", std::chrono::duration<double>(t1 - t0).count()},
          {"simulated_s", row.total_s},
          {"flows", row.extra.value("flows_started", 0LL)},
          {"flows_reused", row.extra.value("flows_reused", 0LL)}};
}

/// One ring all-reduce of 64 MiB over range(0) workers; range(1): 1 reuse steps, 0 every step.
void BM_RingAllReduce64MiB_Step(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const std::string xml = crossbar_xml(k);
  sim::SimOptions options;
  options.reuse_steps = state.range(1) != 0;
  for (auto _ : state) {
    report(state, in_child([&] {
             return timed(
                 xml,
                 [k](const model::Platform& platform) {
                   model::Plan plan;
                   plan.strategy = "ring";
                   plan.workers = k;
                   plan.worker_hosts = platform.worker_hosts();
                   plan.rounds = 1;
                   model::Op op;
                   op.kind = model::OpKind::Collective;
                   op.label = "all-reduce";
                   op.algorithm = "ring";
                   op.bytes = 64.0 * 1024 * 1024;
                   for (int w = 0; w < k; ++w)
                     op.group.push_back(w);
                   plan.add(op);
                   return plan;
                 },
                 options);
           }));
  }
  std::remove(xml.c_str());
}
BENCHMARK(BM_RingAllReduce64MiB_Step)
    ->ArgNames({"workers", "reuse"})
    ->Args({256, 1})
    ->Args({1024, 1})
    ->Args({256, 0})
    ->Args({1024, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

/// 100 rounds of local-sgd (tau 10, resnet-50) over range(0) workers, coarse mode.
void BM_LocalSgd100Rounds_Coarse(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const std::string xml = crossbar_xml(k);
  sim::SimOptions options;
  options.granularity = sim::Granularity::Coarse;
  for (auto _ : state) {
    report(state, in_child([&] {
             return timed(
                 xml,
                 [k](const model::Platform& platform) {
                   model::StrategyOptions o;
                   o.workers = k;
                   o.batch = 32;
                   o.tau = 10;
                   o.collective = "ring";
                   const model::FixedCounts convergence(1000);  // 100 rounds of tau = 10
                   return model::make_plan("local-sgd", o, model::load_workload("resnet-50"),
                                           platform, convergence);
                 },
                 options);
           }));
  }
  std::remove(xml.c_str());
}
BENCHMARK(BM_LocalSgd100Rounds_Coarse)
    ->ArgNames({"workers"})
    ->Arg(256)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
