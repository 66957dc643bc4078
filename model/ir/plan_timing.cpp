// plan_timing.cpp: op costs, compilation to flat arrays, and the longest path (plan_timing.hpp).
#include "model/ir/plan_timing.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "model/ir/collective.hpp"

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
      return op.repeat * collective_algorithm(op.algorithm).time_s(call, platform);
    }
    case OpKind::Barrier:
      return 0;
    case OpKind::Transfer: {
      if (op.fixed_time_s >= 0) return op.fixed_time_s;
      const int src = plan.host_of(op.source), dst = plan.host_of(op.destination);
      if (src == dst || op.bytes <= 0) return 0;
      const Route& route = platform.route(src, dst);
      return op.repeat *
             (platform.message_latency_s(route, op.bytes) + op.bytes / route.bandwidth_Bps);
    }
    case OpKind::Apply: {
      const int host = plan.server_hosts.at(static_cast<size_t>(op.server));
      return op.flop > 0 ? op.flop / platform.hosts[static_cast<size_t>(host)].speed_flops : 0.0;
    }
  }
  return 0;
}

bool replies_arrive_in_turn(const Platform& platform, double bytes) {
  return platform.protocol.rendezvous && bytes > platform.protocol.eager_limit_bytes;
}

namespace {

/// A worker's transfers that start together (the same predecessors: its pulls from every server,
/// its pushes to every server) share the links their routes have in common, its own NIC first:
/// each lasts its message latency plus the group's bytes on its busiest link over that link's
/// bandwidth (they end together when their bytes are equal), not its own bytes alone. Where the
/// worker's replies arrive one at a time (replies_arrive_in_turn), they share nothing: in server
/// order each ends after the ones before it, paying its clear-to-send, its bytes' trip and its
/// bytes (its request's trip was taken while the ones before it flowed).
/// With `loaded_servers`, the order loaded servers impose under a rendezvous (each clears a
/// worker's push when its thread frees, at its own time): pushes above the eager limit leave one
/// at a time, in server order, each ending after its own bytes, the earlier pushes' and the
/// sharing members' on every link (those see every push's bytes), and each reply above the eager
/// limit is timed alone (it came back while a later push flowed).
/// Returns every op's duration by OpId (op_duration_s, the siblings' shared ones for transfers).
std::vector<double> async_durations(const Plan& plan, const Platform& platform,
                                    bool loaded_servers) {
  std::vector<double> duration_s(plan.op_count(), 0.0);
  std::map<std::pair<int, std::vector<OpId>>, std::vector<OpId>> groups;
  for (auto v : plan.op_ids()) {
    const Op& op = plan.op(v);
    duration_s[v] = op_duration_s(op, plan, platform);
    if (op.kind != OpKind::Transfer || op.fixed_time_s >= 0 || op.bytes <= 0) continue;
    if (plan.host_of(op.source) == plan.host_of(op.destination)) continue;
    std::vector<OpId> preds = plan.predecessors(v);
    std::sort(preds.begin(), preds.end());
    groups[{op.worker, preds}].push_back(v);
  }
  auto route_of = [&](const Op& op) -> const Route& {
    return platform.route(plan.host_of(op.source), plan.host_of(op.destination));
  };
  // A transfer: its message latency plus its busiest link's bytes over that link's bandwidth.
  auto settle = [&](OpId i, const std::map<int, double>& bytes_on_link) {
    const Op& op = plan.op(i);
    const Route& route = route_of(op);
    double busiest_s = 0;
    for (int link : route.links) {
      const Link& l = platform.links[static_cast<size_t>(link)];
      const auto bytes = bytes_on_link.find(link);
      if (l.sharing == LinkSharing::FatPipe || bytes == bytes_on_link.end()) continue;
      busiest_s = std::max(busiest_s, bytes->second / l.bandwidth_Bps);
    }
    duration_s[i] = std::max(duration_s[i],
                             op.repeat * platform.message_latency_s(route, op.bytes) + busiest_s);
  };
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::vector<std::pair<int, OpId>> replies, pushes;  // in turn: (server, op)
    std::vector<OpId> sharing;
    std::map<int, double> shared_bytes;
    for (OpId i : members) {
      const Op& op = plan.op(i);
      const bool rendezvous = replies_arrive_in_turn(platform, op.bytes);
      if (rendezvous && op.source.role == Endpoint::Role::Server) {
        replies.emplace_back(op.source.index, i);
      } else if (rendezvous && loaded_servers && op.destination.role == Endpoint::Role::Server) {
        pushes.emplace_back(op.destination.index, i);
      } else {
        sharing.push_back(i);
        for (int link : route_of(op).links)
          shared_bytes[link] += op.repeat * op.bytes;
      }
    }
    if (!loaded_servers) {  // in turn; with loaded servers each is alone, as op_duration_s
      std::sort(replies.begin(), replies.end());
      double replies_end_s = 0;
      for (const auto& [server, i] : replies) {
        const Op& op = plan.op(i);
        const double alone_s = op_duration_s(op, plan, platform);
        replies_end_s += replies_end_s > 0 ? alone_s - op.repeat * route_of(op).latency_s : alone_s;
        duration_s[i] = std::max(duration_s[i], replies_end_s);
      }
    }
    // In server order, each push adds its bytes to what is on its links so far (the sharing
    // members' and the earlier pushes'), so the sharing members settle with every push's bytes.
    std::sort(pushes.begin(), pushes.end());
    for (const auto& [server, i] : pushes) {
      const Op& op = plan.op(i);
      for (int link : route_of(op).links)
        shared_bytes[link] += op.repeat * op.bytes;
      settle(i, shared_bytes);
    }
    for (OpId i : sharing)
      settle(i, shared_bytes);
  }
  return duration_s;
}

