// published_runs_test.cpp: the runs file reader, the calibration fit (it recovers the compute
// profile that made a set of layer times through layout_cost's own timing; the committed A100
// profile is the fit of megatron.yaml's Table 4 points, which it reproduces), and its refusals.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "model/compute/profile_file.hpp"
#include "model/compute_source.hpp"
#include "model/error.hpp"
#include "model/layout_cost.hpp"
#include "model/published_runs.hpp"

using namespace tauplan;

namespace {

/// One node of 8 A100s (catalog peak bf16 312e12) at peak, timed by the A100's catalog
/// profile, with Selene's NVLink route (platforms/selene-a100.xml).
model::NodeFabric a100_node() {
  model::NodeFabric fabric;
  fabric.source_file = "<fixture>";
  fabric.gpus_per_node = 8;
  fabric.gpu.gpu_model = "A100-SXM4-80GB";
  fabric.gpu.speed_flops = 312e12;
  fabric.gpu.properties["precision"] = "bf16";
  fabric.intra_node = {{}, 2.8e-6, 3e11};
  fabric.inter_node = {{}, 4e-6, 2.5e10};
  return fabric;
}

std::string runs_yaml(const std::vector<std::pair<std::string, double>>& points) {
  std::string yaml =
      "platform: x\n"
      "calibration:\n  source: test\n  model: {layers: 48, hidden: 6144, heads: 64}\n"
      "  tensor_parallel: 8\n  micro_batch: 4\n  layer_s:\n";
  for (const auto& [setting, seconds] : points)
    yaml += fmt::format("    - {{{}, seconds: {}}}\n", setting, seconds);
  yaml +=
      "runs:\n  - name: r\n    table: t\n    source: s\n    model: {layers: 24, hidden: 2304, "
      "heads: 24}\n    workers: 32\n    tensor_parallel: 1\n    pipeline_parallel: 1\n"
      "    batch: 512\n    micro_batch: 1\n    recompute: full\n    tflops_per_gpu: 137\n";
  return yaml;
}

const std::vector<std::string> kSettings = {
    "recompute: none, sequence_parallel: false", "recompute: none, sequence_parallel: true",
    "recompute: full, sequence_parallel: false", "recompute: selective, sequence_parallel: false",
    "recompute: selective, sequence_parallel: true"};

/// A profile file streaming memory-bound ops at `bandwidth_Bps` with GEMMs at 0.55 of the
/// A100's peak (the truth a fit should recover), and the 22B layer's times (t 8, micro-batch 4)
/// under every setting of kSettings as layout_cost times them on an A100 node with that profile.
struct TruthLayers {
  model::ComputeProfile profile;
  std::filesystem::path file;
  model::NodeFabric fabric;                            ///< an A100 node naming `file`
  std::vector<std::pair<std::string, double>> points;  ///< setting, layer seconds
  std::vector<double> tensor_s;                        ///< each setting's all-reduce seconds
};

TruthLayers truth_layers(const std::string& tag, double bandwidth_Bps) {
  TruthLayers t;
  t.profile.device = "truth";
  t.profile.precision = "bf16";
  t.profile.source = t.profile.peak_flops_source = "test";
  t.profile.peak_flops = 312e12;
  t.profile.memory_bandwidth_Bps = bandwidth_Bps;
  t.profile.default_gemm_efficiency = t.profile.default_attention_efficiency = 0.55;
  t.file = std::filesystem::temp_directory_path() /
           fmt::format("tauplan-published-{}-{}.json", tag, ::getpid());
  std::ofstream(t.file) << model::compute_profile_json(t.profile);
  t.fabric = a100_node();
  t.fabric.gpu.properties["compute_profile"] = t.file.string();
  const model::Platform node = model::make_node_fabric_platform(t.fabric, 1);
  const model::PublishedRuns shape =
      model::parse_published_runs(runs_yaml({{kSettings[0], 1}, {kSettings[2], 1}}), "runs.yaml");
  for (const std::string& setting : kSettings) {
    model::Layout layout = shape.calibration_layout;
    layout.recompute = setting.find("full") != std::string::npos ? model::Recompute::Full
                       : setting.find("selective") != std::string::npos
                           ? model::Recompute::Selective
                           : model::Recompute::None;
    layout.sequence_parallel = setting.find("true") != std::string::npos;
    const model::StageTime layer = model::layer_time(shape.calibration_workload, layout, 4, node,
                                                     model::place_mesh(layout, node, {}, "<t>"));
    t.points.push_back({setting, layer.busy_s});
    t.tensor_s.push_back(layer.tensor_s);
  }
  return t;
}

}  // namespace

