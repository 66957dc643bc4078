// published_runs_test.cpp: the runs file reader, the calibration fit (it recovers the compute
// profile that made a set of layer times through layout_cost's own timing; the committed A100
// profile is the fit of megatron.yaml's Table 4 points, which it reproduces), and its refusals.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/compute/profile_file.hpp"
#include "model/ir/compute_source.hpp"
#include "model/ir/layout_cost.hpp"
#include "study/published/published_runs.hpp"

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
  const study::PublishedRuns shape =
      study::parse_published_runs(runs_yaml({{kSettings[0], 1}, {kSettings[2], 1}}), "runs.yaml");
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
  const study::PublishedRuns runs = study::parse_published_runs(runs_yaml(points), "runs.yaml");
  const study::HardwareFit fit = study::fit_hardware(runs, a100_node());
  CHECK(fit.efficiency == Approx(0.55).epsilon(1e-6));
  CHECK(fit.memory_bandwidth_Bps == Approx(1.5e12).epsilon(1e-6));
  CHECK(fit.peak_flops == 312e12);
  CHECK(fit.profile.problem().empty());
  CHECK(fit.profile.default_gemm_efficiency == fit.efficiency);
  CHECK(fit.profile.default_attention_efficiency == fit.efficiency);
  CHECK(fit.profile.memory_bandwidth_Bps == fit.memory_bandwidth_Bps);
  CHECK(fit.profile.launch_overhead_s == 0);
  CHECK(study::profile_difference(truth_profile, fit).empty());
  for (size_t i = 0; i < points.size(); ++i)
    CHECK(fit.fitted_layer_s[i] == Approx(points[i].second).epsilon(1e-9));
  // A profile off by 1% in bandwidth is not the fit.
  model::ComputeProfile off = fit.profile;
  off.memory_bandwidth_Bps *= 1.01;
  CHECK_THAT(study::profile_difference(off, fit), Catch::Contains("memory_bandwidth_Bps"));
  // Predicting the run uses the fabric as given (its GPU's profile), not the fit.
  const study::RunPrediction p = study::predict_run(runs.runs[0], truth.fabric);
  CHECK(p.predicted == Approx(p.tflops_per_gpu));
  CHECK(p.error == Approx((p.tflops_per_gpu - 137) / 137));
  std::filesystem::remove(truth.file);
}

TEST_CASE("the committed A100 profile is the fit of Korthikanti et al. 2022 Table 4") {
  const study::PublishedRuns runs =
      study::load_published_runs(TAUPLAN_SOURCE_DIR "/experiments/parallelism/megatron.yaml");
  const study::HardwareFit fit = study::fit_hardware(runs, a100_node());
  const model::ComputeProfile& committed =
      model::catalog_compute_profile("a100-sxm-bf16-fitted", "test", "profile");
  INFO(model::compute_profile_json(fit.profile));
  CHECK(study::profile_difference(committed, fit).empty());
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
  const study::HardwareFit fit =
      study::fit_hardware(study::parse_published_runs(runs_yaml(points), "runs.yaml"), a100_node());
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
      study::parse_published_runs(yaml, "r.yaml").calibration_workload.transformer->dropout);
  yaml.replace(yaml.find("platform: x\n"), 12, "platform: x\nmodel_defaults: {dropout: true}\n");
  const study::PublishedRuns runs = study::parse_published_runs(yaml, "r.yaml");
  CHECK(runs.calibration_workload.transformer->dropout);
  CHECK(runs.runs[0].workload.transformer->dropout);
  yaml.replace(yaml.find("dropout: true"), 13, "dropout: 0.1");
  CHECK_THROWS_WITH(study::parse_published_runs(yaml, "r.yaml"),
                    Catch::Contains("r.yaml: model_defaults.dropout: expected true or false"));
  // Megatron's runs trained with dropout, and the committed runs file says so.
  CHECK(study::load_published_runs(TAUPLAN_SOURCE_DIR "/experiments/parallelism/megatron.yaml")
            .calibration_workload.transformer->dropout);
}

