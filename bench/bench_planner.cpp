// bench_planner.cpp: `tauplan plan`'s analytic search (issue target: an inventory of >= 5 node
// types and up to 64 GPUs, >= 10,000 configurations evaluated in under 10 s on one core).
//
//   PlanSearch      the whole search of the inventory below (node selections x strategy x
//                   collective x servers x batch x tau x split): counters give the number of
//                   configurations and their rate; the time per iteration is the figure to
//                   compare with 10 s. The same inventory is experiments/planning/
//                   inventories/five-types.yaml, so `tauplan plan` on it does the same search.
//   EvaluateConfig  one configuration (sync ring, K = 64) on an already built platform.
#include <benchmark/benchmark.h>

#include "study/plan/inventory.hpp"
#include "study/plan/planner.hpp"

namespace {

using namespace tauplan;

// 5 node types, 64 GPUs when every node is taken: 4 x K80, 4 x P100 and 4 x T4 nodes of 1 GPU,
// 3 V100 nodes of 4 GPUs and 5 A100 nodes of 8 GPUs (4 + 4 + 4 + 12 + 40 = 64).
const char* kInventory = R"(
workload: resnet-50
target: {accuracy: "75.9% top-1", convergence: critical-batch, min_steps: 12000,
         critical_batch: 8192, drift: 0.1}
objective: min-cost-under-deadline
deadline: 24h
node_types:
  - {name: k80, gpu_model: K80, nodes: 4, price_per_hour: 0.45, market: revocable,
     revocations_per_hour: 0.1, restart_s: 120, network: {bandwidth: 16Gbps, latency: 18us}}
  - {name: p100, gpu_model: P100-PCIE-16GB, nodes: 4, price_per_hour: 1.46,
     network: {bandwidth: 16Gbps, latency: 18us}}
  - {name: t4, gpu_model: T4, nodes: 4, price_per_hour: 0.35, precision: fp16, efficiency: 0.3,
     network: {bandwidth: 16Gbps, latency: 18us}}
  - {name: v100, gpu_model: V100-SXM2-16GB, gpus_per_node: 4, nodes: 3, price_per_hour: 9.92,
     network: {bandwidth: 32Gbps, latency: 18us, gpu_bandwidth: 25GBps, gpu_latency: 3us}}
  - {name: a100, gpu_model: A100-SXM4-80GB, gpus_per_node: 8, nodes: 5, price_per_hour: 29.39,
     market: revocable, revocations_per_hour: 0.05, restart_s: 300,
     network: {bandwidth: 100Gbps, latency: 10us, gpu_bandwidth: 300GBps, gpu_latency: 3us}}
servers: {max: 4, price_per_hour: 0.19, network: {bandwidth: 8Gbps, latency: 18us}}
search:
  strategies: [sync, local-sgd]
  collectives: [ring, tree, hierarchical, ps]
  batch_per_worker: [32, 64, 128]
  tau: [1, 4, 16]
  split: [even, speed]
  servers: [1, 2, 4]
  max_gpus: 64
)";

void BM_PlanSearch(benchmark::State& state) {
  const study::Inventory inventory =
      study::parse_inventory_yaml(kInventory, "<bench inventory>", "");
  std::size_t configurations = 0, feasible = 0, frontier = 0;
  for (auto _ : state) {
    const study::PlanSearch search = study::search_plans(inventory);
    configurations = search.stats.configurations;
    feasible = search.stats.feasible;
    frontier = search.frontier.size();
    benchmark::DoNotOptimize(search.best);
  }
  state.counters["configurations"] = static_cast<double>(configurations);
  state.counters["feasible"] = static_cast<double>(feasible);
  state.counters["frontier"] = static_cast<double>(frontier);
  state.counters["configs_per_s"] = benchmark::Counter(
      static_cast<double>(configurations) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanSearch)->Unit(benchmark::kSecond)->Iterations(3);

void BM_EvaluateConfig(benchmark::State& state, const char* collective) {
  const study::Inventory inventory =
      study::parse_inventory_yaml(kInventory, "<bench inventory>", "");
  study::Selection selection;
  selection.nodes = {4, 4, 4, 3, 5};  // every node: 64 GPUs
  selection.servers = 4;
  const model::Platform platform = study::make_selection_platform(inventory, selection);
  const auto convergence = study::target_convergence(inventory);
  study::PlanConfig config;
  config.selection = selection;
  config.selection.servers = 0;
  config.gpus = selection.gpus(inventory);
  config.strategy = "sync";
  config.collective = collective;
  config.servers = std::string(collective) == "ps" ? 4 : 0;
  config.batch_per_worker = 32;
  config.split = model::BatchSplit::Speed;
  for (auto _ : state)
    benchmark::DoNotOptimize(study::evaluate_config(inventory, config, platform, *convergence));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_EvaluateConfig, ring_K64, "ring");
BENCHMARK_CAPTURE(BM_EvaluateConfig, tree_K64, "tree");
BENCHMARK_CAPTURE(BM_EvaluateConfig, ps_K64, "ps");

}  // namespace
