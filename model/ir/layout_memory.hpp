// layout_memory.hpp: the memory one worker needs under a layout, stage by stage.
//
// Model state (Rajbhandari et al. 2019, arXiv 1910.02054, Sections 3.1 and 5): weights and
// gradients of bytes_per_parameter each, optimizer state of optimizer_bytes_per_parameter (mixed-
// precision Adam: 2 + 2 + 12 = 16 bytes per parameter), for the parameters the worker holds:
// its stage's layers split over the tensor ranks (norms and row-parallel biases whole), the
// token embedding split by vocabulary on the first stage, the final norm, output projection (or,
// tied and p > 1, Megatron's copy of the embedding) and task heads on the last. ZeRO shards over
// the data dimension: stage 1 the optimizer state, stage 2 also the gradients, stage 3 also the
// weights (16 Psi / N_d); with context parallelism over data x context (the ranks that reduce the
// gradients); a mixture of experts' routed experts are split over the expert ranks, each whole,
// and sharded by ZeRO over the t c d / e ranks that hold the same ones. Activations (Korthikanti et
// al. 2022, arXiv 2205.05198, Table 2 and Section 4.2.3; Transformer::layer_activation_bytes) per
// layer and micro-batch, times the micro-batches a stage holds at its peak: all m with GPipe, min(p
// - r, m) on stage r with 1F1B (Megatron's warm-up of p - r - 1 forwards plus the one in flight; x
// (1 + (p-1)/(p v)) with v interleaved chunks, Korthikanti Section 4.2.3), plus the embedding's on
// the first stage and the logits' on the last, all / c under context parallelism (each rank holds
// s / c of every sequence); with full recomputation, each layer's input per
// micro-batch plus one layer's full activations being recomputed. A stated reserve is added to
// every stage (memory_reserve_bytes): the CUDA context, NCCL's buffers and the caching
// allocator's fragmentation, so that a layout fits when its tensors fit in capacity - reserve.
// The dense peak an MFU divides by (training_peak) is here too, as the per-GPU figures a
// report prints. What it leaves out: temporary buffers (GEMM workspaces, ZeRO-3's gathered
// layer), the fp32 gradient-accumulation buffers some frameworks keep, and a reserve measured
// per framework and GPU (the reserve's figures are estimates, sourced beside them).
#pragma once

#include <string>
#include <vector>

#include "model/inputs/workload.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::model {

/// Model-state bytes of `parameters` on one worker of a `data`-way data dimension.
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(double parameters, double bytes_per_parameter,
                                  double optimizer_bytes_per_parameter, int zero_stage, int data);

/// Memory a training process holds on its GPU besides its tensors, an estimate:
///  - the CUDA context (the driver's code, kernels and per-context state of the CUDA runtime,
///    cuBLAS and cuDNN): 0.75 GiB, an estimate; PyTorch reports 781 MB used on a GPU by the
///    context alone, before any tensor (pytorch/pytorch issue #34323); frameworks measure 0.5 to
///    1 GiB on recent GPUs;
///  - NCCL's buffers: 0.25 GiB, an estimate from NCCL_BUFFSIZE's default of 4 MiB per channel
///    and peer (NCCL User Guide, "Environment Variables") for 32 channels to the two ring peers
///    (4 MiB x 32 x 2 = 256 MiB);
///  - the caching allocator's fragmentation: 10% of the activation bytes, an estimate; PyTorch's
///    caching allocator rounds and caches blocks per size ("CUDA semantics: memory management"),
///    and ZeRO (Rajbhandari et al. 2019, arXiv 1910.02054, Section 3.2) reports running out of
///    memory "with over 30% of memory still available" from the interleaving of short-lived
///    activations with long-lived tensors, the worst case.
struct MemoryReserve {
  static constexpr double kCudaContextBytes = 0.75 * 1024 * 1024 * 1024;
  static constexpr double kNcclBufferBytes = 4.0 * 1024 * 1024 * 32 * 2;
  static constexpr double kFragmentationOfActivations = 0.10;
};
/// The reserve of a worker whose activations take `activation_bytes` at their peak.
double memory_reserve_bytes(double activation_bytes);

