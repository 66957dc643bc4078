// strategy.hpp: strategy generators, which turn a job's choices into a Plan.
//
// single (T0): one worker, batch b. sync (T1): the global batch b split over K workers (evenly
// or in proportion to speed, as HetSeq balances mixed GPUs), gradients all-reduced every step,
// optionally overlapped with the backward pass in gradient buckets (PyTorch DDP). local-sgd
// (T2, SparkNet): each worker takes tau local steps at batch b, then parameters are averaged.
// Each generator is one file (strategy_single.cpp, ...) plus one line in strategy.cpp.
// What it leaves out: pipeline and tensor parallelism, asynchronous SGD.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/convergence.hpp"
#include "model/plan.hpp"
#include "model/platform.hpp"
#include "model/workload.hpp"

namespace tauplan::model {

struct StrategyOptions {
  std::string file = "<job>";  ///< job file, named in errors
  int workers = 1;             ///< K
  double batch = 1;            ///< b
  int tau = 1;
  BatchSplit split = BatchSplit::Even;
  std::string collective = "ring";
  bool overlap = false;
  double bucket_bytes = 25.0 * 1024 * 1024;
  std::vector<std::string> hosts;  ///< explicit worker hosts, else the first K workers
  std::string single_host;         ///< host for `single`, else the fastest worker
  int servers = 1;                 ///< servers used by server-based collectives
  double step_overhead_s = 0;      ///< fixed cost per training step (a host prop overrides it)
  double compute_s = -1;           ///< what-if C(b) on the fastest worker, seconds (-1: derive)
  double comm_s = -1;              ///< what-if S per collective, seconds (-1: derive)
  bool check_memory = true;
};

class StrategyGenerator {
 public:
  virtual ~StrategyGenerator() = default;
  virtual const char* name() const = 0;
  virtual const char* description() const = 0;
  /// Builds one round. Throws InputError for impossible choices (K > hosts, no layers to
  /// overlap, a batch that does not fit in a worker's GPU memory ...).
  virtual Plan generate(const StrategyOptions& options, const Workload& workload,
                        const Platform& platform) const = 0;
};

const StrategyGenerator& strategy_generator(const std::string& name,
                                            const std::string& file = "<job>");
std::vector<std::string> strategy_names();

std::unique_ptr<StrategyGenerator> make_single_strategy();
std::unique_ptr<StrategyGenerator> make_sync_strategy();
std::unique_ptr<StrategyGenerator> make_local_sgd_strategy();

/// Generates the plan and sets its rounds from the convergence model:
/// single and sync: ceil(Na(b)); local-sgd: ceil(Ma(b,K,tau)).
Plan make_plan(const std::string& strategy, const StrategyOptions& options,
               const Workload& workload, const Platform& platform,
               const ConvergenceModel& convergence);

// Building blocks shared by the generators (strategy_common.cpp).

/// The K worker hosts: the named ones, or the first K workers in natural order.
std::vector<int> choose_worker_hosts(const StrategyOptions& options, const Platform& platform);
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
/// Throws InputError (key "batch") when `samples` do not fit in `host`'s GPU memory.
void check_fits_in_memory(const StrategyOptions& options, const Workload& workload,
                          const Platform& platform, int host, double samples);
/// Servers for server-based collectives; empty for peer-to-peer ones.
std::vector<int> choose_servers(const StrategyOptions& options, const Platform& platform);

}  // namespace tauplan::model
