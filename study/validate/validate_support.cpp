// validate_support.cpp: see validate_support.hpp.
#include "study/validate/validate_support.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "exec/cpu_steal.hpp"
#include "model/convergence/sparknet_fit.hpp"
#include "model/convergence/validation.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/files.hpp"

namespace tauplan::study::validation {

using nlohmann::json;

InputError passed_on_error(const std::string& line) {
  const std::string prefix = "tauplan: error: ";
  return InputError(line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line, "", "");
}

std::string simulated_rounds(const std::string& strategy) {
  return model::strategy(strategy).asynchronous() ? "400" : "3";
}

std::string machine_collective(const std::string& strategy, int workers) {
  if (workers == 1 && !model::strategy(strategy).asynchronous()) return model::ring_collective();
  return model::parameter_server_collective();
}

EngineRow parse_row(const std::string& out, const std::string& what) {
  json j;
  try {
    j = json::parse(out);
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": unreadable JSON (" + e.what() + ")");
  }
  if (!j.contains("results") || j["results"].empty())
    throw std::runtime_error(what + ": no result row");
  const json& r = j["results"][0];
  auto get = [&r](const char* key) {
    return r.contains(key) && r[key].is_number() ? r[key].get<double>() : kNaN;
  };
  EngineRow row;
  row.compute_s = get("compute_s");
  row.comm_s = get("comm_s");
  row.round_s = get("round_s");
  row.rounds = get("rounds");
  row.total_s = get("total_s");
  row.reached = r.contains("reached_target") && r["reached_target"].is_boolean() &&
                r["reached_target"].get<bool>();
  row.staleness = get("staleness_mean");
  row.round_start_lateness_median_s = get("round_start_lateness_median_s");
  row.round_start_lateness_max_s = get("round_start_lateness_max_s");
  if (r.contains("local_steps_mean") && r["local_steps_mean"].is_array())
    row.local_steps = r["local_steps_mean"].get<std::vector<double>>();
  // Measured rows also carry medians over rounds: the typical round, robust to the time the
  // host of a virtual machine takes away now and then (the totals keep that time).
  if (r.contains("round_median_s") && r["round_median_s"].is_number()) {
    row.round_s = get("round_median_s");
    row.compute_s = get("compute_median_s");
    row.comm_s = get("S_s");
  }
  return row;
}

EngineRow mean_over_runs(const std::vector<EngineRow>& runs) {
  if (runs.empty()) throw std::invalid_argument("mean_over_runs: no run");
  if (runs.size() == 1) return runs.front();
  auto mean = [&runs](auto field) {
    double sum = 0;
    for (const EngineRow& r : runs)
      sum += field(r);  // NaN propagates
    return sum / static_cast<double>(runs.size());
  };
  EngineRow out = runs.front();
  out.compute_s = mean([](const EngineRow& r) { return r.compute_s; });
  out.comm_s = mean([](const EngineRow& r) { return r.comm_s; });
  out.round_s = mean([](const EngineRow& r) { return r.round_s; });
  out.round_start_lateness_median_s =
      mean([](const EngineRow& r) { return r.round_start_lateness_median_s; });
  for (const EngineRow& r : runs)  // NaN (a run without it) spoils it, as in the means
    out.round_start_lateness_max_s =
        std::isnan(r.round_start_lateness_max_s) || std::isnan(out.round_start_lateness_max_s)
            ? kNaN
            : std::max(out.round_start_lateness_max_s, r.round_start_lateness_max_s);
  out.reached = std::all_of(runs.begin(), runs.end(), [](const EngineRow& r) { return r.reached; });
  out.total_s = out.reached ? out.rounds * mean([](const EngineRow& r) {
                                return r.rounds > 0 ? r.total_s / r.rounds : kNaN;
                              })
                            : kNaN;
  return out;
}

std::vector<std::string> run_children(const std::vector<child::Task>& tasks, int jobs,
                                      const std::string& what) {
  std::vector<std::string> outputs(tasks.size());
  child::Progress progress("validate: " + what, tasks.size(), 0, !what.empty());
  std::string bad_input;
  std::string failure;
  child::run_all(tasks, jobs, [&](size_t i, int status) {
    progress.advance();
    if (status == 2 && bad_input.empty()) bad_input = last_line(read_text(tasks[i].err_path));
    // Exit 3 is an answer: a measure that stopped at max_steps before its target (its row
    // says so, and the convergence fit leaves it out).
    if (status != 0 && status != 2 && status != kExitIncompleteAnswer && failure.empty())
      failure = fmt::format("{} failed (exit {}): {}", fmt::join(tasks[i].args, " "), status,
                            last_line(read_text(tasks[i].err_path)));
  });
  progress.finish();
  // The child printed "tauplan: error: FILE: KEY: ..."; pass the message on as it is.
  if (!bad_input.empty()) throw passed_on_error(bad_input);
  if (!failure.empty()) throw std::runtime_error(failure);
  for (size_t i = 0; i < tasks.size(); ++i)
    outputs[i] = read_text(tasks[i].out_path);
  return outputs;
}

