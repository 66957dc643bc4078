// trainer.hpp: executes a model::Plan for real and measures it.
//
// Each round walks the plan's DAG in dependency order. Compute(worker) = forward and backward
// on that worker's samples (Plan::worker_samples, drawn from the shared stream of sampler.hpp),
// `steps` times, with the SGD update folded into each step when the op runs several steps or
// the worker has no Update op; Update(worker) = the SGD step with the worker's (combined)
// gradient; Collective = a real combine through the Communicator: gradients (sync), or the
// parameters (local-sgd; with Adasum, the parameter deltas of the round, as Horovod does);
// Barrier = a barrier. A collective whose group is a subgroup of the workers combines over its
// members only (Communicator::combine_group: threads and MPI), the others skipping it; in
// lockstep every process still meets at its barrier and maximum. With gradient buckets
// (plan.overlap) each collective combines its share of the gradient vector, last layers first:
// in concurrent timing with one host worker per process (MPI ranks) on a second thread as soon
// as the backward pass has finalised it (bucket_stream.hpp, PyTorch DDP's overlap; the emulated
// slowdown is slept layer by layer inside the step, so a slow worker releases its buckets late),
// otherwise after the whole backward pass; extra "overlap" says which, and
// "buckets_entered_during_backward" the share of buckets (least over the ranks) whose collective
// really began before the rank's backward pass ended.
//
// Timing, lockstep: local workers run one after another; every op's duration is measured and
// the round's time is the longest path through the DAG (so a phase takes as long as its
// slowest worker) on a virtual clock: deterministic numerics, timing independent of the core
// count. CPU work is timed by the thread's CPU time by default, so that other processes on
// the machine do not inflate C(b) and S (ComputeClock::Wall restores the wall clock). Under MPI
// a collective starts after a barrier (so S excludes waiting for stragglers) and its time is
// the maximum over the ranks. Lockstep is the model's own longest-path rule: it checks that
// timings repeat, not the model.
//
// Timing, concurrent: every number is read on the wall clock (std::chrono::steady_clock).
//   - Start: one barrier over every process of the run (servers included) before the first
//     round; each process takes it as the zero of its trace clock (the ranks' clocks are aligned
//     to within the barrier's exit skew, tens of microseconds on one network switch).
//   - Round: starts on every process at one instant agreed on a shared clock
//     (Communicator::agree_round_start: MPI estimates each rank's clock offset to rank 0 at the
//     start; rank 0 names an instant just after the slowest rank arrives), not at a barrier's
//     release, which let ranks start milliseconds apart on an emulated network; each process's
//     lateness past the instant is reported (extra round_start_lateness_median_s, _max_s). Local
//     workers run their compute and update ops at the same time on their own threads (threads), or
//     one worker per process (MPI). A collective starts as soon as this process's workers are done
//     (no barrier before it: a fast rank waits inside the collective for the slow ones, as in a
//     real run). The round ends on a process when its last op ends; round_s is the maximum of
//     (end - start) over the processes, gathered after the round (MPI_Allgather), i.e. the time
//     from the aligned start until the last rank finishes.
//   - compute_s: per round, the largest compute + update time of one worker (wall, including
//     the emulated slowdown's sleep), divided by the steps of the round; reported as the mean
//     and median over rounds.
//   - S (comm_s, S_s): per round, the sum over the round's collectives of the collective's wall
//     time on the critical process, the one that entered it last (whose time is the
//     communication itself, waiting on the network included, with no straggler wait); reported
//     as the mean (comm_s) and median (S_s) over rounds. With threads the collective is a
//     shared-memory reduction run by one thread once all workers are done.
// Heterogeneity is emulated: worker k's compute and update times are scaled by s_k = fastest
// worker host speed / k's host speed (lockstep, virtual clock), or each op is followed by a
// sleep of (s_k - 1) x its measured duration (concurrent); results say so. Evaluation (test
// accuracy every N steps, on the first process) is not counted in the training time; in
// concurrent mode it shows as a gap in the trace. Training stops at the target accuracy or the
// step limit.
// Time-budget local SGD (plan.round_budget_s): a worker's Compute op takes steps while the next
// one, taken to last as long as its previous step, fits in the budget (at least one; at most twice
// the plan's most plus one, the sample stream's stride): on the lockstep virtual clock (measured x
// slowdown), or in concurrent timing on the wall clock from the op's start (the emulated
// slowdown's sleeps included); the average weights each worker by its steps. Asynchronous plans
// run in async_cycle.hpp and async_ranks.hpp, not here.
//
// What it leaves out: real overlap with several workers in one process (threads) or on device
// replicas (in lockstep the DAG composes bucket collectives with the backward pass on the
// virtual clock; concurrent threads run them after it), two buckets in flight at once,
// concurrent collectives of disjoint subgroups within one process (threads and lockstep run
// them one after another; lockstep's DAG still times them as parallel; MPI ranks run them at
// once), gradient buckets with subgroup collectives, learning-rate
// schedules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/communicator.hpp"
#include "exec/dataset.hpp"
#include "exec/mlp.hpp"
#include "exec/replica.hpp"
#include "exec/trace_event.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/base/statistics.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

enum class Timing { Lockstep, Concurrent };
/// How lockstep times CPU work: by the worker thread's CPU time (default: robust to other
/// processes sharing the cores) or by the wall clock. Concurrent timing and GPU work always
/// use the wall clock.
enum class ComputeClock { ThreadCpu, Wall };
const char* to_string(Timing timing);
bool parse_timing(const std::string& text, Timing& timing);

