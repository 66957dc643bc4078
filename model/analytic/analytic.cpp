// analytic.cpp: the analytic engine's row: a Plan's timing (plan_timing.hpp), its rounds and total.
#include "model/analytic/analytic.hpp"

#include "model/ir/strategy.hpp"

namespace tauplan::model {

long long staleness_version_bound(int workers, int staleness_bound) {
  if (staleness_bound <= 0) return -1;
  return static_cast<long long>(workers - 1) * (2LL * staleness_bound + 1);
}

ResultRow analyze(const Plan& plan, const Platform& platform) {
  const CompiledPlan compiled = compile(plan, platform);
  const RoundTiming timing = evaluate(compiled);
  ResultRow row = result_header(plan, "analytic");
  row.round_s = timing.round_s;
  row.compute_s = timing.compute_s;
  row.comm_s = timing.comm_s;
  row.total_s = static_cast<double>(plan.rounds) * timing.round_s;
  if (plan.asynchronous) {
    nlohmann::json workers = nlohmann::json::array();
    for (size_t w = 0; w < plan.worker_hosts.size(); ++w)
      workers.push_back({{"host", platform.hosts[static_cast<size_t>(plan.worker_hosts[w])].name},
                         {"samples", plan.worker_samples[w]},
                         {"compute_s", timing.worker_compute[w]},
                         {"cycle_s", timing.cycle_s[w]},
                         {"updates_per_s", timing.worker_rate[w]}});
    row.extra["workers_detail"] = workers;
    row.extra["convergence_steps"] = plan.convergence_steps;
    add_asynchronous_extra(plan, timing.updates_per_s, timing.mean_staleness, timing.max_staleness,
                           row.extra);
    row.extra["bottleneck"] = timing.bottleneck;
    return row;
  }

  // Per-worker compute per step and the full (not only exposed) collective time per round.
  std::vector<double> worker_compute(plan.worker_hosts.size(), 0.0);
  double collective_total = 0;
  for (auto v : plan.op_ids()) {
    const Op& op = plan.op(v);
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
  if (plan.micro_batches > 1) row.extra["micro_batches"] = plan.micro_batches;
  if (plan.round_budget_s > 0) add_budget_extra(plan, row.extra);
  return row;
}

void add_asynchronous_extra(const Plan& plan, double updates_per_s, double mean_staleness,
                            double max_staleness, nlohmann::json& extra) {
  extra["updates_per_s"] = updates_per_s;
  extra["staleness_mean"] = mean_staleness;
  extra["staleness_max"] = max_staleness;
  extra["staleness_bound"] = plan.staleness_bound;
  const long long bound = staleness_version_bound(plan.workers, plan.staleness_bound);
  extra["staleness_version_bound"] = bound >= 0 ? nlohmann::json(bound) : nlohmann::json(nullptr);
  extra["staleness_charged"] = plan.mean_staleness;
  extra["staleness_cost"] = plan.staleness_cost;
  extra["convergence_model"] =
      "updates to target = Na(b) (1 + staleness_cost x staleness_charged) [proposal]";
  extra["servers"] = plan.server_hosts.size();
}

void add_budget_extra(const Plan& plan, nlohmann::json& extra) {
  std::vector<int> steps(plan.worker_hosts.size(), 0);
  for (auto v : plan.op_ids()) {
    const Op& op = plan.op(v);
    if (op.kind == OpKind::Compute && op.worker >= 0)
      steps[static_cast<size_t>(op.worker)] += op.steps;
  }
  extra["round_budget_s"] = plan.round_budget_s;
  extra["local_steps"] = steps;
}

}  // namespace tauplan::model
