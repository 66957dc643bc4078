// strategy.hpp: strategies, which own their rules and turn a job's choices into a Plan.
//
// single (T0): one worker, batch b. sync (T1): the global batch b split over K workers (evenly
// or in proportion to speed, as HetSeq balances mixed GPUs), gradients all-reduced every step,
// optionally overlapped with the backward pass in gradient buckets (PyTorch DDP). local-sgd
// (T2, SparkNet): each worker takes tau local steps at batch b (or as many as fit in a time
// budget per round), then parameters are averaged. async-ps: asynchronous parameter servers
// (Downpour-style, optionally with an SSP staleness bound): no barrier between workers.
// mesh: a transformer laid out over a data x tensor x pipeline mesh (strategy_mesh.cpp).
// A strategy class owns every rule that depends on which strategy it is: the job keys that
// matter to it, how it normalises the others (K = 1 for single, tau only where local steps
// exist), its label, whether it is the baseline of speedups, its rounds from a convergence
// model, and its plan. make_plan() is the only way to a Plan; nothing outside a strategy's own
// file and the registry compares a strategy's name. Each strategy is one file
// (strategy_single.cpp, ...) plus one line in strategy.cpp's registry.
// What it leaves out: layouts of workloads other than transformers.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/convergence/convergence.hpp"
#include "model/inputs/mesh.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/plan.hpp"
#include "model/ir/result.hpp"

namespace tauplan::model {

struct StrategyOptions {
  std::string file = "<job>";  ///< job file, named in errors
  /// The keys a flag gave (--hosts), which errors name as the flag, not the job file.
  std::set<std::string> keys_from_command_line;
  /// Where `key` was given, for an error: {file, key}, or {"command line", "--key"}.
  std::pair<std::string, std::string> origin_of(const std::string& key) const {
    return origins().of(key);
  }
  KeyOrigins origins() const { return KeyOrigins(file, keys_from_command_line); }
  int workers = 1;   ///< K
  double batch = 1;  ///< b
  int tau = 1;
  BatchSplit split = BatchSplit::Even;
  std::string collective;  ///< collective algorithm (empty: the registry's default)
  int micro_batches = 1;   ///< sync: micro-batches per step (gradient accumulation)
  bool overlap = false;
  double bucket_bytes = 25.0 * 1024 * 1024;
  std::vector<std::string> hosts;  ///< explicit worker hosts, else the first K workers
  std::string single_host;         ///< host for the one-worker baseline, else the fastest worker
  int servers = 1;                 ///< servers used by server-based collectives and async-ps
  int staleness_bound = 0;         ///< async-ps: SSP bound s (0 = unbounded)
  double round_budget_s = 0;       ///< local-sgd: time budget per round (0: fixed tau)
  double step_overhead_s = 0;      ///< fixed cost per training step (a host prop overrides it)
  double compute_s = -1;           ///< what-if C(b) on the fastest worker, seconds (-1: derive)
  double comm_s = -1;              ///< what-if S per collective, seconds (-1: derive)
  bool check_memory = true;
  Layout layout;  ///< mesh: the layout, micro-batches, schedule, ZeRO (the layout job keys)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  virtual const char* description() const = 0;
  /// Job keys that shape this strategy's plan besides workload, platform, batch, convergence
  /// and the what-if overrides ("workers", "tau", "split", "collective", ...).
  virtual std::vector<std::string> keys() const = 0;
  bool uses(const std::string& key) const;
  /// The strategy speedups are measured against (T0): one worker, serial SGD.
  virtual bool is_baseline() const { return false; }
  /// Whether a job that names no strategies, and a plan search whose inventory lists none,
  /// include it (a strategy whose convergence needs a number the catalog cannot give, as
  /// async-ps's staleness cost, is run only when asked for).
  virtual bool listed_by_default() const { return true; }
  /// True when its plans have no barrier between workers (Plan::asynchronous): measured only
  /// with workers really running at once, its rounds are server updates.
  virtual bool asynchronous() const { return false; }
  /// Whether it splits the model over a mesh (a layout: tensor and pipeline parallelism), so
  /// that exec trains it with exec/pipeline_parallel.hpp's ranks, not replicas.
  virtual bool splits_model() const { return false; }
  /// True when the job's `batch` is the global batch split over the workers (sync); false
  /// when it is each worker's own batch (single, local-sgd).
  virtual bool splits_batch() const { return false; }
  /// The job's `batch` for a per-worker batch on K workers.
  double job_batch(double per_worker_batch, int workers) const;
  /// `options` with every choice this strategy does not use set to its neutral value
  /// (workers 1 for single, tau 1 without local steps, even split unless the batch is split,
  /// no collective for one worker), so that jobs differing only in ignored keys give the
  /// same plan and label.
  virtual StrategyOptions normalise(StrategyOptions options) const = 0;
  /// "single", "sync K=4", "sync K=4 speed", "local-sgd K=4 tau=8", "local-sgd K=4
  /// budget=0.5s" for normalised options.
  virtual std::string label(const StrategyOptions& options) const;
  /// True when its progress is counted in rounds of local steps (Ma(b,K,tau)), false when in
  /// serial SGD steps (Na(b)).
  virtual bool counts_rounds() const { return false; }
  /// Iterations to the target before rounding: Ma(b,K,tau) rounds when counts_rounds(), else
  /// Na(b) steps.
  virtual double convergence_steps(const Plan& plan, const ConvergenceModel& convergence) const;
  /// Re-costs the compute ops of `plan` (built by this strategy for the same workers,
  /// collective and overlap) for another batch, tau, split and staleness bound: worker samples,
  /// each compute op's samples, flop and steps, and every plan field those options set (batch,
  /// tau, steps per round, round budget, split, staleness bound, mean staleness). Transfers and
  /// applies keep their costs. The memory check is left to the caller (planner search).
  virtual void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
                      const Platform& platform) const = 0;

