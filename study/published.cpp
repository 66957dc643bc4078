// published.cpp: see published.hpp.
#include "study/published.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "model/compute/profile_file.hpp"
#include "model/compute_source.hpp"
#include "model/error.hpp"
#include "model/published_runs.hpp"
#include "model/result.hpp"
#include "model/validation.hpp"
#include "model/workload.hpp"
#include "sim/platform_loader.hpp"
#include "study/files.hpp"

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
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate)) return candidate.lexically_normal().string();
  throw InputError(runs_file, "platform", "a platform XML file, or the name of one in platforms/",
                   "'" + name + "' (not found)");
}

std::string quantity_label(const std::string& quantity) {
  return quantity == "iteration_s" ? "s/iteration" : "TFLOP/s/GPU";
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
  const model::Platform platform = sim::load_platform(platform_file);
  const model::NodeFabric fabric = model::node_fabric_of(platform);
  const model::HardwareFit fit = model::fit_hardware(runs, fabric);

  PublishedOutcome outcome;
  // The platform's GPUs must be timed by the fitted profile (the committed file is the fit,
  // written with full digits; 0.5% leaves room for a different compiler's rounding).
  const model::ComputeProfile* profile = model::host_compute_profile(fabric.gpu, platform);
  const std::string profile_name = model::host_compute_source(fabric.gpu, platform);
  const std::string difference = profile ? model::profile_difference(*profile, fit)
                                         : std::string("no compute profile (flop / host speed)");
  if (!difference.empty())
    outcome.notes.push_back(fmt::format(
        "{}: the GPU hosts' compute ({}) is not the calibration's fit: {}; rewrite the profile "
        "with profile.json of `tauplan published --out DIR` (fit: default_gemm_efficiency = "
        "default_attention_efficiency = {:.6g}, memory_bandwidth_Bps = {:.6g}, peak_flops = "
        "{:.6g}, "
        "launch_overhead_s = 0)",
        platform_file, profile_name.substr(0, profile_name.find(':')), difference, fit.efficiency,
        fit.memory_bandwidth_Bps, fit.peak_flops));

  std::string& md = outcome.table;
  md += fmt::format("Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak).\n\n",
                    fs::path(platform_file).filename().string(), fabric.gpus_per_node,
                    fabric.gpu.gpu_model, fit.peak_flops / 1e12, fit.precision);
  md += fmt::format(
      "Calibration ({}): a compute profile, GEMMs (and math attention) at {:.3f} of peak, "
      "memory-bound operations at {:.0f} GB/s ({:.2f} of the datasheet's {:.0f} GB/s).\n\n",
      runs.calibration_source, fit.efficiency, fit.memory_bandwidth_Bps / 1e9,
      fit.memory_bandwidth_Bps / model::gpu_spec(fabric.gpu.gpu_model).memory_bandwidth_Bps,
      model::gpu_spec(fabric.gpu.gpu_model).memory_bandwidth_Bps / 1e9);
  md += "| layer setting | measured ms | fitted ms | error |\n|---|---:|---:|---:|\n";
  nlohmann::json calibration = nlohmann::json::array();
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
    calibration.push_back(
        {{"setting", setting}, {"measured_s", point.layer_s}, {"fitted_s", fit.fitted_layer_s[i]}});
  }
  md +=
      "\n| run | published in | quantity | ours | published | error |\n"
      "|---|---|---|---:|---:|---:|\n";
  outcome.csv =
      "run,table,quantity,ours,published,error,iteration_s,bubble_s,tensor_s,pipeline_send_s,"
      "data_s,calibration_configuration,assumed,source\n";
  std::vector<double> all, independent;
  std::map<std::string, std::vector<double>> by_table;
  nlohmann::json rows = nlohmann::json::array();
  for (const model::PublishedRun& run : runs.runs) {
    const model::RunPrediction p = model::predict_run(run, fabric);
    all.push_back(p.error);
    if (!run.calibration_configuration) independent.push_back(p.error);
    by_table[run.table].push_back(p.error);
    const bool tflops = run.quantity == "tflops_per_gpu";
    md += fmt::format(
        "| {}{} | {} | {} | {} | {} | {:+.1f}% |\n", run.name,
        run.calibration_configuration ? " (calibration's configuration)" : "", run.table,
        quantity_label(run.quantity),
        tflops ? fmt::format("{:.1f}", p.predicted) : fmt::format("{:.2f}", p.predicted),
        tflops ? fmt::format("{:g}", run.published) : fmt::format("{:.2f}", run.published),
        100 * p.error);
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
                    {"published", run.published},
                    {"predicted", p.predicted},
                    {"error", p.error},
                    {"iteration_s", p.iteration_s},
                    {"tflops_per_gpu", p.tflops_per_gpu},
                    {"bubble_s", p.bubble_s},
                    {"tensor_s", p.tensor_s},
                    {"pipeline_send_s", p.pipeline_send_s},
                    {"data_s", p.data_s},
                    {"calibration_configuration", run.calibration_configuration}});
  }
  outcome.median_abs_error = model::median_abs(all);
  outcome.median_abs_error_independent = model::median_abs(independent);
  md += fmt::format(
      "\nMedian absolute error: {:.1f}% over all {} runs; {:.1f}% over the {} runs "
      "other than the calibration's own configuration.\n",
      100 * outcome.median_abs_error, all.size(), 100 * outcome.median_abs_error_independent,
      independent.size());
  for (const auto& [table, errors] : by_table)
    md += fmt::format("- {}: median {:.1f}%, largest {:.1f}% ({} runs)\n", table,
                      100 * model::median_abs(errors),
                      100 * std::max(std::abs(*std::max_element(errors.begin(), errors.end())),
                                     std::abs(*std::min_element(errors.begin(), errors.end()))),
                      errors.size());

  outcome.document = {{"context",
                       {{"verb", "published"},
                        {"version", model::tauplan_version()},
                        {"commit", model::tauplan_git_commit()},
                        {"date", model::utc_now_iso8601()},
                        {"runs_file", runs_file},
                        {"platform_file", platform_file},
                        {"platform_hash", platform.source_hash},
                        {"engine", "analytic (model/layout_cost.hpp)"},
                        {"network_model", "alpha-beta over the platform's routes"}}},
                      {"fit",
                       {{"source", runs.calibration_source},
                        {"efficiency", fit.efficiency},
                        {"memory_bandwidth_Bps", fit.memory_bandwidth_Bps},
                        {"compute_source", profile_name},
                        {"peak_flops", fit.peak_flops},
                        {"precision", fit.precision},
                        {"points", calibration}}},
                      {"runs", rows},
                      {"median_abs_error", outcome.median_abs_error},
                      {"median_abs_error_independent", outcome.median_abs_error_independent}};
  if (!request.out.empty()) {
    make_folder(request.out, "--out");
    write_text((fs::path(request.out) / "table.md").string(), md);
    write_text((fs::path(request.out) / "table.csv").string(), outcome.csv);
    write_text((fs::path(request.out) / "published.json").string(),
               outcome.document.dump(2) + "\n");
    write_text((fs::path(request.out) / "profile.json").string(),
               model::compute_profile_json(fit.profile));
  }
  return outcome;
}

}  // namespace tauplan::study