TEST_CASE("a calibration that cannot separate GEMMs from memory-bound traffic is refused") {
  // Two times of one setting: the two unknowns are not determined.
  const study::PublishedRuns runs = study::parse_published_runs(
      runs_yaml({{kSettings[0], 0.02}, {kSettings[0], 0.021}}), "runs.yaml");
  CHECK_THROWS_WITH(study::fit_hardware(runs, a100_node()),
                    Catch::Contains("runs.yaml: calibration.layer_s: expected layer times that "
                                    "separate GEMMs"));
  // Times faster than the peak allows.
  const study::PublishedRuns fast = study::parse_published_runs(
      runs_yaml({{kSettings[0], 1e-5}, {kSettings[1], 0.9e-5}}), "runs.yaml");
  CHECK_THROWS_WITH(study::fit_hardware(fast, a100_node()),
                    Catch::Contains("expected times a GEMM efficiency below 1"));
}

TEST_CASE("a bad runs file names the file and the key") {
  auto parse = [](const std::string& text) { return study::parse_published_runs(text, "r.yaml"); };
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

namespace {

/// One node of 8 H100 SXM5 (catalog bf16 peak 989.5e12), timed by the H100's catalog profile,
/// with the routes of platforms/clusters/dgx-h100-16n-1to1.yaml (NVLink 4 at 450 GB/s per
/// direction, one 400 Gb/s NIC per GPU).
model::NodeFabric h100_node() {
  model::NodeFabric fabric;
  fabric.source_file = "<fixture>";
  fabric.gpus_per_node = 8;
  fabric.gpu.gpu_model = "H100-SXM5-80GB";
  fabric.gpu.speed_flops = 989.5e12;
  fabric.gpu.properties["precision"] = "bf16";
  fabric.intra_node = {{}, 2.8e-6, 4.5e11};
  fabric.inter_node = {{}, 4.5e-6, 5e10};
  return fabric;
}

const char* const kH100Runs = TAUPLAN_SOURCE_DIR "/experiments/parallelism/h100.yaml";
const char* const kMegatronRuns = TAUPLAN_SOURCE_DIR "/experiments/parallelism/megatron.yaml";
const char* const kHeldOutRuns = TAUPLAN_SOURCE_DIR "/experiments/parallelism/h100-heldout.yaml";

/// A runs file whose calibration is the platform's profile and whose one run is a catalog
/// workload under context parallelism.
const std::string kProfileRuns =
    "platform: x\n"
    "calibration: {profile: platform, source: test}\n"
    "runs:\n"
    "  - name: r\n    table: t\n    source: s\n"
    "    model: {workload: llama3-8b, sequence: 16384, attention: flash}\n"
    "    workers: 64\n    tensor_parallel: 2\n    context_parallel: 2\n"
    "    pipeline_parallel: 2\n    batch: 64\n    micro_batch: 1\n    zero_stage: 2\n"
    "    flop: model\n    tflops_per_gpu: 400\n";

}  // namespace

TEST_CASE("the H100 runs file: every run sourced, its shapes and layouts as published") {
  const study::PublishedRuns runs = study::load_published_runs(kH100Runs);
  CHECK(runs.calibration_from_platform);
  CHECK(runs.calibration.empty());
  CHECK_FALSE(runs.calibration_source.empty());
  REQUIRE(runs.runs.size() == 12);
  for (const study::PublishedRun& run : runs.runs) {
    CAPTURE(run.name);
    CHECK_FALSE(run.source.empty());
    CHECK_FALSE(run.assumed.empty());
    CHECK_FALSE(run.table.empty());
    CHECK_FALSE(run.calibration_configuration);  // no run is fitted
    CHECK(run.quantity == "tflops_per_gpu");
    CHECK(run.flop == "model");  // Llama 3's MFU and Megatron-Core's count: no recomputation
    CHECK(run.layout.workers() == run.workers);
    CHECK(run.workload.transformer->attention == model::AttentionKernel::Flash);
  }
  // Llama 3 405B (Dubey et al. 2024, Table 3; the catalog's shape) in Table 4's layouts.
  for (int i = 0; i < 3; ++i) {
    const study::PublishedRun& run = runs.runs[static_cast<size_t>(i)];
    CAPTURE(run.name);
    const model::Transformer& t = *run.workload.transformer;
    CHECK(t.layers == 126);
    CHECK(t.hidden == 16384);
    CHECK(t.ffn_hidden == 53248);
    CHECK(t.heads == 128);
    CHECK(t.kv_heads == 8);
    CHECK(t.vocabulary == 128256);
    CHECK_FALSE(t.tied_embeddings);
    CHECK_FALSE(t.dropout);
    CHECK(run.layout.tensor == 8);
    CHECK(run.layout.pipeline == 16);
    CHECK(run.layout.zero_stage == 2);
    CHECK(run.layout.recompute == model::Recompute::None);
    // Tokens per batch: Table 4's 16M (2^24 = 16.8M) in every row.
    CHECK(run.batch * t.sequence == 16777216);
  }
  CHECK(runs.runs[0].layout.data == 64);
  CHECK(runs.runs[0].layout.micro_batches == 32);
  CHECK(runs.runs[1].layout.data == 128);
  CHECK(runs.runs[1].layout.micro_batches == 16);
  const study::PublishedRun& long_context = runs.runs[2];
  CHECK(long_context.layout.context == 16);
  CHECK(long_context.layout.data == 8);  // 16,384 / (8 x 16 x 16); Table 4 prints 4
  CHECK(long_context.layout.micro_batches == 16);
  CHECK(long_context.workload.transformer->sequence == 131072);
  CHECK(long_context.workload.parameters == Approx(4.0585e11).epsilon(1e-3));
  // Megatron-Core's GPTs: untied embeddings, vocabulary 131,072, sequence 4096; the table's
  // parameter counts (1.7B ... 462B) are what these shapes give.
  const std::vector<double> billions = {1.7, 7.1, 16, 32, 70, 119, 177, 314, 462};
  for (size_t i = 3; i < runs.runs.size(); ++i) {
    const study::PublishedRun& run = runs.runs[i];
    CAPTURE(run.name);
    const model::Transformer& t = *run.workload.transformer;
    CHECK(t.vocabulary == 131072);
    CHECK(t.sequence == 4096);
    CHECK_FALSE(t.tied_embeddings);
    CHECK(run.layout.data == 48);
    CHECK(run.layout.zero_stage == 1);
    CHECK(run.workload.parameters / 1e9 == Approx(billions[i - 3]).epsilon(0.04));
  }
}

TEST_CASE("the held-out H100 runs: sourced, as the recipes give them, parameters as published") {
  const study::PublishedRuns runs = study::load_published_runs(kHeldOutRuns);
  CHECK(runs.calibration_from_platform);
  CHECK(runs.calibration.empty());
  REQUIRE(runs.runs.size() == 15);
  for (const study::PublishedRun& run : runs.runs) {
    CAPTURE(run.name);
    CHECK_FALSE(run.source.empty());
    CHECK_FALSE(run.assumed.empty());
    CHECK_FALSE(run.calibration_configuration);  // no run is fitted
    CHECK(run.quantity == "iteration_s");
    CHECK(run.layout.workers() == run.workers);
    CHECK(run.layout.zero_stage == 1);  // the distributed optimizer
    CHECK(run.layout.sequence_parallel == (run.layout.tensor > 1));
    CHECK(run.workload.transformer->attention == model::AttentionKernel::Flash);
    // Each row's global batch and micro-batch give the recipe's gradient accumulation (GA).
    const double accumulation = run.batch / (run.layout.micro_batch(run.batch) * run.layout.data);
    CHECK((accumulation == 32 || accumulation == 64 || accumulation == 63 || accumulation == 16 ||
           accumulation == 4));
  }
  // The shapes files: Nemotron-4 15B's 3.2B + 12.5B and 340B's 9.4B + 331.6B parameters
  // (Parmar et al. 2024; NVIDIA 2024) within 1%; Llama 3.1 405B as NVIDIA's recipe ran it.
  const auto parameters_of = [&](const std::string& prefix) {
    for (const study::PublishedRun& run : runs.runs)
      if (run.name.rfind(prefix, 0) == 0) return run.workload.parameters;
    return 0.0;
  };
  CHECK(parameters_of("Nemotron-4 15B") == Approx(15.7e9).epsilon(0.01));
  CHECK(parameters_of("Nemotron-4 340B") == Approx(341e9).epsilon(0.01));
  CHECK(parameters_of("Llama 3.1 405B") == Approx(4.0756e11).epsilon(1e-4));
}

TEST_CASE("the calibration is flagged: megatron.yaml's own configuration, none in h100.yaml") {
  const study::PublishedRuns megatron = study::load_published_runs(kMegatronRuns);
  CHECK_FALSE(megatron.calibration_from_platform);
  int flagged = 0;
  for (const study::PublishedRun& run : megatron.runs) {
    CHECK_FALSE(run.source.empty());
    if (run.calibration_configuration) {
      ++flagged;
      CHECK_THAT(run.name, Catch::Contains("GPT 22B"));
    }
    CHECK(run.flop == (run.quantity == "tflops_per_gpu" ? "hardware" : ""));
  }
  CHECK(flagged == 2);
  // A runs file whose calibration is the platform's profile has nothing to fit.
  const study::PublishedRuns h100 = study::load_published_runs(kH100Runs);
  CHECK_THROWS_WITH(study::fit_hardware(h100, h100_node()),
                    Catch::Contains("h100.yaml: calibration: expected a layer-time table"));
}

TEST_CASE("the summary's medians are computed from the rows") {
  std::vector<study::RunPrediction> rows(5);
  const std::vector<double> errors = {0.30, -0.02, 0.08, -0.50, 0.04};
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].error = errors[i];
  // Held out: every run but the first and the fourth: |-0.02|, |0.08|, |0.04| -> 0.04.
  CHECK(study::median_abs_error(rows, {false, true, true, false, true}) == Approx(0.04));
  // All five: 0.02, 0.04, 0.08, 0.30, 0.50 -> 0.08; an even count averages the middle two
  // (0.02, 0.08, 0.30, 0.50 -> 0.19).
  CHECK(study::median_abs_error(rows, {true, true, true, true, true}) == Approx(0.08));
  CHECK(study::median_abs_error(rows, {true, true, true, true, false}) == Approx(0.19));
  CHECK(study::median_abs_error(rows, {false, false, false, false, false}) == 0);
  // On the H100 file's rows as predicted: each error is (predicted - published) / published in
  // the run's flop, and the median over the held-out rows is the median of those errors.
  const study::PublishedRuns runs = study::load_published_runs(kH100Runs);
  std::vector<study::RunPrediction> predicted;
  std::vector<bool> held_out;
  std::vector<double> abs_errors;
  for (const study::PublishedRun& run : runs.runs) {
    CAPTURE(run.name);
    const study::RunPrediction p = study::predict_run(run, h100_node());
    CHECK(p.predicted == Approx(p.model_tflops_per_gpu));
    CHECK(p.model_tflops_per_gpu == Approx(p.tflops_per_gpu));  // no recomputation
    CHECK(p.error == Approx((p.predicted - run.published) / run.published));
    CHECK(p.predicted > 0);
    CHECK(p.predicted < 989.5);
    predicted.push_back(p);
    held_out.push_back(!run.calibration_configuration);
    abs_errors.push_back(std::abs(p.error));
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  CHECK(study::median_abs_error(predicted, held_out) ==
        Approx(0.5 * (abs_errors[5] + abs_errors[6])));
}

TEST_CASE("a run's flop and quantity: hardware, model, mfu") {
  std::string yaml = kProfileRuns;
  study::PublishedRuns runs = study::parse_published_runs(yaml, "r.yaml");
  REQUIRE(runs.runs.size() == 1);
  study::PublishedRun run = runs.runs[0];
  CHECK(run.layout.context == 2);
  CHECK(run.layout.data == 8);
  CHECK(run.layout.zero_stage == 2);
  CHECK(run.workload.transformer->sequence == 16384);
  // With full recomputation the hardware flop exceeds the model flop by the repeated forward.
  run.layout.context = 1;
  run.layout.data = 16;
  run.layout.micro_batches = 4;
  run.layout.recompute = model::Recompute::Full;
  const study::RunPrediction as_model = study::predict_run(run, h100_node());
  CHECK(as_model.predicted == Approx(as_model.model_tflops_per_gpu));
  CHECK(as_model.tflops_per_gpu > 1.2 * as_model.model_tflops_per_gpu);
  run.flop = "hardware";
  CHECK(study::predict_run(run, h100_node()).predicted == Approx(as_model.tflops_per_gpu));
  run.quantity = "mfu";
  run.flop = "model";
  run.published = 0.4;
  const study::RunPrediction mfu = study::predict_run(run, h100_node());
  CHECK(mfu.predicted == Approx(as_model.model_tflops_per_gpu * 1e12 / 989.5e12));
  CHECK(mfu.error == Approx((mfu.predicted - 0.4) / 0.4));
  // mfu needs the GPU's peak.
  model::NodeFabric no_precision = h100_node();
  no_precision.gpu.properties.erase("precision");
  CHECK_THROWS_WITH(study::predict_run(run, no_precision),
                    Catch::Contains("<fixture>: host  prop precision"));
  // mfu in the file: model flop, and no flop key beside it.
  const std::string tflops = "    flop: model\n    tflops_per_gpu: 400\n";
  yaml.replace(yaml.find(tflops), tflops.size(), "    mfu: 0.41\n");
  runs = study::parse_published_runs(yaml, "r.yaml");
  CHECK(runs.runs[0].quantity == "mfu");
  CHECK(runs.runs[0].flop == "model");
  CHECK(runs.runs[0].published == 0.41);
}

TEST_CASE("a bad new key of a runs file is one line naming the file and the key") {
  auto expect = [](std::string yaml, const std::string& from, const std::string& to,
                   const std::string& message) {
    CAPTURE(from, to);
    const auto at = yaml.find(from);
    REQUIRE(at != std::string::npos);
    yaml.replace(at, from.size(), to);
    try {
      study::parse_published_runs(yaml, "r.yaml");
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(message));
      CHECK(what.find('\n') == std::string::npos);
    }
  };
  CHECK_NOTHROW(study::parse_published_runs(kProfileRuns, "r.yaml"));
  const std::string& y = kProfileRuns;
  expect(y, "context_parallel: 2", "context_parallel: 0",
         "r.yaml: runs[0].context_parallel: expected a number > 0");
  expect(y, "context_parallel: 2", "context_parallel: 1.5",
         "r.yaml: runs[0].context_parallel: expected a whole number > 0");
  expect(y, "context_parallel: 2", "context_parallel: 3",
         "r.yaml: runs[0].workers: expected a multiple of tensor x pipeline x context (12)");
  expect(y, "zero_stage: 2", "zero_stage: 4", "r.yaml: runs[0].zero_stage: expected 0, 1, 2 or 3");
  expect(y, "zero_stage: 2", "zero_stage: 1.5",
         "r.yaml: runs[0].zero_stage: expected 0, 1, 2 or 3");
  expect(y, "flop: model", "flop: peak", "r.yaml: runs[0].flop: expected hardware or model");
  expect(y, "    flop: model\n    tflops_per_gpu: 400\n", "    flop: model\n    iteration_s: 3\n",
         "r.yaml: runs[0].flop: expected no flop beside iteration_s");
  expect(y, "    flop: model\n    tflops_per_gpu: 400\n", "    mfu: 43\n",
         "r.yaml: runs[0].mfu: expected a fraction of the peak, at most 1");
  expect(y, "tflops_per_gpu: 400", "tflops_per_gpu: 400\n    mfu: 0.4",
         "r.yaml: runs[0]: expected one published number: tflops_per_gpu, mfu or iteration_s");
  expect(y, "workload: llama3-8b", "workload: llama9-1t", "r.yaml: runs[0].model.workload: ");
  expect(y, "sequence: 16384", "sequence: -1",
         "r.yaml: runs[0].model.sequence: expected a number > 0");
  expect(y, "attention: flash}", "attention: fast}",
         "r.yaml: runs[0].model.attention: expected flash or math");
  expect(y, "attention: flash}", "attention: flash, dropout: 0.1}",
         "r.yaml: runs[0].model.dropout: expected true or false");
  expect(y, "attention: flash}", "attention: flash, layers: 3}",
         "r.yaml: runs[0].model.layers: expected one of the known");
  expect(y, "calibration: {profile: platform", "calibration: {profile: fitted",
         "r.yaml: calibration.profile: expected platform");
  expect(y, "calibration: {profile: platform", "calibration: {profile: platform, layer_s: []",
         "r.yaml: calibration.layer_s: expected one of the known");
  expect(y, "calibration: {profile: platform, source: test}", "calibration: {profile: platform}",
         "r.yaml: calibration.source: expected a value (required)");
  expect(y, "tflops_per_gpu: 400", "tflops_per_gpu: 400\n    calibration_configuration: true",
         "r.yaml: runs[0].calibration_configuration: expected false (calibration.profile "
         "platform fits nothing");
  expect(y, "calibration:", "model_defaults: {attention: fused}\ncalibration:",
         "r.yaml: model_defaults.attention: expected flash or math");
  expect(y, "calibration:", "model_defaults: {tied_embeddings: no}\ncalibration:",
         "r.yaml: model_defaults.tied_embeddings: expected true or false");
  // A learned position table bounds the sequence (GPT-2's 1024 positions).
  expect(y, "workload: llama3-8b, sequence: 16384", "workload: gpt2-small, sequence: 2048",
         "r.yaml: runs[0].model.sequence: expected at most the 1024 learned positions");
  // The layout is checked against the workload: 2 x context_parallel chunks of the sequence.
  expect(y, "sequence: 16384", "sequence: 16383", "r.yaml runs[0]: context_parallel: ");
}