struct StageMemory {
  int stage = 0;
  int layers = 0;
  double parameters = 0;  ///< parameters one worker of this stage holds (its tensor shard)
  ModelStateBytes state;  ///< after ZeRO sharding
  double in_flight = 0;   ///< micro-batches whose activations the stage holds at its peak
  double activation_bytes = 0;
  double reserve_bytes = 0;  ///< memory_reserve_bytes(activation_bytes)
  /// The tensors: model state and activations.
  double tensor_bytes() const { return state.total() + activation_bytes; }
  /// What the worker needs of its GPU: the tensors and the reserve.
  double total_bytes() const { return tensor_bytes() + reserve_bytes; }
};

struct LayoutMemory {
  std::vector<StageMemory> stages;
  /// The stage whose workers need the most, and how much (with its reserve).
  int peak_stage = 0;
  double peak_bytes = 0;
  double reserve_bytes = 0;  ///< the peak stage's reserve, included in peak_bytes
  /// Whether every stage fits in `capacity` bytes per GPU: tensors <= capacity - reserve.
  bool fits(double capacity) const { return peak_bytes <= capacity; }
};

/// Parameters one worker of pipeline stage `stage` holds: its dense share and its routed experts.
double stage_parameters(const Transformer& shape, const Layout& layout, int stage);
/// Of those, the routed experts: the stage's MoE layers x the routed experts / e.
double stage_expert_parameters(const Transformer& shape, const Layout& layout, int stage);
/// Of those, the K and V projections of the one K/V head a worker holds when more tensor ranks
/// than K/V heads share each head (t > kv_heads, grouped-query attention without latent
/// attention): 2 h head_dim per layer of the stage. The t / kv_heads ranks that share a head
/// each hold part of its gradient and sum it over their group once per step; 0 otherwise.
double stage_shared_kv_parameters(const Transformer& shape, const Layout& layout, int stage);
/// Ranks that hold the same routed experts and reduce their gradients: t c d / e (expert tensor
/// parallelism 1: experts are carved out of the tensor x context x data ranks of a stage).
int expert_data_size(const Layout& layout);

/// How many of a stage's layers have a dense feed-forward and how many a mixture of experts.
struct StageLayerKinds {
  int dense = 0;
  int moe = 0;
};
StageLayerKinds stage_layer_kinds(const Transformer& shape, int pipeline, int stage);

/// Memory per worker of every stage for a global batch of `batch` sequences. The workload
/// must be a transformer (asserted; check_layout refuses others first).
LayoutMemory layout_memory(const Workload& workload, const Layout& layout, double batch);

/// What the search for fitting layouts may use.
struct FitSearch {
  int workers = 1;
  double batch = 1;         ///< global batch, sequences per step
  double memory_bytes = 0;  ///< per worker (a GPU's memory, the reserve included)
  int max_tensor = 0;       ///< largest tensor size (GPUs per node); 0: no limit
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
};

struct FittingLayout {
  Layout layout;
  LayoutMemory memory;
};

/// The layouts of `search.workers` workers that fit in `search.memory_bytes` (with the reserve
/// of each: LayoutMemory::fits), smallest first:
/// for each tensor x pipeline split (fewest model-parallel workers first, then the smaller
/// tensor size), the least intrusive options that fit, tried in this order: for a mixture of
/// experts the fewest expert ranks (1, then each divisor of the experts that divides t d);
/// recomputation none, selective, full; ZeRO stage 0 to 3; sequence parallelism off, on (on
/// only for a mixture of experts with t > 1); the fewest micro-batches. At most `count` of
/// them. Empty when nothing fits.
std::vector<FittingLayout> smallest_fitting_layouts(const Workload& workload,
                                                    const FitSearch& search, size_t count);

/// The dense peak a model-flops utilisation (MFU) divides by: the GPU catalog's peak
/// (model/catalog/gpus.yaml) of `gpu_model` at the training precision. MFU = model flop per
/// worker-second / this (Chowdhery et al. 2022, PaLM, arXiv 2204.02311, Appendix B: the model's
/// flop without recomputation, over the peak).
struct TrainingPeak {
  double flops = 0;       ///< 0 when there is none
  std::string precision;  ///< "bf16", "fp16", "fp32"
  std::string missing;    ///< why there is none ("" when there is)
};
/// `precision` "" takes the workload's: 2 bytes per parameter trains in bf16 (fp16 on a chip
/// without bf16), 4 in fp32.
TrainingPeak training_peak(const std::string& gpu_model, const std::string& precision,
                           double bytes_per_parameter);

}  // namespace tauplan::model
