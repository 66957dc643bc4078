// plan.hpp: the strategy IR. One round of data-parallel training as a DAG of operations.
//
// A Plan holds one round: per-worker Compute and Update ops, Collective ops over a group of
// workers, Barriers, point-to-point Transfers between two endpoints (a worker or a server) and
// server-side Applies, linked by dependency edges (a Boost.Graph adjacency list, kept inside
// plan.cpp: callers see ops by OpId, 0..op_count()-1, and their predecessors and successors,
// so the 150 files that include this header do not parse Boost.Graph). The round
// repeats `rounds` times. Every engine reads the same Plan: model/ takes the longest path,
// sim/ runs each worker as an actor, exec/ runs each op for real.
//
// An asynchronous Plan (Plan::asynchronous, e.g. async-ps) has no barrier between workers: its
// graph is one cycle per worker (pull parameters from each server, compute, push the gradient,
// each server applies it), every op carrying its worker's index, and each worker's cycle repeats
// on its own; servers apply updates in arrival order, one at a time each; a worker starts its
// next cycle once its update is applied (TensorFlow's parameter-server step returns when the
// server's apply op has run). With a staleness bound s > 0 (SSP) a worker may not start step
// t+s+1 before every worker has pushed step t. For such a plan `rounds` counts server updates to
// the target (one update = one worker's gradient applied by every server), and a result row's
// round_s is the mean time between two updates (1 / throughput), so total_s = rounds x round_s
// as for every plan; compute_s is a worker's step and comm_s its pull + push, both averaged
// over updates; the row's extra holds updates_per_s, the bottleneck, staleness_mean,
// staleness_max and staleness_bound (model/ir/result.hpp). The staleness of an update is the
// number of updates other workers had applied at its server between the worker's pull and the
// apply (0 for serial SGD).
//
// What it leaves out: anything inside an op (kernels, chunking of a collective; the collective
// algorithm decides that) and pipelining between rounds of a synchronous plan (round r+1
// starts when round r's last op ends).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tauplan::model {

enum class OpKind { Compute, Update, Collective, Barrier, Transfer, Apply };

/// What a collective combines: gradients before an SGD step (sync), or the parameters
/// themselves after local steps (local-sgd, SparkNet).
enum class CollectivePayload { Gradients, Parameters };

/// One end of a Transfer: a worker (index into Plan::worker_hosts) or a server (index into
/// Plan::server_hosts).
struct Endpoint {
  enum class Role { Worker, Server };
  Role role = Role::Worker;
  int index = -1;

  static Endpoint worker(int w) { return {Role::Worker, w}; }
  static Endpoint server(int s) { return {Role::Server, s}; }
};

/// Which pass of a layout (strategy mesh) an op belongs to: the forward or backward pass of
/// micro-batch `micro_batch` through model chunk `chunk` of pipeline stage `stage`. exec runs the
/// passes the Plan names, in the Plan's order (exec/layout_program.hpp). stage -1: the op is no
/// part of a layout pass.
struct LayoutPass {
  int stage = -1;
  int chunk = 0;
  int micro_batch = -1;
  bool forward = true;
  /// A stage send that carries the sender's 1/t slice of the pass's output (the receiving tensor
  /// group all-gathers the slices) rather than the whole of it.
  bool sliced = false;
  /// A Transfer of that all-gather: the op belongs to the receiving pass (stage, chunk,
  /// micro-batch and direction are the receiver's), whose input it completes.
  bool gather = false;
};

struct Op {
  OpKind kind = OpKind::Barrier;
  std::string label;  ///< human-readable, e.g. "w3 backward bucket 2"

  // Compute and Update: the worker (index into Plan::worker_hosts) that runs it. Transfer and
  // Apply: the worker whose chain the op belongs to (in an asynchronous plan, the worker whose
  // parameters or update it carries; for a transfer between two workers, the sender).
  int worker = -1;
  // Compute: one step is forward+backward on `samples` samples costing `flop`, preceded by a
  // fixed `overhead_s` (kernel launches, data loading); the op runs `steps` such steps back to
  // back (local-sgd's tau local steps, each with its local SGD update folded into the step).
  // `flop` of a partial op (one gradient bucket of the backward pass) is that part's share.
  double samples = 0;
  double flop = 0;
  double overhead_s = 0;
  int steps = 1;
  /// Compute: 1 for an op that is (or ends) a training step; the ops of one step that is split
  /// in parts (forward, backward buckets) carry the fraction of the step they are.
  double step_fraction = 1.0;
  /// A layout's Compute ops, tensor Collectives and stage sends (Transfers): the pass they
  /// belong to (stage -1 for every other op).
  LayoutPass pass;

  // Update: flop of the optimizer step on the worker (0 when folded into the compute step).
  // Also uses `flop` and `overhead_s`.

  // Collective: algorithm name (a registered CollectiveAlgorithm), payload and bytes per worker.
  std::string algorithm;
  CollectivePayload payload = CollectivePayload::Gradients;
  double bytes = 0;
  std::vector<int> group;  ///< workers taking part, in ring order (indices into worker_hosts)
  /// Collective: calls of the same size over the same group, back to back (a layout's tensor
  /// all-reduces of one micro-batch on one stage); the op takes `repeat` times one call.
  /// Transfer: the same message sent `repeat` times back to back (a step of a layout's MoE
  /// all-to-alls or context-parallel ring, once per layer).
  int repeat = 1;
  /// What-if override: when >= 0 the collective (or transfer) takes exactly this long (the
  /// job's S).
  double fixed_time_s = -1;

