// result.cpp: rendering results as JSON, a table and CSV, with their provenance.
#include "model/ir/result.hpp"

#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "model/ir/strategy.hpp"
#include "tauplan_git_commit.h"  // generated at build time (model/git_commit.cmake)

#ifndef TAUPLAN_GIT_COMMIT
#define TAUPLAN_GIT_COMMIT "unknown"
#endif
#ifndef TAUPLAN_VERSION
#define TAUPLAN_VERSION "0.0.0"
#endif

namespace tauplan::model {

void fill_speedups(std::vector<ResultRow>& rows) {
  const ResultRow* single = nullptr;
  const std::string baseline = baseline_strategy().name();
  for (const auto& row : rows)
    if (row.strategy == baseline) single = &row;
  if (!single) return;
  const double t0 = single->total_s;
  for (auto& row : rows)
    row.speedup = row.total_s > 0 ? t0 / row.total_s : 0;
}

nlohmann::json to_json(const ResultRow& row) {
  nlohmann::json j = {
      {"strategy", row.strategy}, {"workers", row.workers},       {"tau", row.tau},
      {"batch", row.batch},       {"collective", row.collective}, {"split", row.split},
      {"round_s", row.round_s},   {"compute_s", row.compute_s},   {"comm_s", row.comm_s},
      {"rounds", row.rounds},     {"total_s", row.total_s},       {"speedup", nullptr},
      {"engine", row.engine}};
  // No baseline row to compare with: null, never a speedup of 0.
  if (row.speedup > 0) j["speedup"] = row.speedup;
  if (!row.timing.empty()) j["timing"] = row.timing;
  for (const auto& [key, value] : row.extra.items())
    j[key] = value;
  return j;
}

nlohmann::json to_json(const RunContext& context, const std::vector<ResultRow>& rows) {
  nlohmann::json ctx = {{"tool", "tauplan"},
                        {"version", tauplan_version()},
                        {"commit", tauplan_git_commit()},
                        {"date", utc_now_iso8601()},
                        {"verb", context.verb},
                        {"engine", context.engine},
                        {"job_file", context.job_file},
                        {"platform_file", context.platform_file},
                        {"platform_hash", context.platform_hash},
                        {"workload", context.workload},
                        {"network_model", context.network_model},
                        {"convergence", context.convergence},
                        {"seed", context.seed}};
  for (const auto& [key, value] : context.extra)
    ctx[key] = value;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& row : rows)
    results.push_back(to_json(row));
  return {{"context", ctx}, {"results", results}};
}

namespace {
std::string seconds(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.4g} ms", s * 1e3);
  if (s < 3600) return fmt::format("{:.4g} s", s);
  return fmt::format("{:.4g} h", s / 3600);
}
}  // namespace

std::string to_table(const std::vector<ResultRow>& rows) {
  std::string out =
      fmt::format("{:<10} {:>4} {:>5} {:>7} {:<12} {:>11} {:>11} {:>11} {:>9} {:>11} {:>8}  {}\n",
                  "strategy", "K", "tau", "batch", "collective", "round", "compute", "comm",
                  "rounds", "total", "speedup", "engine");
  for (const auto& r : rows) {
    const std::string collective = r.collective.empty() ? "-" : r.collective;
    out += fmt::format(
        "{:<10} {:>4} {:>5} {:>7} {:<12} {:>11} {:>11} {:>11} {:>9} {:>11} {:>8}  {}{}{}\n",
        r.strategy, r.workers, r.tau, fmt::format("{:g}", r.batch), collective, seconds(r.round_s),
        seconds(r.compute_s), seconds(r.comm_s), r.rounds, seconds(r.total_s),
        r.speedup > 0 ? fmt::format("{:.3f}", r.speedup) : "-", r.engine,
        r.timing.empty() ? "" : " (" + r.timing + ")", r.note.empty() ? "" : "  " + r.note);
  }
  return out;
}

std::string to_csv(const std::vector<ResultRow>& rows, bool header) {
  std::string out;
  if (header)
    out +=
        "strategy,workers,tau,batch,collective,split,round_s,compute_s,comm_s,rounds,total_s,"
        "speedup,engine,timing\n";
  for (const auto& r : rows)
    out += fmt::format("{},{},{},{:g},{},{},{:.9g},{:.9g},{:.9g},{},{:.9g},{},{},{}\n", r.strategy,
                       r.workers, r.tau, r.batch, r.collective, r.split, r.round_s, r.compute_s,
                       r.comm_s, r.rounds, r.total_s,
                       r.speedup > 0 ? fmt::format("{:.9g}", r.speedup) : "", r.engine, r.timing);
  return out;
}

const char* tauplan_version() {
  return TAUPLAN_VERSION;
}
const char* tauplan_git_commit() {
  return TAUPLAN_GIT_COMMIT;
}

std::string utc_now_iso8601() {
  // SOURCE_DATE_EPOCH (reproducible-builds.org) pins the date, so that two runs of the same
  // job can be compared byte for byte.
  std::time_t now = std::time(nullptr);
  if (const char* pinned = std::getenv("SOURCE_DATE_EPOCH"); pinned && *pinned)
    now = static_cast<std::time_t>(std::strtoll(pinned, nullptr, 10));
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace tauplan::model