TEST_CASE("the calibration fit recovers the compute profile that made the layer times") {
  // The truth: an A100 timed by a profile file of efficiency 0.55 and 1.5e12 B/s.
  const TruthLayers truth = truth_layers("truth", 1.5e12);
  const model::ComputeProfile& truth_profile = truth.profile;
  const auto& points = truth.points;
  for (double tensor_s : truth.tensor_s)
    CHECK(tensor_s > 0);
  const model::PublishedRuns runs = model::parse_published_runs(runs_yaml(points), "runs.yaml");
  const model::HardwareFit fit = model::fit_hardware(runs, a100_node());
  CHECK(fit.efficiency == Approx(0.55).epsilon(1e-6));
  CHECK(fit.memory_bandwidth_Bps == Approx(1.5e12).epsilon(1e-6));
  CHECK(fit.peak_flops == 312e12);
  CHECK(fit.profile.problem().empty());
  CHECK(fit.profile.default_gemm_efficiency == fit.efficiency);
  CHECK(fit.profile.default_attention_efficiency == fit.efficiency);
  CHECK(fit.profile.memory_bandwidth_Bps == fit.memory_bandwidth_Bps);
  CHECK(fit.profile.launch_overhead_s == 0);
  CHECK(model::profile_difference(truth_profile, fit).empty());
  for (size_t i = 0; i < points.size(); ++i)
    CHECK(fit.fitted_layer_s[i] == Approx(points[i].second).epsilon(1e-9));
  // A profile off by 1% in bandwidth is not the fit.
  model::ComputeProfile off = fit.profile;
  off.memory_bandwidth_Bps *= 1.01;
  CHECK_THAT(model::profile_difference(off, fit), Catch::Contains("memory_bandwidth_Bps"));
  // Predicting the run uses the fabric as given (its GPU's profile), not the fit.
  const model::RunPrediction p = model::predict_run(runs.runs[0], truth.fabric);
  CHECK(p.predicted == Approx(p.tflops_per_gpu));
  CHECK(p.error == Approx((p.tflops_per_gpu - 137) / 137));
  std::filesystem::remove(truth.file);
}

TEST_CASE("the committed A100 profile is the fit of Korthikanti et al. 2022 Table 4") {
  const model::PublishedRuns runs =
      model::load_published_runs(TAUPLAN_SOURCE_DIR "/experiments/parallelism/megatron.yaml");
  const model::HardwareFit fit = model::fit_hardware(runs, a100_node());
  const model::ComputeProfile& committed =
      model::catalog_compute_profile("a100-sxm-bf16-fitted", "test", "profile");
  INFO(model::compute_profile_json(fit.profile));
  CHECK(model::profile_difference(committed, fit).empty());
  CHECK(model::gpu_spec("A100-SXM4-80GB").compute_profile == "a100-sxm-bf16-fitted");
  CHECK(committed.source.rfind("FITTED by tauplan published", 0) == 0);
  // The fit reproduces the five measured layer times within 5% each (two parameters, five
  // points: a fit that cannot is the wrong model).
  REQUIRE(fit.fitted_layer_s.size() == runs.calibration.size());
  for (size_t i = 0; i < runs.calibration.size(); ++i) {
    CAPTURE(i);
    CHECK(fit.fitted_layer_s[i] == Approx(runs.calibration[i].layer_s).epsilon(0.05));
  }
}

