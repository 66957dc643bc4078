// mlp_layout.hpp: a multilayer perceptron (Workload::mlp_widths) under a data x tensor x pipeline
// layout, split the way exec/tensor_parallel.hpp and exec/pipeline_parallel.hpp split it, so that
// strategy mesh can predict what `tauplan measure` runs.
//
// Stage r holds layers model::stage_layers(L, p) (the first stages one more). Inside a stage,
// with t > 1, consecutive layers are paired: the first split by columns (its outputs), the second
// by rows (its inputs), so a pair all-reduces its output once forward (n x out values) and the
// gradient of its input once backward (n x in values) unless it starts the network; a layer left
// without a partner is replicated on every tensor rank. Per micro-batch of n samples a dense
// layer i -> o costs 2 n i o flop forward and 4 n i o backward (the input gradient's half is not
// computed for the network's first layer), / t when split, all scaled by one factor so that the
// whole network's flop per sample is the workload's flop_per_sample (6 sum i o: a calibration
// turns measured seconds into a speed with that number, so the stages share the measured time
// in the proportions of their exact counts). Stages send their output (n x width)
// forward and the gradient of their input backward, whole, from each tensor rank to the same
// rank of the neighbouring stage. What it leaves out: bias additions, ReLU and the softmax (no
// flop counted), recomputation and sequence parallelism (refused for an MLP), memory per worker.
#pragma once

#include <string>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/mesh.hpp"
#include "model/inputs/workload.hpp"

namespace tauplan::model {

/// How a layer of a stage is held by its tensor ranks: whole on each, split by its outputs
/// (columns of W^T) or by its inputs (rows).
enum class MlpLayerSplit { Whole, Columns, Rows };

/// The split of each layer of [first, end) over `tensor` ranks: consecutive layers paired as
/// columns then rows, a layer left without a partner whole (exec/tensor_parallel.hpp runs it).
std::vector<MlpLayerSplit> mlp_layer_splits(int first, int end, int tensor);

/// One tensor rank's work on pipeline stage `stage` for one micro-batch.
struct MlpStageWork {
  int first_layer = 0, end_layer = 0;  ///< layers [first, end)
  double forward_flop = 0;
  double backward_flop = 0;
  std::vector<double> forward_allreduce_values;   ///< one entry per tensor all-reduce
  std::vector<double> backward_allreduce_values;  ///< one entry per tensor all-reduce
  double input_values = 0;   ///< n x the stage's input width (the gradient sent back)
  double output_values = 0;  ///< n x the stage's output width (sent on)
  double parameters = 0;     ///< held by one tensor rank of the stage
};

/// The work of stage `stage` (0-based) under `layout` for a global `batch` (identity of the
/// splits stated above).
MlpStageWork mlp_stage_work(const Workload& workload, const Layout& layout, double batch,
                            int stage);

/// InputError (file, key) unless `layout` can split the MLP `workload` with `workers` workers:
/// the mesh's product is the workers, at most one stage per layer, t dividing every split
/// layer's width, micro-batches dividing each replica's batch, and no interleaving,
/// recomputation or sequence parallelism (exec does none of them for an MLP).
void check_mlp_layout(const Layout& layout, const Workload& workload, double batch, int workers,
                      const KeyOrigins& origins);

}  // namespace tauplan::model