/// How long a transfer of `duration_s` holds its server's receive queue (a push) or send queue
/// (a reply): all of it under a plain protocol; under a rendezvous (MPI over TCP, as exec's
/// servers run) a push's request and first fragment arrive before the server takes it (the
/// queue holds its clear-to-send and the rest), and a reply holds the queue until its
/// clear-to-send is back (the request with its first fragment, then the clear-to-send), as
/// sim/async_simulation.hpp runs them.
double queue_service_s(const Op& op, double duration_s, const Route& route,
                       const Platform& platform, bool reply) {
  const MessageProtocol& protocol = platform.protocol;
  if (!protocol.rendezvous || op.bytes <= protocol.eager_limit_bytes) return duration_s;
  const double latency_s = route.latency_s * op.repeat;
  const double bytes_s =
      std::max(0.0, duration_s - op.repeat * platform.message_latency_s(route, op.bytes));
  const double first_s = bytes_s * protocol.eager_limit_bytes / op.bytes;
  return reply ? 2 * latency_s + first_s : duration_s - latency_s - first_s;
}

/// The shared resources of an asynchronous plan: each server's processor, then each link its
/// transfers cross (a fat pipe shares nothing), with per-update busy seconds per worker.
std::vector<SharedResource> shared_resources(const Plan& plan, const Platform& platform,
                                             const std::vector<double>& duration_s) {
  std::vector<SharedResource> resources;
  const size_t k = plan.worker_hosts.size();
  const size_t servers = plan.server_hosts.size();
  const bool one_thread = platform.protocol.rendezvous;
  for (size_t s = 0; s < servers; ++s) {
    const std::string name =
        "server " + platform.hosts[static_cast<size_t>(plan.server_hosts[s])].name;
    resources.push_back({name + (one_thread ? " thread (receive, apply, send)" : " processor"),
                         static_cast<int>(s), false, std::vector<double>(k, 0.0)});
  }
  // A server sends (and receives) one transfer at a time: each direction is a queue whose
  // service time is the whole transfer, latency included.
  for (const char* direction : {" link in", " link out"})
    for (size_t s = 0; s < servers; ++s)
      resources.push_back(
          {"server " + platform.hosts[static_cast<size_t>(plan.server_hosts[s])].name + direction,
           -1, direction[6] == 'o', std::vector<double>(k, 0.0)});
  std::map<int, size_t> link_resource;
  for (auto v : plan.op_ids()) {
    const Op& op = plan.op(v);
    if (op.kind != OpKind::Transfer || op.fixed_time_s >= 0 || op.bytes <= 0) continue;
    const int src = plan.host_of(op.source), dst = plan.host_of(op.destination);
    if (src == dst) continue;
    const auto w = static_cast<size_t>(op.worker);
    // Under a rendezvous (MPI over TCP) a server is one thread: its receiving and sending load
    // its processor's queue (index s), as the simulator runs it.
    // A one-thread server takes a push only when it is free, so a loaded server's push flows
    // while the worker's other pushes wait for their own servers (their requests unanswered):
    // the thread holds it for its transfer alone, not shared with its siblings. (SimGrid's thread
    // also waits, before its reply's clear-to-send, while the worker receives another server's
    // reply, where replies arrive in turn; that wait is not charged here.)
    const size_t in = one_thread ? 0 : servers, out = one_thread ? 0 : 2 * servers;
    const double held_s = one_thread ? op_duration_s(op, plan, platform) : duration_s[v];
    if (op.destination.role == Endpoint::Role::Server)
      resources[in + static_cast<size_t>(op.destination.index)].seconds_per_update[w] +=
          queue_service_s(op, held_s, platform.route(src, dst), platform, false);
    else if (op.source.role == Endpoint::Role::Server)
      resources[out + static_cast<size_t>(op.source.index)].seconds_per_update[w] +=
          queue_service_s(op, held_s, platform.route(src, dst), platform, true);
    for (int link : platform.route(src, dst).links) {
      const Link& l = platform.links[static_cast<size_t>(link)];
      if (l.sharing == LinkSharing::FatPipe) continue;
      auto it = link_resource.find(link);
      if (it == link_resource.end()) {
        it = link_resource.emplace(link, resources.size()).first;
        resources.push_back({"link " + l.name, -1, false, std::vector<double>(k, 0.0)});
      }
      resources[it->second].seconds_per_update[static_cast<size_t>(op.worker)] +=
          op.bytes / l.bandwidth_Bps;
    }
  }
  return resources;
}

