// published.cpp: see published.hpp.
#include "study/published.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "model/cluster_spec_file.hpp"
#include "model/compute/profile_file.hpp"
#include "model/compute_source.hpp"
#include "model/error.hpp"
#include "model/published_runs.hpp"
#include "model/result.hpp"
#include "model/validation.hpp"
#include "model/workload.hpp"
#include "study/files.hpp"
#include "study/platform_file.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;

std::string resolve_platform(const std::string& name, const std::string& runs_file) {
  std::vector<fs::path> candidates = {fs::path(runs_file).parent_path() / name, fs::path(name)};
  const char* env = std::getenv("TAUPLAN_PLATFORM_DIR");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(TAUPLAN_PLATFORM_DIR);
  candidates.push_back(dir / name);
  candidates.push_back(dir / (name + ".xml"));
  if (!model::cluster::is_cluster_spec_path(name))
    candidates.push_back(dir / "clusters" / (name + ".yaml"));
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate)) return candidate.lexically_normal().string();
  throw InputError(runs_file, "platform",
                   "a platform XML file or cluster spec (.yaml), or the name of one in "
                   "platforms/ or its clusters/",
                   "'" + name + "' (not found)");
}

std::string quantity_label(const model::PublishedRun& run) {
  if (run.quantity == "iteration_s") return "s/iteration";
  if (run.quantity == "mfu") return "MFU";
  return run.flop == "model" ? "model TFLOP/s/GPU" : "TFLOP/s/GPU";
}

std::string number_text(const model::PublishedRun& run, double value, bool published) {
  if (run.quantity == "iteration_s") return fmt::format("{:.2f}", value);
  if (run.quantity == "mfu") return fmt::format("{:.1f}%", 100 * value);
  return published ? fmt::format("{:g}", value) : fmt::format("{:.1f}", value);
}

}  // namespace

std::string default_published_runs() {
  if (const char* env = std::getenv("TAUPLAN_EXPERIMENTS_DIR"); env && *env)
    return (fs::path(env) / "parallelism" / "megatron.yaml").string();
  return (fs::path(TAUPLAN_PLATFORM_DIR).parent_path() / "experiments" / "parallelism" /
          "megatron.yaml")
      .string();
}

