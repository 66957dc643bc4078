// mlp_layout.cpp: the per-stage work and the checks of an MLP layout (model/ir/mlp_layout.hpp).
#include "model/ir/mlp_layout.hpp"

#include <cmath>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::model {
namespace {

using Split = MlpLayerSplit;

std::string widths_text(const std::vector<int>& widths) {
  std::string text;
  for (int w : widths)
    text += (text.empty() ? "" : "-") + std::to_string(w);
  return text;
}

}  // namespace

std::vector<MlpLayerSplit> mlp_layer_splits(int first, int end, int tensor) {
  std::vector<MlpLayerSplit> splits;
  for (int l = first; l < end;) {
    if (tensor > 1 && l + 1 < end) {
      splits.push_back(MlpLayerSplit::Columns);
      splits.push_back(MlpLayerSplit::Rows);
      l += 2;
    } else {
      splits.push_back(MlpLayerSplit::Whole);
      l += 1;
    }
  }
  return splits;
}

MlpStageWork mlp_stage_work(const Workload& workload, const Layout& layout, double batch,
                            int stage) {
  const std::vector<int>& widths = workload.mlp_widths;
  const int layers = static_cast<int>(widths.size()) - 1;
  // Exact flop per sample of the whole network, forward and backward, and the factor to the
  // workload's count.
  double exact = -2.0 * widths[0] * widths[1];
  for (int l = 0; l < layers; ++l)
    exact += 6.0 * widths[static_cast<size_t>(l)] * widths[static_cast<size_t>(l) + 1];
  const double scale = workload.flop_per_sample / exact;
  const std::vector<int> counts = stage_layers(layers, layout.pipeline);
  MlpStageWork work;
  for (int r = 0; r < stage; ++r)
    work.first_layer += counts[static_cast<size_t>(r)];
  work.end_layer = work.first_layer + counts[static_cast<size_t>(stage)];
  const double n = layout.micro_batch(batch);
  const double t = layout.tensor;
  const std::vector<Split> splits =
      mlp_layer_splits(work.first_layer, work.end_layer, layout.tensor);
  for (int l = work.first_layer; l < work.end_layer; ++l) {
    const Split split = splits[static_cast<size_t>(l - work.first_layer)];
    const double in = widths[static_cast<size_t>(l)], out = widths[static_cast<size_t>(l) + 1];
    const double share = (split == Split::Whole ? 1 : 1 / t) * scale;
    work.forward_flop += 2 * n * in * out * share;
    // Weight gradient always; input gradient unless this is the network's first layer.
    work.backward_flop += (l == 0 ? 2 : 4) * n * in * out * share;
    if (split == Split::Rows) work.forward_allreduce_values.push_back(n * out);
    if (split == Split::Columns && l > 0) work.backward_allreduce_values.push_back(n * in);
    switch (split) {
      case Split::Whole:
        work.parameters += in * out + out;
        break;
      case Split::Columns:
        work.parameters += (in * out + out) / t;
        break;
      case Split::Rows:
        work.parameters += in * out / t + out;
        break;
    }
  }
  work.input_values = n * widths[static_cast<size_t>(work.first_layer)];
  work.output_values = n * widths[static_cast<size_t>(work.end_layer)];
  return work;
}

void check_mlp_layout(const Layout& layout, const Workload& workload, double batch, int workers,
                      const KeyOrigins& origins) {
  const std::vector<int>& widths = workload.mlp_widths;
  const int layers = static_cast<int>(widths.size()) - 1;
  const int t = layout.tensor, p = layout.pipeline, d = layout.data;
  const std::string mlp = fmt::format("the MLP {} of {}", widths_text(widths), workload.name);
  check_layout_workers(layout, workers, origins);
  if (p > layers)
    throw InputError(origins.of("pipeline_parallel"),
                     fmt::format("at most the {} layers of {} (every stage holds at least one "
                                 "layer)",
                                 layers, mlp),
                     std::to_string(p));
  const std::vector<int> counts = stage_layers(layers, p);
  int first = 0;
  for (int count : counts) {
    const std::vector<Split> splits = mlp_layer_splits(first, first + count, t);
    for (int l = first; l < first + count; ++l)
      if (splits[static_cast<size_t>(l - first)] == Split::Columns &&
          widths[static_cast<size_t>(l) + 1] % t != 0)
        throw InputError(origins.of("tensor_parallel"),
                         fmt::format("a divisor of width {} of {} (layer {}'s outputs are split "
                                     "over the tensor ranks)",
                                     widths[static_cast<size_t>(l) + 1], mlp, l),
                         std::to_string(t));
    first += count;
  }
  const double per_replica = batch / d;
  if (batch < d || per_replica != std::floor(per_replica))
    throw InputError(origins.of("batch"),
                     fmt::format("a multiple of data_parallel ({}): every replica takes an equal "
                                 "slice",
                                 d),
                     fmt::format("{:g}", batch));
  if (static_cast<long long>(per_replica) % layout.micro_batches != 0)
    throw InputError(origins.of("micro_batches"),
                     fmt::format("a divisor of the {:g} samples each data-parallel replica takes "
                                 "(batch {:g} / data_parallel {})",
                                 per_replica, batch, d),
                     std::to_string(layout.micro_batches));
  if (layout.virtual_stages != 1)
    throw InputError(origins.of("virtual_stages"), "1 for an MLP workload",
                     std::to_string(layout.virtual_stages));
  if (layout.recompute != Recompute::None)
    throw InputError(origins.of("recompute"), "none for an MLP workload (exec does not recompute)",
                     to_string(layout.recompute));
  if (layout.sequence_parallel)
    throw InputError(origins.of("sequence_parallel"),
                     "false for an MLP workload (it has no sequence)", "true");
}

}  // namespace tauplan::model
