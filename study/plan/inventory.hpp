// inventory.hpp: what a capacity planner has or can rent, and what it wants (`tauplan plan`).
//
// An inventory (YAML, see experiments/planning/README.md) lists node types: a GPU model of the
// catalog, GPUs per node, how many nodes are available, the price per node-hour, the market
// (on-demand, or revocable with a revocation rate per node-hour and a restart cost), the
// efficiency a GPU reaches in training and the network of a node (its NIC, and each GPU's link
// inside the node). It also names a workload, a target (the convergence model fitted for the
// target accuracy, or a number of epochs over a dataset), an objective (min-time, min-cost,
// min-cost-under-deadline), optional parameter-server VMs, and the search space.
//
// From a choice of nodes per type it builds the cluster two ways that give the same routes: a
// model::Platform in code (no SimGrid: the planner's analytic search) and a SimGrid XML file
// (the re-check in the simulator). Topology: GPU hosts <node>-gpu<j> with a private split-duplex
// link to their node, each node's split-duplex NIC into one non-blocking switch, and server
// hosts ps<i> with their own NIC; GPU to GPU inside a node is gpu link up + gpu link down,
// across nodes gpu link up + NIC up + NIC down + gpu link down. What it leaves out: PCIe/NUMA
// trees inside a node, oversubscribed fabrics, per-zone placement, spot price dynamics, data
// loading and storage costs, and egress charges.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/base/units.hpp"  // parse_bandwidth, parse_seconds
#include "model/convergence/convergence.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::study {

enum class Market { OnDemand, Revocable };

struct NetworkSpec {
  double bandwidth_Bps = 1.25e9;  ///< a node's NIC (each direction)
  double latency_s = 10e-6;
  double gpu_bandwidth_Bps = 15.75e9;  ///< a GPU's link inside its node (PCIe 3.0 x16)
  double gpu_latency_s = 6e-6;
};

struct NodeType {
  std::string name;  ///< short word used in host names ("v100" -> v100-0-gpu3)
  std::string gpu_model;
  int gpus_per_node = 1;
  int nodes = 1;  ///< available
  double price_per_hour = 0;
  Market market = Market::OnDemand;
  double revocations_per_hour = 0;  ///< per node, revocable only
  double restart_s = 0;             ///< stall after a revocation, revocable only
  double efficiency = 0.5;
  std::string precision = "fp32";
  NetworkSpec network;
  // Derived from the catalog.
  double speed_flops = 0;  ///< peak[precision] x efficiency
  double memory_bytes = 0;
};

/// Parameter-server VMs for the `ps` collective (CPU only, on-demand).
struct ServerPool {
  int max = 0;
  double price_per_hour = 0;
  double speed_flops = 1e11;
  bool speed_given = false;  ///< servers.speed_flops was written (async-ps needs it)
  double bandwidth_Bps = 1e9;
  double latency_s = 18e-6;
};

enum class Objective { MinTime, MinCost, MinCostUnderDeadline };

struct Target {
  std::string accuracy;     ///< label only: what the convergence model was fitted for
  std::string convergence;  ///< critical-batch | table | epochs
  double min_steps = 0;     ///< critical-batch
  double critical_batch = 0;
  double drift = 0;
  std::string table_path;  ///< table (absolute or relative to the working folder)
  double epochs = 0;       ///< epochs
  double dataset_samples = 0;
  double staleness_cost = 1;  ///< async-ps: kappa of Na(b) (1 + kappa tau_bar)
  /// A target in tokens (model/ir/token_target.hpp): `tokens: 15T` (convergence "tokens"), or
  /// `epochs` over `dataset_tokens` (convergence "epochs", dataset_samples = dataset_tokens /
  /// sequence). tokens = the tokens trained on (epochs x dataset_tokens); 0 when the target is
  /// not in tokens. sequence: the workload's sequence length then.
  double tokens = 0;
  double dataset_tokens = 0;
  int sequence = 0;
};

/// Strategies searched when an inventory lists none: every registered strategy that runs on
/// several workers (the one-worker baseline only when asked for).
std::vector<std::string> default_search_strategies();
/// Collectives searched when an inventory lists none: every registered algorithm that
/// CollectiveAlgorithm::searched_by_default().
std::vector<std::string> default_search_collectives();