/// Throughput and staleness of an asynchronous plan from its per-op finish times. Returns whether
/// the first resource cut is a server's thread or processor (the servers bind).
bool evaluate_asynchronous(const CompiledPlan& compiled, const std::vector<double>& finish,
                           RoundTiming& timing) {
  const auto k = static_cast<size_t>(compiled.workers);
  timing.cycle_s.assign(k, 0.0);
  timing.worker_compute.assign(k, 0.0);
  std::vector<SharedResource> resources = compiled.resources;
  for (size_t i = 0; i < finish.size(); ++i) {
    const auto w = static_cast<size_t>(compiled.owner[i]);
    timing.cycle_s[w] = std::max(timing.cycle_s[w], finish[i]);
    if (compiled.kind[i] == OpKind::Compute) timing.worker_compute[w] += compiled.duration_s[i];
    if (compiled.apply_server[i] >= 0)
      resources[static_cast<size_t>(compiled.apply_server[i])].seconds_per_update[w] +=
          compiled.duration_s[i];
  }
  const double slowest = *std::max_element(timing.cycle_s.begin(), timing.cycle_s.end());
  const bool bounded = compiled.staleness_bound > 0;
  std::vector<double>& rate = timing.worker_rate;
  rate.assign(k, 0.0);
  for (size_t w = 0; w < k; ++w)
    rate[w] = 1.0 / (bounded ? slowest : timing.cycle_s[w]);
  // Progressive filling: cut the most overloaded resource, fix its workers, repeat.
  std::vector<bool> fixed(k, false);
  // The time from a cut worker's read to its apply, as its cut leaves it (see below).
  std::vector<double> cut_read_to_apply(k, 0.0);
  timing.bottleneck = bounded && std::any_of(timing.cycle_s.begin(), timing.cycle_s.end(),
                                             [&](double t) { return t < slowest * (1 - 1e-12); })
                          ? "staleness bound"
                          : "workers";
  bool first_cut = true, servers_bind = false;
  const size_t n = resources.size();
  std::vector<double> factor(n);
  for (;;) {
    double cut = 1;
    size_t cut_at = n;
    for (size_t r = 0; r < n; ++r) {
      double busy_fixed = 0, busy_free = 0;
      for (size_t w = 0; w < k; ++w) {
        const double busy = rate[w] * resources[r].seconds_per_update[w];
        (fixed[w] ? busy_fixed : busy_free) += busy;
      }
      factor[r] = busy_free > 0 ? std::max(0.0, 1 - busy_fixed) / busy_free : HUGE_VAL;
      if (factor[r] < cut * (1 - 1e-12)) cut = factor[r], cut_at = r;
    }
    if (cut_at == n) break;
    if (first_cut) {
      timing.bottleneck = resources[cut_at].name;
      servers_bind = resources[cut_at].server >= 0;
    }
    first_cut = false;
    for (size_t w = 0; w < k; ++w) {
      if (fixed[w] || !(resources[cut_at].seconds_per_update[w] > 0 || bounded)) continue;
      rate[w] *= cut;
      fixed[w] = true;
      // Where the worker waits. At a queue after its read only (a server's processor or receive
      // queue): all of its wait, D = 1/x. At its server's send queue only: before the read,
      // D = T. At both, cut together (pushes and pulls of one size through one server link):
      // the receive queue serves a push every t seconds, so after its read a worker waits for
      // the next such slot, D = ceil(T / t) t, and the rest of its wait is before the read
      // (the deterministic schedule the simulator reaches; with noise D lies in [T, T + t)).
      double after_service = 0;
      bool before = false, after = false;
      for (size_t r = 0; r < n; ++r) {
        const double busy = resources[r].seconds_per_update[w];
        if (!(factor[r] <= cut * (1 + 1e-9)) || !(busy > 0)) continue;
        if (resources[r].before_read) {
          before = true;
        } else {
          after = true;
          after_service = std::max(after_service, busy);
        }
      }
      const double cycle = timing.cycle_s[w], period = 1 / rate[w];
      if (before && after)
        cut_read_to_apply[w] =
            std::min(period, std::ceil(cycle / after_service - 1e-9) * after_service);
      else  // a worker held back by the staleness bound alone waits before its read
        cut_read_to_apply[w] = after ? period : cycle;
    }
  }
  double total = 0, compute = 0, comm = 0;
  std::vector<double> read_to_apply(k);
  for (size_t w = 0; w < k; ++w) {
    total += rate[w];
    compute += rate[w] * timing.worker_compute[w];
    comm += rate[w] * (timing.cycle_s[w] - timing.worker_compute[w]);
    // Uncut: D = T (a wait at the staleness bound comes before the read).
    read_to_apply[w] = fixed[w] ? cut_read_to_apply[w] : timing.cycle_s[w];
  }
  double outstanding = 0, most = 0;
  for (size_t w = 0; w < k; ++w) {
    outstanding += rate[w] * read_to_apply[w];
    most = std::max(most, total * read_to_apply[w] - 1);
  }
  timing.updates_per_s = total;
  timing.round_s = total > 0 ? 1 / total : 0;
  timing.compute_s = total > 0 ? compute / total : 0;
  timing.comm_s = total > 0 ? comm / total : 0;
  timing.mean_staleness = std::max(0.0, outstanding - 1);
  timing.max_staleness = std::max(0.0, most);
  return servers_bind;
}