TEST_CASE("the calibration's bandwidth is at most the GPU's datasheet bandwidth") {
  // Layer times made by a profile streaming at 3e12 B/s, beyond the A100's 2.039e12: the fit
  // is held at the datasheet's, the efficiency fitted alone (higher than the truth's, the
  // memory-bound operations now taking longer).
  const TruthLayers truth = truth_layers("fast", 3e12);
  const auto& points = truth.points;
  const model::HardwareFit fit =
      model::fit_hardware(model::parse_published_runs(runs_yaml(points), "runs.yaml"), a100_node());
  CHECK(fit.bandwidth_at_datasheet);
  CHECK(fit.datasheet_bandwidth_Bps == model::gpu_spec("A100-SXM4-80GB").memory_bandwidth_Bps);
  CHECK(fit.memory_bandwidth_Bps == fit.datasheet_bandwidth_Bps);
  CHECK(fit.unconstrained_bandwidth_Bps == Approx(3e12).epsilon(1e-6));
  CHECK(fit.efficiency > 0.55);
  CHECK(fit.efficiency < 0.65);
  CHECK_THAT(fit.profile.source, Catch::Contains("lies beyond it"));
  for (size_t i = 0; i < points.size(); ++i)
    CHECK(fit.fitted_layer_s[i] == Approx(points[i].second).epsilon(0.05));
  std::filesystem::remove(truth.file);
}

TEST_CASE("the runs file's model_defaults.dropout reaches every workload it builds") {
  std::string yaml = runs_yaml({{kSettings[0], 0.02}, {kSettings[2], 0.027}});
  CHECK_FALSE(
      model::parse_published_runs(yaml, "r.yaml").calibration_workload.transformer->dropout);
  yaml.replace(yaml.find("platform: x\n"), 12, "platform: x\nmodel_defaults: {dropout: true}\n");
  const model::PublishedRuns runs = model::parse_published_runs(yaml, "r.yaml");
  CHECK(runs.calibration_workload.transformer->dropout);
  CHECK(runs.runs[0].workload.transformer->dropout);
  yaml.replace(yaml.find("dropout: true"), 13, "dropout: 0.1");
  CHECK_THROWS_WITH(model::parse_published_runs(yaml, "r.yaml"),
                    Catch::Contains("r.yaml: model_defaults.dropout: expected true or false"));
  // Megatron's runs trained with dropout, and the committed runs file says so.
  CHECK(model::load_published_runs(TAUPLAN_SOURCE_DIR "/experiments/parallelism/megatron.yaml")
            .calibration_workload.transformer->dropout);
}

TEST_CASE("a calibration that cannot separate GEMMs from memory-bound traffic is refused") {
  // Two times of one setting: the two unknowns are not determined.
  const model::PublishedRuns runs = model::parse_published_runs(
      runs_yaml({{kSettings[0], 0.02}, {kSettings[0], 0.021}}), "runs.yaml");
  CHECK_THROWS_WITH(model::fit_hardware(runs, a100_node()),
                    Catch::Contains("runs.yaml: calibration.layer_s: expected layer times that "
                                    "separate GEMMs"));
  // Times faster than the peak allows.
  const model::PublishedRuns fast = model::parse_published_runs(
      runs_yaml({{kSettings[0], 1e-5}, {kSettings[1], 0.9e-5}}), "runs.yaml");
  CHECK_THROWS_WITH(model::fit_hardware(fast, a100_node()),
                    Catch::Contains("expected times a GEMM efficiency below 1"));
}

TEST_CASE("a bad runs file names the file and the key") {
  auto parse = [](const std::string& text) { return model::parse_published_runs(text, "r.yaml"); };
  const std::string good = runs_yaml({{kSettings[0], 0.02}, {kSettings[2], 0.027}});
  CHECK_NOTHROW(parse(good));
  std::string bad = good;
  bad.replace(bad.find("heads: 24"), 9, "heads: 25");
  CHECK_THROWS_WITH(parse(bad), Catch::Contains("r.yaml: runs[0].model.heads: expected a divisor"));
  bad = good;
  bad.replace(bad.find("micro_batch: 1"), 14, "micro_batch: 3");
  CHECK_THROWS_WITH(parse(bad), Catch::Contains("r.yaml: runs[0].micro_batch: expected a divisor"));
  bad = good;
  bad.replace(bad.find("tflops_per_gpu: 137"), 19, "speed: 137");
  CHECK_THROWS_WITH(parse(bad),
                    Catch::Contains("r.yaml: runs[0].speed: expected one of the known"));
  bad = good;
  bad.replace(bad.find("tensor_parallel: 1"), 18, "tensor_parallel: 5");
  CHECK_THROWS_WITH(parse(bad), Catch::Contains("r.yaml: runs[0].workers: expected a multiple"));
}
