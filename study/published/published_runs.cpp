// published_runs.cpp: reading a runs file, fitting the calibration, predicting each run.
#include "study/published/published_runs.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/yaml_util.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/convergence/validation.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_shapes.hpp"
#include "model/ir/layout_cost.hpp"

namespace tauplan::study {
namespace {

namespace yu = model::yaml_util;

/// Longest source, assumption or calibration text (a citation with its numbers).
constexpr std::size_t kMaxText = 1000;

int whole(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (!node) throw InputError(origin, key, "a whole number > 0 (required)");
  const double value = yu::positive(node, origin, key);
  if (value != std::floor(value) || value > 1e9)
    throw InputError(origin, key, "a whole number > 0", "'" + node.Scalar() + "'");
  return static_cast<int>(value);
}

bool flag(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (!node) return false;
  const std::string value = yu::text(node, origin, key);
  if (value != "true" && value != "false")
    throw InputError(origin, key, "true or false", "'" + value + "'");
  return value == "true";
}

model::Recompute recompute_of(const YAML::Node& node, const std::string& origin,
                              const std::string& key) {
  const std::string value = node ? yu::text(node, origin, key) : std::string("none");
  if (value == "none") return model::Recompute::None;
  if (value == "selective") return model::Recompute::Selective;
  if (value == "full") return model::Recompute::Full;
  throw InputError(origin, key, "none, selective or full", "'" + value + "'");
}

model::AttentionKernel attention_of(const YAML::Node& node, const std::string& origin,
                                    const std::string& key) {
  const std::string value = yu::text(node, origin, key);
  if (value == "flash") return model::AttentionKernel::Flash;
  if (value == "math") return model::AttentionKernel::Math;
  throw InputError(origin, key, "flash or math", "'" + value + "'");
}

/// model_defaults: what the GPT shapes ({layers, hidden, heads}) take beyond their three
/// numbers. A named workload keeps its own (its run may replace the sequence, attention kernel
/// and dropout).
struct ModelDefaults {
  int sequence = 2048;
  int vocabulary = 51200;
  double bytes_per_parameter = 2;
  double optimizer_bytes_per_parameter = 12;
  bool tied_embeddings = true;
  bool dropout = false;
  model::AttentionKernel attention = model::AttentionKernel::Math;
};

/// A Megatron GPT (GELU 4h, tied embeddings, biases, LayerNorm, learned positions) as a
/// workload.
model::Workload gpt_workload(const YAML::Node& node, const ModelDefaults& defaults,
                             const std::string& origin, const std::string& key) {
  if (!node || !node.IsMap()) throw InputError(origin, key, "a map {layers, hidden, heads}");
  yu::reject_unknown_keys(node, {"layers", "hidden", "heads"}, origin, key + ".");
  model::Transformer t;
  t.layers = whole(node["layers"], origin, key + ".layers");
  t.hidden = whole(node["hidden"], origin, key + ".hidden");
  t.heads = t.kv_heads = whole(node["heads"], origin, key + ".heads");
  if (t.hidden % t.heads != 0)
    throw InputError(origin, key + ".heads", "a divisor of hidden", std::to_string(t.heads));
  t.ffn_hidden = 4 * t.hidden;
  t.sequence = t.max_positions = defaults.sequence;
  t.vocabulary = defaults.vocabulary;
  t.element_bytes = defaults.bytes_per_parameter;
  t.dropout = defaults.dropout;
  t.tied_embeddings = defaults.tied_embeddings;
  t.attention = defaults.attention;
  model::Workload w;
  w.name = fmt::format("gpt-l{}-h{}", t.layers, t.hidden);
  w.source = origin;
  w.bytes_per_parameter = defaults.bytes_per_parameter;
  w.optimizer_bytes_per_parameter = defaults.optimizer_bytes_per_parameter;
  w.sample_unit = "sequence";
  w.transformer = t;
  derive_workload_fields(w);
  return w;
}

/// A workload of the catalog or a file (relative to the runs file's folder first), its sequence,
/// attention kernel and dropout replaced where the run gives them.
model::Workload named_workload(const YAML::Node& node, const std::string& origin,
                               const std::string& key) {
  yu::reject_unknown_keys(node, {"workload", "sequence", "attention", "dropout"}, origin,
                          key + ".");
  std::string name = yu::text(node["workload"], origin, key + ".workload");
  std::error_code error;
  const std::filesystem::path beside = std::filesystem::path(origin).parent_path() / name;
  if (!std::filesystem::path(name).is_absolute() && std::filesystem::is_regular_file(beside, error))
    name = beside.lexically_normal().string();
  model::Workload w;
  try {
    w = model::load_workload(name);
  } catch (const InputError& e) {
    throw InputError(origin, key + ".workload", e.what());
  }
  if (!w.transformer)
    throw InputError(origin, key + ".workload", "a transformer workload", "'" + name + "'");
  model::Transformer& t = *w.transformer;
  if (node["sequence"]) {
    t.sequence = whole(node["sequence"], origin, key + ".sequence");
    if (t.positions == model::PositionEmbedding::Learned && t.sequence > t.max_positions)
      throw InputError(
          origin, key + ".sequence",
          fmt::format("at most the {} learned positions of {}", t.max_positions, w.name),
          std::to_string(t.sequence));
  }
  if (node["attention"]) t.attention = attention_of(node["attention"], origin, key + ".attention");
  if (node["dropout"]) t.dropout = flag(node["dropout"], origin, key + ".dropout");
  derive_workload_fields(w);
  return w;
}

/// A run's model: a GPT shape {layers, hidden, heads} or a named workload {workload, ...}.
model::Workload run_workload(const YAML::Node& node, const ModelDefaults& defaults,
                             const std::string& origin, const std::string& key) {
  if (node && node.IsMap() && node["workload"]) return named_workload(node, origin, key);
  return gpt_workload(node, defaults, origin, key);
}

int zero_stage_of(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (!node) return 0;
  const double value = yu::number(node, origin, key);
  if (value != std::floor(value) || value < 0 || value > 3)
    throw InputError(origin, key, "0, 1, 2 or 3", "'" + node.Scalar() + "'");
  return static_cast<int>(value);
}

PublishedRun parse_run(const YAML::Node& node, const ModelDefaults& defaults,
                       const std::string& origin, const std::string& key) {
  if (!node.IsMap()) throw InputError(origin, key, "a map describing one published run");
  yu::reject_unknown_keys(node,
                          {"name",
                           "table",
                           "source",
                           "assumed",
                           "model",
                           "workers",
                           "tensor_parallel",
                           "pipeline_parallel",
                           "context_parallel",
                           "batch",
                           "micro_batch",
                           "recompute",
                           "sequence_parallel",
                           "virtual_stages",
                           "zero_stage",
                           "calibration_configuration",
                           "tflops_per_gpu",
                           "mfu",
                           "iteration_s",
                           "flop"},
                          origin, key + ".");
  PublishedRun run;
  for (const char* required : {"name", "table", "source"})
    if (!node[required]) throw InputError(origin, key + "." + required, "a value (required)");
  run.name = yu::text(node["name"], origin, key + ".name");
  run.table = yu::text(node["table"], origin, key + ".table");
  run.source = yu::text(node["source"], origin, key + ".source", kMaxText);
  if (node["assumed"]) run.assumed = yu::text(node["assumed"], origin, key + ".assumed", kMaxText);
  run.workload = run_workload(node["model"], defaults, origin, key + ".model");
  run.workers = whole(node["workers"], origin, key + ".workers");
  run.batch = whole(node["batch"], origin, key + ".batch");
  model::Layout& l = run.layout;
  l.tensor = whole(node["tensor_parallel"], origin, key + ".tensor_parallel");
  l.pipeline = whole(node["pipeline_parallel"], origin, key + ".pipeline_parallel");
  l.virtual_stages =
      node["virtual_stages"] ? whole(node["virtual_stages"], origin, key + ".virtual_stages") : 1;
  l.recompute = recompute_of(node["recompute"], origin, key + ".recompute");
  l.sequence_parallel = flag(node["sequence_parallel"], origin, key + ".sequence_parallel");
  l.context = node["context_parallel"]
                  ? whole(node["context_parallel"], origin, key + ".context_parallel")
                  : 1;
  l.zero_stage = zero_stage_of(node["zero_stage"], origin, key + ".zero_stage");
  const long long model_parallel = static_cast<long long>(l.tensor) * l.pipeline * l.context;
  if (run.workers % model_parallel != 0)
    throw InputError(
        origin, key + ".workers",
        l.context > 1
            ? fmt::format("a multiple of tensor x pipeline x context ({})", model_parallel)
            : fmt::format("a multiple of tensor x pipeline ({})", model_parallel),
        std::to_string(run.workers));
  l.data = static_cast<int>(run.workers / model_parallel);
  const int micro_batch = whole(node["micro_batch"], origin, key + ".micro_batch");
  const double micro_batches = run.batch / (l.data * micro_batch);
  if (micro_batches != std::floor(micro_batches) || micro_batches < 1)
    throw InputError(origin, key + ".micro_batch",
                     fmt::format("a divisor of the batch per replica ({:g})", run.batch / l.data),
                     std::to_string(micro_batch));
  l.micro_batches = static_cast<int>(micro_batches);
  check_layout(l, run.workload, run.batch, run.workers, origin + " " + key);
  run.calibration_configuration =
      flag(node["calibration_configuration"], origin, key + ".calibration_configuration");
  int numbers = 0;
  for (const char* quantity : {"tflops_per_gpu", "mfu", "iteration_s"})
    if (node[quantity]) ++numbers, run.quantity = quantity;
  if (numbers != 1)
    throw InputError(origin, key, "one published number: tflops_per_gpu, mfu or iteration_s");
  run.published = yu::positive(node[run.quantity], origin, key + "." + run.quantity);
  if (run.quantity == "mfu" && run.published > 1)
    throw InputError(origin, key + ".mfu", "a fraction of the peak, at most 1",
                     "'" + node["mfu"].Scalar() + "'");
  if (node["flop"]) {
    run.flop = yu::text(node["flop"], origin, key + ".flop");
    if (run.quantity != "tflops_per_gpu")
      throw InputError(origin, key + ".flop",
                       "no flop beside " + run.quantity +
                           " (only tflops_per_gpu counts one: hardware or model)");
    if (run.flop != "hardware" && run.flop != "model")
      throw InputError(origin, key + ".flop", "hardware or model", "'" + run.flop + "'");
  } else {
    run.flop = run.quantity == "tflops_per_gpu" ? "hardware" : run.quantity == "mfu" ? "model" : "";
  }
  return run;
}

/// The layer-time table of `calibration` (model, tensor_parallel, micro_batch, layer_s).
void parse_layer_table(const YAML::Node& c, const ModelDefaults& defaults,
                       const std::string& origin, PublishedRuns& runs) {
  runs.calibration_workload = gpt_workload(c["model"], defaults, origin, "calibration.model");
  runs.calibration_layout.tensor =
      whole(c["tensor_parallel"], origin, "calibration.tensor_parallel");
  runs.calibration_layout.data = runs.calibration_layout.pipeline = 1;
  runs.calibration_batch = whole(c["micro_batch"], origin, "calibration.micro_batch");
  check_layout(runs.calibration_layout, runs.calibration_workload, runs.calibration_batch,
               runs.calibration_layout.tensor, origin + " calibration");
  const YAML::Node points = c["layer_s"];
  if (!points || !points.IsSequence() || points.size() < 2)
    throw InputError(origin, "calibration.layer_s", "a list of at least two measured layer times");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string key = fmt::format("calibration.layer_s[{}]", i);
    yu::reject_unknown_keys(points[i], {"recompute", "sequence_parallel", "seconds"}, origin,
                            key + ".");
    CalibrationPoint point;
    point.recompute = recompute_of(points[i]["recompute"], origin, key + ".recompute");
    point.sequence_parallel =
        flag(points[i]["sequence_parallel"], origin, key + ".sequence_parallel");
    if (!points[i]["seconds"]) throw InputError(origin, key + ".seconds", "a time (required)");
    point.layer_s = yu::positive(points[i]["seconds"], origin, key + ".seconds");
    runs.calibration.push_back(point);
  }
}

}  // namespace

