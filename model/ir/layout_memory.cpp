// layout_memory.cpp: memory per worker per layout, and the search for layouts that fit.
#include "model/ir/layout_memory.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "model/base/error.hpp"

namespace tauplan::model {

ModelStateBytes model_state_bytes(double parameters, double bytes_per_parameter,
                                  double optimizer_bytes_per_parameter, int zero_stage, int data) {
  const double shards = data;
  ModelStateBytes bytes;
  bytes.weights = parameters * bytes_per_parameter / (zero_stage >= 3 ? shards : 1);
  bytes.gradients = parameters * bytes_per_parameter / (zero_stage >= 2 ? shards : 1);
  bytes.optimizer = parameters * optimizer_bytes_per_parameter / (zero_stage >= 1 ? shards : 1);
  return bytes;
}

double memory_reserve_bytes(double activation_bytes) {
  return MemoryReserve::kCudaContextBytes + MemoryReserve::kNcclBufferBytes +
         MemoryReserve::kFragmentationOfActivations * activation_bytes;
}

namespace {

/// The first layer of pipeline stage `stage` and how many it holds.
std::pair<int, int> stage_layer_range(const Transformer& shape, int pipeline, int stage) {
  const std::vector<int> layers = stage_layers(shape.layers, pipeline);
  int first = 0;
  for (int r = 0; r < stage; ++r)
    first += layers[static_cast<size_t>(r)];
  return {first, layers[static_cast<size_t>(stage)]};
}

}  // namespace

StageLayerKinds stage_layer_kinds(const Transformer& shape, int pipeline, int stage) {
  const auto [first, count] = stage_layer_range(shape, pipeline, stage);
  StageLayerKinds kinds;
  kinds.dense = shape.layers_of_kind(LayerKind::Dense, first, count);
  kinds.moe = shape.layers_of_kind(LayerKind::Moe, first, count);
  return kinds;
}

double stage_expert_parameters(const Transformer& shape, const Layout& layout, int stage) {
  const StageLayerKinds kinds = stage_layer_kinds(shape, layout.pipeline, stage);
  return kinds.moe * shape.routed_expert_parameters() / layout.expert;
}

double stage_shared_kv_parameters(const Transformer& shape, const Layout& layout, int stage) {
  if (shape.mla.enabled() || layout.tensor <= shape.kv_heads) return 0;
  const StageLayerKinds kinds = stage_layer_kinds(shape, layout.pipeline, stage);
  return (kinds.dense + kinds.moe) * 2.0 * shape.hidden * shape.head_dim();
}

int expert_data_size(const Layout& layout) {
  return layout.tensor * layout.context * layout.data / layout.expert;
}

double stage_parameters(const Transformer& shape, const Layout& layout, int stage) {
  const int t = layout.tensor, p = layout.pipeline;
  const StageLayerKinds kinds = stage_layer_kinds(shape, p, stage);
  double parameters = kinds.dense * shape.layer_parameters_per_rank(t, LayerKind::Dense) +
                      kinds.moe * shape.layer_parameters_per_rank(t, LayerKind::Moe, layout.expert);
  if (stage == 0)  // vocabulary-parallel token embedding; positions and token types whole
    parameters += shape.token_embedding_parameters() / t + shape.other_embedding_parameters();
  if (stage == p - 1) {
    parameters += shape.norm_parameters() + shape.head_parameters;
    // An untied output projection, or Megatron's copy of the tied embedding on the last stage.
    if (!shape.tied_embeddings || p > 1) parameters += shape.token_embedding_parameters() / t;
  }
  return parameters;
}

LayoutMemory layout_memory(const Workload& workload, const Layout& layout, double batch) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, p = layout.pipeline, m = layout.micro_batches;
  const bool sp = layout.sequence_parallel;
  const double b = layout.micro_batch(batch);
  // Context parallelism splits every activation by sequence over its c ranks (the s x s scores
  // of the math path into s/c x s blocks): all of a rank's activation bytes / c.
  const double c = layout.context;
  const double e = workload.bytes_per_parameter, optimizer = workload.optimizer_bytes_per_parameter;
  LayoutMemory memory;
  for (int r = 0; r < p; ++r) {
    StageMemory stage;
    stage.stage = r;
    const StageLayerKinds kinds = stage_layer_kinds(shape, p, r);
    stage.layers = kinds.dense + kinds.moe;
    stage.parameters = stage_parameters(shape, layout, r);
    // Dense weights are sharded by ZeRO over data x context; routed experts over the ranks that
    // hold the same experts (t c d / e).
    const double experts = stage_expert_parameters(shape, layout, r);
    const ModelStateBytes dense_state = model_state_bytes(
        stage.parameters - experts, e, optimizer, layout.zero_stage, layout.data * layout.context);
    const ModelStateBytes expert_state =
        model_state_bytes(experts, e, optimizer, layout.zero_stage, expert_data_size(layout));
    stage.state.weights = dense_state.weights + expert_state.weights;
    stage.state.gradients = dense_state.gradients + expert_state.gradients;
    stage.state.optimizer = dense_state.optimizer + expert_state.optimizer;
    stage.in_flight = layout.schedule == PipelineSchedule::GPipe ? m : std::min(p - r, m);
    if (layout.virtual_stages > 1)  // Korthikanti et al. 2022 Section 4.2.3
      stage.in_flight *= 1 + (p - 1.0) / (p * layout.virtual_stages);
    double per_micro_batch =
        kinds.dense * shape.layer_activation_bytes(b, t, sp, layout.recompute, LayerKind::Dense) +
        kinds.moe * shape.layer_activation_bytes(b, t, sp, layout.recompute, LayerKind::Moe);
    if (r == 0) per_micro_batch += shape.embedding_activation_bytes(b, t, sp);
    if (r == p - 1) per_micro_batch += shape.output_activation_bytes(b, t, sp);
    stage.activation_bytes = stage.in_flight * per_micro_batch / c;
    if (layout.recompute == Recompute::Full)  // the layer being recomputed, whole
      stage.activation_bytes +=
          shape.layer_activation_bytes(b, t, sp, Recompute::None,
                                       kinds.moe > 0 ? LayerKind::Moe : LayerKind::Dense) /
          c;
    stage.reserve_bytes = memory_reserve_bytes(stage.activation_bytes);
    if (stage.total_bytes() > memory.peak_bytes) {
      memory.peak_bytes = stage.total_bytes();
      memory.peak_stage = r;
      memory.reserve_bytes = stage.reserve_bytes;
    }
    memory.stages.push_back(stage);
  }
  return memory;
}

