// workload.cpp: reading workload YAML and the GPU catalog (both strict: unknown keys are errors).
#include "model/inputs/workload.hpp"

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/catalog.hpp"
#include "model/inputs/hf_config.hpp"

namespace tauplan::model {

double Workload::memory_bytes(double samples) const {
  return parameters * (2 * bytes_per_parameter + optimizer_bytes_per_parameter) +
         samples * activation_bytes_per_sample;
}

namespace {

/// The `widths` key: a dense MLP whose parameters, flop and layers (when given) must be the
/// widths' (to 1e-6), so that a layout can split its layers.
void read_mlp_widths(const YAML::Node& node, const std::string& origin, Workload& w) {
  namespace yu = yaml_util;
  if (!node.IsSequence() || node.size() < 2)
    throw InputError(origin, "widths", "a list of at least 2 layer widths (input ... classes)");
  std::vector<int> widths;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string key = fmt::format("widths[{}]", i);
    const double width = yu::in_range(node[i], origin, key, 1, kMaxMlpWidth);
    if (width != std::floor(width))
      throw InputError(origin, key, "a whole number of features", fmt::format("{:g}", width));
    widths.push_back(static_cast<int>(width));
  }
  double parameters = 0, flop = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const double in = widths[l], out = widths[l + 1];
    parameters += in * out + out;
    flop += 6 * in * out;
  }
  auto agree = [&](const char* key, double derived, double given) {
    if (std::abs(derived - given) <= 1e-6 * given) return;
    throw InputError(origin, key,
                     fmt::format("{:g}, what the dense layers of widths give", derived),
                     fmt::format("{:g}", given));
  };
  agree("parameters", parameters, w.parameters);
  agree("flop_per_sample", flop, w.flop_per_sample);
  if (!w.layers.empty()) {
    if (w.layers.size() + 1 != widths.size())
      throw InputError(origin, "layers",
                       fmt::format("{} layers, one per pair of widths", widths.size() - 1),
                       std::to_string(w.layers.size()));
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const double in = widths[l], out = widths[l + 1];
      agree(fmt::format("layers[{}].parameters", l).c_str(), in * out + out,
            w.layers[l].parameters);
      agree(fmt::format("layers[{}].flop_per_sample", l).c_str(), 6 * in * out,
            w.layers[l].flop_per_sample);
    }
  }
  w.mlp_widths = std::move(widths);
}

}  // namespace

const std::vector<WorkloadKey>& layered_workload_keys() {
  static const std::vector<WorkloadKey> keys = {
      {"name", "the workload's name (printed with results)"},
      {"description", "free text"},
      {"parameters", "trainable parameters (required)"},
      {"flop_per_sample", "forward + backward flop per sample (required)"},
      {"bytes_per_parameter", "bytes of a parameter and of its gradient (default 4)"},
      {"optimizer_bytes_per_parameter", "optimizer state per parameter, bytes (default 0)"},
      {"activation_bytes_per_sample", "activations kept for the backward pass, bytes per sample"},
      {"update_flop_per_parameter", "optimizer step flop per parameter (0: folded into C(b))"},
      {"sample_unit", "what a sample is (image, sequence, ...; default sample)"},
      {"layers", "per-layer list, each {name, parameters, flop_per_sample}; sums must match"},
      {"layers[].name", "the layer's name"},
      {"layers[].parameters", "the layer's parameters"},
      {"layers[].flop_per_sample", "the layer's forward + backward flop per sample"},
      {"widths", "an MLP's layer widths: input, hidden..., classes (derives the layers)"},
  };
  return keys;
}