std::string pct_text(double e) {
  return std::isfinite(e) ? fmt::format("{:+.1f}%", 100 * e) : "n/a";
}

std::string ms(double s) {
  return std::isfinite(s) ? fmt::format("{:.3f}", 1e3 * s) : "n/a";
}

std::string pct_or_na(const json& v) {
  return v.is_number() ? fmt::format("{:.1f}%", 100 * v.get<double>()) : std::string("n/a");
}

json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json median_abs_or_null(const std::vector<double>& errors) {
  return number_or_null(model::median_abs(errors));
}

json EngineSeries::add(const EngineRow& predicted, const EngineRow& measured, double rounds_loo,
                       double rounds_group, double time_measured, bool contended, bool has_comm) {
  const double time_loo_s = rounds_loo * predicted.round_s;
  const double time_group_s = rounds_group * predicted.round_s;
  round.push_back(model::relative_error(predicted.round_s, measured.round_s));
  compute.push_back(model::relative_error(predicted.compute_s, measured.compute_s));
  comm.push_back(has_comm ? model::relative_error(predicted.comm_s, measured.comm_s) : kNaN);
  time_loo.push_back(model::relative_error(time_loo_s, time_measured));
  time_group.push_back(model::relative_error(time_group_s, time_measured));
  if (contended) round_contended.push_back(round.back());
  return {{"compute_s", number_or_null(predicted.compute_s)},
          {"comm_s", number_or_null(predicted.comm_s)},
          {"round_s", number_or_null(predicted.round_s)},
          {"time_to_target_loo_s", number_or_null(time_loo_s)},
          {"time_to_target_group_out_s", number_or_null(time_group_s)},
          {"error_compute", number_or_null(compute.back())},
          {"error_comm", number_or_null(comm.back())},
          {"error_round", number_or_null(round.back())},
          {"error_time_to_target_loo", number_or_null(time_loo.back())},
          {"error_time_to_target_group_out", number_or_null(time_group.back())}};
}

json EngineSeries::summary_json() const {
  json out = json::object();
  const std::pair<const char*, const std::vector<double>*> series[] = {
      {"round", &round},
      {"round_contended", &round_contended},
      {"compute", &compute},
      {"comm", &comm},
      {"time_to_target_loo", &time_loo},
      {"time_to_target_group_out", &time_group}};
  for (const auto& [name, errors] : series) {
    out[fmt::format("median_abs_error_{}", name)] = median_abs_or_null(*errors);
    out[fmt::format("max_abs_error_{}", name)] = max_abs_or_null(*errors);
  }
  return out;
}

json max_abs_or_null(const std::vector<double>& errors) {
  double worst = kNaN;
  for (double e : errors)
    if (std::isfinite(e) && !(std::fabs(e) <= worst)) worst = std::fabs(e);
  return number_or_null(worst);
}

json round_start_json(const EngineRow& measured) {
  return {{"round_start_lateness_median_s", number_or_null(measured.round_start_lateness_median_s)},
          {"round_start_lateness_max_s", number_or_null(measured.round_start_lateness_max_s)}};
}

json round_start_summary_json(const std::vector<EngineRow>& measured) {
  std::vector<double> row_max;
  for (const EngineRow& m : measured)
    row_max.push_back(m.round_start_lateness_max_s);
  return {{"max_s", max_abs_or_null(row_max)}, {"median_over_rows_s", median_abs_or_null(row_max)}};
}

std::string round_start_text(const json& summary) {
  const json& worst = summary.at("max_s");
  const json& median = summary.at("median_over_rows_s");
  if (!worst.is_number())
    return "rounds started: no row's measurement reports its lateness past the agreed instant "
           "(round_start_lateness_max_s)\n";
  return fmt::format(
      "rounds started within {} ms of their agreed instant (median over rows {} ms)\n",
      ms(worst.get<double>()), median.is_number() ? ms(median.get<double>()) : "n/a");
}

json steal_summary_json(const std::vector<double>& rows,
                        const std::vector<double>& network_calibrations) {
  const auto known = [](const std::vector<double>& all) {
    std::vector<double> out;
    for (double f : all)
      if (f >= 0) out.push_back(f);
    return out;
  };
  const std::vector<double> row_steal = known(rows);
  const std::vector<double> network_steal = known(network_calibrations);
  const long above = std::count_if(row_steal.begin(), row_steal.end(),
                                   [](double f) { return f > exec::kStealWarningFraction; });
  return {{"median_rows", median_abs_or_null(row_steal)},
          {"max_rows", max_abs_or_null(row_steal)},
          {"rows_known", row_steal.size()},
          {"rows_above_warning", above},
          {"warning_fraction", exec::kStealWarningFraction},
          {"max_network_calibrations", max_abs_or_null(network_steal)}};
}