PublishedOutcome run_published(const PublishedRequest& request) {
  const std::string runs_file = request.runs.empty() ? default_published_runs() : request.runs;
  const model::PublishedRuns runs = model::load_published_runs(runs_file);
  const std::string platform_file = resolve_platform(runs.platform, runs_file);
  const model::Platform platform = load_user_platform(platform_file);
  const model::NodeFabric fabric = model::node_fabric_of(platform);
  const bool fitted = !runs.calibration_from_platform;
  const model::HardwareFit fit = fitted ? model::fit_hardware(runs, fabric) : model::HardwareFit{};

  PublishedOutcome outcome;
  const model::ComputeProfile* profile = model::host_compute_profile(fabric.gpu, platform);
  const std::string profile_name = model::host_compute_source(fabric.gpu, platform);
  std::string& md = outcome.table;
  const model::GpuSpec& gpu = model::gpu_spec(fabric.gpu.gpu_model);
  nlohmann::json calibration = nlohmann::json::array();
  if (fitted) {
    // The platform's GPUs must be timed by the fitted profile (the committed file is the fit,
    // written with full digits; 0.5% leaves room for a different compiler's rounding).
    const std::string difference = profile ? model::profile_difference(*profile, fit)
                                           : std::string("no compute profile (flop / host speed)");
    if (!difference.empty())
      outcome.notes.push_back(fmt::format(
          "{}: the GPU hosts' compute ({}) is not the calibration's fit: {}; rewrite the "
          "profile with profile.json of `tauplan published --out DIR` (fit: "
          "default_gemm_efficiency = default_attention_efficiency = {:.6g}, "
          "memory_bandwidth_Bps = {:.6g}, peak_flops = {:.6g}, launch_overhead_s = 0)",
          platform_file, profile_name.substr(0, profile_name.find(':')), difference, fit.efficiency,
          fit.memory_bandwidth_Bps, fit.peak_flops));
    md += fmt::format("Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak).\n\n",
                      fs::path(platform_file).filename().string(), fabric.gpus_per_node,
                      fabric.gpu.gpu_model, fit.peak_flops / 1e12, fit.precision);
    md += fmt::format(
        "Calibration ({}): a compute profile, GEMMs (and math attention) at {:.3f} of peak, "
        "memory-bound operations at {:.0f} GB/s ({:.2f} of the datasheet's {:.0f} GB/s).\n\n",
        runs.calibration_source, fit.efficiency, fit.memory_bandwidth_Bps / 1e9,
        fit.memory_bandwidth_Bps / gpu.memory_bandwidth_Bps, gpu.memory_bandwidth_Bps / 1e9);
    md += "| layer setting | measured ms | fitted ms | error |\n|---|---:|---:|---:|\n";
    for (size_t i = 0; i < runs.calibration.size(); ++i) {
      const model::CalibrationPoint& point = runs.calibration[i];
      const std::string setting =
          (point.recompute == model::Recompute::None
               ? std::string("no recomputation")
               : std::string(model::to_string(point.recompute)) + " recomputation") +
          (point.sequence_parallel ? " + sequence parallelism" : "");
      const double error = (fit.fitted_layer_s[i] - point.layer_s) / point.layer_s;
      md += fmt::format("| {} | {:.1f} | {:.2f} | {:+.1f}% |\n", setting, point.layer_s * 1e3,
                        fit.fitted_layer_s[i] * 1e3, 100 * error);
      calibration.push_back({{"setting", setting},
                             {"measured_s", point.layer_s},
                             {"fitted_s", fit.fitted_layer_s[i]}});
    }
  } else {
    if (!profile)
      throw InputError(platform_file, "host " + fabric.gpu.name + " prop compute_profile",
                       "a GPU timed by a compute profile (the runs file's calibration is the "
                       "platform's profile: " +
                           runs.file + " calibration.profile)");
    const auto precision = fabric.gpu.properties.find("precision");
    md += fmt::format(
        "Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak, {:.0f} GB/s datasheet "
        "memory bandwidth).\n\n",
        fs::path(platform_file).filename().string(), fabric.gpus_per_node, fabric.gpu.gpu_model,
        profile->peak_flops / 1e12,
        precision != fabric.gpu.properties.end() ? precision->second : profile->precision,
        gpu.memory_bandwidth_Bps / 1e9);
    md += fmt::format(
        "Calibration: none, no run is fitted (every run below is held out). The GPUs are "
        "timed by the platform's {}: {}.\n",
        profile_name.substr(0, profile_name.find(':')), runs.calibration_source);
  }
  md +=
      "\n| run | published in | quantity | ours | published | error |\n"
      "|---|---|---|---:|---:|---:|\n";
  outcome.csv =
      "run,table,quantity,ours,published,error,iteration_s,bubble_s,tensor_s,pipeline_send_s,"
      "data_s,calibration_configuration,assumed,source\n";
  std::vector<model::RunPrediction> predictions;
  std::vector<bool> every, held_out;
  std::map<std::string, std::vector<double>> by_table;
  nlohmann::json rows = nlohmann::json::array();
  for (const model::PublishedRun& run : runs.runs) {
    const model::RunPrediction p = model::predict_run(run, fabric);
    predictions.push_back(p);
    every.push_back(true);
    held_out.push_back(!run.calibration_configuration);
    by_table[run.table].push_back(p.error);
    md += fmt::format("| {}{} | {} | {} | {} | {} | {:+.1f}% |\n", run.name,
                      run.calibration_configuration ? " (calibration's configuration)" : "",
                      run.table, quantity_label(run), number_text(run, p.predicted, false),
                      number_text(run, run.published, true), 100 * p.error);
    outcome.csv +=
        fmt::format("{},{},{},{:.6g},{:g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n",
                    csv_field(run.name), csv_field(run.table), run.quantity, p.predicted,
                    run.published, p.error, p.iteration_s, p.bubble_s, p.tensor_s,
                    p.pipeline_send_s, p.data_s, run.calibration_configuration ? "true" : "false",
                    csv_field(run.assumed), csv_field(run.source));
    rows.push_back({{"run", run.name},
                    {"table", run.table},
                    {"source", run.source},
                    {"assumed", run.assumed},
                    {"layout", run.layout.label()},
                    {"workers", run.workers},
                    {"batch", run.batch},
                    {"quantity", run.quantity},
                    {"flop", run.flop},
                    {"published", run.published},
                    {"predicted", p.predicted},
                    {"error", p.error},
                    {"iteration_s", p.iteration_s},
                    {"tflops_per_gpu", p.tflops_per_gpu},
                    {"model_tflops_per_gpu", p.model_tflops_per_gpu},
                    {"bubble_s", p.bubble_s},
                    {"tensor_s", p.tensor_s},
                    {"pipeline_send_s", p.pipeline_send_s},
                    {"data_s", p.data_s},
                    {"calibration_configuration", run.calibration_configuration}});
  }
  outcome.median_abs_error = model::median_abs_error(predictions, every);
  outcome.median_abs_error_independent = model::median_abs_error(predictions, held_out);
  const auto held_out_count = std::count(held_out.begin(), held_out.end(), true);
  if (fitted)
    md += fmt::format(
        "\nMedian absolute error: {:.1f}% over all {} runs; {:.1f}% over the {} runs "
        "other than the calibration's own configuration.\n",
        100 * outcome.median_abs_error, predictions.size(),
        100 * outcome.median_abs_error_independent, held_out_count);
  else
    md += fmt::format(
        "\nMedian absolute error: {:.1f}% over all {} runs, none of them used for calibration "
        "(held out: {}).\n",
        100 * outcome.median_abs_error_independent, predictions.size(), held_out_count);
  for (const auto& [table, errors] : by_table)
    md += fmt::format("- {}: median {:.1f}%, largest {:.1f}% ({} runs)\n", table,
                      100 * model::median_abs(errors),
                      100 * std::max(std::abs(*std::max_element(errors.begin(), errors.end())),
                                     std::abs(*std::min_element(errors.begin(), errors.end()))),
                      errors.size());

  outcome.document = {
      {"context",
       {{"verb", "published"},
        {"version", model::tauplan_version()},
        {"commit", model::tauplan_git_commit()},
        {"date", model::utc_now_iso8601()},
        {"runs_file", runs_file},
        {"platform_file", platform_file},
        {"platform_hash", platform.source_hash},
        {"engine", "analytic (model/layout_cost.hpp)"},
        {"network_model", "alpha-beta over the platform's routes"}}},
      {"fit", fitted ? nlohmann::json{{"source", runs.calibration_source},
                                      {"efficiency", fit.efficiency},
                                      {"memory_bandwidth_Bps", fit.memory_bandwidth_Bps},
                                      {"compute_source", profile_name},
                                      {"peak_flops", fit.peak_flops},
                                      {"precision", fit.precision},
                                      {"points", calibration}}
                     : nlohmann::json{{"source", runs.calibration_source},
                                      {"profile", "platform"},
                                      {"runs_fitted", 0},
                                      {"compute_source", profile_name}}},
      {"runs", rows},
      {"median_abs_error", outcome.median_abs_error},
      {"median_abs_error_independent", outcome.median_abs_error_independent}};
  if (!request.out.empty()) {
    make_folder(request.out, "--out");
    write_text((fs::path(request.out) / "table.md").string(), md);
    write_text((fs::path(request.out) / "table.csv").string(), outcome.csv);
    write_text((fs::path(request.out) / "published.json").string(),
               outcome.document.dump(2) + "\n");
    if (fitted)
      write_text((fs::path(request.out) / "profile.json").string(),
                 model::compute_profile_json(fit.profile));
  }
  return outcome;
}

}  // namespace tauplan::study