  // Transfer: `bytes` from `source` to `destination`, point to point over the platform's route
  // between their hosts (`payload`: Parameters for a pull, Gradients for a push). Also uses
  // `fixed_time_s`.
  Endpoint source;
  Endpoint destination;

  // Apply: server `server` (index into Plan::server_hosts) applies one update to its shard,
  // costing `flop` at the server host's speed (its SimGrid `speed`: the flop/s the server
  // reaches applying updates).
  int server = -1;
};

/// An op's index in its Plan: 0 .. op_count() - 1, in the order the ops were added.
using OpId = std::size_t;

/// The ids 0 .. n-1, for a range-for over a Plan's ops.
class OpIdRange {
 public:
  class iterator {
   public:
    explicit iterator(OpId id) : id_(id) {}
    OpId operator*() const { return id_; }
    iterator& operator++() {
      ++id_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return id_ != other.id_; }

   private:
    OpId id_;
  };
  explicit OpIdRange(std::size_t count) : count_(count) {}
  iterator begin() const { return iterator(0); }
  iterator end() const { return iterator(count_); }

 private:
  std::size_t count_;
};

/// Owns the Boost.Graph adjacency list that stores a Plan's ops and edges (defined in plan.cpp),
/// copied deeply with its Plan. A moved-from handle holds an empty graph.
class PlanGraphStorage;
class PlanGraphHandle {
 public:
  PlanGraphHandle();
  PlanGraphHandle(const PlanGraphHandle& other);
  PlanGraphHandle(PlanGraphHandle&& other) noexcept;
  PlanGraphHandle& operator=(const PlanGraphHandle& other);
  PlanGraphHandle& operator=(PlanGraphHandle&& other) noexcept;
  ~PlanGraphHandle();
  /// The storage (plan.cpp), an empty graph made here first when the handle was moved from.
  PlanGraphStorage& storage();
  const PlanGraphStorage& storage() const;

 private:
  mutable std::unique_ptr<PlanGraphStorage> storage_;
};

enum class BatchSplit { Even, Speed };

struct Plan {
  std::string strategy;  ///< "single", "sync", "local-sgd", ...
  int workers = 1;       ///< K
  int tau = 1;           ///< local steps per round (1 for single and sync; with a time budget
                         ///< the most any worker takes)
  double batch = 0;      ///< b as the job gives it (global for sync, per worker for local-sgd)
  BatchSplit split = BatchSplit::Even;
  std::string collective;              ///< algorithm of the round's collectives ("" for single)
  bool overlap = false;                ///< sync: all-reduce overlapped with backward in buckets
  int micro_batches = 1;               ///< sync: micro-batches accumulated per step
  double bucket_bytes = 0;             ///< bucket size when overlapping
  std::vector<int> worker_hosts;       ///< platform host index of each worker
  std::vector<int> server_hosts;       ///< parameter servers / driver used by the collectives
  std::vector<double> worker_samples;  ///< samples each worker computes per step
  int steps_per_round = 1;             ///< SGD steps (per worker) in one round: tau, or 1
  long long rounds = 0;                ///< how many times the round repeats (Na or Ma), or
                                       ///< server updates to the target (asynchronous)
  double convergence_steps = 0;        ///< Na(b) or Ma(b,K,tau) before rounding up
  /// No barrier between workers: each worker's cycle repeats on its own (see the file comment).
  bool asynchronous = false;
  /// Asynchronous: the SSP staleness bound s (a worker may not start step t+s+1 before every
  /// worker has pushed step t); 0 = unbounded.
  int staleness_bound = 0;
  /// Asynchronous: the mean staleness the convergence model charges (the analytic engine's),
  /// and the cost kappa it charges per unit of staleness.
  double mean_staleness = 0;
  double staleness_cost = 0;
  /// local-sgd with a time budget: the round's budget in seconds (0: fixed tau). Each worker's
  /// Compute op takes floor(budget / its step time) steps (Op::steps differs per worker) and
  /// the parameters are averaged weighted by steps.
  double round_budget_s = 0;
  PlanGraphHandle graph;  ///< the ops and their edges; read through the members below

  OpId add(Op op);
  void depend(OpId before, OpId after);
  const Op& op(OpId id) const;
  Op& op(OpId id);
  std::size_t op_count() const;
  std::size_t dependency_count() const;
  /// Every op's id, in the order they were added.
  OpIdRange op_ids() const { return OpIdRange(op_count()); }
  /// The ops `id` waits for, and those waiting for it, in the order the edges were added.
  std::vector<OpId> predecessors(OpId id) const;
  std::vector<OpId> successors(OpId id) const;
  /// Removes an op and its edges; the ids of the ops after it shift down by one.
  void remove(OpId id);
  /// The platform host of an endpoint (worker_hosts or server_hosts).
  int host_of(const Endpoint& endpoint) const;
  /// Ops in a dependency-respecting order; throws std::logic_error on a cycle.
  std::vector<OpId> topological_order() const;
  /// Number of ops of one kind.
  int count(OpKind kind) const;
};

const char* to_string(OpKind kind);
const char* to_string(BatchSplit split);

}  // namespace tauplan::model
