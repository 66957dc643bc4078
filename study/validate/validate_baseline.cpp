// validate_baseline.cpp: see validate_baseline.hpp.
#include "study/validate/validate_baseline.hpp"

#include <cmath>

#include <fmt/format.h>

#include "sim/collective_lowering.hpp"
#include "study/validate/validate_support.hpp"

namespace tauplan::study::validation {

using nlohmann::json;

model::BottleneckBaseline collective_baseline(const std::string& algorithm,
                                              const std::vector<model::CollectiveCall>& jobs,
                                              const model::Platform& platform) {
  std::vector<std::vector<model::TrafficStage>> traffic;
  for (const model::CollectiveCall& call : jobs) {
    const sim::FlowProgram program =
        sim::lower_collective(algorithm, call, platform, sim::Granularity::Step);
    std::vector<model::TrafficStage> stages;
    for (const sim::FlowStage& s : program.stages) {
      model::TrafficStage stage;
      stage.phase = s.phase;
      stage.repeat = s.repeat;
      stage.flows = s.flows;
      stages.push_back(std::move(stage));
    }
    traffic.push_back(std::move(stages));
  }
  return model::bottleneck_baseline(model::concurrent_stages(traffic), platform);
}

json baseline_row_json(const model::BottleneckBaseline& baseline, const model::Platform& platform,
                       double round_s, double error_round) {
  json stages = json::array();
  for (const model::StageBottleneck& s : baseline.stages)
    stages.push_back(
        {{"phase", s.phase},
         {"repeat", s.repeat},
         {"link",
          s.link >= 0 ? json(platform.links.at(static_cast<size_t>(s.link)).name) : json(nullptr)},
         {"link_bytes", s.link_bytes},
         {"bandwidth_Bps", number_or_null(s.bandwidth_Bps)},
         {"latency_s", s.latency_s},
         {"seconds", s.seconds},
         {"most_flows_on_a_link", s.most_flows_on_a_link}});
  return {{"round_s", number_or_null(round_s)},
          {"comm_s", baseline.comm_s},
          {"error_round", number_or_null(error_round)},
          {"contended", baseline.contended()},
          {"most_flows_on_a_link", baseline.most_flows_on_a_link},
          {"stages", stages}};
}

namespace {

/// The errors of the rows the baseline has (all, or the contended ones), in row order.
std::vector<double> rows_of(const std::vector<double>& errors, const std::vector<double>& baseline,
                            const std::vector<bool>& contended, bool contended_only) {
  std::vector<double> out;
  for (size_t i = 0; i < errors.size() && i < baseline.size() && i < contended.size(); ++i)
    if (std::isfinite(baseline[i]) && (!contended_only || contended[i])) out.push_back(errors[i]);
  return out;
}

/// How many times the baseline's median |error| is the engine's; null when either is missing or
/// the engine's is 0.
json beats_by(const json& baseline_median, const json& engine_median) {
  if (!baseline_median.is_number() || !engine_median.is_number()) return nullptr;
  const double engine = engine_median.get<double>();
  return engine > 0 ? json(baseline_median.get<double>() / engine) : json(nullptr);
}

std::string times_or_na(const json& v) {
  return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : std::string("n/a");
}

}  // namespace

json versus_baseline_json(const std::vector<double>& baseline_errors,
                          const std::vector<bool>& contended,
                          const std::vector<EngineErrors>& engines, const std::string& nominal) {
  const std::vector<double> all = rows_of(baseline_errors, baseline_errors, contended, false);
  const std::vector<double> shared = rows_of(baseline_errors, baseline_errors, contended, true);
  json out = {
      {"baseline",
       "bottleneck link: per stage of the collective (as the simulator lowers it), the busiest "
       "link's bytes over its bandwidth plus the longest route latency; the round is the analytic "
       "engine's compute plus that communication; " +
           nominal},
      {"contended",
       "rows where some stage puts more than one flow on a link that is not a fat pipe (the "
       "baseline's flow/link loads, concurrent jobs included)"},
      {"rows", all.size()},
      {"contended_rows", shared.size()},
      {"bottleneck_baseline",
       {{"median_abs_error_round", median_abs_or_null(all)},
        {"max_abs_error_round", max_abs_or_null(all)},
        {"median_abs_error_round_contended", median_abs_or_null(shared)},
        {"max_abs_error_round_contended", max_abs_or_null(shared)}}}};
  const json& base = out["bottleneck_baseline"];
  json per_engine = json::object();
  for (const EngineErrors& e : engines) {
    const json median = median_abs_or_null(rows_of(e.round, baseline_errors, contended, false));
    const json median_contended =
        median_abs_or_null(rows_of(e.round, baseline_errors, contended, true));
    per_engine[e.label] = {{"median_abs_error_round", median},
                           {"median_abs_error_round_contended", median_contended},
                           {"beats_baseline_by", beats_by(base["median_abs_error_round"], median)},
                           {"beats_baseline_by_contended",
                            beats_by(base["median_abs_error_round_contended"], median_contended)}};
  }
  out["engines"] = per_engine;
  return out;
}

std::string versus_baseline_text(const json& versus) {
  const json& base = versus.at("bottleneck_baseline");
  std::string out = fmt::format(
      "bottleneck baseline round |error| median {} max {} over {} rows (contended rows, {}: "
      "median {} max {})\n",
      pct_or_na(base.at("median_abs_error_round")), pct_or_na(base.at("max_abs_error_round")),
      versus.at("rows").get<size_t>(), versus.at("contended_rows").get<size_t>(),
      pct_or_na(base.at("median_abs_error_round_contended")),
      pct_or_na(base.at("max_abs_error_round_contended")));
  for (const auto& [label, e] : versus.at("engines").items())
    out += fmt::format(
        "{:<13} beats the baseline by {} on all rows (median {} against {}), by {} on contended "
        "rows (median {} against {})\n",
        label, times_or_na(e.at("beats_baseline_by")), pct_or_na(e.at("median_abs_error_round")),
        pct_or_na(base.at("median_abs_error_round")),
        times_or_na(e.at("beats_baseline_by_contended")),
        pct_or_na(e.at("median_abs_error_round_contended")),
        pct_or_na(base.at("median_abs_error_round_contended")));
  return out;
}

}  // namespace tauplan::study::validation
