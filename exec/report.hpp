// report.hpp: a Measurement in the one result schema, and as a Chrome/Perfetto trace.
//
// to_result_row fills model::ResultRow the way every engine does (round_s, compute_s and comm_s
// are means, so total_s = rounds x round_s; the medians C(b) per worker and S are in extra) and
// keeps what only exec knows in `extra`: per-worker C(b), S, steps/rounds to target (Na, Ma),
// the accuracy curve, the data set, the real communicator, the combine rule and the emulated
// slowdowns (labelled as emulated). write_chrome_trace writes trace events ("ph": "X", one
// track per worker, collectives on every worker's track), the format the simulator uses, so a
// measured and a simulated run open side by side in Perfetto. What it leaves out: rendering
// (tables, CSV: model/result.cpp) and events of workers on other MPI ranks.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "exec/trainer.hpp"
#include "model/result.hpp"

namespace tauplan::exec {

model::ResultRow to_result_row(const Measurement& m);
/// The exec-only part of a row (also used on its own by tests).
nlohmann::json measurement_extra(const Measurement& m);
/// {"traceEvents": [...], "displayTimeUnit": "ms"} for one or more measurements, one trace
/// process (pid) per measurement.
nlohmann::json chrome_trace(const std::vector<Measurement>& runs);
void write_chrome_trace(const std::vector<Measurement>& runs, std::ostream& out);

}  // namespace tauplan::exec
