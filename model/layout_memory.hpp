// layout_memory.hpp: the memory one worker needs under a layout, stage by stage.
//
// Model state (Rajbhandari et al. 2019, arXiv 1910.02054, Sections 3.1 and 5): weights and
// gradients of bytes_per_parameter each, optimizer state of optimizer_bytes_per_parameter (mixed-
// precision Adam: 2 + 2 + 12 = 16 bytes per parameter), for the parameters the worker holds:
// its stage's layers split over the tensor ranks (norms and row-parallel biases whole), the
// token embedding split by vocabulary on the first stage, the final norm, output projection (or,
// tied and p > 1, Megatron's copy of the embedding) and task heads on the last. ZeRO shards over
// the data dimension: stage 1 the optimizer state, stage 2 also the gradients, stage 3 also the
// weights (16 Psi / N_d). Activations (Korthikanti et al. 2022, arXiv 2205.05198, Table 2 and
// Section 4.2.3; Transformer::layer_activation_bytes) per layer and micro-batch, times the
// micro-batches a stage holds at its peak: all m with GPipe, min(p - r, m) on stage r with 1F1B
// (Megatron's warm-up of p - r - 1 forwards plus the one in flight; x (1 + (p-1)/(p v)) with v
// interleaved chunks, Korthikanti Section 4.2.3), plus the embedding's on the
// first stage and the logits' on the last; with full recomputation, each layer's input per
// micro-batch plus one layer's full activations being recomputed. What it leaves out: the CUDA
// context and allocator fragmentation, temporary buffers (GEMM workspaces, communication
// buffers, ZeRO-3's gathered layer), the fp32 gradient-accumulation buffers some frameworks
// keep.
#pragma once

#include <string>
#include <vector>

#include "model/layout.hpp"
#include "model/workload.hpp"

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

struct StageMemory {
  int stage = 0;
  int layers = 0;
  double parameters = 0;  ///< parameters one worker of this stage holds (its tensor shard)
  ModelStateBytes state;  ///< after ZeRO sharding
  double in_flight = 0;   ///< micro-batches whose activations the stage holds at its peak
  double activation_bytes = 0;
  double total_bytes() const { return state.total() + activation_bytes; }
};

struct LayoutMemory {
  std::vector<StageMemory> stages;
  /// The stage whose workers need the most, and how much.
  int peak_stage = 0;
  double peak_bytes = 0;
};

/// Parameters one worker of pipeline stage `stage` holds.
double stage_parameters(const Transformer& shape, const Layout& layout, int stage);

/// Memory per worker of every stage for a global batch of `batch` sequences. The workload
/// must be a transformer (asserted; check_layout refuses others first).
LayoutMemory layout_memory(const Workload& workload, const Layout& layout, double batch);

/// What the search for fitting layouts may use.
struct FitSearch {
  int workers = 1;
  double batch = 1;         ///< global batch, sequences per step
  double memory_bytes = 0;  ///< per worker (a GPU's memory)
  int max_tensor = 0;       ///< largest tensor size (GPUs per node); 0: no limit
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
};

struct FittingLayout {
  Layout layout;
  LayoutMemory memory;
};

/// The layouts of `search.workers` workers that fit in `search.memory_bytes`, smallest first:
/// for each tensor x pipeline split (fewest model-parallel workers first, then the smaller
/// tensor size), the least intrusive options that fit, tried in this order: recomputation
/// none, selective, full; ZeRO stage 0 to 3; sequence parallelism off, on; the fewest
/// micro-batches. At most `count` of them. Empty when nothing fits.
std::vector<FittingLayout> smallest_fitting_layouts(const Workload& workload,
                                                    const FitSearch& search, size_t count);

}  // namespace tauplan::model
