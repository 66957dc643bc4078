// chrome_trace.hpp: a Chrome trace event file (the JSON that Perfetto and chrome://tracing open).
//
// A trace holds processes (one per strategy) with threads (one track per worker or server) and
// complete spans on them: compute, communication, faults. Times are given in seconds and written
// in microseconds, with a fixed number of decimals so that the same run writes the same bytes.
// The simulator (sim/simulator.cpp) and the real engine (exec/report.cpp) both write through it,
// so a simulated and a measured run have one layout and open side by side in Perfetto. What it
// leaves out: flow arrows, counters, and nested async events.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tauplan::model {

class ChromeTrace {
 public:
  using Args = std::vector<std::pair<std::string, std::string>>;

  /// Names a process (a row group in Perfetto) and sorts it by its id.
  void name_process(int pid, const std::string& name);
  /// Names a track and sorts it by its id.
  void name_thread(int pid, int tid, const std::string& name);
  /// A complete span ("ph": "X") from start_s lasting duration_s; args are shown as strings.
  void span(int pid, int tid, const std::string& name, const std::string& category, double start_s,
            double duration_s, const Args& args = {});
  /// An instant event ("ph": "i"), e.g. a host failure.
  void instant(int pid, int tid, const std::string& name, const std::string& category,
               double time_s, const Args& args = {});

  size_t event_count() const { return events_.size(); }
  /// The whole file: {"displayTimeUnit": "ms", "traceEvents": [...]}.
  std::string json() const;
  /// Writes json() to `path`; throws InputError (key "trace") when it cannot.
  void write(const std::string& path) const;

 private:
  std::vector<std::string> events_;  // each a JSON object, in the order they were added
};

/// `text` as a JSON string literal (quotes included).
std::string json_quote(const std::string& text);

}  // namespace tauplan::model
