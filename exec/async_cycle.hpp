// async_cycle.hpp: asynchronous parameter-server training for real (an asynchronous Plan): what a
// worker's cycle is, and what a run measured.
//
// K workers and S servers; the parameter vector is cut into S contiguous shards, one per server.
// A worker loops with no barrier over its cycle of the Plan's ops (worker_cycle): each
// Transfer from a server pulls that server's shard (its parameters as applied so far, with
// their version), the Compute takes a gradient at batch b on its own samples (worker w's n-th
// step takes slice w of global step n of the shared sample stream), each Transfer to a server
// pushes the gradient's shard, and each Apply waits until that server has applied it; the
// async-ps strategy's cycle pulls every shard, computes, pushes to every server and goes on once
// every server has applied its push. A server applies pushes one at a time, in
// arrival order (parameters -= learning_rate x gradient over its shard), and records each
// update's staleness: the updates it applied since the worker's pull. With a staleness bound
// s > 0 (SSP) a worker does not start step n before every worker has pushed step n - s - 1.
// The first server (the lead) counts updates, evaluates test accuracy every eval_every updates
// (stop-the-world at the lead: it applies nothing meanwhile, and its time is left out of the
// training clock; workers computing at that moment run on, a bias of at most one step per worker
// per evaluation) and stops at the target accuracy or after max_steps updates. Everything is
// timed on the wall clock, workers really running at the same time (threads: timing must be
// concurrent); a worker's emulated slowdown is slept after its step, as the trainer does.
// The handlers of those ops, worker and server, are written once over a PeerGroup
// (exec/async_ranks.hpp): ranks 0..K-1 are workers, K..K+S-1 servers, real messages, as threads
// of one process or MPI ranks. Here: the cycle read from the Plan, a worker's step, the lead's
// evaluation, the shards, and the Measurement. What it leaves out: CUDA workers, optimizer state
// on the servers (plain SGD), and learning rates scaled by staleness.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "exec/dataset.hpp"
#include "exec/mlp.hpp"
#include "exec/replica.hpp"
#include "exec/sampler.hpp"
#include "exec/trainer.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

/// What one worker did, as its transport recorded it.
struct AsyncWorkerRecord {
  /// Its cycles whose push every server applied (with several servers, a cycle one server
  /// applied and another answered with a stop is not counted).
  long long updates = 0;
  std::vector<double> step_s;      ///< measured duration of each step (before the slowdown)
  std::vector<double> exchange_s;  ///< per update: pull + push + waiting for the applies
  /// Per cycle that pushed: from its first push's post to the first and to the last reply of a
  /// server it pushed to (the reply acknowledges the apply, or is a stop in the last cycle):
  /// with several servers, whether the replies came together or one after another. Unlike the
  /// training clock, these include the lead's evaluations and replies a staleness bound held.
  std::vector<double> first_reply_s, last_reply_s;
  double staleness_sum = 0;  ///< over its applied updates (all servers)
  long long staleness_count = 0;
};

/// What an asynchronous run measured, whatever its transport.
struct AsyncRecord {
  std::string communicator;  ///< threads or mpi
  long long updates = 0;     ///< server updates applied (lead server) at the end
  bool reached = false;
  double wall_s = 0;
  double eval_wall_s = 0;
  std::vector<AccuracyPoint> curve;  ///< round = steps = updates, time on the training clock
  std::vector<double> update_s;      ///< training clock at each update the lead applied
  std::vector<long long> staleness_histogram;  ///< applies (update x server) by staleness
  long long clock_skew_max = 0;  ///< most steps a worker was ahead of the slowest at its start
  std::vector<AsyncWorkerRecord> workers;
  nlohmann::json servers = nlohmann::json::array();  ///< each server's processing (report.hpp)
};

/// One worker's model and data: computes the gradient of its n-th step.
class AsyncWorkerCompute {
 public:
  AsyncWorkerCompute(const model::Plan& plan, int worker, const Dataset& data,
                     const MlpShape& shape, const TrainOptions& options, double slowdown);
  /// Forward and backward on the worker's n-th batch (gradient in replica().gradients()), then
  /// the emulated slowdown's sleep. Returns the measured step (before the sleep) and the loss.
  std::pair<double, double> step(long long n);
  Replica& replica() { return *replica_; }
  double slowdown() const { return slowdown_; }

 private:
  const Dataset& data_;
  int worker_;
  long long samples_;
  double slowdown_;
  std::unique_ptr<Replica> replica_;
  std::unique_ptr<Sampler> sampler_;
  std::vector<float> x_;
  std::vector<int> y_;
};

/// Test accuracy of a full parameter vector (eval_samples of the test set, or all of it).
class AsyncEvaluator {
 public:
  AsyncEvaluator(const Dataset& data, const MlpShape& shape, const TrainOptions& options);
  double accuracy(const float* parameters);

 private:
  const Dataset& data_;
  long long samples_;
  std::unique_ptr<Replica> replica_;
};

/// One op of a worker's asynchronous cycle, as a transport runs it: the plan's Transfer from a
/// server to the worker (Pull: read the server's shard), its Compute (one step), its Transfer
/// to a server (Push: hand the server the gradient's shard) and that server's Apply (wait until
/// the server has applied it).
struct CycleOp {
  enum class Kind { Pull, Compute, Push, Apply };
  Kind kind = Kind::Compute;
  int server = -1;  ///< Pull, Push, Apply
};

/// Worker `worker`'s cycle: its ops of the plan in dependency order, every Apply moved after
/// the cycle's other ops (nothing in a cycle may wait on an apply; the next cycle does), so that
/// the pushes to all servers leave before the worker waits for the first apply. InputError
/// (key `strategies`) for a cycle exec cannot run: an op other than Transfer, Compute or Apply,
/// a transfer that is not between this worker and a server, not exactly one Compute, a push to
/// a server without that server's Apply (or an Apply without a push), no push to server 0 (the
/// lead counts updates and stops the run), with a staleness bound a server not pushed to, a
/// pull from a server after a push to it, or an op that waits on an apply.
std::vector<CycleOp> worker_cycle(const model::Plan& plan, int worker, const KeyOrigins& origins);

/// The contiguous shards [begin, end) of n parameters over `servers` servers.
std::vector<std::pair<std::size_t, std::size_t>> shard_ranges(std::size_t n, int servers);

/// Checks that an asynchronous plan can be trained: concurrent timing (check_async_timing), a
/// per-worker batch the data can give, K b at most the training set. InputError naming the key
/// otherwise.
void check_async_job(const model::Plan& plan, const Dataset& data, const TrainOptions& options);
/// The part of check_async_job that needs no data: concurrent timing (measure checks it for
/// every strategy before reading the data).
void check_async_timing(const model::Plan& plan, const TrainOptions& options);

/// The Measurement (the schema every exec run reports) of an asynchronous run: rounds and steps
/// are server updates, total_s the training clock when the target was reached (or at the end),
/// round_s = total_s / updates; extra holds throughput, staleness, per-worker details and the
/// servers' own processing.
Measurement async_measurement(const AsyncRecord& record, const model::Plan& plan,
                              const model::Platform& platform, const Dataset& data,
                              const MlpShape& shape, const TrainOptions& options);

}  // namespace tauplan::exec
