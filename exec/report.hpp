// report.hpp: a Measurement in the one result schema, and as a Chrome/Perfetto trace.
//
// to_result_row fills model::ResultRow the way every engine does (round_s, compute_s and comm_s
// are means, so total_s = rounds x round_s; the medians C(b) per worker and S are in extra) and
// keeps what only exec knows in `extra`: per-worker C(b), S, steps/rounds to target (Na, Ma),
// the accuracy curve, the data set, the real communicator, the combine rule and the emulated
// slowdowns (labelled as emulated); a row whose target was not reached says so in its note.
// chrome_trace writes through model/base/chrome_trace.hpp in the simulator's layout: one process
// per strategy, one track per worker ("wK HOST") and per server ("server HOST"), spans ("ph": "X",
// microseconds) in the categories compute, update (args round, steps) and comm (args round,
// flows: the point-to-point messages of the call over all processes), named as the simulator
// names them, so a measured and a simulated run open side by side in Perfetto. Under MPI the
// measurement holds every rank's spans (gathered to rank 0 by measure).
// server_processing_json is one server rank's own work (server_processing.hpp) as one object of
// a row's `servers` array (MPI runs with server ranks: ps, sparknet, async-ps; rows of runs
// without server ranks have no `servers` key): server, host (when known), calls (sync:
// push-combine-reply calls; async: updates applied), messages, bytes, processing_s,
// processing_median_s (per call), wall_s (first message to the end of the last call),
// busy_fraction (processing_s / wall_s, 0 when wall_s is 0), and the first
// kServerCallsRecorded calls' call_processing_s, call_messages and call_bytes (calls_recorded of
// them). What it leaves out: rendering (tables, CSV: model/ir/result.cpp), barriers (not traced, as
// in the simulator) and evaluation spans.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "exec/server_processing.hpp"
#include "exec/trainer.hpp"
#include "model/base/chrome_trace.hpp"
#include "model/ir/result.hpp"

namespace tauplan::exec {

model::ResultRow to_result_row(const Measurement& m);
/// The exec-only part of a row (also used on its own by tests).
nlohmann::json measurement_extra(const Measurement& m);
/// Per-call entries a `servers` object keeps (the first calls; the totals count every call).
constexpr std::size_t kServerCallsRecorded = 2048;
/// One server rank's processing as its `servers` object (see above).
nlohmann::json server_processing_json(const ServerProcessing& p);
/// The trace of one or more measurements, one trace process (pid) per measurement.
model::ChromeTrace chrome_trace(const std::vector<Measurement>& runs);
void write_chrome_trace(const std::vector<Measurement>& runs, std::ostream& out);

}  // namespace tauplan::exec