Workload parse_workload_yaml(const std::string& text, const std::string& origin) {
  namespace yu = yaml_util;
  const YAML::Node root = yu::parse(text, origin);
  if (!root.IsMap()) throw InputError(origin, "(top level)", "a map of workload keys");
  if (root["transformer"]) return parse_transformer_workload(root, origin);
  std::vector<std::string> known;
  for (const WorkloadKey& key : layered_workload_keys())
    if (std::string(key.name).find('.') == std::string::npos) known.push_back(key.name);
  yu::reject_unknown_keys(root, known, origin);
  Workload w;
  w.source = origin;
  if (!root["name"]) throw InputError(origin, "name", "the workload's name");
  w.name = yu::text(root["name"], origin, "name");
  if (w.name.empty()) throw InputError(origin, "name", "the workload's name", "''");
  if (root["description"])
    w.description = yu::text(root["description"], origin, "description", kMaxPathLength);
  for (const char* key : {"parameters", "flop_per_sample"})
    if (!root[key]) throw InputError(origin, key, "a number > 0 (required)");
  // Each size within the limits of model/base/limits.hpp, so that no time derived from it
  // overflows.
  w.parameters = yu::in_range(root["parameters"], origin, "parameters", 0, kMaxParameters, true);
  w.flop_per_sample =
      yu::in_range(root["flop_per_sample"], origin, "flop_per_sample", 0, kMaxFlopPerSample, true);
  if (root["bytes_per_parameter"])
    w.bytes_per_parameter = yu::in_range(root["bytes_per_parameter"], origin, "bytes_per_parameter",
                                         0, kMaxBytesPerParameter, true);
  if (root["optimizer_bytes_per_parameter"])
    w.optimizer_bytes_per_parameter =
        yu::in_range(root["optimizer_bytes_per_parameter"], origin, "optimizer_bytes_per_parameter",
                     0, kMaxBytesPerParameter);
  if (root["activation_bytes_per_sample"])
    w.activation_bytes_per_sample =
        yu::in_range(root["activation_bytes_per_sample"], origin, "activation_bytes_per_sample", 0,
                     kMaxActivationBytesPerSample);
  if (root["update_flop_per_parameter"])
    w.update_flop_per_parameter =
        yu::in_range(root["update_flop_per_parameter"], origin, "update_flop_per_parameter", 0,
                     kMaxUpdateFlopPerParameter);
  if (root["sample_unit"]) w.sample_unit = yu::text(root["sample_unit"], origin, "sample_unit");
  if (const YAML::Node layers = root["layers"]) {
    if (!layers.IsSequence()) throw InputError(origin, "layers", "a list of layers");
    double parameters = 0;
    double flop = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string prefix = fmt::format("layers[{}].", i);
      const YAML::Node layer = layers[i];
      if (!layer.IsMap()) throw InputError(origin, fmt::format("layers[{}]", i), "a map");
      yu::reject_unknown_keys(layer, {"name", "parameters", "flop_per_sample"}, origin, prefix);
      Layer l;
      l.name = layer["name"] ? yu::text(layer["name"], origin, prefix + "name")
                             : fmt::format("layer{}", i);
      if (!layer["parameters"] || !layer["flop_per_sample"])
        throw InputError(origin, prefix + "parameters", "parameters and flop_per_sample");
      l.parameters =
          yu::in_range(layer["parameters"], origin, prefix + "parameters", 0, kMaxParameters);
      l.flop_per_sample = yu::in_range(layer["flop_per_sample"], origin, prefix + "flop_per_sample",
                                       0, kMaxFlopPerSample);
      parameters += l.parameters;
      flop += l.flop_per_sample;
      w.layers.push_back(l);
    }
    // The layers are the model cut into pieces: they must add up to its totals (to rounding).
    auto check_sum = [&](const char* key, double sum, double total) {
      if (std::abs(sum - total) <= 1e-6 * total) return;
      throw InputError(origin, std::string("layers[].") + key,
                       fmt::format("layers that add up to {} = {:g}", key, total),
                       fmt::format("a sum of {:g}", sum));
    };
    if (!w.layers.empty()) {
      check_sum("parameters", parameters, w.parameters);
      check_sum("flop_per_sample", flop, w.flop_per_sample);
    }
  }
  if (root["widths"]) read_mlp_widths(root["widths"], origin, w);
  return w;
}

std::vector<std::string> catalog_workload_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < catalog::kWorkloadCount; ++i)
    names.emplace_back(catalog::kWorkloads[i].name);
  return names;
}

