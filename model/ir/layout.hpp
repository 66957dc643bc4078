// layout.hpp: how a transformer's training is laid out over workers, Mesh-TensorFlow style.
//
// A Mesh is named dimensions with sizes (data x tensor x pipeline); a layout maps workload
// dimensions onto them (Shazeer et al. 2018, arXiv 1811.02084: an injective partial map from
// tensor dimensions to mesh dimensions): batch -> data (data parallelism), heads, feed-forward
// width and vocabulary -> tensor (Megatron's column-then-row split, Shoeybi et al. 2019, arXiv
// 1909.08053), layers -> pipeline (stages, with micro-batches run by GPipe or 1F1B). On top:
// the ZeRO stage (0-3, Rajbhandari et al. 2019, arXiv 1910.02054: optimizer state, then
// gradients, then parameters sharded over the data dimension; stage 3 is FSDP's FULL_SHARD),
// activation recomputation (none, selective, full) and sequence parallelism (Korthikanti et
// al. 2022, arXiv 2205.05198). Two more dimensions: context (sequence -> context, ring attention
// over sequence shards, Liu et al. 2023, arXiv 2310.01889, as Megatron-Core's context_parallel_size
// runs it) and expert (the routed experts of a mixture of experts -> expert ranks carved out of
// data x context, Lepikhin et al. 2020 GShard, arXiv 2006.16668; Megatron-Core's
// expert_model_parallel_size with expert tensor parallelism 1). The job keys that set a layout are
// declared here (layout_job_keys); data_parallel defaults to workers / (tensor x pipeline x
// context).
// check_layout refuses impossible layouts with one line naming the job key: mesh sizes whose
// product is not the workers, a dimension split more ways than it has elements, heads (or the
// feed-forward width) not divisible by the tensor size, key/value heads neither divisible by
// the tensor size nor dividing it (whole K/V heads per rank), more stages than layers,
// micro-batches that do not divide a replica's batch, a context size whose 2c chunks do not split
// the sequence, an expert size that divides neither the experts nor data x context, experts on a
// dense model, a MoE model under tensor parallelism without sequence parallelism. Interleaving
// (virtual stages, Narayanan et al. 2021, arXiv 2104.04473, Section 2.2.2) is an option of 1F1B,
// over p x v equal chunks or, as Llama 3 balanced them (Dubey et al. 2024, arXiv 2407.21783,
// Section 3.3.2), equal chunks with the first and the last one layer short; the bubble is then
// (p - 1) / v slots of the slowest stage (an approximation when chunks differ).
// What it leaves out: expert tensor parallelism above 1, layouts other than this standard one
// (the rules are fixed; a user cannot write their own yet).
#pragma once

#include <string>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/mesh.hpp"
#include "model/inputs/transformer.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"

namespace tauplan::model {

/// Job keys of a layout: tensor_parallel, pipeline_parallel, data_parallel, context_parallel,
/// expert_parallel, micro_batches, pipeline_schedule, virtual_stages, zero_stage, recompute,
/// sequence_parallel, rank_order.
std::vector<KeySpec> layout_job_keys();

/// The first layout-only key the job sets away from its default (a tensor or pipeline size
/// above 1, data_parallel, the schedule, interleaving, ZeRO, recomputation, sequence
/// parallelism), or "" when none is (or the job's key table has no layout keys).
/// micro_batches is not layout-only: the sync strategy accumulates micro-batches too (main's
/// `micro_batches` key, the same meaning: micro-batches per replica and step).
std::string layout_key_set(const Job& job);

/// The layout a job asks for: its keys, with data_parallel = workers / (tensor x pipeline)
/// when not given. InputError naming `data_parallel` (or `workers`) when the mesh's product
/// is not the job's workers.
Layout layout_from_job(const Job& job);

/// Checks `layout` against the workload (a transformer), the global batch (sequences per step)
/// and the workers: InputError(origins.of(key), ...) naming the job key at fault.
void check_layout(const Layout& layout, const Workload& workload, double batch, int workers,
                  const KeyOrigins& origins);

/// InputError(origins.of("data_parallel"), ...) unless data x tensor x pipeline = workers.
void check_layout_workers(const Layout& layout, int workers, const KeyOrigins& origins);

/// Layers of each pipeline stage: layers / p each, the first (layers mod p) stages one more.
std::vector<int> stage_layers(int layers, int pipeline);

}  // namespace tauplan::model
