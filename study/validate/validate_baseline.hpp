// validate_baseline.hpp: the bottleneck-link baseline beside the engines in validate's reports.
//
// A configuration's collective is lowered to stages of flows as the simulator lowers it
// (sim/collective_lowering.hpp, step granularity: one stage per ring step, push, pull, tree
// level ...), several jobs at once sharing their stages, and timed by
// model/analytic/bottleneck_baseline.hpp on the platform's nominal links. The report then says, for
// the round time, each engine's and the baseline's median |error| over all rows and over the
// contended rows (rows whose flows put more than one flow on a link that is not a fat pipe in some
// stage, from the same flow/link loads), and how many times smaller each engine's median is than
// the baseline's ("beats the baseline by"). What it leaves out: choosing the platform and the rows
// (the pipelines, validate.cpp and validate_testbed.cpp, do), and collectives overlapped with
// compute (one collective of the whole payload per round).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/analytic/bottleneck_baseline.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/collective.hpp"

namespace tauplan::study::validation {

/// The baseline of `jobs` (calls of the collective `algorithm`, running at once) over the
/// platform's routes. Throws InputError for an unknown algorithm.
model::BottleneckBaseline collective_baseline(const std::string& algorithm,
                                              const std::vector<model::CollectiveCall>& jobs,
                                              const model::Platform& platform);

/// A row's baseline as JSON: round_s, comm_s, error_round, contended, most_flows_on_a_link and
/// each stage's bottleneck (phase, repeat, link, bytes, bandwidth, latency, seconds, flows).
nlohmann::json baseline_row_json(const model::BottleneckBaseline& baseline,
                                 const model::Platform& platform, double round_s,
                                 double error_round);

/// One engine's round-time errors, a row each (NaN where it has none).
struct EngineErrors {
  std::string label;
  std::vector<double> round;
};

/// The comparison with the baseline: for the baseline and each engine, the median |round error|
/// over all rows and over the contended ones, and for each engine the baseline's median over its
/// own ("beats_baseline_by", null when either is missing or the engine's is 0). `contended` and
/// `baseline_errors` (round-time errors) have a value per row, as every engine's errors; the
/// medians are over the rows where the baseline's error is finite.
nlohmann::json versus_baseline_json(const std::vector<double>& baseline_errors,
                                    const std::vector<bool>& contended,
                                    const std::vector<EngineErrors>& engines,
                                    const std::string& nominal);

/// The summary's lines of the comparison (from versus_baseline_json's JSON).
std::string versus_baseline_text(const nlohmann::json& versus);

}  // namespace tauplan::study::validation
