// compute_shapes.hpp: the operation shapes a GPU profile should measure, and the link between a
// catalog Transformer and the compute model's LayerShape.
//
// The shapes are those of every transformer in the workload catalog, one layer on one tensor
// rank at tensor shards 1, 2, 4, 8 and micro-batches 1, 2, 4, for each layer kind the model has
// (a MoE layer with sequence parallelism when t > 1, its experts on one expert rank, no context
// split): the weight GEMMs forward and
// backward, the math path's attention GEMMs (as the stacked GEMM the compute model looks them
// up as), and the flash attention kernel's (heads, sequence, head width). exec/cuda/gpu_check.sh
// times exactly the committed list exec/cuda/profile_shapes.txt, which a test keeps equal to
// profile_shapes_text(). What it leaves out: shapes of layouts outside those shards and
// micro-batches (the profile interpolates to them), the logits GEMM at vocabularies other than
// the catalog's, expert-parallel and context-parallel shapes.
#pragma once

#include <string>

#include "model/compute/layer_ops.hpp"
#include "model/inputs/transformer.hpp"

namespace tauplan::model {

/// One layer of `shape` of `kind` on one of `tensor` ranks, `micro_batch` sequences, the sequence
/// split over `context` ranks and a MoE layer's routed experts over `expert` ranks. A Dense
/// layer of a model without dense layers (Mixtral) is the dense feed-forward of ffn_hidden all
/// the same; a Moe layer of a dense model is its dense layer.
LayerShape layer_shape(const Transformer& shape, double micro_batch, int tensor,
                       bool sequence_parallel, LayerKind kind = LayerKind::Dense, int context = 1,
                       int expert = 1);

/// The shapes file: `gemm M N K` and `attention HEADS SEQUENCE HEAD_DIM causal` lines, each
/// once, sorted, with a header naming the models.
std::string profile_shapes_text();

}  // namespace tauplan::model
