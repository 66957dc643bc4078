// published.cpp: see published.hpp.
#include "study/published/published.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/compute/profile_file.hpp"
#include "model/convergence/validation.hpp"
#include "model/inputs/cluster_spec_file.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_source.hpp"
#include "model/ir/result.hpp"
#include "study/common/files.hpp"
#include "study/common/platform_file.hpp"
#include "study/published/published_runs.hpp"

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

std::string quantity_label(const study::PublishedRun& run) {
  if (run.quantity == "iteration_s") return "s/iteration";
  if (run.quantity == "mfu") return "MFU";
  return run.flop == "model" ? "model TFLOP/s/GPU" : "TFLOP/s/GPU";
}

std::string number_text(const study::PublishedRun& run, double value, bool published) {
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

namespace {

/// What the comparison reads: the runs file, its platform and the platform's node, the
/// calibration's fit (when the runs file has one) and the compute profile timing the GPUs.
/// Built in place (profile points into the platform).
struct PublishedInputs {
  explicit PublishedInputs(const PublishedRequest& request)
      : runs_file(request.runs.empty() ? default_published_runs() : request.runs),
        runs(study::load_published_runs(runs_file)),
        platform_file(resolve_platform(runs.platform, runs_file)),
        platform(load_user_platform(platform_file)),
        fabric(model::node_fabric_of(platform)),
        fitted(!runs.calibration_from_platform),
        fit(fitted ? study::fit_hardware(runs, fabric) : study::HardwareFit{}),
        profile(model::host_compute_profile(fabric.gpu, platform)),
        profile_name(model::host_compute_source(fabric.gpu, platform)),
        gpu(model::gpu_spec(fabric.gpu.gpu_model)) {}
  PublishedInputs(const PublishedInputs&) = delete;
  PublishedInputs& operator=(const PublishedInputs&) = delete;

  const std::string runs_file;
  const study::PublishedRuns runs;
  const std::string platform_file;
  const model::Platform platform;
  const model::NodeFabric fabric;
  const bool fitted;
  const study::HardwareFit fit;
  const model::ComputeProfile* const profile;
  const std::string profile_name;
  const model::GpuSpec& gpu;
};

/// A fitted calibration: the platform line, the fit and its points as a Markdown table (each
/// point also into `calibration`); a note when the platform's profile is not the fit.
std::string fitted_calibration(const PublishedInputs& in, nlohmann::json& calibration,
                               std::vector<std::string>& notes) {
  const study::HardwareFit& fit = in.fit;
  // The platform's GPUs must be timed by the fitted profile (the committed file is the fit,
  // written with full digits; 0.5% leaves room for a different compiler's rounding).
  const std::string difference = in.profile ? study::profile_difference(*in.profile, fit)
                                            : std::string("no compute profile (flop / host speed)");
  if (!difference.empty())
    notes.push_back(
        fmt::format("{}: the GPU hosts' compute ({}) is not the calibration's fit: {}; rewrite the "
                    "profile with profile.json of `tauplan published --out DIR` (fit: "
                    "default_gemm_efficiency = default_attention_efficiency = {:.6g}, "
                    "memory_bandwidth_Bps = {:.6g}, peak_flops = {:.6g}, launch_overhead_s = 0)",
                    in.platform_file, in.profile_name.substr(0, in.profile_name.find(':')),
                    difference, fit.efficiency, fit.memory_bandwidth_Bps, fit.peak_flops));
  std::string md =
      fmt::format("Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak).\n\n",
                  fs::path(in.platform_file).filename().string(), in.fabric.gpus_per_node,
                  in.fabric.gpu.gpu_model, fit.peak_flops / 1e12, fit.precision);
  md += fmt::format(
      "Calibration ({}): a compute profile, GEMMs (and math attention) at {:.3f} of peak, "
      "memory-bound operations at {:.0f} GB/s ({:.2f} of the datasheet's {:.0f} GB/s).\n\n",
      in.runs.calibration_source, fit.efficiency, fit.memory_bandwidth_Bps / 1e9,
      fit.memory_bandwidth_Bps / in.gpu.memory_bandwidth_Bps, in.gpu.memory_bandwidth_Bps / 1e9);
  md += "| layer setting | measured ms | fitted ms | error |\n|---|---:|---:|---:|\n";
  for (size_t i = 0; i < in.runs.calibration.size(); ++i) {
    const study::CalibrationPoint& point = in.runs.calibration[i];
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
  return md;
}

/// No fit: the platform line and the profile that times the GPUs (InputError without one).
std::string platform_calibration(const PublishedInputs& in) {
  const model::NodeFabric& fabric = in.fabric;
  if (!in.profile)
    throw InputError(in.platform_file, "host " + fabric.gpu.name + " prop compute_profile",
                     "a GPU timed by a compute profile (the runs file's calibration is the "
                     "platform's profile: " +
                         in.runs.file + " calibration.profile)");
  const auto precision = fabric.gpu.properties.find("precision");
  std::string md = fmt::format(
      "Platform {} ({} GPUs per node, {} at {:.4g} TFLOP/s {} peak, {:.0f} GB/s datasheet "
      "memory bandwidth).\n\n",
      fs::path(in.platform_file).filename().string(), fabric.gpus_per_node, fabric.gpu.gpu_model,
      in.profile->peak_flops / 1e12,
      precision != fabric.gpu.properties.end() ? precision->second : in.profile->precision,
      in.gpu.memory_bandwidth_Bps / 1e9);
  md += fmt::format(
      "Calibration: none, no run is fitted (every run below is held out). The GPUs are "
      "timed by the platform's {}: {}.\n",
      in.profile_name.substr(0, in.profile_name.find(':')), in.runs.calibration_source);
  return md;
}

/// Every run predicted: its Markdown and CSV rows, its JSON, and the errors for the medians.
struct RunComparison {
  std::string md;
  std::string csv;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<study::RunPrediction> predictions;
  std::vector<bool> every, held_out;
  std::map<std::string, std::vector<double>> by_table;
};

nlohmann::json run_json(const study::PublishedRun& run, const study::RunPrediction& p) {
  return {{"run", run.name},
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
          {"calibration_configuration", run.calibration_configuration}};
}

RunComparison compare_runs(const PublishedInputs& in) {
  RunComparison c;
  c.md =
      "\n| run | published in | quantity | ours | published | error |\n"
      "|---|---|---|---:|---:|---:|\n";
  c.csv =
      "run,table,quantity,ours,published,error,iteration_s,bubble_s,tensor_s,pipeline_send_s,"
      "data_s,calibration_configuration,assumed,source\n";
  for (const study::PublishedRun& run : in.runs.runs) {
    const study::RunPrediction p = study::predict_run(run, in.fabric);
    c.predictions.push_back(p);
    c.every.push_back(true);
    c.held_out.push_back(!run.calibration_configuration);
    c.by_table[run.table].push_back(p.error);
    c.md += fmt::format("| {}{} | {} | {} | {} | {} | {:+.1f}% |\n", run.name,
                        run.calibration_configuration ? " (calibration's configuration)" : "",
                        run.table, quantity_label(run), number_text(run, p.predicted, false),
                        number_text(run, run.published, true), 100 * p.error);
    c.csv +=
        fmt::format("{},{},{},{:.6g},{:g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n",
                    csv_field(run.name), csv_field(run.table), run.quantity, p.predicted,
                    run.published, p.error, p.iteration_s, p.bubble_s, p.tensor_s,
                    p.pipeline_send_s, p.data_s, run.calibration_configuration ? "true" : "false",
                    csv_field(run.assumed), csv_field(run.source));
    c.rows.push_back(run_json(run, p));
  }
  return c;
}

/// The median absolute errors (over every run, over those held out, per table) in Markdown.
std::string error_summary(const PublishedInputs& in, const RunComparison& c,
                          const PublishedOutcome& outcome) {
  std::string md;
  const auto held_out_count = std::count(c.held_out.begin(), c.held_out.end(), true);
  if (in.fitted)
    md += fmt::format(
        "\nMedian absolute error: {:.1f}% over all {} runs; {:.1f}% over the {} runs "
        "other than the calibration's own configuration.\n",
        100 * outcome.median_abs_error, c.predictions.size(),
        100 * outcome.median_abs_error_independent, held_out_count);
  else
    md += fmt::format(
        "\nMedian absolute error: {:.1f}% over all {} runs, none of them used for calibration "
        "(held out: {}).\n",
        100 * outcome.median_abs_error_independent, c.predictions.size(), held_out_count);
  for (const auto& [table, errors] : c.by_table)
    md += fmt::format("- {}: median {:.1f}%, largest {:.1f}% ({} runs)\n", table,
                      100 * model::median_abs(errors),
                      100 * std::max(std::abs(*std::max_element(errors.begin(), errors.end())),
                                     std::abs(*std::min_element(errors.begin(), errors.end()))),
                      errors.size());
  return md;
}

nlohmann::json published_document(const PublishedInputs& in, const nlohmann::json& calibration,
                                  const RunComparison& c, const PublishedOutcome& outcome) {
  const study::HardwareFit& fit = in.fit;
  return {{"context",
           {{"verb", "published"},
            {"version", model::tauplan_version()},
            {"commit", model::tauplan_git_commit()},
            {"date", model::utc_now_iso8601()},
            {"runs_file", in.runs_file},
            {"platform_file", in.platform_file},
            {"platform_hash", in.platform.source_hash},
            {"engine", "analytic (model/ir/layout_cost.hpp)"},
            {"network_model", "alpha-beta over the platform's routes"}}},
          {"fit", in.fitted ? nlohmann::json{{"source", in.runs.calibration_source},
                                             {"efficiency", fit.efficiency},
                                             {"memory_bandwidth_Bps", fit.memory_bandwidth_Bps},
                                             {"compute_source", in.profile_name},
                                             {"peak_flops", fit.peak_flops},
                                             {"precision", fit.precision},
                                             {"points", calibration}}
                            : nlohmann::json{{"source", in.runs.calibration_source},
                                             {"profile", "platform"},
                                             {"runs_fitted", 0},
                                             {"compute_source", in.profile_name}}},
          {"runs", c.rows},
          {"median_abs_error", outcome.median_abs_error},
          {"median_abs_error_independent", outcome.median_abs_error_independent}};
}

/// --out DIR: table.md, table.csv, published.json and, for a fit, profile.json.
/// Returns what it wrote, as DIR/{table.md,...}.
std::string write_published(const std::string& out, const PublishedInputs& in,
                            const PublishedOutcome& outcome) {
  make_folder(out, "--out");
  write_text((fs::path(out) / "table.md").string(), outcome.table);
  write_text((fs::path(out) / "table.csv").string(), outcome.csv);
  write_text((fs::path(out) / "published.json").string(), outcome.document.dump(2) + "\n");
  if (in.fitted)
    write_text((fs::path(out) / "profile.json").string(),
               model::compute_profile_json(in.fit.profile));
  return out + "/{table.md,table.csv,published.json" + (in.fitted ? ",profile.json}" : "}");
}

}  // namespace

PublishedOutcome run_published(const PublishedRequest& request) {
  const PublishedInputs in(request);
  PublishedOutcome outcome;
  nlohmann::json calibration = nlohmann::json::array();
  std::string& md = outcome.table;
  md = in.fitted ? fitted_calibration(in, calibration, outcome.notes) : platform_calibration(in);
  const RunComparison c = compare_runs(in);
  md += c.md;
  outcome.csv = c.csv;
  outcome.median_abs_error = study::median_abs_error(c.predictions, c.every);
  outcome.median_abs_error_independent = study::median_abs_error(c.predictions, c.held_out);
  md += error_summary(in, c, outcome);
  outcome.document = published_document(in, calibration, c, outcome);
  if (!request.out.empty()) outcome.written = write_published(request.out, in, outcome);
  return outcome;
}

}  // namespace tauplan::study