PublishedRuns parse_published_runs(const std::string& text, const std::string& origin) {
  const YAML::Node root = yu::parse(text, origin);
  if (!root.IsMap()) throw InputError(origin, "(top level)", "a map of runs-file keys");
  yu::reject_unknown_keys(root, {"platform", "model_defaults", "calibration", "runs"}, origin);
  PublishedRuns runs;
  runs.file = origin;
  if (!root["platform"]) throw InputError(origin, "platform", "a platform name or file");
  runs.platform = yu::text(root["platform"], origin, "platform");
  ModelDefaults defaults;
  if (const YAML::Node d = root["model_defaults"]) {
    yu::reject_unknown_keys(
        d,
        {"sequence", "vocabulary", "bytes_per_parameter", "optimizer_bytes_per_parameter",
         "dropout", "tied_embeddings", "attention"},
        origin, "model_defaults.");
    defaults.dropout = flag(d["dropout"], origin, "model_defaults.dropout");
    if (d["tied_embeddings"])
      defaults.tied_embeddings =
          flag(d["tied_embeddings"], origin, "model_defaults.tied_embeddings");
    if (d["attention"])
      defaults.attention = attention_of(d["attention"], origin, "model_defaults.attention");
    if (d["sequence"]) defaults.sequence = whole(d["sequence"], origin, "model_defaults.sequence");
    if (d["vocabulary"])
      defaults.vocabulary = whole(d["vocabulary"], origin, "model_defaults.vocabulary");
    if (d["bytes_per_parameter"])
      defaults.bytes_per_parameter =
          yu::positive(d["bytes_per_parameter"], origin, "model_defaults.bytes_per_parameter");
    if (d["optimizer_bytes_per_parameter"])
      defaults.optimizer_bytes_per_parameter =
          yu::positive(d["optimizer_bytes_per_parameter"], origin,
                       "model_defaults.optimizer_bytes_per_parameter", true);
  }
  const YAML::Node c = root["calibration"];
  if (!c || !c.IsMap())
    throw InputError(origin, "calibration",
                     "a map (a layer-time table, or {profile: platform, source})");
  if (c["profile"]) {
    yu::reject_unknown_keys(c, {"source", "profile"}, origin, "calibration.");
  } else {
    yu::reject_unknown_keys(c, {"source", "model", "tensor_parallel", "micro_batch", "layer_s"},
                            origin, "calibration.");
  }
  if (!c["source"]) throw InputError(origin, "calibration.source", "a value (required)");
  runs.calibration_source = yu::text(c["source"], origin, "calibration.source", kMaxText);
  if (c["profile"]) {
    const std::string profile = yu::text(c["profile"], origin, "calibration.profile");
    if (profile != "platform")
      throw InputError(origin, "calibration.profile",
                       "platform (the compute profile the platform's GPUs name, no fit)",
                       "'" + profile + "'");
    runs.calibration_from_platform = true;
  } else {
    parse_layer_table(c, defaults, origin, runs);
  }
  const YAML::Node list = root["runs"];
  if (!list || !list.IsSequence() || list.size() == 0)
    throw InputError(origin, "runs", "a list of published runs");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string key = fmt::format("runs[{}]", i);
    runs.runs.push_back(parse_run(list[i], defaults, origin, key));
    if (runs.calibration_from_platform && runs.runs.back().calibration_configuration)
      throw InputError(origin, key + ".calibration_configuration",
                       "false (calibration.profile platform fits nothing: every run is held out)",
                       "true");
  }
  return runs;
}

