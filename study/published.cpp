// published.cpp: see published.hpp.
#include "study/published.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/published_runs.hpp"
#include "model/result.hpp"
#include "model/validation.hpp"
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

/// A host prop as a number, or NaN when absent or not a number.
double prop_number(const model::Host& host, const std::string& prop) {
  double value = std::nan("");
  const auto it = host.properties.find(prop);
  if (it != host.properties.end()) model::parse_prop_number(it->second, value);
  return value;
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
  const double efficiency = prop_number(fabric.gpu, "efficiency");
  const double passes = prop_number(fabric.gpu, "elementwise_passes");
  // The platform writes the fit to 3 significant digits.
  auto agrees = [](double written, double fitted) {
    return std::isfinite(written) && std::abs(written - fitted) <= 5e-3 * std::abs(fitted);
  };
  if (!agrees(efficiency, fit.efficiency) || !agrees(passes, fit.elementwise_passes))
    outcome.notes.push_back(fmt::format(
        "{} has efficiency {:g} and elementwise_passes {:g}; the calibration fits {:.3g} and "
        "{:.3g}: update the platform file",
        platform_file, efficiency, passes, fit.efficiency, fit.elementwise_passes));

  std::string& md = outcome.table;
  md += fmt::format("Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak).\n\n",
                    fs::path(platform_file).filename().string(), fabric.gpus_per_node,
                    fabric.gpu.gpu_model, fit.peak_flops / 1e12, fit.precision);
  md += fmt::format(
      "Calibration ({}): GEMMs at {:.3f} of peak, element-wise traffic {:.3f} passes over the "
      "stored activations.\n\n",
      runs.calibration_source, fit.efficiency, fit.elementwise_passes);
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
                        {"elementwise_passes", fit.elementwise_passes},
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
  }
  return outcome;
}

}  // namespace tauplan::study
