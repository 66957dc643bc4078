// mesh.hpp: a layout's shape, Mesh-TensorFlow style: the mesh (data x tensor x pipeline), the
// micro-batches and schedule, ZeRO, recomputation and sequence parallelism (model/ir/layout.hpp
// explains each and holds the job keys and checks; this header has no job dependencies, so that
// a strategy's options can carry a layout).
#pragma once

#include <string>
#include <vector>

#include "model/inputs/transformer.hpp"

namespace tauplan::model {

enum class PipelineSchedule { GPipe, OneFOneB };
const char* to_string(PipelineSchedule schedule);

/// How ranks are numbered over the mesh, fastest dimension first, in Megatron-Core's names
/// (megatron/core/parallel_state.py, `order`): tp-dp-pp is its default (tensor ranks adjacent,
/// then replicas, then stages: a data group on consecutive nodes), tp-pp-dp what
/// `--use-tp-pp-dp-mapping` selects (stages adjacent: a pipeline on consecutive nodes, a data
/// group strided by p nodes).
enum class RankOrder { TensorDataPipeline, TensorPipelineData };
const char* to_string(RankOrder order);

/// One named dimension of the processor mesh; `key` is the job key that sets its size.
struct MeshDimension {
  std::string name;
  int size = 1;
  std::string key;
};

/// A workload dimension split over a mesh dimension (Mesh-TF's layout rule).
struct LayoutRule {
  std::string workload_dimension;
  std::string mesh_dimension;
};

struct Layout {
  int data = 1;      ///< d: replicas, each on a slice of the batch
  int tensor = 1;    ///< t: ranks sharing every layer (heads and feed-forward columns)
  int pipeline = 1;  ///< p: stages, each a run of consecutive layers
  /// c: ranks sharing each sequence (context parallelism, ring attention over sequence shards:
  /// Liu et al. 2023, arXiv 2310.01889; Megatron-Core's context_parallel_size). Weights are
  /// replicated over it; gradients are reduced over data x context.
  int context = 1;
  /// e: ranks the routed experts of each MoE layer are split over (expert parallelism), carved
  /// out of the tensor x context x data ranks of a stage, tensor fastest (Megatron-Core's
  /// expert_model_parallel_size with MoE parallel folding and expert tensor parallelism 1: each
  /// expert whole on its rank).
  int expert = 1;
  int micro_batches = 1;  ///< m: micro-batches per replica per step
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// v: chunks of layers per stage (Narayanan et al. 2021's interleaved 1F1B; 1 = plain).
  int virtual_stages = 1;
  int zero_stage = 0;  ///< 0: plain data parallel; 1-3: ZeRO stages (3 = FSDP full shard)
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;  ///< norms and dropout split by sequence over the tensor ranks
  RankOrder rank_order = RankOrder::TensorDataPipeline;

  int workers() const { return data * tensor * pipeline * context; }
  /// Sequences of one micro-batch: batch / (data x micro_batches).
  double micro_batch(double batch) const { return batch / (data * micro_batches); }
  /// The mesh: data, tensor and pipeline, with their job keys.
  std::vector<MeshDimension> mesh() const;
  /// The rules: batch -> data, heads / ffn_hidden / vocabulary -> tensor, layers -> pipeline.
  std::vector<LayoutRule> rules() const;
  /// "d4 t8 p2 m16 1f1b zero1 selective sp" (sizes of 1 and defaults left out; "d1" alone for
  /// the layout of one worker; "tp-pp-dp" when ranks are so numbered).
  std::string label() const;
};

}  // namespace tauplan::model