PublishedRuns load_published_runs(const std::string& path) {
  return parse_published_runs(yu::read_file(path, "runs"), path);
}

namespace {

/// The peak of the fabric's GPU at its `precision` prop.
double fabric_peak(const model::NodeFabric& fabric, std::string& precision) {
  const model::Host& gpu = fabric.gpu;
  const auto it = gpu.properties.find("precision");
  if (gpu.gpu_model.empty() || it == gpu.properties.end())
    throw InputError(fabric.source_file, "host " + gpu.name + " prop precision",
                     "a GPU host with gpu_model and precision props (the peak the fit divides)");
  precision = it->second;
  const double peak =
      model::gpu_spec(gpu.gpu_model, fabric.source_file, "host " + gpu.name + " prop gpu_model")
          .peak_flops(precision);
  if (peak <= 0)
    throw InputError(fabric.source_file, "host " + gpu.name + " prop precision",
                     "a precision the GPU catalog gives a peak for", precision);
  return peak;
}

}  // namespace

HardwareFit fit_hardware(const PublishedRuns& runs, const model::NodeFabric& fabric) {
  if (runs.calibration_from_platform)
    throw InputError(runs.file, "calibration",
                     "a layer-time table to fit (this file's calibration is the platform's "
                     "profile: nothing is fitted)");
  HardwareFit fit;
  fit.peak_flops = fabric_peak(fabric, fit.precision);
  const model::Workload& workload = runs.calibration_workload;
  const model::Transformer& shape = *workload.transformer;
  // One node for the tensor all-reduces (layer_time's tensor_s, whatever times the compute).
  const model::Platform node = make_node_fabric_platform(fabric, 1);
  // Each layer time is x1 a + x2 b + c: a the GEMM (and attention) flop over the peak, x1 =
  // 1 / efficiency; b the memory-bound bytes, x2 = 1 / bandwidth; c the all-reduces. Relative
  // least squares: minimise sum ((x1 a + x2 b + c - y) / y)^2.
  double saa = 0, sab = 0, sbb = 0, say = 0, sby = 0;
  std::vector<double> a, b;
  for (const CalibrationPoint& point : runs.calibration) {
    model::Layout layout = runs.calibration_layout;
    layout.recompute = point.recompute;
    layout.sequence_parallel = point.sequence_parallel;
    const double micro_batch = layout.micro_batch(runs.calibration_batch);
    model::LayerShape layer =
        layer_shape(shape, micro_batch, layout.tensor, layout.sequence_parallel);
    layer.element_bytes = workload.bytes_per_parameter;
    double flop = 0, bytes = 0;
    for (const model::ComputeOp& op : layer_ops(layer, layout.recompute))
      (op.kind == model::ComputeOpKind::Memory ? bytes : flop) +=
          op.kind == model::ComputeOpKind::Memory ? op.bytes : op.flop;
    const model::StageTime time = layer_time(workload, layout, runs.calibration_batch, node,
                                             place_mesh(layout, node, {}, runs.file));
    const double w = 1 / point.layer_s;
    const double ai = flop / fit.peak_flops * w, bi = bytes * w;
    const double yi = (point.layer_s - time.tensor_s) * w;
    saa += ai * ai, sab += ai * bi, sbb += bi * bi, say += ai * yi, sby += bi * yi;
    a.push_back(flop / fit.peak_flops), b.push_back(bytes), fit.tensor_s.push_back(time.tensor_s);
  }
  const double det = saa * sbb - sab * sab;
  if (!(det > 1e-12 * saa * sbb))
    throw InputError(runs.file, "calibration.layer_s",
                     "layer times that separate GEMMs from memory-bound traffic (settings "
                     "with different recomputation or sequence parallelism)");
  double inverse_efficiency = (say * sbb - sby * sab) / det;
  double inverse_bandwidth = (saa * sby - sab * say) / det;
  // No memory-bound kernel streams faster than the memory: the bandwidth is bounded by the
  // datasheet's (the GPU catalog's memory_bandwidth_Bps). Where the two-parameter optimum lies
  // beyond it, the constrained optimum is on the bound (the objective is a convex quadratic):
  // the bandwidth is the datasheet's and the efficiency the least-squares one given it.
  const double datasheet_Bps = model::gpu_spec(fabric.gpu.gpu_model).memory_bandwidth_Bps;
  fit.datasheet_bandwidth_Bps = datasheet_Bps;
  fit.unconstrained_bandwidth_Bps = 1 / inverse_bandwidth;
  if (datasheet_Bps > 0 && inverse_bandwidth > 0 && inverse_bandwidth < 1 / datasheet_Bps) {
    inverse_bandwidth = 1 / datasheet_Bps;
    inverse_efficiency = (say - sab * inverse_bandwidth) / saa;
    fit.bandwidth_at_datasheet = true;
  }
  if (!(inverse_efficiency > 1) || !(inverse_bandwidth > 0))
    throw InputError(runs.file, "calibration.layer_s",
                     "times a GEMM efficiency below 1 and a positive memory bandwidth fit",
                     fmt::format("efficiency {:.3g}, bandwidth {:.3g} B/s", 1 / inverse_efficiency,
                                 1 / inverse_bandwidth));
  fit.efficiency = 1 / inverse_efficiency;
  fit.memory_bandwidth_Bps = fit.bandwidth_at_datasheet ? datasheet_Bps : 1 / inverse_bandwidth;

  const model::GpuSpec& gpu = model::gpu_spec(fabric.gpu.gpu_model);
  model::ComputeProfile& profile = fit.profile;
  profile.device = "NVIDIA " + gpu.model + " (fitted)";
  profile.precision = fit.precision;
  profile.source = fmt::format(
      "FITTED by tauplan published on {} (experiments/parallelism/megatron.yaml): the "
      "forward + backward time of one layer of {} heads, hidden {}, sequence {}, micro-batch "
      "{:g}, tensor-parallel {}, under {} settings of recomputation and sequence parallelism; "
      "each time = the layer's operations on one tensor rank (model/compute/layer_ops.hpp, math "
      "attention, {:g}-byte elements, {}) under this profile + its tensor all-reduces over the "
      "platform's NVLink route (model/ir/layout_cost.hpp), least squares on relative errors. One "
      "efficiency for every GEMM (the weight GEMMs and the math path's attention GEMMs; five "
      "times cannot separate them, and flash attention, which default_attention_efficiency "
      "times, did not run: it is set equal); memory_bandwidth_Bps is what the memory-bound "
      "operations reach as layer_ops counts their bytes, bounded by the datasheet's {:.6g} B/s "
      "({}); launch_overhead_s 0 (not separable from five times of multi-millisecond layers). "
      "Measure an A100 with exec/cuda/gpu_check.sh to replace it",
      runs.calibration_source, shape.heads, shape.hidden, shape.sequence,
      runs.calibration_layout.micro_batch(runs.calibration_batch), runs.calibration_layout.tensor,
      runs.calibration.size(), workload.bytes_per_parameter,
      shape.dropout ? "with the traffic of dropout, as Megatron-LM trained" : "without dropout",
      fit.datasheet_bandwidth_Bps,
      fit.bandwidth_at_datasheet
          ? fmt::format("the unconstrained fit, {:.4g} B/s, lies beyond it: the fit is on the "
                        "bound and the efficiency the least-squares one given it",
                        fit.unconstrained_bandwidth_Bps)
          : std::string("not reached"));
  profile.peak_flops = fit.peak_flops;
  profile.peak_flops_source = gpu.source + " (model/catalog/gpus.yaml)";
  profile.memory_bandwidth_Bps = fit.memory_bandwidth_Bps;
  profile.launch_overhead_s = 0;
  profile.default_gemm_efficiency = profile.default_attention_efficiency = fit.efficiency;
  for (size_t i = 0; i < a.size(); ++i)
    fit.fitted_layer_s.push_back(inverse_efficiency * a[i] + inverse_bandwidth * b[i] +
                                 fit.tensor_s[i]);
  return fit;
}

