// report.cpp: Measurement -> ResultRow (+ extra JSON) and Chrome trace events.
#include "exec/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

namespace tauplan::exec {

nlohmann::json measurement_extra(const Measurement& m) {
  using nlohmann::json;
  json extra = json::object();
  extra["communicator"] = m.communicator;
  extra["combine"] = to_string(m.combine);
  extra["dataset"] = m.dataset;
  extra["dataset_source"] = m.dataset_source;
  extra["synthetic_data"] = m.synthetic;
  extra["mlp"] = m.mlp;
  extra["parameters"] = m.parameters;
  extra["learning_rate"] = m.learning_rate;
  extra["seed"] = m.seed;
  extra["steps_per_round"] = m.steps_per_round;
  extra["clock"] = m.clock;
  extra["target_accuracy"] = m.target_accuracy;
  extra["reached_target"] = m.reached;
  extra["final_accuracy"] = m.final_accuracy;
  extra["steps"] = m.steps;
  // Na (single, sync) or Ma (local-sgd): rounds to the target, null when not reached.
  extra["rounds_to_target"] = m.reached ? json(m.rounds) : json(nullptr);
  extra["steps_to_target"] = m.reached ? json(m.steps) : json(nullptr);
  extra["S_s"] = m.sync_s;  // median per round
  extra["compute_median_s"] = m.compute_median_s;
  extra["round_median_s"] = m.round_median_s;
  extra["wall_s"] = m.wall_s;
  extra["eval_wall_s"] = m.eval_wall_s;
  extra["emulated_heterogeneity"] = m.emulated;
  json workers = json::array();
  for (const WorkerReport& w : m.per_worker) {
    json j;
    j["worker"] = w.worker;
    j["host"] = w.host_name;
    j["samples"] = w.samples;
    j["steps"] = w.steps;
    j["C_s"] = w.compute_median_s;
    j["measured_C_s"] = w.measured_median_s;
    j["slowdown"] = w.slowdown;
    j["slowdown_emulated"] = w.slowdown != 1.0;
    if (!w.ran_on.empty()) j["ran_on"] = w.ran_on;
    workers.push_back(j);
  }
  extra["per_worker"] = workers;
  if (!m.server_hosts.empty()) extra["server_hosts"] = m.server_hosts;
  json curve = json::array();
  for (const AccuracyPoint& p : m.curve)
    curve.push_back({{"round", p.round},
                     {"steps", p.steps},
                     {"time_s", p.time_s},
                     {"accuracy", p.accuracy},
                     {"train_loss", p.train_loss}});
  extra["accuracy_curve"] = curve;
  for (const auto& [key, value] : m.extra.items())
    extra[key] = value;
  return extra;
}

nlohmann::json server_processing_json(const ServerProcessing& p) {
  const auto recorded = std::min(p.call_processing_s.size(), kServerCallsRecorded);
  const auto head = [recorded](const auto& values) {
    using Values = std::decay_t<decltype(values)>;
    return Values(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(recorded));
  };
  const double wall = p.wall_s();
  nlohmann::json j;
  j["server"] = p.server;
  if (!p.host.empty()) j["host"] = p.host;
  j["calls"] = p.calls;
  j["messages"] = p.messages;
  j["bytes"] = p.bytes;
  j["processing_s"] = p.processing_s;
  j["processing_median_s"] = median(p.call_processing_s);
  j["wall_s"] = wall;
  j["busy_fraction"] = wall > 0 ? p.processing_s / wall : 0.0;
  j["calls_recorded"] = recorded;
  j["call_processing_s"] = head(p.call_processing_s);
  j["call_messages"] = head(p.call_messages);
  j["call_bytes"] = head(p.call_bytes);
  return j;
}

model::ResultRow to_result_row(const Measurement& m) {
  model::ResultRow row;
  row.strategy = m.strategy;
  row.workers = m.workers;
  row.tau = m.tau;
  row.batch = m.batch;
  row.collective = m.collective;
  row.split = m.split;
  row.round_s = m.round_mean_s;
  // Means, so that round_s ~ steps_per_round x compute_s + comm_s; medians are in extra.
  row.compute_s = m.compute_s;
  row.comm_s = m.sync_mean_s;
  row.rounds = m.rounds;
  row.total_s = m.total_s;
  row.engine = m.engine;
  row.timing = to_string(m.timing);
  if (!m.reached && m.target_accuracy > 0)
    row.note = fmt::format("target {:g} NOT reached: accuracy {:.4g} after {} steps",
                           m.target_accuracy, m.final_accuracy, m.steps);
  row.extra = measurement_extra(m);
  // A transformer run (exec/transformer_measure.hpp) has a loss instead of an accuracy target.
  if (row.note.empty() && m.extra.contains("loss"))
    row.note = fmt::format(
        "loss {:.4g} -> {:.4g} (floor {:.3g})", m.extra["loss"]["first"].get<double>(),
        m.extra["loss"]["final"].get<double>(), m.extra["loss"]["entropy_floor"].get<double>());
  return row;
}

model::ChromeTrace chrome_trace(const std::vector<Measurement>& runs) {
  model::ChromeTrace trace;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Measurement& m = runs[r];
    const int pid = static_cast<int>(r);
    const std::string algorithm =
        m.communicator == "mpi" && !m.collective.empty() ? " " + m.collective : "";
    trace.name_process(pid, m.strategy + " (" + m.engine + ", " + m.communicator + algorithm +
                                ", " + to_string(m.timing) + ")");
    for (const WorkerReport& w : m.per_worker) {
      std::string name = "w" + std::to_string(w.worker);
      if (!w.host_name.empty()) name += " " + w.host_name;
      if (w.slowdown != 1.0) name += fmt::format(" (slowdown x{:g} emulated)", w.slowdown);
      trace.name_thread(pid, w.worker, name);
    }
    for (std::size_t j = 0; j < m.server_hosts.size(); ++j)
      trace.name_thread(pid, m.workers + static_cast<int>(j), "server " + m.server_hosts[j]);
    // Messages of one collective call: every process's count for it, summed (the simulator's
    // "flows": the point-to-point transfers of the whole call).
    std::map<std::pair<long long, std::string>, long long> flows;
    for (const TraceEvent& e : m.trace)
      if (e.category == "comm") flows[{e.round, e.name}] += e.messages;
    for (const TraceEvent& e : m.trace) {
      const std::string round = std::to_string(e.round);
      if (e.category == "comm")
        trace.span(pid, e.track, e.name, e.category, e.start_s, e.duration_s,
                   {{"round", round}, {"flows", std::to_string(flows[{e.round, e.name}])}});
      else
        trace.span(pid, e.track, e.name, e.category, e.start_s, e.duration_s,
                   {{"round", round}, {"steps", std::to_string(e.steps)}});
    }
  }
  return trace;
}

void write_chrome_trace(const std::vector<Measurement>& runs, std::ostream& out) {
  out << chrome_trace(runs).json();
}

}  // namespace tauplan::exec