/// Every op's finish time along the longest path under `duration_s`, and the predecessor that
/// decided it (-1 for none), to walk the critical path back. Returns the op that ends last.
size_t longest_paths(const CompiledPlan& compiled, const std::vector<double>& duration_s,
                     std::vector<double>& finish, std::vector<int>& critical_pred) {
  const size_t n = duration_s.size();
  finish.assign(n, 0.0);
  critical_pred.assign(n, -1);
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
    finish[i] = start + duration_s[i];
    if (finish[i] > finish[last]) last = i;
  }
  return last;
}

}  // namespace

CompiledPlan compile(const Plan& plan, const Platform& platform) {
  CompiledPlan compiled;
  compiled.steps_per_round = plan.steps_per_round;
  const std::vector<OpId> order = plan.topological_order();
  std::vector<int> position(plan.op_count(), -1);
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = static_cast<int>(i);
  compiled.duration_s.reserve(order.size());
  compiled.kind.reserve(order.size());
  compiled.step_fraction.reserve(order.size());
  compiled.pred_index.reserve(plan.dependency_count());
  compiled.pred_offset.reserve(order.size() + 1);
  compiled.pred_offset.push_back(0);
  for (OpId v : order) {
    const Op& op = plan.op(v);
    compiled.duration_s.push_back(op_duration_s(op, plan, platform));
    compiled.kind.push_back(op.kind);
    compiled.step_fraction.push_back(op.kind == OpKind::Compute ? op.step_fraction * op.steps : 0);
    for (auto pred : plan.predecessors(v))
      compiled.pred_index.push_back(position[pred]);
    compiled.pred_offset.push_back(static_cast<int>(compiled.pred_index.size()));
  }
  if (plan.asynchronous) {
    compiled.asynchronous = true;
    compiled.staleness_bound = plan.staleness_bound;
    compiled.workers = static_cast<int>(plan.worker_hosts.size());
    for (OpId v : order) {
      const Op& op = plan.op(v);
      if (op.worker < 0 || op.worker >= compiled.workers)
        throw std::logic_error("asynchronous plan '" + plan.strategy + "': op '" + op.label +
                               "' belongs to no worker");
      compiled.owner.push_back(op.worker);
      compiled.apply_server.push_back(op.kind == OpKind::Apply ? op.server : -1);
    }
    const std::vector<double> duration_s = async_durations(plan, platform, false);
    for (size_t i = 0; i < order.size(); ++i)
      compiled.duration_s[i] = duration_s[order[i]];
    if (platform.protocol.rendezvous) {  // only a rendezvous has another order
      const std::vector<double> loaded_s = async_durations(plan, platform, true);
      for (size_t i = 0; i < order.size(); ++i)
        if (loaded_s[order[i]] != duration_s[order[i]])
          compiled.loaded_servers_transfers.emplace_back(static_cast<int>(i), loaded_s[order[i]]);
    }
    compiled.resources = shared_resources(plan, platform, duration_s);
  }
  return compiled;
}