std::string profile_difference(const model::ComputeProfile& profile, const HardwareFit& fit,
                               double tolerance) {
  std::string differences;
  auto compare = [&](const char* key, double value, double fitted) {
    if (!(std::abs(value - fitted) <= tolerance * std::abs(fitted)))
      differences += fmt::format("{}{} {:.6g} (fit {:.6g})", differences.empty() ? "" : ", ", key,
                                 value, fitted);
  };
  compare("peak_flops", profile.peak_flops, fit.peak_flops);
  compare("default_gemm_efficiency", profile.default_gemm_efficiency, fit.efficiency);
  compare("default_attention_efficiency", profile.default_attention_efficiency, fit.efficiency);
  compare("memory_bandwidth_Bps", profile.memory_bandwidth_Bps, fit.memory_bandwidth_Bps);
  if (profile.launch_overhead_s != 0)
    differences += std::string(differences.empty() ? "" : ", ") + "a launch overhead (fit 0)";
  if (!profile.gemms.empty() || !profile.attention.empty())
    differences += std::string(differences.empty() ? "" : ", ") + "samples (fit none)";
  if (profile.precision != fit.precision)
    differences += std::string(differences.empty() ? "" : ", ") + "precision " + profile.precision +
                   " (fit " + fit.precision + ")";
  return differences;
}