namespace {

std::vector<int> divisors(long long n) {
  std::vector<int> out;
  for (long long k = 1; k <= n; ++k)
    if (n % k == 0) out.push_back(static_cast<int>(k));
  return out;
}

}  // namespace

std::vector<FittingLayout> smallest_fitting_layouts(const Workload& workload,
                                                    const FitSearch& search, size_t count) {
  assert(workload.transformer);
  struct Split {
    int tensor, pipeline;
  };
  std::vector<Split> splits;
  for (int t : divisors(search.workers)) {
    if (search.max_tensor > 0 && t > search.max_tensor) continue;
    for (int p : divisors(search.workers / t))
      splits.push_back({t, p});
  }
  std::stable_sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
    const long long ma = 1LL * a.tensor * a.pipeline, mb = 1LL * b.tensor * b.pipeline;
    return ma != mb ? ma < mb : a.tensor < b.tensor;
  });
  const bool moe = workload.transformer->is_moe();
  std::vector<FittingLayout> found;
  for (const Split& split : splits) {
    if (found.size() >= count) break;
    Layout base;
    base.tensor = split.tensor;
    base.pipeline = split.pipeline;
    base.data = search.workers / (split.tensor * split.pipeline);
    base.schedule = search.schedule;
    base.sequence_parallel = moe && base.tensor > 1;  // checked with it; searched below
    try {
      check_layout(base, workload, search.batch, search.workers, "<search>");
    } catch (const InputError&) {
      continue;  // heads, layers or batch do not allow this split
    }
    const long long replica_batch = std::llround(search.batch / base.data);
    // A mixture of experts: its experts split over the fewest ranks that fit (1 first).
    std::vector<int> expert_sizes = {1};
    if (moe)
      for (int e : divisors(workload.transformer->moe.experts))
        if (e > 1 && (1LL * base.tensor * base.data) % e == 0) expert_sizes.push_back(e);
    bool placed = false;
    for (int e : expert_sizes) {
      for (Recompute recompute : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        for (int zero = 0; zero <= 3 && !placed; ++zero) {
          for (bool sp : {false, true}) {
            if (sp && base.tensor == 1) continue;
            if (!sp && moe && base.tensor > 1) continue;  // check_layout's rule
            for (int m : divisors(replica_batch)) {
              Layout layout = base;
              layout.expert = e;
              layout.recompute = recompute;
              layout.zero_stage = zero;
              layout.sequence_parallel = sp;
              layout.micro_batches = m;
              const LayoutMemory memory = layout_memory(workload, layout, search.batch);
              if (!memory.fits(search.memory_bytes)) continue;
              found.push_back({layout, memory});
              placed = true;
              break;
            }
            if (placed) break;
          }
        }
        if (placed) break;
      }
      if (placed) break;
    }
  }
  return found;
}

TrainingPeak training_peak(const std::string& gpu_model, const std::string& precision,
                           double bytes_per_parameter) {
  TrainingPeak peak;
  if (gpu_model.empty()) {
    peak.missing = "no gpu_model: no catalog peak";
    return peak;
  }
  const GpuSpec& gpu = gpu_spec(gpu_model);
  peak.precision = precision;
  if (peak.precision.empty())
    peak.precision = bytes_per_parameter == 2   ? (gpu.peak_bf16_flops > 0 ? "bf16" : "fp16")
                     : bytes_per_parameter == 4 ? "fp32"
                                                : "";
  if (peak.precision.empty()) {
    peak.missing = fmt::format("{:g} bytes per parameter name no precision", bytes_per_parameter);
    return peak;
  }
  peak.flops = gpu.peak_flops(peak.precision);
  if (peak.flops <= 0)
    peak.missing =
        fmt::format("the GPU catalog gives the {} no {} peak", gpu.model, peak.precision);
  return peak;
}

}  // namespace tauplan::model