RoundTiming evaluate(const CompiledPlan& compiled) {
  const size_t n = compiled.duration_s.size();
  RoundTiming timing;
  if (n == 0) return timing;
  std::vector<double> finish;
  std::vector<int> critical_pred;
  if (compiled.asynchronous) {
    // Where the workers, with their pushes in the order loaded servers impose, would outrun the
    // servers, the servers bind and impose it; otherwise they wait for pushes, which leave at
    // once and share.
    if (!compiled.loaded_servers_transfers.empty()) {
      std::vector<double> loaded_s = compiled.duration_s;
      for (const auto& [i, duration] : compiled.loaded_servers_transfers)
        loaded_s[static_cast<size_t>(i)] = duration;
      longest_paths(compiled, loaded_s, finish, critical_pred);
      RoundTiming loaded;
      if (evaluate_asynchronous(compiled, finish, loaded)) return loaded;
    }
    longest_paths(compiled, compiled.duration_s, finish, critical_pred);
    evaluate_asynchronous(compiled, finish, timing);
    return timing;
  }
  const size_t last = longest_paths(compiled, compiled.duration_s, finish, critical_pred);
  timing.round_s = finish[last];
  double compute = 0, comm = 0;
  for (int i = static_cast<int>(last); i >= 0; i = critical_pred[static_cast<size_t>(i)]) {
    const OpKind kind = compiled.kind[static_cast<size_t>(i)];
    if (kind == OpKind::Collective || kind == OpKind::Transfer || kind == OpKind::Apply)
      comm += compiled.duration_s[static_cast<size_t>(i)];
    else if (kind != OpKind::Barrier)
      compute += compiled.duration_s[static_cast<size_t>(i)];
  }
  timing.compute_s = compute / compiled.steps_per_round;
  timing.comm_s = comm;
  return timing;
}

}  // namespace tauplan::model