 protected:
  /// Builds one round from normalised options. Throws InputError for impossible choices
  /// (K > hosts, no layers to overlap, a batch that does not fit in a worker's GPU memory ...).
  virtual Plan generate(const StrategyOptions& options, const Workload& workload,
                        const Platform& platform) const = 0;

  friend Plan make_plan(const std::string& strategy, const StrategyOptions& options,
                        const Workload& workload, const Platform& platform,
                        const ConvergenceModel& convergence);
};

/// Registers a strategy defined outside the tree (after the built-in ones), so that jobs name it
/// and every engine runs its plans; call it before loading such a job, from one thread. Throws
/// std::invalid_argument when its name is taken.
void register_strategy(std::unique_ptr<Strategy> extension);
/// The strategy registered under `name`; InputError(file, "strategies", ...) when none is.
const Strategy& strategy(const std::string& name, const std::string& file = "<job>");
/// The strategy registered under `name`, or nullptr.
const Strategy* find_strategy(const std::string& name);
std::vector<std::string> strategy_names();
/// The strategies listed by default (Strategy::listed_by_default), in registration order.
std::vector<std::string> default_strategy_names();
/// The baseline strategy (single): speedups are T0 / T.
const Strategy& baseline_strategy();
/// SparkNet's T1 and T2, for the studies that reproduce its figures.
const Strategy& sync_strategy();
const Strategy& local_sgd_strategy();
/// The layouts' strategy (a model split over a data x tensor x pipeline mesh), for exec's layout
/// trainer when it lowers a layout given on its command line.
const Strategy& mesh_strategy();

/// Normalises the options for the strategy, generates the plan and sets its rounds from the
/// convergence model (Strategy::convergence_steps, rounded up by rounds_from_steps). The only
/// way to a Plan.
Plan make_plan(const std::string& strategy, const StrategyOptions& options,
               const Workload& workload, const Platform& platform,
               const ConvergenceModel& convergence);

/// Whole rounds from a convergence model's steps: a count within rounding noise of a whole
/// number is that number, otherwise rounded up. InputError (file, "convergence") unless the
/// steps are positive and finite.
long long rounds_from_steps(double steps, const std::string& file);

/// A result row's header for a plan, the same in every engine: strategy, workers, tau, batch,
/// collective, split (for strategies that split the batch), rounds and `engine`.
ResultRow result_header(const Plan& plan, const std::string& engine);

// Building blocks shared by the generators (strategy_common.cpp).

/// The K worker hosts: the named ones, or the first K workers in natural order.
std::vector<int> choose_worker_hosts(const StrategyOptions& options, const Platform& platform);
/// The platform's indices of the hosts `names`, in order; InputError naming `file` and `key`
/// for a name the platform lacks or one given twice.
std::vector<int> host_indices(const std::vector<std::string>& names, const Platform& platform,
                              const std::string& file, const std::string& key);
/// Splits `batch` samples over workers: even (remainder to the first ones) or in proportion
/// to host speed (largest remainder), so per-worker compute is equal within one sample.
std::vector<double> split_batch(double batch, const std::vector<int>& hosts,
                                const Platform& platform, BatchSplit split);
/// Flop per sample after the what-if C(b) override, if any.
double effective_flop_per_sample(const StrategyOptions& options, const Workload& workload,
                                 const Platform& platform, const std::vector<int>& hosts);
/// The fixed cost of one step on `host`: its `step_overhead_s` prop when the platform gives one
/// (a calibrated platform does, scaled for an emulated slow worker), else the job's. A prop
/// that is not a number >= 0 is an InputError naming the platform file and host.
double step_overhead_on(const StrategyOptions& options, const Platform& platform, int host);
/// The cost of one pass (a micro-batch's forward and backward) of the whole model on `host`
/// beyond its flop: its `pass_overhead_s` prop (a calibration that timed steps of several
/// micro-batches writes it; a rank holding a share of the parameters pays that share), else 0
/// (no job key: the step's overhead holds it). InputError as step_overhead_on.
double pass_overhead_on(const Platform& platform, int host);
/// The fixed cost of a step of `passes` passes of the whole model on `host`: step_overhead_on
/// plus passes x pass_overhead_on (a calibrated C(b), one pass a step, whole with passes = 1).
double step_fixed_cost_on(const StrategyOptions& options, const Platform& platform, int host,
                          int passes = 1);
/// Throws InputError (key "batch") when `samples` do not fit in `host`'s GPU memory.
void check_fits_in_memory(const StrategyOptions& options, const Workload& workload,
                          const Platform& platform, int host, double samples);
/// Servers for server-based collectives; empty for peer-to-peer ones.
std::vector<int> choose_servers(const StrategyOptions& options, const Platform& platform);
/// Flop a server spends applying one whole update: parameters x the workload's
/// update_flop_per_parameter, and at least 2 per parameter (w <- w - lr g as one multiply-add
/// per parameter [derived]; a workload whose optimizer step is folded into C(b) on the
/// workers still costs the server that step).
double server_apply_flop(const Workload& workload);

}  // namespace tauplan::model
