// async_cycle.cpp: a worker's cycle read from the Plan, its step, the lead's evaluation, the
// shards and the Measurement of an asynchronous run; see the header.
#include "exec/async_cycle.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "exec/cpu_replica.hpp"
#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

AsyncWorkerCompute::AsyncWorkerCompute(const model::Plan& plan, int worker, const Dataset& data,
                                       const MlpShape& shape, const TrainOptions& options,
                                       double slowdown)
    : data_(data),
      worker_(worker),
      samples_(static_cast<long long>(plan.batch)),
      slowdown_(slowdown),
      replica_(std::make_unique<CpuReplica>(shape)) {
  // Worker w's n-th step is slice w of global step n: K b samples per global step.
  sampler_ = std::make_unique<Sampler>(data.train_size(), samples_ * plan.workers, options.seed);
  x_.resize(static_cast<std::size_t>(samples_) * static_cast<std::size_t>(data.features));
  y_.resize(static_cast<std::size_t>(samples_));
}

std::pair<double, double> AsyncWorkerCompute::step(long long n) {
  const auto start = Clock::now();
  const std::vector<int> idx = sampler_->indices(n, worker_ * samples_, samples_);
  const auto features = static_cast<std::size_t>(data_.features);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(x_.data() + i * features, data_.train_row(idx[i]), features * sizeof(float));
    y_[i] = data_.train_y[static_cast<std::size_t>(idx[i])];
  }
  const double loss = replica_->compute(x_.data(), y_.data(), static_cast<int>(samples_));
  const double measured = seconds_since(start);
  if (slowdown_ > 1)
    std::this_thread::sleep_for(std::chrono::duration<double>((slowdown_ - 1) * measured));
  return {measured, loss};
}

AsyncEvaluator::AsyncEvaluator(const Dataset& data, const MlpShape& shape,
                               const TrainOptions& options)
    : data_(data), replica_(std::make_unique<CpuReplica>(shape)) {
  samples_ = data.test_size();
  if (options.eval_samples > 0) samples_ = std::min(samples_, options.eval_samples);
}

double AsyncEvaluator::accuracy(const float* parameters) {
  replica_->set_parameters_from_host(parameters);
  const long long hits = replica_->correct(data_.test_x.data(), data_.test_y.data(), samples_);
  return samples_ > 0 ? static_cast<double>(hits) / static_cast<double>(samples_) : 0;
}

std::vector<std::pair<std::size_t, std::size_t>> shard_ranges(std::size_t n, int servers) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  const auto s = static_cast<std::size_t>(std::max(servers, 1));
  std::size_t begin = 0;
  for (std::size_t i = 0; i < s; ++i) {
    const std::size_t size = n / s + (i < n % s ? 1 : 0);
    ranges.emplace_back(begin, begin + size);
    begin += size;
  }
  return ranges;
}

namespace {

CycleOp cycle_op(const model::Plan& plan, const model::Op& op, int worker,
                 const KeyOrigins& origins) {
  const auto refuse = [&](const std::string& why) {
    return InputError(origins.of("strategies"),
                      "an asynchronous cycle exec runs: pulls from servers, one compute, pushes "
                      "to servers and their applies",
                      "'" + plan.strategy + "' with '" + op.label + "' (" + why + ")");
  };
  const int servers = static_cast<int>(plan.server_hosts.size());
  const auto server_ok = [&](int s) { return s >= 0 && s < servers; };
  switch (op.kind) {
    case model::OpKind::Compute:
      return CycleOp{CycleOp::Kind::Compute, -1};
    case model::OpKind::Apply:
      if (!server_ok(op.server)) throw refuse("no such server");
      return CycleOp{CycleOp::Kind::Apply, op.server};
    case model::OpKind::Transfer: {
      const model::Endpoint& from = op.source;
      const model::Endpoint& to = op.destination;
      using Role = model::Endpoint::Role;
      if (from.role == Role::Server && to.role == Role::Worker && to.index == worker &&
          server_ok(from.index))
        return CycleOp{CycleOp::Kind::Pull, from.index};
      if (from.role == Role::Worker && from.index == worker && to.role == Role::Server &&
          server_ok(to.index))
        return CycleOp{CycleOp::Kind::Push, to.index};
      throw refuse("a transfer that is not between this worker and a server");
    }
    default:
      throw refuse(std::string("a ") + model::to_string(op.kind) + " op");
  }
}

}  // namespace

