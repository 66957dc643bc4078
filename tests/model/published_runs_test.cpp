// published_runs_test.cpp: the runs file reader, the calibration fit (it recovers the GEMM
// efficiency and element-wise passes that made a set of layer times), and its refusals.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/layout_cost.hpp"
#include "model/published_runs.hpp"

using namespace tauplan;

namespace {

/// One node of 8 A100s (catalog peak bf16 312e12, 2.039e12 B/s) at `efficiency` with `passes`.
model::NodeFabric a100_node(double efficiency, double passes) {
  model::NodeFabric fabric;
  fabric.source_file = "<fixture>";
  fabric.gpus_per_node = 8;
  fabric.gpu.gpu_model = "A100-SXM4-80GB";
  fabric.gpu.speed_flops = 312e12 * efficiency;
  fabric.gpu.properties["precision"] = "bf16";
  fabric.gpu.properties["elementwise_passes"] = fmt::format("{}", passes);
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

}  // namespace

TEST_CASE("the calibration fit recovers the efficiency and passes that made the layer times") {
  const model::NodeFabric truth = a100_node(0.55, 3.0);
  const model::Platform node = model::make_node_fabric_platform(truth, 1);
  // Layer times of the 22B layer (t 8, micro-batch 4) made by the model itself.
  const model::PublishedRuns shape =
      model::parse_published_runs(runs_yaml({{kSettings[0], 1}, {kSettings[2], 1}}), "runs.yaml");
  std::vector<std::pair<std::string, double>> points;
  for (const std::string& setting : kSettings) {
    model::Layout layout = shape.calibration_layout;
    layout.recompute = setting.find("full") != std::string::npos ? model::Recompute::Full
                       : setting.find("selective") != std::string::npos
                           ? model::Recompute::Selective
                           : model::Recompute::None;
    layout.sequence_parallel = setting.find("true") != std::string::npos;
    const model::StageTime layer = model::layer_time(shape.calibration_workload, layout, 4, node,
                                                     model::place_mesh(layout, node, {}, "<t>"));
    points.push_back({setting, layer.busy_s});
  }
  const model::PublishedRuns runs = model::parse_published_runs(runs_yaml(points), "runs.yaml");
  const model::HardwareFit fit = model::fit_hardware(runs, a100_node(0.9, 0));
  CHECK(fit.efficiency == Approx(0.55).epsilon(1e-6));
  CHECK(fit.elementwise_passes == Approx(3.0).epsilon(1e-6));
  CHECK(fit.peak_flops == 312e12);
  for (size_t i = 0; i < points.size(); ++i)
    CHECK(fit.fitted_layer_s[i] == Approx(points[i].second).epsilon(1e-9));
  // Predicting the run uses the fabric as given (its speed and passes), not the fit.
  const model::RunPrediction p = model::predict_run(runs.runs[0], truth);
  CHECK(p.predicted == Approx(p.tflops_per_gpu));
  CHECK(p.error == Approx((p.tflops_per_gpu - 137) / 137));
}

TEST_CASE("a calibration that cannot separate compute from element-wise traffic is refused") {
  // Two times of one setting, or of settings that scale compute and traffic alike (full
  // recomputation repeats both by 4/3): the two unknowns are not determined.
  const model::PublishedRuns runs = model::parse_published_runs(
      runs_yaml({{kSettings[0], 0.02}, {kSettings[0], 0.021}}), "runs.yaml");
  CHECK_THROWS_WITH(model::fit_hardware(runs, a100_node(0.5, 1)),
                    Catch::Contains("runs.yaml: calibration.layer_s: expected layer times that "
                                    "separate compute"));
  // Times faster than the peak allows.
  const model::PublishedRuns fast = model::parse_published_runs(
      runs_yaml({{kSettings[0], 1e-5}, {kSettings[1], 0.9e-5}}), "runs.yaml");
  CHECK_THROWS_WITH(model::fit_hardware(fast, a100_node(0.5, 1)),
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
