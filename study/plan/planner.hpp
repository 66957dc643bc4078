// planner.hpp: the search behind `tauplan plan`: every configuration an inventory allows,
// evaluated with the analytic engine, its Pareto frontier of time against cost, and the best
// configuration for the objective.
//
// A configuration is a selection of nodes per type (K = all their GPUs, at most max_gpus), a
// strategy (sync: the global batch is K x the per-worker batch, split evenly or by speed;
// local-sgd: tau local steps per round), a collective and, for `ps`, a number of parameter
// servers. Each is built as a Plan (model/ir/strategy.hpp) on the selection's platform
// (study/plan/inventory.hpp) and evaluated in closed form (model/analytic/analytic.hpp). Time
// is the expected time to the target with revocations of revocable nodes
// (study/common/revocation.hpp; the stall is the largest restart cost of the selection's
// revocable types); cost is that time x the price of the selected nodes and servers (billed during
// stalls too). Each point's bottleneck is the largest part of its expected time: compute (the mean
// worker's compute), straggler (waiting for the slowest worker beyond the mean), communication
// (exposed collectives), revocations (lost work and stalls); a compute-bound point whose per-worker
// batch is the largest of the search that fits in its GPUs' memory is labelled memory (more memory
// would allow a larger batch and fewer steps). Configurations that do not fit in memory, or that a
// collective cannot run (the hierarchical all-reduce on nodes with different GPU counts) are
// counted, not kept. Strategy mesh (a transformer's layout, model/ir/strategy_mesh.cpp): every
// layout of the search's tensor and pipeline sizes, micro-batch sizes, ZeRO stages and
// recomputation whose mesh has the selection's K GPUs, with the global batch K x batch_per_worker;
// each is costed by the closed form of model/ir/layout_cost.hpp (layout_time) rather than its Plan,
// whose op count grows with micro-batches x stages x tensor ranks (about 10^6 ops for GPT-3 175B at
// 1536 micro-batches). The Plan's longest path equals the closed form without a pipeline and is at
// most it with one (the closed form charges every pipeline slot its sends;
// tests/sim/layout_plan_test.cpp). A layout that check_layout refuses is counted as infeasible
// (other), one whose peak memory per GPU (model/ir/layout_memory.hpp) exceeds the selection's
// smallest GPU as infeasible (memory). Its compute part is the pipeline's compute slots, (m + p -
// 1) x the slowest stage's compute and element-wise time; the straggler part then holds the bubble,
// the stages' imbalance and recomputation (the mean worker is charged the model's flop without it).
// Each evaluation carries the memory per GPU its fit was checked with and its MFU (the job's
// model flop per second over the selected GPUs' dense peaks at their node types' precision).
// What it leaves out: using only some GPUs of a node, placement of servers, heterogeneous
// restart costs within one job (the largest is used), the exact distribution of the time (a
// deadline is met in expectation, or with `deadline_confidence` under the normal approximation),
// and anything the analytic engine leaves out (contention beyond
// what the collective formulas name: that is what the simulator re-check is for).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/inputs/mesh.hpp"
#include "study/plan/inventory.hpp"

