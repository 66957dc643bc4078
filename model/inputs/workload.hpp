// workload.hpp: what a model costs to train, per sample and per parameter.
//
// A workload is a YAML file (model/catalog/workloads/ holds the built-in catalog): parameter
// count, bytes per parameter as communicated, flop per sample for forward+backward, activation
// memory per sample, and optionally a per-layer list used for gradient-bucket overlap. It leaves
// out everything finer (kernels, fusion, recomputation): compute time comes from flop divided by
// a host's effective speed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/inputs/transformer.hpp"

namespace tauplan::model {

struct Layer {
  std::string name;
  double parameters = 0;
  double flop_per_sample = 0;  ///< forward + backward
};

struct Workload {
  std::string name;
  std::string description;
  std::string source;  ///< file it was read from, or "catalog:<name>"
  double parameters = 0;
  double bytes_per_parameter = 4;
  double optimizer_bytes_per_parameter = 0;
  double flop_per_sample = 0;  ///< forward + backward
  double activation_bytes_per_sample = 0;
  double update_flop_per_parameter = 0;  ///< optimizer step cost; 0 = folded into C(b)
  std::string sample_unit = "sample";
  std::vector<Layer> layers;  ///< forward order; may be empty
  /// For a multilayer perceptron of dense layers (the `widths` key: input, hidden..., classes):
  /// layer l maps widths[l] features to widths[l+1], parameters w_l w_{l+1} + w_{l+1}, flop per
  /// sample 6 w_l w_{l+1} (forward 2, backward 4). Empty for other workloads.
  std::vector<int> mlp_widths;
  /// The shape, for a workload described as a transformer (model/inputs/transformer.hpp); its
  /// parameters, flop, activation bytes and layers are then derived from it.
  std::optional<Transformer> transformer;

  /// Bytes of one full gradient or parameter vector as communicated.
  double gradient_bytes() const { return parameters * bytes_per_parameter; }
  /// GPU memory needed to train on `samples` samples at once: weights, gradients, optimizer
  /// state and activations.
  double memory_bytes(double samples) const;
};

/// Loads a workload: a name of the built-in catalog ("resnet-50"), a path to a YAML file, or a
/// path ending in .json to a HuggingFace config.json (model/inputs/hf_config.hpp).
/// Throws InputError naming the file and key on any problem.
Workload load_workload(const std::string& name_or_path);
/// Parses workload YAML text; `origin` names it in errors.
Workload parse_workload_yaml(const std::string& text, const std::string& origin);
/// Names of the built-in catalog.
std::vector<std::string> catalog_workload_names();

/// One GPU of the catalog (model/catalog/gpus.yaml).
struct GpuSpec {
  std::string model;
  double peak_fp64_flops = 0;
  double peak_fp32_flops = 0;
  double peak_fp16_flops = 0;
  double peak_bf16_flops = 0;
  double memory_bytes = 0;
  double memory_bandwidth_Bps = 0;
  std::string source;
  /// The compute profile (model/catalog/profiles/NAME.json) that times transformer layers on
  /// this GPU; empty when none was measured or derived (model/ir/compute_source.hpp).
  std::string compute_profile;
  /// Peak for "fp64", "fp32", "fp16" or "bf16" (precision_names()); 0 when the chip lacks it.
  double peak_flops(const std::string& precision) const;
};

/// The precisions a catalog GPU may have a peak for: fp32, fp16, bf16, fp64.
const std::vector<std::string>& precision_names();

/// The built-in GPU catalog; throws InputError if `model` is unknown (key names `key`).
const GpuSpec& gpu_spec(const std::string& model, const std::string& file = "<gpu catalog>",
                        const std::string& key = "gpu_model");
const std::vector<GpuSpec>& gpu_catalog();

/// The keys of a workload YAML that is not a transformer (layers or an MLP's widths), with their
/// meanings: the reader accepts exactly these, and `tauplan help-keys` lists them.
const std::vector<WorkloadKey>& layered_workload_keys();

}  // namespace tauplan::model
