// report.cpp: Measurement -> ResultRow (+ extra JSON) and Chrome trace events.
#include "exec/report.hpp"

#include <cmath>

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
    workers.push_back(j);
  }
  extra["per_worker"] = workers;
  json curve = json::array();
  for (const AccuracyPoint& p : m.curve)
    curve.push_back({{"round", p.round},
                     {"steps", p.steps},
                     {"time_s", p.time_s},
                     {"accuracy", p.accuracy},
                     {"train_loss", p.train_loss}});
  extra["accuracy_curve"] = curve;
  return extra;
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
  row.extra = measurement_extra(m);
  return row;
}

nlohmann::json chrome_trace(const std::vector<Measurement>& runs) {
  using nlohmann::json;
  json events = json::array();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Measurement& m = runs[r];
    const int pid = static_cast<int>(r);
    events.push_back(
        {{"ph", "M"},
         {"name", "process_name"},
         {"pid", pid},
         {"args",
          {{"name", m.engine + " " + m.strategy + " K=" + std::to_string(m.workers) +
                        " tau=" + std::to_string(m.tau) + " (" + to_string(m.timing) + ")"}}}});
    for (const WorkerReport& w : m.per_worker) {
      std::string name = "worker " + std::to_string(w.worker);
      if (!w.host_name.empty()) name += " (" + w.host_name + ")";
      if (w.slowdown != 1.0) name += " slowdown x" + std::to_string(w.slowdown) + " emulated";
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", w.worker},
                        {"args", {{"name", name}}}});
    }
    for (const TraceEvent& e : m.trace) {
      const auto emit = [&](int tid) {
        events.push_back({{"ph", "X"},
                          {"name", e.name},
                          {"cat", e.category},
                          {"pid", pid},
                          {"tid", tid},
                          {"ts", e.start_s * 1e6},
                          {"dur", e.duration_s * 1e6},
                          {"args", {{"round", e.round}}}});
      };
      if (e.worker >= 0) {
        emit(e.worker);
      } else {
        for (int w = 0; w < m.workers; ++w)
          emit(w);
      }
    }
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_chrome_trace(const std::vector<Measurement>& runs, std::ostream& out) {
  out << chrome_trace(runs).dump() << '\n';
}

}  // namespace tauplan::exec