RunPrediction predict_run(const PublishedRun& run, const model::NodeFabric& fabric) {
  const int nodes = (run.workers + fabric.gpus_per_node - 1) / fabric.gpus_per_node;
  const model::Platform platform = make_node_fabric_platform(fabric, nodes);
  const model::MeshPlacement placement = place_mesh(run.layout, platform, {}, run.workload.source);
  const model::LayoutTime time =
      layout_time(run.workload, run.layout, run.batch, platform, placement);
  RunPrediction p;
  p.iteration_s = time.iteration_s;
  p.tflops_per_gpu = time.hardware_flops_per_worker / 1e12;
  p.model_tflops_per_gpu = time.model_flops_per_worker / 1e12;
  if (run.quantity == "mfu") {
    std::string precision;
    p.mfu = time.model_flops_per_worker / fabric_peak(fabric, precision);
  }
  p.predicted = run.quantity == "iteration_s" ? p.iteration_s
                : run.quantity == "mfu"       ? p.mfu
                : run.flop == "model"         ? p.model_tflops_per_gpu
                                              : p.tflops_per_gpu;
  p.error = (p.predicted - run.published) / run.published;
  p.bubble_s = time.bubble_s;
  p.pipeline_send_s =
      time.pipeline_send_s *
      (run.layout.micro_batches + (run.layout.pipeline - 1.0) / run.layout.virtual_stages);
  for (const model::StageTime& stage : time.stages)
    p.tensor_s = std::max(p.tensor_s, stage.tensor_s * run.layout.micro_batches);
  p.data_s = time.data_s;
  return p;
}

double median_abs_error(const std::vector<RunPrediction>& predictions,
                        const std::vector<bool>& include) {
  std::vector<double> errors;
  for (size_t i = 0; i < predictions.size(); ++i)
    if (i < include.size() && include[i]) errors.push_back(predictions[i].error);
  return errors.empty() ? 0 : model::median_abs(errors);
}

}  // namespace tauplan::study