struct SearchSpace {
  std::vector<std::string> strategies = default_search_strategies();
  std::vector<std::string> collectives = default_search_collectives();
  std::vector<int> batch_per_worker = {32, 64, 128};
  std::vector<int> tau = {1, 4, 16};
  std::vector<model::BatchSplit> splits = {model::BatchSplit::Even, model::BatchSplit::Speed};
  std::vector<int> servers = {1, 2, 4};
  std::vector<double> round_budget_s;      ///< local-sgd time budgets (none: not searched)
  std::vector<int> staleness_bound = {0};  ///< async-ps SSP bounds
  int max_gpus = 64;
  double step_overhead_s = 0;
  // Strategy mesh (a transformer's layout): every combination of these whose mesh has the
  // selection's GPUs (data = K / (tensor x pipeline)); micro-batches = the replica's batch over
  // each micro-batch size. Defaults: tensor up to the GPUs of a node.
  std::vector<int> tensor_parallel = {1, 2, 4, 8};
  std::vector<int> pipeline_parallel = {1, 2, 4, 8};
  /// Context parallelism (ring attention): not searched unless listed (1).
  std::vector<int> context_parallel = {1};
  /// Expert parallelism, for a mixture of experts only (a dense model keeps 1); a MoE model
  /// under tensor parallelism is searched with sequence parallelism (model/ir/layout.hpp).
  std::vector<int> expert_parallel = {1, 2, 4, 8, 16, 32, 64};
  std::vector<int> micro_batch_size = {1, 2, 4};
  std::vector<int> zero_stage = {0, 1};
  std::vector<model::Recompute> recompute = {model::Recompute::None, model::Recompute::Selective,
                                             model::Recompute::Full};
};

struct RecheckSettings {
  int top = 10;               ///< candidates re-checked in the simulator
  long long sim_rounds = 50;  ///< rounds simulated per candidate (the rest extrapolated)
  std::string network_model = "CM02";
  /// Simulate revocations of revocable nodes as faults (HOST~MTBF failures). Only with
  /// sim_rounds 0: faults in a few simulated rounds say nothing about a long job, so with
  /// sim_rounds > 0 the closed form is applied to the simulated round instead.
  bool faults = true;
  unsigned long long seed = 1;
};

struct Inventory {
  std::string file;    ///< named in errors
  std::string folder;  ///< relative paths resolve against it
  std::string workload_name;
  model::Workload workload;
  std::vector<NodeType> node_types;
  ServerPool servers;
  Target target;
  Objective objective = Objective::MinTime;
  double deadline_s = -1;
  /// When > 0: a configuration meets the deadline only if P(time <= deadline) >= this (normal
  /// approximation of the total time, study/common/revocation.hpp); else its expected time must.
  double deadline_confidence = 0;
  std::string currency = "$";
  SearchSpace search;
  RecheckSettings recheck;
};

/// One key an inventory may hold: its section ("" for the top level, "node_types[]",
/// "node_types[].network", "servers", "servers.network", "search", "target", "recheck"), its name
/// and what it means. The reader accepts exactly these (an unknown key is an InputError), and
/// `tauplan help-keys` prints them.
struct InventoryKey {
  const char* section;
  const char* name;
  const char* meaning;
};
const std::vector<InventoryKey>& inventory_keys();

/// Loads and checks an inventory; every problem is an InputError "FILE: KEY: expected ..., got
/// ..." (unknown GPU model, negative price, zero count, unknown key, missing deadline ...).
Inventory load_inventory(const std::string& path);

/// A deadline: a duration with its unit (12h, 90min, 3600s), above 0 and at most 1e12 s.
/// A bare number is refused: the README says a deadline's unit is explicit. InputError(origin,
/// key, ...) otherwise.
double parse_deadline(const std::string& text, const std::string& origin, const std::string& key);
Inventory parse_inventory_yaml(const std::string& text, const std::string& origin,
                               const std::string& folder);

const char* to_string(Objective objective);
const char* to_string(Market market);

/// The convergence model of the target. `epochs`: Na(b) = epochs x samples / b and
/// Ma(b, K, tau) = epochs x samples / (K tau b), so that Ma(b, K, 1) = Na(K b).
std::unique_ptr<model::ConvergenceModel> target_convergence(const Inventory& inventory);

/// Epochs over a dataset as a convergence model (see target_convergence).
class EpochsConvergence : public model::ConvergenceModel {
 public:
  EpochsConvergence(double epochs, double dataset_samples, std::string origin = "<inventory>");
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  double unequal_local_rounds(double batch, const std::vector<int>& steps) const override;
  std::string describe() const override;

 private:
  double epochs_;
  double samples_;
  std::string origin_;
};

/// How many nodes of each type (index = node type), and servers.
struct Selection {
  std::vector<int> nodes;
  int servers = 0;
  int gpus(const Inventory& inventory) const;
};

/// Host names of a selection in natural order (the order of Platform::worker_hosts()).
std::string node_name(const NodeType& type, int index);

/// The cluster of a selection as a model::Platform (routes in code, no SimGrid).
model::Platform make_selection_platform(const Inventory& inventory, const Selection& selection);
/// The same cluster as SimGrid XML (platform version 4.1), with the props the loader reads.
std::string selection_platform_xml(const Inventory& inventory, const Selection& selection);

/// Node names of the selection's revocable nodes, each with its rate per second (for the
/// simulator's failures "HOST~MTBF", given on the node's first GPU host).
struct RevocableNode {
  std::string first_host;
  double rate_per_s = 0;
  double restart_s = 0;
};
std::vector<RevocableNode> revocable_nodes(const Inventory& inventory, const Selection& selection);

}  // namespace tauplan::study