struct TrainOptions {
  double learning_rate = 0.1;
  double target_accuracy = 0.85;     ///< stop when test accuracy reaches it (<= 0: never)
  long long max_steps = 20000;       ///< SGD steps per worker before giving up
  long long eval_every_steps = 100;  ///< evaluate after every round that completes this many steps
  long long eval_samples = 0;        ///< test samples used for accuracy (0: the whole test set)
  Timing timing = Timing::Lockstep;
  ComputeClock clock = ComputeClock::ThreadCpu;
  CombineRule combine = CombineRule::Mean;
  std::uint64_t seed = 1;
  bool emulate_slowdown = true;  ///< apply the platform's relative host speeds
  long long trace_rounds = 0;    ///< rounds recorded as trace events
  std::string engine = "exec-cpu";
  KeyOrigins origins;            ///< where the job keys were given, named in errors
  bool keep_parameters = false;  ///< copy the final model into Measurement::final_parameters
};

struct WorkerReport {
  int worker = 0;
  int host = -1;
  std::string host_name;
  double slowdown = 1;           ///< emulated factor (1: none)
  long long samples = 0;         ///< per step
  double compute_median_s = 0;   ///< C(b) of one step, emulated (measured x slowdown)
  double measured_median_s = 0;  ///< C(b) of one step as measured
  long long steps = 0;
  std::string ran_on;  ///< the host its process ran on (MPI: TAUPLAN_TESTBED_HOST or hostname)
};

struct AccuracyPoint {
  long long round = 0;    ///< rounds completed
  long long steps = 0;    ///< SGD steps per worker completed
  double time_s = 0;      ///< training time so far
  double accuracy = 0;    ///< test accuracy
  double train_loss = 0;  ///< mean training loss over the rounds since the previous point
};

struct Measurement {
  // What ran.
  std::string strategy;
  int workers = 1;
  int tau = 1;
  double batch = 0;
  std::string split;
  std::string collective;    ///< the plan's algorithm name
  std::string communicator;  ///< the real one: threads, thread-messages, mpi, device, nccl
  std::string engine;
  Timing timing = Timing::Lockstep;
  CombineRule combine = CombineRule::Mean;
  std::string dataset;
  std::string dataset_source;
  bool synthetic = false;
  std::string mlp;
  long long parameters = 0;
  double learning_rate = 0;
  std::uint64_t seed = 0;
  bool emulated = false;  ///< some slowdown differs from 1
  int steps_per_round = 1;
  std::string clock;  ///< what timed compute and in-process collectives: thread-cpu or wall

  // What it measured.
  std::vector<WorkerReport> per_worker;
  double compute_s = 0;         ///< mean over rounds of the critical compute per step
  double compute_median_s = 0;  ///< median of the same
  double sync_s = 0;            ///< S: median over rounds of the collective time per round
  double sync_mean_s = 0;       ///< mean of the same
  double round_median_s = 0;
  double round_mean_s = 0;
  long long rounds = 0;  ///< rounds run (to the target when reached)
  long long steps = 0;   ///< SGD steps per worker run
  bool reached = false;
  double target_accuracy = 0;
  double final_accuracy = 0;
  double total_s = 0;  ///< training time (virtual in lockstep), evaluation excluded
  double wall_s = 0;   ///< real elapsed time including evaluation
  double eval_wall_s = 0;
  std::vector<AccuracyPoint> curve;
  std::vector<TraceEvent> trace;          ///< this process's spans (all ranks' after measure)
  std::vector<std::string> server_hosts;  ///< hosts of the server processes (MPI ps, sparknet)
  std::vector<float> final_parameters;    ///< this process's first worker, when kept
  /// Results only some strategies have (asynchronous: throughput and staleness), merged into
  /// the result row's extra.
  nlohmann::json extra = nlohmann::json::object();
};

/// Runs `plan` until the target or the step limit. `comm` spans plan.workers workers; the
/// factory makes this process's replicas. Throws InputError for impossible jobs (batch larger
/// than the data, K different from the communicator's, shapes that do not fit the data).
Measurement train(const model::Plan& plan, const model::Platform& platform, const Dataset& data,
                  const MlpShape& shape, Communicator& comm, const ReplicaFactory& factory,
                  const TrainOptions& options);

/// Fills what every measurement says of its run from the options, data and MLP: engine, data
/// set, MLP and parameters, learning rate, seed, target (timing, combine and the rest are the
/// caller's).
void describe_run(Measurement& m, const TrainOptions& options, const Dataset& data,
                  const MlpShape& shape);

/// The emulated slowdown of each worker: the fastest worker host's speed (over the platform)
/// divided by the worker's host speed (all 1 when a speed is unknown).
std::vector<double> worker_slowdowns(const model::Plan& plan, const model::Platform& platform);

/// Integer samples per worker from plan.worker_samples (largest remainder, total preserved).
std::vector<long long> integer_samples(const std::vector<double>& samples);

/// The calling thread's CPU time in seconds (excludes time other processes took the core): the
/// clock of lockstep CPU work, and of the calibration that predicts it.
double thread_cpu_seconds();

/// Median of a list (0 for an empty one): model/base/statistics.hpp's.
using model::median;

}  // namespace tauplan::exec
