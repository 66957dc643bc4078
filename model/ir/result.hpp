// result.hpp: the one result schema every engine writes (DESIGN.md "Outputs").
//
// A ResultRow is one strategy's outcome: time per round split into compute and exposed
// communication, rounds to target, total time and speedup against single. A RunContext says
// where the numbers came from (engine, network model, platform and its hash, seed, commit).
// Rendering: a human table and JSON (nlohmann), CSV for sweeps.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::model {

struct ResultRow {
  std::string strategy;
  int workers = 1;
  int tau = 1;
  double batch = 0;
  std::string collective;
  std::string split;
  double round_s = 0;    ///< one round (sync: one step; local-sgd: tau steps + averaging)
  double compute_s = 0;  ///< compute of one step on the critical path
  double comm_s = 0;     ///< communication on the critical path in one round (exposed)
  long long rounds = 0;
  double total_s = 0;  ///< rounds x round_s
  double speedup = 0;  ///< T0 / total_s; 0 when no single row to compare with (JSON null)
  std::string engine;  ///< analytic | simgrid | exec-cpu | exec-cuda
  std::string timing;  ///< exec only: concurrent | lockstep
  /// Shown at the end of the row in the table (measure: a missed target); JSON carries the
  /// details in `extra`.
  std::string note;
  /// Engine-specific extras (per-worker compute, accuracy, faults ...), kept in JSON.
  nlohmann::json extra = nlohmann::json::object();
};

struct RunContext {
  std::string verb;  ///< predict, simulate, measure ...
  std::string engine;
  std::string job_file;
  std::string platform_file;
  std::string platform_hash;
  std::string workload;
  std::string network_model;  ///< "alpha-beta" for the analytic engine; SimGrid's model otherwise
  std::string convergence;    ///< how rounds were obtained
  unsigned long long seed = 0;
  std::map<std::string, std::string> extra;  ///< engine config (e.g. SimGrid --cfg values)
};

/// Fills speedup = T0 / total_s of every row from the "single" row, if there is one.
void fill_speedups(std::vector<ResultRow>& rows);

nlohmann::json to_json(const ResultRow& row);
/// {"context": {...version, commit, date...}, "results": [...]}
nlohmann::json to_json(const RunContext& context, const std::vector<ResultRow>& rows);
/// Human table (fixed columns) for stdout.
std::string to_table(const std::vector<ResultRow>& rows);
/// CSV with a header line; columns are the schema's fields in a fixed order.
std::string to_csv(const std::vector<ResultRow>& rows, bool header = true);

/// Version and git commit compiled into the binary.
const char* tauplan_version();
const char* tauplan_git_commit();
/// UTC date-time, ISO 8601.
std::string utc_now_iso8601();

}  // namespace tauplan::model