namespace tauplan::study {

enum class Bottleneck { Compute, Communication, Straggler, Memory, Revocations };
const char* to_string(Bottleneck bottleneck);

struct PlanConfig {
  Selection selection;
  int gpus = 0;  ///< K
  std::string strategy;
  std::string collective;
  int servers = 0;  ///< parameter servers used (0 unless the collective needs them)
  model::BatchSplit split = model::BatchSplit::Even;
  int batch_per_worker = 0;
  int tau = 1;
  double round_budget_s = 0;  ///< local-sgd with a time budget (then tau is ignored)
  int staleness_bound = 0;    ///< async-ps: SSP bound (0 = unbounded)
  model::Layout layout;       ///< mesh: the layout of the K GPUs
  /// The job's `batch`: global (K x per worker) for sync and single, per worker for local-sgd.
  double job_batch() const;
};

struct Evaluation {
  PlanConfig config;
  double round_s = 0;    ///< failure-free round
  double compute_s = 0;  ///< compute per step on the critical path
  double comm_s = 0;     ///< exposed communication per round
  long long rounds = 0;
  double convergence_steps = 0;
  double failure_free_s = 0;
  double time_s = 0;         ///< expected, with revocations
  double time_stddev_s = 0;  ///< of one run
  double cost = 0;           ///< expected
  double price_per_hour = 0;
  double revocations_per_hour = 0;  ///< of the whole selection
  double restart_s = 0;
  double expected_revocations = 0;
  // Parts of the expected time (they sum to time_s up to overlap of compute and communication).
  double compute_part_s = 0;
  double straggler_part_s = 0;
  double comm_part_s = 0;
  double revocation_part_s = 0;
  bool memory_capped = false;
  Bottleneck bottleneck = Bottleneck::Compute;
  /// Memory per GPU as the fit was checked: a layout's peak stage with its reserve
  /// (model/ir/layout_memory.hpp); for the data-parallel strategies, Workload::memory_bytes of the
  /// largest per-worker batch (model state and activations, no reserve: strategy.cpp's check).
  double memory_per_gpu_bytes = 0;
  /// Model flop per second of the whole job in a failure-free round (without recomputation).
  double model_flops = 0;
  /// Sum of the selected GPUs' dense catalog peaks at their node type's precision.
  double peak_flops = 0;
  /// Model-flops utilisation: model_flops / peak_flops (-1 when there is no peak).
  double mfu() const { return peak_flops > 0 ? model_flops / peak_flops : -1; }
};

struct SearchStats {
  std::size_t subsets = 0;         ///< node selections searched
  std::size_t configurations = 0;  ///< configurations evaluated analytically
  std::size_t feasible = 0;
  std::size_t infeasible_memory = 0;
  std::size_t infeasible_other = 0;
  double seconds = 0;
};

struct PlanSearch {
  std::vector<Evaluation> evaluations;  ///< the feasible configurations
  std::vector<std::size_t> frontier;    ///< Pareto frontier (time, cost), by increasing time
  /// Best first for the objective (the top `ranking_size`), without configurations equivalent to
  /// a better-ranked one (same nodes, same expected time and cost).
  std::vector<std::size_t> ranking;
  bool objective_met = false;  ///< false when no configuration meets the deadline (or none fits)
  long best = -1;              ///< ranking[0] when the objective is met
  long nearest = -1;           ///< deadline missed: the fastest configuration
  SearchStats stats;
};

/// Searches every configuration of the inventory (see the header comment). With
/// `shared_plans` (the default) one Plan is built per (node selection, strategy, collective,
/// servers) and its compute ops are re-costed for each batch, tau and split; without, every
/// configuration builds its own Plan through make_plan (the reference: the same numbers, slower).
PlanSearch search_plans(const Inventory& inventory, std::size_t ranking_size = 10,
                        bool shared_plans = true);

/// Evaluates one configuration; throws InputError when it is infeasible (memory, collective).
Evaluation evaluate_config(const Inventory& inventory, const PlanConfig& config,
                           const model::Platform& platform,
                           const model::ConvergenceModel& convergence);

/// Indices of the points no other point dominates (a dominates b: a.time <= b.time and
/// a.cost <= b.cost, one of them strictly), by increasing time. Of exact duplicates one is kept.
std::vector<std::size_t> pareto_frontier(const std::vector<double>& time,
                                         const std::vector<double>& cost);
bool dominates(double time_a, double cost_a, double time_b, double cost_b);

/// "2 x v100 + 4 x k80" (K=12).
std::string describe_selection(const Inventory& inventory, const Selection& selection);
/// "sync ring, 64/worker, split speed" or "local-sgd ps x2, tau 4, 32/worker".
std::string describe_strategy(const PlanConfig& config);

/// A job file (YAML) for `tauplan simulate` re-checking `evaluation` on the platform XML at
/// `platform_file` (written next to the job): the same workload, strategy and convergence (an
/// epochs target becomes fixed counts) and the re-check settings (rounds simulated, network
/// model, seed). With recheck.faults and sim_rounds 0 (every round simulated), revocable nodes
/// fail as simulated faults "HOST~MTBF" with the restart stall; otherwise the revocations are
/// left to the closed form, applied by the caller to the simulated round.
std::string candidate_job_yaml(const Inventory& inventory, const Evaluation& evaluation,
                               const std::string& platform_file);

}  // namespace tauplan::study