std::vector<CycleOp> worker_cycle(const model::Plan& plan, int worker, const KeyOrigins& origins) {
  std::vector<CycleOp> cycle, applies;
  bool after_apply = false;  // an op of this worker that waits on one of its applies
  std::vector<bool> pushed(plan.server_hosts.size(), false);
  const auto refuse = [&](const std::string& why) {
    return InputError(origins.of("strategies"),
                      "an asynchronous cycle exec runs: pulls, one compute, then a push to the "
                      "lead server (0) and to any others, each with its apply, nothing after an "
                      "apply",
                      "'" + plan.strategy + "' whose worker " + std::to_string(worker) + " " + why);
  };
  for (model::OpId v : plan.topological_order()) {
    const model::Op& op = plan.op(v);
    if (op.worker != worker) continue;
    const CycleOp c = cycle_op(plan, op, worker, origins);
    if (c.kind == CycleOp::Kind::Apply) {
      for (auto succ : plan.successors(v))
        after_apply = after_apply || plan.op(succ).worker == worker;
      applies.push_back(c);
      continue;
    }
    if (c.kind == CycleOp::Kind::Pull && pushed[static_cast<std::size_t>(c.server)])
      throw refuse("pulls from server " + std::to_string(c.server) + " after pushing to it");
    if (c.kind == CycleOp::Kind::Push) pushed[static_cast<std::size_t>(c.server)] = true;
    cycle.push_back(c);
  }
  if (after_apply) throw refuse("has an op that waits on an apply within the cycle");
  const auto count = [&](CycleOp::Kind kind, int server) {
    int n = 0;
    for (const auto* list : {&cycle, &applies})
      for (const CycleOp& c : *list)
        n += c.kind == kind && c.server == server ? 1 : 0;
    return n;
  };
  if (count(CycleOp::Kind::Compute, -1) != 1)
    throw refuse("has " + std::to_string(count(CycleOp::Kind::Compute, -1)) + " compute ops");
  for (int s = 0; s < static_cast<int>(plan.server_hosts.size()); ++s) {
    const int pushes = count(CycleOp::Kind::Push, s);
    if (pushes > 1 || pushes != count(CycleOp::Kind::Apply, s))
      throw refuse("pushes " + std::to_string(pushes) + " times to server " + std::to_string(s) +
                   " and waits for " + std::to_string(count(CycleOp::Kind::Apply, s)) + " applies");
    // The lead server counts updates and stops the run; a staleness bound counts every
    // server's applies per worker alike.
    if (pushes == 0 && (s == 0 || plan.staleness_bound > 0))
      throw refuse("does not push to server " + std::to_string(s) +
                   (s == 0 ? " (the lead, which counts updates)"
                           : " (with a staleness bound every worker pushes to every server)"));
  }
  cycle.insert(cycle.end(), applies.begin(), applies.end());
  return cycle;
}

void check_async_timing(const model::Plan& plan, const TrainOptions& options) {
  if (options.timing != Timing::Concurrent)
    throw InputError(options.origins.of("timing"),
                     "concurrent for " + plan.strategy +
                         " (its workers never wait for each other: only the wall clock of "
                         "workers running at once measures it)",
                     to_string(options.timing));
}

void check_async_job(const model::Plan& plan, const Dataset& data, const TrainOptions& options) {
  check_async_timing(plan, options);
  const double step_samples = plan.batch * plan.workers;
  if (plan.batch < 1 || step_samples > static_cast<double>(data.train_size()))
    throw InputError(options.origins.of("batch"),
                     "a per-worker batch with workers x batch at most " +
                         std::to_string(data.train_size()) + " (the training set of " + data.name +
                         ")",
                     std::to_string(static_cast<long long>(plan.batch)));
  if (plan.server_hosts.empty())
    throw InputError(options.origins.of("servers"), "at least one server for " + plan.strategy);
  for (int w = 0; w < plan.workers; ++w)  // on every rank alike, before any message
    worker_cycle(plan, w, options.origins);
}

