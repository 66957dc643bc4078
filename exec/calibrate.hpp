// calibrate.hpp: micro-measurements of this machine's CPU worker step and thread combine.
//
// Measures what the lockstep trainer times, the way it times it (thread CPU time), in the cache
// state a lockstep round leaves: `replicas` MLP replicas (the K workers) run sync rounds, each
// replica's forward + backward on a gathered batch of real samples, then the thread
// communicator's weighted mean of their gradients, then each replica's SGD update. A step is a
// replica's forward + backward + update; the combine is timed at several sizes (slices of the
// gradient vector, up to the whole of it). Each point is the median of many individually timed
// calls (robust to the time a virtual machine's host takes away, which a thread CPU clock counts).
// One replica has no round combine: its combine of two buffers is timed on its own. The fits and
// the platform they become live in model/inputs/calibration.hpp. What it leaves out: CUDA devices,
// the MPI and NCCL communicators, the evaluation pass (not training time), and the cache state of
// local-SGD rounds (tau steps between combines), which the sync round stands for.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/dataset.hpp"
#include "exec/mlp.hpp"
#include "exec/peer_group.hpp"
#include "model/inputs/calibration.hpp"
#include "model/inputs/workload.hpp"

namespace tauplan::exec {

struct CalibrationRequest {
  std::vector<int> batches{4, 8, 16, 32, 64, 128};  ///< per-worker samples per step
  std::vector<double> floats{5e4, 1e5, 2e5};        ///< combine sizes (capped at the gradient)
  int replicas = 4;                                 ///< K: replicas running lockstep sync rounds
  int steps = 48;     ///< timed steps per batch size (over all replicas)
  int combines = 15;  ///< timed combines per size when replicas = 1
  std::uint64_t seed = 1;
  /// measure_concurrent_steps only: also steps of `micro_batches` passes (forward and backward)
  /// of `micro_batch` samples each and one update, as a layout's rank steps (0 or 1: none).
  int micro_batches = 0;
  int micro_batch = 0;
  /// measure_concurrent_steps only: time the layout trainer's code (exec/tensor_parallel.hpp:
  /// the whole model as one stage) instead of the data-parallel replica's.
  bool layout_code = false;
};

struct StepPoint {
  int batch = 0;
  double seconds = 0;  ///< median thread CPU seconds of one step
};

struct CombinePoint {
  int workers = 0;
  double floats = 0;
  double bytes = 0;    ///< floats x 4
  double seconds = 0;  ///< median thread CPU seconds of one combine
};

struct CalibrationMeasurements {
  std::vector<StepPoint> steps;
  std::vector<CombinePoint> combines;
  /// A step of `micro_batches` passes of micro_step.batch samples each (0: not measured).
  int micro_batches = 0;
  StepPoint micro_step;
};

/// Runs the request on this thread. Throws InputError (origin "<calibration>") for an empty
/// list, a batch < 1 or larger than the training set, fewer than 2 distinct batch sizes or
/// (K > 1) combine sizes, a size below 1 float or not finite, or counts < 1.
CalibrationMeasurements measure_cpu_calibration(const CalibrationRequest& request,
                                                const Dataset& data, const MlpShape& shape);

/// What measure_concurrent_steps measured.
struct ConcurrentSteps {
  std::vector<StepPoint> steps;
  int micro_batches = 0;
  StepPoint micro_step;
};

/// The step of `replicas` workers running at the same time on their own threads (forward,
/// backward and update at each batch size), medians of wall-clock seconds: what a worker of an
/// asynchronous run takes on this machine as it is loaded now (other threads, other
/// processes). With request.micro_batches > 1, the step of that many passes of
/// request.micro_batch samples takes its turn among them (`micro_step`). Same checks as
/// measure_cpu_calibration, and micro_batch within [1, the training set] when asked.
ConcurrentSteps measure_concurrent_steps(const CalibrationRequest& request, const Dataset& data,
                                         const MlpShape& shape);

/// Every measured round of measure_rank_rounds, on rank 0.
struct RankRoundSamples {
  std::vector<int> batches;  ///< sorted, as in the answer
  /// seconds[i][r][w]: worker w's wall-clock seconds per step in round r of batches[i] (warm-up
  /// round left out).
  std::vector<std::vector<std::vector<double>>> seconds;
};

/// The step of `workers` MPI ranks (any PeerGroup) computing rounds at once, as a
/// barrier-aligned run does: each round, ranks 0 .. workers - 1 take `steps_per_round` steps and
/// the round's value is the busiest worker's wall-clock seconds per step (what `measure --timing
/// concurrent` reports as compute); the other ranks (a parameter server's) only wait. Every wait
/// is the group's own (MPI_Barrier: OpenMPI polls and yields, so waiting ranks keep competing for
/// the cores, as in the run). Each round: barrier, the workers' steps, barrier, then rank 0 polls
/// for `wait_s` while the others wait for it in a barrier: the round's communication time as the
/// engines predict it (on this virtual machine, a step after 100 ms of polling took 2 to 10 times
/// as long as one after none). Collective; medians over `rounds` rounds per batch size (after one
/// warm-up round) on rank 0, empty on the others. Same checks as measure_cpu_calibration;
/// steps_per_round, rounds >= 1, 0 <= wait_s <= 10 and 1 <= workers <= ranks. With `samples`,
/// rank 0 also fills it with every measured round (what the medians are taken over).
std::vector<StepPoint> measure_rank_rounds(PeerGroup& peers, int workers,
                                           const CalibrationRequest& request, const Dataset& data,
                                           const MlpShape& shape, int steps_per_round, int rounds,
                                           double wait_s, RankRoundSamples* samples = nullptr);

/// The measured points as JSON arrays: [{batch, seconds}] and [{workers, bytes, seconds}].
nlohmann::json steps_json(const CalibrationMeasurements& measured);
nlohmann::json combines_json(const CalibrationMeasurements& measured);

/// The fits of a measurement and the calibration they make.
struct CpuCalibration {
  CalibrationMeasurements measured;
  model::LinearFit compute;  ///< C(b) over the batch sizes
  model::LinearFit comm;     ///< T over K x bytes, relative least squares
  model::Calibration calibration;
  std::vector<std::string> warnings;  ///< negative intercepts clamped to 0, said in words
};

/// Fits C(b) and T(K, S) and fills a Calibration of `hosts` workers for `workload` (its flop per
/// sample and update flop; the MLP measured must be the one the workload describes, which the
/// caller checks). With a step of m > 1 passes measured, a pass's own fixed cost is
/// (that step - C(m b)) / (m - 1), C the fitted line: C(b) holds one pass's fixed cost, the
/// update and the step's other fixed costs; m passes add m - 1 more. It is clamped to
/// [0, intercept - update at the fitted speed] (a warning says when) and written as
/// pass_overhead_s. Throws InputError when a slope is not positive (sizes too close together for
/// the noise: the step did not grow with the batch, or the combine with its size).
CpuCalibration fit_cpu_calibration(const CalibrationMeasurements& measured,
                                   const model::Workload& workload, int hosts,
                                   const std::string& calibrated_from, const std::string& date);

}  // namespace tauplan::exec