std::string steal_text(const json& summary) {
  const json& median = summary.at("median_rows");
  const json& network = summary.at("max_network_calibrations");
  const std::string network_text =
      network.is_number() ? fmt::format("{:.1f}%", 100 * network.get<double>()) : "unknown";
  if (!median.is_number())
    return "steal: unknown during the rows (not recorded, or no /proc/stat); network "
           "calibrations up to " +
           network_text + "\n";
  return fmt::format(
      "steal: the hypervisor took {:.1f}% of the CPU time during a row's measurement (median "
      "over rows; largest {:.1f}%, {} of {} rows above {:.0f}%; network calibrations up to {})\n",
      100 * median.get<double>(), 100 * summary.at("max_rows").get<double>(),
      summary.at("rows_above_warning").get<long>(), summary.at("rows_known").get<long>(),
      100 * summary.at("warning_fraction").get<double>(), network_text);
}

json fit_convergence(std::vector<ConvergenceRow>& rows) {
  std::vector<model::StepsPoint> points;
  std::vector<int> groups;
  std::vector<size_t> point_of;  // row index of each point
  std::map<std::pair<double, int>, int> group_ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ConvergenceRow& o = rows[i];
    if (!o.reached || o.asynchronous) continue;
    model::StepsPoint p;
    p.batch = o.batch;
    p.workers = o.counts_rounds ? o.workers : 1;
    p.tau = o.counts_rounds ? o.tau : 1;
    p.steps = o.rounds;
    // A time budget: the local steps each worker really took (mean per round).
    if (o.counts_rounds && o.local_steps.size() == static_cast<size_t>(o.workers))
      p.local_steps = o.local_steps;
    points.push_back(p);
    const auto coordinate = std::make_pair(p.batch * p.workers, p.tau);
    const auto it = group_ids.emplace(coordinate, static_cast<int>(group_ids.size())).first;
    groups.push_back(it->second);
    point_of.push_back(i);
  }
  if (points.size() < 3) return nullptr;
  const model::CriticalBatchFit fit = model::fit_critical_batch(points, "validate");
  const std::vector<double> loo = model::leave_out_predictions(points);
  const std::vector<double> lgo = model::leave_out_predictions(points, groups);
  for (size_t j = 0; j < points.size(); ++j) {
    ConvergenceRow& o = rows[point_of[j]];
    o.rounds_fit = model::fitted_steps(fit, points[j].batch, points[j].workers, points[j].tau);
    o.rounds_loo = loo[j];
    o.rounds_group = lgo[j];
  }
  json report = {{"min_steps", fit.min_steps}, {"critical_batch", fit.critical_batch},
                 {"drift", fit.drift},         {"rms_log_error", fit.rms_log_error},
                 {"points", fit.points},       {"groups", group_ids.size()}};
  // Asynchronous runs: Na(b) (1 + kappa tau_bar) with Na from the fit above and kappa fitted
  // to the other asynchronous runs (leave-one-out), with their measured staleness.
  std::vector<model::AsyncPoint> async_points;
  std::vector<size_t> async_of;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ConvergenceRow& o = rows[i];
    if (!o.reached || !o.asynchronous || !std::isfinite(o.staleness)) continue;
    async_points.push_back({o.batch, o.staleness, o.rounds});
    async_of.push_back(i);
  }
  if (!async_points.empty()) {
    const double kappa = model::fit_staleness_cost(fit, async_points);
    // Each left out at the staleness the analytic engine predicts for it (its measured
    // staleness is the measurement's, not the model's).
    std::vector<double> predicted_staleness;
    for (size_t i : async_of)
      predicted_staleness.push_back(rows[i].predicted_staleness);
    const std::vector<double> async_loo =
        model::leave_out_async_predictions(fit, async_points, predicted_staleness);
    for (size_t j = 0; j < async_points.size(); ++j) {
      ConvergenceRow& o = rows[async_of[j]];
      o.rounds_loo = o.rounds_group = async_loo[j];
      if (std::isfinite(kappa))
        o.rounds_fit = model::fitted_steps(fit, async_points[j].batch, 1, 1) *
                       (1 + kappa * predicted_staleness[j]);
    }
    report["staleness_cost"] = std::isfinite(kappa) ? json(kappa) : json(nullptr);
    report["async_points"] = async_points.size();
  }
  return report;
}

}  // namespace tauplan::study::validation
