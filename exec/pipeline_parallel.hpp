// pipeline_parallel.hpp: real training of the MLP split over a data x tensor x pipeline mesh.
//
// Every rank runs train_model_parallel() (threads of one process, or MPI processes). Rank
// r = t_i + t (d_i + d p_i), the order model/ir/layout_cost.hpp places (tensor first). Pipeline
// stage p_i holds a run of consecutive layers (model::stage_layers: layers / p each, the first
// ones one more), split over its tensor group (exec/tensor_parallel.hpp); data replica d_i takes
// its slice of the global batch (the sampler's global stream: a step sees the same samples as
// one worker at that batch), cut into m micro-batches. A step runs the rank's part of the
// layout's Plan (strategy mesh, model/ir/strategy_mesh.cpp; exec/layout_program.hpp): its
// passes in the Plan's order (GPipe or 1F1B, as the Plan's schedule lowered them), receiving
// activations and gradients from the ranks its passes wait on and sending its own to the ranks
// the Plan names (point-to-point, exec/peer_group.hpp), each pass checked to run the tensor
// all-reduces the Plan charges it, then the Plan's gradient reductions; the last stage computes the
// softmax cross-entropy scaled by 1 / the global batch, so that gradients summed over micro-
// batches and replicas (an all-reduce in the data group) are the full batch's. Then plain SGD.
// Every eval_every steps replica 0 pushes the test set through its pipeline and the accuracy
// goes to every rank, which all stop at the target together. Measured per rank, on the wall
// clock with every rank running at once: each step's time, its communication waits (receives,
// tensor and data all-reduces) and the rest (compute, copies, sends); the report keeps their
// medians per rank (stage and shard) and the median over steps of the slowest rank's step.
// step_gradients() runs one step from given parameters and returns the loss and the unsplit
// gradient (tests compare them with exec/mlp.hpp's). What it leaves out: interleaved schedules,
// activation recomputation, sequence parallelism, ZeRO sharding, momentum, and overlap of
// communication with compute; on a machine with fewer cores than ranks the ranks share cores
// (the measured times say so by being longer, not by a label).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/dataset.hpp"
#include "exec/mlp.hpp"
#include "exec/peer_group.hpp"
#include "exec/rank_times.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/ir/layout.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

struct ModelParallelOptions {
  MlpShape shape;
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
  int micro_batches = 1;
  model::PipelineSchedule schedule = model::PipelineSchedule::OneFOneB;
  long long batch = 64;  ///< global batch per step
  float learning_rate = 0.1f;
  std::uint64_t seed = 1;
  long long max_steps = 1000;
  double target_accuracy = 0;  ///< stop once reached (0: run max_steps)
  long long eval_every = 100;
  long long test_limit = 0;               ///< evaluate on the first N test samples (0: all)
  KeyOrigins origins = "<command line>";  ///< where the job keys were given, named in errors
  /// The Plan every rank runs (strategy mesh, this layout; its passes, neighbours, groups and
  /// order: exec/layout_program.hpp). nullptr: the Plan mlp_layout_plan() lowers from these
  /// options. Not owned.
  const model::Plan* plan = nullptr;

  int workers() const { return data * tensor * pipeline; }
  /// "d1 t2 p2 m4 1f1b".
  std::string label() const;
};

/// InputError (file, key) unless the mesh fits the shape: pipeline at most the layers, tensor
/// dividing every split layer's width, micro-batches dividing each replica's batch.
void check_model_parallel(const ModelParallelOptions& options);

struct ModelParallelReport {
  std::string transport;  ///< "threads" or "mpi"
  std::string label;
  long long steps = 0;
  bool reached_target = false;
  double accuracy = 0;
  double train_loss = 0;  ///< replica 0's mean loss of the last step
  double wall_s = 0;      ///< training time to the end (evaluations excluded)
  double step_s = 0;      ///< median over steps of the slowest rank's step
  std::vector<RankTimes> ranks;
  std::vector<std::pair<long long, double>> accuracy_curve;  ///< (step, test accuracy)
  std::vector<double> curve_wall_s;  ///< wall_s at each point of accuracy_curve
  nlohmann::json to_json() const;
};

/// The Plan of strategy mesh for these options (model/ir/strategy_mesh.cpp on a crossbar of one
/// host per rank: exec reads its ops, not their costs). InputError as check_model_parallel.
model::Plan mlp_layout_plan(const ModelParallelOptions& options);

/// Trains on every rank of `peers`' job, each rank running its part of the Plan; rank 0's report
/// has every rank's times.
ModelParallelReport train_model_parallel(const ModelParallelOptions& options, const Dataset& data,
                                         PeerGroup& peers);
/// The same with one thread per rank in this process.
ModelParallelReport train_model_parallel_threads(const ModelParallelOptions& options,
                                                 const Dataset& data);

struct StepGradients {
  double loss = 0;                           ///< mean over the batch
  std::vector<float> gradients;              ///< unsplit layout of exec/mlp.hpp
  std::vector<long long> tensor_allreduces;  ///< per rank
  std::vector<long long> messages;           ///< per rank: pipeline sends
  /// This rank's passes (forward?, micro-batch) in the order it ran them (the threads' version
  /// returns rank 0's).
  std::vector<std::pair<bool, int>> passes;
};

/// One step from `parameters` (unsplit) on `options.batch` rows of x (row-major) and y, on every
/// rank of `peers`' job; every rank gets the result.
StepGradients step_gradients(const ModelParallelOptions& options,
                             const std::vector<float>& parameters, const float* x, const int* y,
                             PeerGroup& peers);
StepGradients step_gradients_threads(const ModelParallelOptions& options,
                                     const std::vector<float>& parameters, const float* x,
                                     const int* y);

}  // namespace tauplan::exec