Measurement async_measurement(const AsyncRecord& record, const model::Plan& plan,
                              const model::Platform& platform, const Dataset& data,
                              const MlpShape& shape, const TrainOptions& options) {
  Measurement m;
  m.strategy = plan.strategy;
  m.workers = plan.workers;
  m.tau = 1;
  m.batch = plan.batch;
  m.split = model::to_string(plan.split);
  m.collective = plan.collective;
  m.communicator = record.communicator;
  describe_run(m, options, data, shape);
  m.timing = Timing::Concurrent;
  m.combine = options.combine;
  m.clock = "wall";
  m.steps_per_round = 1;
  m.curve = record.curve;
  m.reached = record.reached;
  m.final_accuracy = record.curve.empty() ? 0 : record.curve.back().accuracy;
  // To the target: the update and the training clock of the evaluation that reached it.
  const bool have_point = !record.curve.empty();
  m.rounds = have_point ? record.curve.back().round : record.updates;
  m.steps = m.rounds;
  m.total_s = have_point ? record.curve.back().time_s
                         : (record.update_s.empty() ? 0 : record.update_s.back());
  m.round_mean_s = m.rounds > 0 ? m.total_s / static_cast<double>(m.rounds) : 0;
  // Steady state: the mean interval between updates after a warm-up of a fifth of them.
  const auto n = static_cast<long long>(std::min<std::size_t>(
      record.update_s.size(), static_cast<std::size_t>(std::max(m.rounds, 0LL))));
  const long long first = std::min(n - 1, n / 5);
  m.round_median_s = n >= 2 && n - 1 > first ? (record.update_s[static_cast<std::size_t>(n - 1)] -
                                                record.update_s[static_cast<std::size_t>(first)]) /
                                                   static_cast<double>(n - 1 - first)
                                             : m.round_mean_s;
  m.wall_s = record.wall_s;
  m.eval_wall_s = record.eval_wall_s;
  const std::vector<double> slowdowns = worker_slowdowns(plan, platform);
  std::vector<double> steps, exchanges;
  nlohmann::json workers = nlohmann::json::array();
  for (std::size_t w = 0; w < record.workers.size(); ++w) {
    const AsyncWorkerRecord& r = record.workers[w];
    const double slowdown = options.emulate_slowdown && w < slowdowns.size() ? slowdowns[w] : 1.0;
    WorkerReport report;
    report.worker = static_cast<int>(w);
    report.host = plan.worker_hosts[w];
    report.host_name = platform.hosts[static_cast<std::size_t>(report.host)].name;
    report.slowdown = slowdown;
    report.samples = static_cast<long long>(plan.batch);
    report.measured_median_s = median(r.step_s);
    report.compute_median_s = report.measured_median_s * slowdown;
    report.steps = r.updates;
    m.per_worker.push_back(report);
    if (slowdown != 1.0) m.emulated = true;
    for (double s : r.step_s)
      steps.push_back(s * slowdown);
    exchanges.insert(exchanges.end(), r.exchange_s.begin(), r.exchange_s.end());
    workers.push_back(
        {{"worker", w},
         {"updates", r.updates},
         {"updates_per_s", record.update_s.empty() || record.update_s.back() <= 0
                               ? 0.0
                               : static_cast<double>(r.updates) / record.update_s.back()},
         {"staleness_mean",
          r.staleness_count > 0 ? r.staleness_sum / static_cast<double>(r.staleness_count) : 0.0},
         {"first_reply_median_s", median(r.first_reply_s)},
         {"last_reply_median_s", median(r.last_reply_s)}});
  }
  m.compute_s = mean_of(steps);
  m.compute_median_s = median(steps);
  m.sync_s = median(exchanges);
  m.sync_mean_s = mean_of(exchanges);

  double staleness_sum = 0, count = 0;
  long long most = 0;
  for (std::size_t s = 0; s < record.staleness_histogram.size(); ++s) {
    const auto c = static_cast<double>(record.staleness_histogram[s]);
    staleness_sum += c * static_cast<double>(s);
    count += c;
    if (record.staleness_histogram[s] > 0) most = static_cast<long long>(s);
  }
  nlohmann::json& extra = m.extra;
  model::add_asynchronous_extra(plan, m.round_mean_s > 0 ? 1 / m.round_mean_s : 0,
                                count > 0 ? staleness_sum / count : 0, static_cast<double>(most),
                                extra);
  extra["updates_per_s_steady"] = m.round_median_s > 0 ? 1 / m.round_median_s : 0;
  extra["updates_applied"] = record.updates;
  extra["staleness_histogram"] = record.staleness_histogram;
  if (plan.staleness_bound > 0) extra["clock_skew_max"] = record.clock_skew_max;
  extra["async_workers"] = workers;
  if (!record.servers.empty()) extra["servers"] = record.servers;
  extra["evaluation"] =
      "stop-the-world at the lead server, left out of the training clock; what runs on meanwhile "
      "is not charged: workers' steps (at most one each per evaluation) and, with several "
      "servers, the other servers' replies and the workers' next pushes, so that frequent "
      "evaluations make such a run's time per update read short";
  return m;
}

}  // namespace tauplan::exec
