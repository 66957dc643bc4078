// trace_event.hpp: one span of a measured run, as the process that ran it recorded it.
//
// Each process records the spans of its own workers (and a server rank those of its server);
// under MPI they are serialised and gathered to rank 0, which writes one trace for the whole run
// (exec/report.hpp, through model/base/chrome_trace.hpp). Times are seconds from the start of
// training: on the virtual clock in lockstep, on the wall clock from the start barrier (which
// aligns the ranks' clocks) in concurrent timing. What it leaves out: flow arrows between the
// ranks of one message, and spans of evaluation (not training time).
#pragma once

#include <string>
#include <vector>

#include "model/ir/plan.hpp"

namespace tauplan::exec {

struct TraceEvent {
  std::string name;      ///< the Plan op's label; a collective's is "LABEL (ALGORITHM)"
  std::string category;  ///< compute, update or comm (the simulator's categories)
  int track = 0;         ///< worker index k, or K + j for server j
  long long round = 0;
  double start_s = 0;
  double duration_s = 0;
  long long steps = 0;     ///< compute and update: SGD steps the op ran
  long long messages = 0;  ///< comm: point-to-point messages this process sent for it
};

/// The span name of a Plan op, as the simulator names it: the op's label (its kind when it has
/// none), and for a collective "LABEL (ALGORITHM)".
std::string trace_name(const model::Op& op);

/// A compact text form of events (for MPI_Gather) and its inverse.
std::string serialize_trace(const std::vector<TraceEvent>& events);
std::vector<TraceEvent> parse_trace(const std::string& text);

}  // namespace tauplan::exec
