// layout_memory.cpp: memory per worker per layout, and the search for layouts that fit.
#include "model/layout_memory.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "model/error.hpp"

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

double stage_parameters(const Transformer& shape, const Layout& layout, int stage) {
  const int t = layout.tensor, p = layout.pipeline;
  const std::vector<int> layers = stage_layers(shape.layers, p);
  double parameters = layers[static_cast<size_t>(stage)] * shape.layer_parameters_per_rank(t);
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
  const std::vector<int> layers = stage_layers(shape.layers, p);
  LayoutMemory memory;
  for (int r = 0; r < p; ++r) {
    StageMemory stage;
    stage.stage = r;
    stage.layers = layers[static_cast<size_t>(r)];
    stage.parameters = stage_parameters(shape, layout, r);
    stage.state =
        model_state_bytes(stage.parameters, workload.bytes_per_parameter,
                          workload.optimizer_bytes_per_parameter, layout.zero_stage, layout.data);
    stage.in_flight = layout.schedule == PipelineSchedule::GPipe ? m : std::min(p - r, m);
    if (layout.virtual_stages > 1)  // Korthikanti et al. 2022 Section 4.2.3
      stage.in_flight *= 1 + (p - 1.0) / (p * layout.virtual_stages);
    double per_micro_batch =
        stage.layers * shape.layer_activation_bytes(b, t, sp, layout.recompute);
    if (r == 0) per_micro_batch += shape.embedding_activation_bytes(b, t, sp);
    if (r == p - 1) per_micro_batch += shape.output_activation_bytes(b, t, sp);
    stage.activation_bytes = stage.in_flight * per_micro_batch;
    if (layout.recompute == Recompute::Full)  // the layer being recomputed, whole
      stage.activation_bytes += shape.layer_activation_bytes(b, t, sp, Recompute::None);
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
  std::vector<FittingLayout> found;
  for (const Split& split : splits) {
    if (found.size() >= count) break;
    Layout base;
    base.tensor = split.tensor;
    base.pipeline = split.pipeline;
    base.data = search.workers / (split.tensor * split.pipeline);
    base.schedule = search.schedule;
    try {
      check_layout(base, workload, search.batch, search.workers, "<search>");
    } catch (const InputError&) {
      continue;  // heads, layers or batch do not allow this split
    }
    const long long replica_batch = std::llround(search.batch / base.data);
    bool placed = false;
    for (Recompute recompute : {Recompute::None, Recompute::Selective, Recompute::Full}) {
      for (int zero = 0; zero <= 3 && !placed; ++zero) {
        for (bool sp : {false, true}) {
          if (sp && base.tensor == 1) continue;
          for (int m : divisors(replica_batch)) {
            Layout layout = base;
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