Workload load_workload(const std::string& name_or_path) {
  for (size_t i = 0; i < catalog::kWorkloadCount; ++i)
    if (name_or_path == catalog::kWorkloads[i].name)
      return parse_workload_yaml(catalog::kWorkloads[i].text, "catalog:" + name_or_path);
  std::ifstream probe(name_or_path);
  if (!probe) {
    std::string names;
    for (const auto& n : catalog_workload_names())
      names += (names.empty() ? "" : ", ") + n;
    throw InputError(name_or_path, "workload",
                     "a catalog name (" + names + ") or a readable YAML file", "neither");
  }
  const std::string text = yaml_util::read_file(name_or_path, "workload");
  // A HuggingFace config.json (model_type or architectures) is a transformer (hf_config.hpp);
  // other JSON is read as workload YAML, of which JSON is a subset.
  const std::string suffix = ".json";
  if (name_or_path.size() > suffix.size() &&
      name_or_path.compare(name_or_path.size() - suffix.size(), suffix.size(), suffix) == 0)
    if (std::optional<Workload> config = parse_hf_config(text, name_or_path)) return *config;
  return parse_workload_yaml(text, name_or_path);
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"fp32", "fp16", "bf16", "fp64"};
  return names;
}

double GpuSpec::peak_flops(const std::string& precision) const {
  if (precision == "fp64") return peak_fp64_flops;
  if (precision == "fp32") return peak_fp32_flops;
  if (precision == "fp16") return peak_fp16_flops;
  if (precision == "bf16") return peak_bf16_flops;
  return 0;
}

namespace {
std::vector<GpuSpec> parse_gpu_catalog() {
  namespace yu = yaml_util;
  const std::string origin = "model/catalog/gpus.yaml";
  const YAML::Node root = yu::parse(catalog::kGpuCatalogYaml, origin);
  std::vector<GpuSpec> gpus;
  if (!root["gpus"] || !root["gpus"].IsSequence()) throw InputError(origin, "gpus", "a list");
  for (const auto& node : root["gpus"]) {
    GpuSpec gpu;
    gpu.model = yu::text(node["model"], origin, "gpus[].model");
    const std::string prefix = "gpus[" + gpu.model + "].";
    if (const YAML::Node peaks = node["peak_flops"]) {
      for (const auto& entry : peaks) {
        const std::string precision = entry.first.as<std::string>();
        const double value = yu::positive(entry.second, origin, prefix + "peak_flops." + precision);
        if (precision == "fp64")
          gpu.peak_fp64_flops = value;
        else if (precision == "fp32")
          gpu.peak_fp32_flops = value;
        else if (precision == "fp16")
          gpu.peak_fp16_flops = value;
        else if (precision == "bf16")
          gpu.peak_bf16_flops = value;
        else
          throw InputError(origin, prefix + "peak_flops." + precision, "fp64|fp32|fp16|bf16");
      }
    }
    gpu.memory_bytes = yu::positive(node["memory_bytes"], origin, prefix + "memory_bytes");
    if (node["memory_bandwidth_Bps"])
      gpu.memory_bandwidth_Bps =
          yu::positive(node["memory_bandwidth_Bps"], origin, prefix + "memory_bandwidth_Bps");
    if (node["source"]) gpu.source = yu::text(node["source"], origin, prefix + "source");
    if (node["compute_profile"])
      gpu.compute_profile = yu::text(node["compute_profile"], origin, prefix + "compute_profile");
    gpus.push_back(gpu);
  }
  return gpus;
}
}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> gpus = parse_gpu_catalog();
  return gpus;
}

const GpuSpec& gpu_spec(const std::string& model, const std::string& file, const std::string& key) {
  for (const auto& gpu : gpu_catalog())
    if (gpu.model == model) return gpu;
  std::string names;
  for (const auto& gpu : gpu_catalog())
    names += (names.empty() ? "" : ", ") + gpu.model;
  throw InputError(file, key, "a GPU of the catalog (" + names + ")", "'" + model + "'");
}

}  // namespace tauplan::model
