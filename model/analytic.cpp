// analytic.cpp: op costs, compilation to flat arrays, and the longest path.
#include "model/analytic.hpp"

#include <algorithm>
#include <cassert>

#include "model/collective.hpp"

namespace tauplan::model {

double op_duration_s(const Op& op, const Plan& plan, const Platform& platform) {
  switch (op.kind) {
    case OpKind::Compute:
    case OpKind::Update: {
      const int host = plan.worker_hosts.at(static_cast<size_t>(op.worker));
      const double speed = platform.hosts[static_cast<size_t>(host)].speed_flops;
      const double one_step = op.overhead_s + (op.flop > 0 ? op.flop / speed : 0.0);
      return op.kind == OpKind::Compute ? op.steps * one_step : one_step;
    }
    case OpKind::Collective: {
      if (op.fixed_time_s >= 0) return op.fixed_time_s;
      CollectiveCall call;
      call.payload = op.payload;
      call.bytes = op.bytes;
      call.servers = plan.server_hosts;
      call.hosts.reserve(op.group.size());
      for (int w : op.group)
        call.hosts.push_back(plan.worker_hosts.at(static_cast<size_t>(w)));
      return collective_algorithm(op.algorithm).time_s(call, platform);
    }
    case OpKind::Barrier:
      return 0;
  }
  return 0;
}

CompiledPlan compile(const Plan& plan, const Platform& platform) {
  CompiledPlan compiled;
  compiled.steps_per_round = plan.steps_per_round;
  const std::vector<OpId> order = plan.topological_order();
  std::vector<int> position(boost::num_vertices(plan.graph), -1);
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = static_cast<int>(i);
  compiled.duration_s.reserve(order.size());
  compiled.kind.reserve(order.size());
  compiled.step_fraction.reserve(order.size());
  compiled.pred_index.reserve(boost::num_edges(plan.graph));
  compiled.pred_offset.reserve(order.size() + 1);
  compiled.pred_offset.push_back(0);
  for (OpId v : order) {
    const Op& op = plan.graph[v];
    compiled.duration_s.push_back(op_duration_s(op, plan, platform));
    compiled.kind.push_back(op.kind);
    compiled.step_fraction.push_back(op.kind == OpKind::Compute ? op.step_fraction * op.steps : 0);
    for (auto e : boost::make_iterator_range(boost::in_edges(v, plan.graph)))
      compiled.pred_index.push_back(position[boost::source(e, plan.graph)]);
    compiled.pred_offset.push_back(static_cast<int>(compiled.pred_index.size()));
  }
  return compiled;
}

RoundTiming evaluate(const CompiledPlan& compiled) {
  const size_t n = compiled.duration_s.size();
  RoundTiming timing;
  if (n == 0) return timing;
  // finish[i] and the predecessor that decided it, to walk the critical path back.
  std::vector<double> finish(n);
  std::vector<int> critical_pred(n, -1);
  size_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    double start = 0;
    for (int p = compiled.pred_offset[i]; p < compiled.pred_offset[i + 1]; ++p) {
      const int pred = compiled.pred_index[static_cast<size_t>(p)];
      if (critical_pred[i] < 0 || finish[static_cast<size_t>(pred)] > start) {
        critical_pred[i] = pred;
        start = finish[static_cast<size_t>(pred)];
      }
    }
    finish[i] = start + compiled.duration_s[i];
    if (finish[i] > finish[last]) last = i;
  }
  timing.round_s = finish[last];
  double compute = 0, comm = 0;
  for (int i = static_cast<int>(last); i >= 0; i = critical_pred[static_cast<size_t>(i)]) {
    const OpKind kind = compiled.kind[static_cast<size_t>(i)];
    if (kind == OpKind::Collective)
      comm += compiled.duration_s[static_cast<size_t>(i)];
    else if (kind != OpKind::Barrier)
      compute += compiled.duration_s[static_cast<size_t>(i)];
  }
  timing.compute_s = compute / compiled.steps_per_round;
  timing.comm_s = comm;
  return timing;
}

ResultRow analyze(const Plan& plan, const Platform& platform) {
  const CompiledPlan compiled = compile(plan, platform);
  const RoundTiming timing = evaluate(compiled);
  ResultRow row;
  row.strategy = plan.strategy;
  row.workers = plan.workers;
  row.tau = plan.tau;
  row.batch = plan.batch;
  row.collective = plan.collective;
  row.split = plan.strategy == "sync" ? to_string(plan.split) : "";
  row.round_s = timing.round_s;
  row.compute_s = timing.compute_s;
  row.comm_s = timing.comm_s;
  row.rounds = plan.rounds;
  row.total_s = static_cast<double>(plan.rounds) * timing.round_s;
  row.engine = "analytic";

  // Per-worker compute per step and the full (not only exposed) collective time per round.
  std::vector<double> worker_compute(plan.worker_hosts.size(), 0.0);
  double collective_total = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(plan.graph))) {
    const Op& op = plan.graph[v];
    const double d = op_duration_s(op, plan, platform);
    if (op.kind == OpKind::Compute || op.kind == OpKind::Update)
      worker_compute[static_cast<size_t>(op.worker)] += d / plan.steps_per_round;
    else if (op.kind == OpKind::Collective)
      collective_total += d;
  }
  nlohmann::json workers = nlohmann::json::array();
  for (size_t w = 0; w < plan.worker_hosts.size(); ++w)
    workers.push_back({{"host", platform.hosts[static_cast<size_t>(plan.worker_hosts[w])].name},
                       {"samples", plan.worker_samples.empty() ? 0.0 : plan.worker_samples[w]},
                       {"compute_s", worker_compute[w]}});
  row.extra["workers_detail"] = workers;
  row.extra["collective_s"] = collective_total;
  row.extra["convergence_steps"] = plan.convergence_steps;
  row.extra["steps_per_round"] = plan.steps_per_round;
  if (plan.overlap) row.extra["bucket_bytes"] = plan.bucket_bytes;
  return row;
}

}  // namespace tauplan::model
