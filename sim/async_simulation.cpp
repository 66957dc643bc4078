// async_simulation.cpp: workers that loop without a barrier, servers with FIFO queues (see
// async_simulation.hpp).
//
// Actors: one per worker (its cycles; it runs its Compute ops itself), one per Transfer and per
// Apply of a cycle (each waits its turn at the server's queue for that resource, then moves the
// bytes or executes the flop), and one daemon per failure source. SimGrid runs one actor at a
// time, so the shared bookkeeping below needs no locks; a FIFO queue hands its resource to the
// next waiter in arrival order.
#include "sim/async_simulation.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/ir/plan_timing.hpp"
#include "model/ir/strategy.hpp"
#include "sim/fault_source.hpp"
#include "sim/platform_loader.hpp"
#include "sim/random.hpp"
#include "sim/rendezvous.hpp"
#include "sim/sg_engine.hpp"
#include "sim/simulation_base.hpp"

namespace sg4 = simgrid::s4u;

namespace tauplan::sim {
namespace {

/// A resource served one request at a time, in arrival order; the holder hands it to the next.
class FifoQueue {
 public:
  void acquire() {
    if (!busy_) {
      busy_ = true;
      return;
    }
    auto turn = sg4::Semaphore::create(0);
    waiting_.push_back(turn);
    turn->acquire();  // released by the holder: the resource is then ours
  }
  void release() {
    if (waiting_.empty()) {
      busy_ = false;
      return;
    }
    auto next = waiting_.front();
    waiting_.pop_front();
    next->release();
  }
  double busy_s = 0;  ///< time the resource served requests

 private:
  bool busy_ = false;
  std::deque<sg4::SemaphorePtr> waiting_;
};

/// One op of a worker's cycle.
struct CycleOp {
  model::OpKind kind = model::OpKind::Compute;
  std::string label;
  int src_host = -1;  ///< compute: the worker's host; transfer: the source; apply: the server
  int dst_host = -1;  ///< transfer only
  int server = -1;    ///< apply: its server; transfer: the server endpoint, or -1
  bool pull = false;  ///< transfer from a server (reads its version)
  double overhead_s = 0;
  double flop = 0;
  double bytes = 0;
  double fixed_time_s = -1;
  int steps = 1;
  std::vector<int> succs;
  int preds = 0;
};

struct ServerState {
  FifoQueue in;   ///< pushes arriving over its link
  FifoQueue out;  ///< parameters leaving over its link
  FifoQueue cpu;  ///< applies
  /// One thread does it all (exec's server ranks under MPI: MPI_Recv, the apply, a blocking
  /// MPI_Send, in turn): receiving and sending wait for `cpu` too.
  bool one_thread = false;
  /// One thread: the worker whose push it received and holds the thread for (its apply, then
  /// its reply, come next in the same turn, as exec's server loop does), or -1.
  int turn_of = -1;
  long long version = 0;
  double down_until = 0;
  FifoQueue& receiving() { return one_thread ? cpu : in; }
  FifoQueue& sending() { return one_thread ? cpu : out; }
};

struct WorkerState {
  std::vector<CycleOp> cycle;  ///< topological order
  int host = -1;
  long long applied = 0;  ///< cycles whose update every server applied
  long long epoch = 0;    ///< bumped by a failure of its host
  int dropped_in_a_row = 0;
  double down_until = 0;
  std::vector<long long> read_version;  ///< per server, this cycle
  /// One-thread servers (ServerState::one_thread): the reply each server sent right after
  /// applying this worker's last update, released when its bytes have arrived (null: none), and
  /// the version it carries; the next cycle's pull from that server waits for it instead of
  /// queueing.
  std::vector<sg4::SemaphorePtr> reply;
  std::vector<long long> reply_version;
  /// The worker receives one reply at a time (model::replies_arrive_in_turn): a reply's
  /// clear-to-send waits until the reply before it has arrived; held from that clear-to-send to
  /// the reply's last byte.
  FifoQueue receiving;
  // The cycle in flight.
  std::vector<int> pending;
  std::deque<int> finished;  ///< ops done by helper actors, not yet processed
  sg4::SemaphorePtr done;
  sg4::SemaphorePtr gate;  ///< released when the staleness bound lets it go on
  bool waiting_at_gate = false;
  // Measurements.
  Rng rng{1};
  double slow_factor = 1;
  double slow_fraction = 0;
  long long steps = 0;
  long long slow_steps = 0;
  double compute_s = 0;
  double cycle_s = 0;
  double staleness_sum = 0;
  long long staleness_count = 0;
};

struct FaultRecord {
  std::string host;
  double time_s = 0;
  long long updates = 0;
  double lost_work_s = 0;
  double stall_s = 0;
  std::string outcome;
};

/// Updates recorded individually in the trace (the rest are counted only).
constexpr long long kTracedUpdates = 2000;
/// A worker whose cycle is lost to failures this many times in a row makes the job give up.
constexpr int kMaxDropsInARow = 1000;

class AsyncSimulation : detail::SimulationBase {
 public:
  AsyncSimulation(const model::Plan& plan, const model::Platform& platform,
                  const SimOptions& options, model::ChromeTrace* trace, int trace_pid)
      : SimulationBase(plan, platform, options, trace, trace_pid) {}

  model::ResultRow run();

 private:
  void build_cycles();
  void setup_faults_and_stragglers();
  void worker(int w);
  bool gate_open(int w) const;
  void wake_gated();
  void start_op(int w, int index, long long epoch);
  void run_compute(int w, const CycleOp& op);
  void run_transfer(int w, int index, long long epoch);
  void run_apply(int w, int index, long long epoch);
  void reply_after_apply(int server_index, WorkerState& state, long long epoch);
  void finish_helper(int w, int index);
  void fault_injector(FailureSource source);
  void fail(int host);
  int track_of(int host) const;
  model::ResultRow make_row() const;

  std::vector<WorkerState> workers_;
  std::vector<ServerState> servers_;
  long long target_ = 1;   ///< updates to simulate
  long long started_ = 0;  ///< cycles started and not dropped
  bool finished_ = false;
  std::vector<FailureSource> sources_;

  // Measurements.
  std::vector<double> update_end_s_;       ///< completion time of each update, in order
  std::vector<long long> staleness_hist_;  ///< applies (update x server) by staleness
  long long staleness_max_ = 0;
  long long clock_skew_max_ = 0;
  std::vector<FaultRecord> faults_;
  long long dropped_ = 0;
  long long flows_started_ = 0;
  double gave_up_s_ = -1;  ///< when the job gave up, -1 if it did not
};

void AsyncSimulation::build_cycles() {
  const auto k = static_cast<int>(plan_.worker_hosts.size());
  workers_.assign(static_cast<size_t>(k), WorkerState{});
  servers_ = std::vector<ServerState>(plan_.server_hosts.size());
  // Under a rendezvous protocol (MPI over TCP) a server is an MPI rank: one thread.
  for (ServerState& server : servers_)
    server.one_thread = platform_.protocol.rendezvous;
  const std::vector<model::OpId> order = plan_.topological_order();
  std::map<model::OpId, std::pair<int, int>> where;  // op -> (worker, index in its cycle)
  for (model::OpId v : order) {
    const model::Op& op = plan_.op(v);
    if (op.worker < 0 || op.worker >= k)
      throw std::logic_error("asynchronous plan op '" + op.label + "' belongs to no worker");
    WorkerState& w = workers_[static_cast<size_t>(op.worker)];
    CycleOp c;
    c.kind = op.kind;
    c.label = op.label;
    c.overhead_s = op.overhead_s;
    c.flop = op.flop;
    c.bytes = op.bytes;
    c.fixed_time_s = op.fixed_time_s;
    c.steps = std::max(op.steps, 0);
    switch (op.kind) {
      case model::OpKind::Compute:
        c.src_host = plan_.worker_hosts[static_cast<size_t>(op.worker)];
        break;
      case model::OpKind::Transfer:
        c.src_host = plan_.host_of(op.source);
        c.dst_host = plan_.host_of(op.destination);
        if (op.source.role == model::Endpoint::Role::Server) {
          c.server = op.source.index;
          c.pull = true;
        } else if (op.destination.role == model::Endpoint::Role::Server) {
          c.server = op.destination.index;
        }
        break;
      case model::OpKind::Apply:
        c.server = op.server;
        c.src_host = plan_.server_hosts.at(static_cast<size_t>(op.server));
        break;
      default:
        throw InputError(
            options_.origin, "strategies",
            "compute, transfer and apply ops in the asynchronous plan of '" + plan_.strategy + "'",
            std::string("a ") + model::to_string(op.kind) + " op ('" + op.label + "')");
    }
    where[v] = {op.worker, static_cast<int>(w.cycle.size())};
    w.cycle.push_back(c);
  }
  for (model::OpId v : order)
    for (auto succ : plan_.successors(v)) {
      const auto [w, from] = where.at(v);
      const auto [w2, to] = where.at(succ);
      if (w != w2)
        throw std::logic_error("asynchronous plan: a dependency between two workers' cycles");
      auto& cycle = workers_[static_cast<size_t>(w)].cycle;
      cycle[static_cast<size_t>(from)].succs.push_back(to);
      ++cycle[static_cast<size_t>(to)].preds;
    }
  for (int w = 0; w < k; ++w) {
    WorkerState& state = workers_[static_cast<size_t>(w)];
    state.host = plan_.worker_hosts[static_cast<size_t>(w)];
    state.read_version.assign(servers_.size(), 0);
    state.reply.assign(servers_.size(), nullptr);
    state.reply_version.assign(servers_.size(), 0);
    state.rng = Rng(stream_seed(options_.seed, 1, static_cast<unsigned long long>(w)));
  }
}

void AsyncSimulation::setup_faults_and_stragglers() {
  for (const Straggler& s : options_.stragglers) {
    const int host = platform_.find_host(s.host);
    if (host < 0)
      throw InputError(options_.origin_of("stragglers"), "a host of " + platform_.source_file,
                       "'" + s.host + "'");
    for (WorkerState& w : workers_)
      if (w.host == host) {
        w.slow_factor = s.factor;
        w.slow_fraction = s.fraction;
      }
  }
  sources_ = failure_sources(options_, plan_, platform_);
}

bool AsyncSimulation::gate_open(int w) const {
  if (plan_.staleness_bound <= 0) return true;
  // Step n = applied[w] may start when every worker has pushed step n - s - 1.
  long long slowest = std::numeric_limits<long long>::max();
  for (const WorkerState& other : workers_)
    slowest = std::min(slowest, other.applied);
  return workers_[static_cast<size_t>(w)].applied - slowest <= plan_.staleness_bound;
}

void AsyncSimulation::wake_gated() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    WorkerState& state = workers_[w];
    if (state.waiting_at_gate && (started_ >= target_ || gate_open(static_cast<int>(w)))) {
      state.waiting_at_gate = false;
      state.gate->release();
    }
  }
}

void AsyncSimulation::worker(int w) {
  WorkerState& state = workers_[static_cast<size_t>(w)];
  for (;;) {
    while (started_ < target_ && !gate_open(w)) {
      state.waiting_at_gate = true;
      state.gate->acquire();
    }
    if (started_ >= target_) return;
    if (now() < state.down_until) {
      sg4::this_actor::sleep_until(t0_ + state.down_until);
      continue;
    }
    ++started_;
    if (plan_.staleness_bound > 0) {
      long long slowest = std::numeric_limits<long long>::max();
      for (const WorkerState& other : workers_)
        slowest = std::min(slowest, other.applied);
      clock_skew_max_ = std::max(clock_skew_max_, state.applied - slowest);
    }
    const long long epoch = state.epoch;
    const double cycle_start = now();
    for (size_t s = 0; s < servers_.size(); ++s)
      state.read_version[s] = servers_[s].version;
    state.pending.assign(state.cycle.size(), 0);
    for (size_t i = 0; i < state.cycle.size(); ++i)
      state.pending[i] = state.cycle[i].preds;
    size_t done = 0;
    std::deque<int> computes;
    auto ready = [&](int index) {
      if (state.cycle[static_cast<size_t>(index)].kind == model::OpKind::Compute)
        computes.push_back(index);
      else
        start_op(w, index, epoch);
    };
    auto complete = [&](int index) {
      ++done;
      for (int succ : state.cycle[static_cast<size_t>(index)].succs)
        if (--state.pending[static_cast<size_t>(succ)] == 0) ready(succ);
    };
    for (size_t i = 0; i < state.cycle.size(); ++i)
      if (state.pending[i] == 0) ready(static_cast<int>(i));
    double compute_s = 0;
    while (done < state.cycle.size()) {
      if (!computes.empty()) {
        const int index = computes.front();
        computes.pop_front();
        const double start = now();
        run_compute(w, state.cycle[static_cast<size_t>(index)]);
        compute_s += now() - start;
        complete(index);
        continue;
      }
      state.done->acquire();
      const int index = state.finished.front();
      state.finished.pop_front();
      complete(index);
    }
    if (state.epoch != epoch) {
      // The host failed during the cycle: its update is lost (the applies dropped it).
      --started_;
      ++dropped_;
      if (++state.dropped_in_a_row >= kMaxDropsInARow) {
        // Failures come faster than a cycle completes: give up, stop every worker.
        gave_up_s_ = now();
        target_ = std::min(target_, started_);
      }
      wake_gated();
      continue;
    }
    state.dropped_in_a_row = 0;
    ++state.applied;
    state.compute_s += compute_s;
    state.cycle_s += now() - cycle_start;
    update_end_s_.push_back(now());
    wake_gated();
  }
}

void AsyncSimulation::start_op(int w, int index, long long epoch) {
  const CycleOp& op = workers_[static_cast<size_t>(w)].cycle[static_cast<size_t>(index)];
  sg4::Actor::create(op.label, hosts_[static_cast<size_t>(op.src_host)], [this, w, index, epoch] {
    const CycleOp& c = workers_[static_cast<size_t>(w)].cycle[static_cast<size_t>(index)];
    if (c.kind == model::OpKind::Transfer)
      run_transfer(w, index, epoch);
    else
      run_apply(w, index, epoch);
    finish_helper(w, index);
  });
}

void AsyncSimulation::finish_helper(int w, int index) {
  WorkerState& state = workers_[static_cast<size_t>(w)];
  state.finished.push_back(index);
  state.done->release();
}

void AsyncSimulation::run_compute(int w, const CycleOp& op) {
  WorkerState& state = workers_[static_cast<size_t>(w)];
  const double start = now();
  for (int s = 0; s < op.steps; ++s) {
    double factor = 1;
    ++state.steps;
    if (state.slow_factor != 1.0 && state.slow_fraction > 0 &&
        (state.slow_fraction >= 1 || state.rng.uniform() < state.slow_fraction)) {
      factor = state.slow_factor;
      ++state.slow_steps;
    }
    if (op.overhead_s > 0) sg4::this_actor::sleep_for(op.overhead_s * factor);
    if (op.flop > 0) sg4::this_actor::execute(op.flop * factor);
  }
  if (trace_ != nullptr && static_cast<long long>(update_end_s_.size()) < kTracedUpdates)
    trace_->span(pid_, w, op.label, "compute", start, now() - start);
}

void AsyncSimulation::run_transfer(int w, int index, long long epoch) {
  WorkerState& state = workers_[static_cast<size_t>(w)];
  const CycleOp& op = state.cycle[static_cast<size_t>(index)];
  FifoQueue* queue = nullptr;
  ServerState* server = op.server >= 0 ? &servers_[static_cast<size_t>(op.server)] : nullptr;
  // A what-if fixed time (the job's S) has no link to queue for, as in the analytic engine.
  if (server != nullptr && op.fixed_time_s < 0)
    queue = op.pull ? &server->sending() : &server->receiving();
  sg4::Host* src = hosts_[static_cast<size_t>(op.src_host)];
  sg4::Host* dst = hosts_[static_cast<size_t>(op.dst_host)];
  const bool moves = op.fixed_time_s < 0 && op.src_host != op.dst_host && op.bytes > 0;
  // Under a rendezvous (MPI over TCP, as exec's servers run), a message above the eager limit is
  // its request carrying the first fragment, a clear-to-send, then the rest: a push's request
  // goes before the server takes it from its receive queue; a reply holds the send queue until
  // its clear-to-send is back (the rest drains from the socket buffer).
  const MessageParts parts = message_parts(op.bytes, platform_.protocol);
  const bool staged = queue != nullptr && moves && parts.handshake;
  auto send = [&](sg4::Host* from, sg4::Host* to, double bytes) {
    ++flows_started_;
    sg4::Comm::sendto(from, to, wire_bytes(bytes));
  };
  if (op.pull && server != nullptr && state.reply[static_cast<size_t>(op.server)] != nullptr) {
    // The server replied when it applied this worker's last update: wait for those bytes.
    const double start = now();
    sg4::SemaphorePtr arrived = state.reply[static_cast<size_t>(op.server)];
    state.reply[static_cast<size_t>(op.server)] = nullptr;
    arrived->acquire();
    if (state.epoch == epoch)
      state.read_version[static_cast<size_t>(op.server)] =
          state.reply_version[static_cast<size_t>(op.server)];
    if (trace_ != nullptr && static_cast<long long>(update_end_s_.size()) < kTracedUpdates)
      trace_->span(pid_, w, op.label, "comm", start, now() - start);
    return;
  }
  if (staged && !op.pull) send(src, dst, parts.request_bytes);
  if (queue != nullptr) queue->acquire();
  if (server != nullptr && now() < server->down_until)
    sg4::this_actor::sleep_until(t0_ + server->down_until);
  const double start = now();
  if (op.pull && state.epoch == epoch)
    state.read_version[static_cast<size_t>(op.server)] = server->version;
  auto release = [&] {
    if (queue == nullptr) return;
    queue->busy_s += now() - start;
    // A one-thread server keeps its thread after a push: the apply goes on in the same turn.
    if (server->one_thread && !op.pull)
      server->turn_of = w;
    else
      queue->release();
    queue = nullptr;
  };
  if (op.fixed_time_s >= 0) {
    if (op.fixed_time_s > 0) sg4::this_actor::sleep_for(op.fixed_time_s);
  } else if (staged && op.pull) {
    send(src, dst, parts.request_bytes);
    send(dst, src, kControlMessageBytes);
    release();
    send(src, dst, parts.rest_bytes);
  } else if (staged) {
    send(dst, src, kControlMessageBytes);
    send(src, dst, parts.rest_bytes);
  } else if (moves) {
    ++flows_started_;
    send_message(src, dst, op.bytes, platform_.protocol);
  }
  release();
  if (trace_ != nullptr && static_cast<long long>(update_end_s_.size()) < kTracedUpdates)
    trace_->span(pid_, w, op.label, "comm", start, now() - start);
}

void AsyncSimulation::run_apply(int w, int index, long long epoch) {
  WorkerState& state = workers_[static_cast<size_t>(w)];
  const CycleOp& op = state.cycle[static_cast<size_t>(index)];
  ServerState& server = servers_[static_cast<size_t>(op.server)];
  if (server.turn_of == w)
    server.turn_of = -1;  // the thread that received the push goes on: already ours
  else
    server.cpu.acquire();
  if (now() < server.down_until) sg4::this_actor::sleep_until(t0_ + server.down_until);
  if (state.epoch != epoch) {  // the worker failed: its update is dropped
    server.cpu.release();
    return;
  }
  const double start = now();
  if (op.flop > 0) sg4::this_actor::execute(op.flop);
  const long long staleness = server.version - state.read_version[static_cast<size_t>(op.server)];
  ++server.version;
  if (static_cast<size_t>(staleness) >= staleness_hist_.size())
    staleness_hist_.resize(static_cast<size_t>(staleness) + 1, 0);
  ++staleness_hist_[static_cast<size_t>(staleness)];
  staleness_max_ = std::max(staleness_max_, staleness);
  state.staleness_sum += static_cast<double>(staleness);
  ++state.staleness_count;
  if (server.one_thread) reply_after_apply(op.server, state, epoch);
  server.cpu.busy_s += now() - start;
  server.cpu.release();
  if (trace_ != nullptr && static_cast<long long>(update_end_s_.size()) < kTracedUpdates)
    trace_->span(pid_, track_of(op.src_host), op.label, "apply", start, now() - start,
                 {{"staleness", std::to_string(staleness)}});
}

/// A one-thread server replies to the worker whose update it applied before it takes the next
/// message (exec's server ranks): the reply's request with its first fragment and the
/// clear-to-send hold the thread (the caller holds it), the rest drains while it serves others.
/// Where replies arrive in turn (model::replies_arrive_in_turn) the clear-to-send leaves only
/// once the worker has received the reply before it, and the thread waits for it.
void AsyncSimulation::reply_after_apply(int server_index, WorkerState& state, long long epoch) {
  const auto s = static_cast<size_t>(server_index);
  const auto pull = std::find_if(state.cycle.begin(), state.cycle.end(), [&](const CycleOp& c) {
    return c.kind == model::OpKind::Transfer && c.pull && c.server == server_index &&
           c.fixed_time_s < 0;
  });
  if (pull == state.cycle.end() || pull->src_host == pull->dst_host || !(pull->bytes > 0)) return;
  sg4::Host* from = hosts_[static_cast<size_t>(pull->src_host)];
  sg4::Host* to = hosts_[static_cast<size_t>(pull->dst_host)];
  const MessageParts parts = message_parts(pull->bytes, platform_.protocol);
  const bool in_turn = model::replies_arrive_in_turn(platform_, pull->bytes);
  if (parts.handshake) {
    flows_started_ += 2;
    sg4::Comm::sendto(from, to, wire_bytes(parts.request_bytes));
    if (in_turn) state.receiving.acquire();
    sg4::Comm::sendto(to, from, wire_bytes(kControlMessageBytes));
  }
  ++flows_started_;
  const double rest = parts.handshake ? parts.rest_bytes : parts.request_bytes;
  sg4::SemaphorePtr arrived = sg4::Semaphore::create(0);
  if (state.epoch == epoch) {  // a worker that failed meanwhile lost it (fail() cleared the rest)
    state.reply[s] = arrived;
    state.reply_version[s] = servers_[s].version;
  }
  FifoQueue* receiving = in_turn && parts.handshake ? &state.receiving : nullptr;
  sg4::Actor::create(pull->label + " bytes", from, [from, to, rest, arrived, receiving] {
    sg4::Comm::sendto(from, to, wire_bytes(rest));
    if (receiving != nullptr) receiving->release();
    arrived->release();
  });
}

void AsyncSimulation::fault_injector(FailureSource source) {
  run_fault_injector(
      source, t0_, [this] { return finished_; }, [this](int host) { fail(host); });
}

void AsyncSimulation::fail(int host) {
  FaultRecord fault;
  fault.host = host_name(host);
  fault.time_s = now();
  fault.updates = static_cast<long long>(update_end_s_.size());
  bool used = false;
  for (WorkerState& w : workers_) {
    if (w.host != host) continue;
    used = true;
    const double until = std::max(w.down_until, fault.time_s + options_.restart_s);
    fault.stall_s = until - std::max(w.down_until, fault.time_s);
    fault.outcome = "the worker's update in flight is dropped; it rejoins after the restart";
    w.down_until = until;
    ++w.epoch;
    std::fill(w.reply.begin(), w.reply.end(), nullptr);  // its replies in flight are lost
  }
  for (size_t s = 0; s < plan_.server_hosts.size(); ++s) {
    if (plan_.server_hosts[s] != host) continue;
    used = true;
    ServerState& server = servers_[s];
    const double until = std::max(server.down_until, fault.time_s + options_.restart_s);
    fault.stall_s = until - std::max(server.down_until, fault.time_s);
    fault.outcome = "the server stops serving until the restart (its queues wait)";
    server.down_until = until;
  }
  if (!used) fault.outcome = "ignored: host not used by the job";
  faults_.push_back(fault);
  if (trace_ != nullptr && used) {
    trace_->instant(pid_, track_of(host), "host failure " + fault.host, "fault", fault.time_s);
    trace_->span(pid_, track_of(host), "down (restart)", "fault", fault.time_s, fault.stall_s);
  }
}

int AsyncSimulation::track_of(int host) const {
  for (size_t w = 0; w < plan_.worker_hosts.size(); ++w)
    if (plan_.worker_hosts[w] == host) return static_cast<int>(w);
  for (size_t s = 0; s < plan_.server_hosts.size(); ++s)
    if (plan_.server_hosts[s] == host) return static_cast<int>(plan_.worker_hosts.size() + s);
  return 0;
}

model::ResultRow AsyncSimulation::make_row() const {
  model::ResultRow row = model::result_header(plan_, "simgrid");
  const auto simulated = static_cast<long long>(update_end_s_.size());
  const auto k = static_cast<long long>(workers_.size());
  // Steady state: skip a fifth of the updates (at least K), then whole multiples of K updates.
  double interval = 0;
  if (simulated >= 2) {
    const long long warm = std::min(simulated - 2, std::max(k, simulated / 5));
    long long span = simulated - 1 - warm;
    if (span >= k) span -= span % k;
    const long long first = simulated - 1 - span;
    interval = (update_end_s_.back() - update_end_s_[static_cast<size_t>(first)]) /
               static_cast<double>(span);
  } else if (simulated == 1) {
    interval = update_end_s_.front();
  }
  const double simulated_s = simulated > 0 ? update_end_s_.back() : 0;
  row.round_s = interval;
  double compute = 0, cycle = 0, staleness_sum = 0;
  long long staleness_count = 0;
  for (const WorkerState& w : workers_) {
    compute += w.compute_s;
    cycle += w.cycle_s;
    staleness_sum += w.staleness_sum;
    staleness_count += w.staleness_count;
  }
  row.compute_s = simulated > 0 ? compute / static_cast<double>(simulated) : 0;
  row.comm_s = simulated > 0 ? (cycle - compute) / static_cast<double>(simulated) : 0;
  if (gave_up_s_ >= 0) {
    row.total_s = gave_up_s_;  // no extrapolation: the job never gets further
    row.extra["gave_up"] = "a worker lost " + std::to_string(kMaxDropsInARow) +
                           " updates in a row: failures come faster than a cycle completes";
  } else if (plan_.rounds <= 0)
    row.total_s = 0;
  else if (simulated >= plan_.rounds)
    row.total_s = simulated_s;
  else
    row.total_s = simulated_s + static_cast<double>(plan_.rounds - simulated) * interval;

  nlohmann::json& extra = row.extra;
  extra["network_model"] = network_model();
  extra["sim_mode"] = to_string(options_.granularity);
  extra["simulated_rounds"] = simulated;
  extra["extrapolated"] = gave_up_s_ < 0 && plan_.rounds > simulated;
  if (gave_up_s_ < 0 && plan_.rounds > simulated)
    extra["extrapolation"] =
        "total_s = simulated updates + remaining updates x the steady-state interval";
  extra["throughput_window"] =
      "after a warm-up of max(K, a fifth) of the updates, whole "
      "multiples of K updates";
  extra["seed"] = options_.seed;
  extra["flows_started"] = flows_started_;
  extra["convergence_steps"] = plan_.convergence_steps;
  extra["steps_per_round"] = plan_.steps_per_round;
  const double mean_staleness =
      staleness_count > 0 ? staleness_sum / static_cast<double>(staleness_count) : 0;
  model::add_asynchronous_extra(plan_, interval > 0 ? 1 / interval : 0, mean_staleness,
                                static_cast<double>(staleness_max_), extra);
  extra["staleness_histogram"] = staleness_hist_;
  if (plan_.staleness_bound > 0) extra["clock_skew_max"] = clock_skew_max_;
  nlohmann::json servers = nlohmann::json::array();
  for (size_t s = 0; s < servers_.size(); ++s) {
    const double span = simulated_s > 0 ? simulated_s : 1;
    servers.push_back({{"host", host_name(plan_.server_hosts[s])},
                       {"one_thread", servers_[s].one_thread},
                       {"apply_busy", servers_[s].cpu.busy_s / span},
                       {"receive_busy", servers_[s].in.busy_s / span},
                       {"send_busy", servers_[s].out.busy_s / span},
                       {"updates", servers_[s].version}});
  }
  extra["servers_detail"] = servers;
  nlohmann::json workers = nlohmann::json::array();
  for (size_t w = 0; w < workers_.size(); ++w) {
    const WorkerState& state = workers_[w];
    nlohmann::json entry = {
        {"host", host_name(state.host)},
        {"samples", plan_.worker_samples.empty() ? 0.0 : plan_.worker_samples[w]},
        {"compute_s",
         state.applied > 0 ? state.compute_s / static_cast<double>(state.applied) : 0.0},
        {"updates", state.applied},
        {"updates_per_s", simulated_s > 0 ? static_cast<double>(state.applied) / simulated_s : 0.0},
        {"staleness_mean", state.staleness_count > 0
                               ? state.staleness_sum / static_cast<double>(state.staleness_count)
                               : 0.0}};
    add_straggler_detail(entry, state.slow_factor, state.slow_fraction, state.slow_steps,
                         state.steps);
    workers.push_back(entry);
  }
  extra["workers_detail"] = workers;
  if (!options_.failures.empty()) {
    detail::add_failures(extra, faults_, [](const FaultRecord& f, nlohmann::json& entry) {
      entry["updates"] = f.updates;
      return f.stall_s;
    });
    extra["updates_dropped"] = dropped_;
    extra["restart_s"] = options_.restart_s;
  }
  return row;
}

model::ResultRow AsyncSimulation::run() {
  if (detail::engine() == nullptr || !platform_loaded() ||
      platform_.source_hash != detail::loaded_source_hash() ||
      platform_.hosts.size() != detail::loaded_hosts().size())
    throw InputError(options_.origin, "platform",
                     "the platform loaded in this process (SimGrid holds one platform per "
                     "process)",
                     platform_.source_file);
  hosts_ = detail::loaded_hosts();
  if (plan_.worker_hosts.empty())
    throw InputError(options_.origin, "workers", "a plan with at least one worker");
  build_cycles();
  setup_faults_and_stragglers();
  target_ = rounds_to_simulate(plan_.rounds);

  if (trace_ != nullptr) {
    trace_->name_process(pid_, plan_.strategy + " (simgrid, " + network_model() + ", async)");
    for (size_t w = 0; w < plan_.worker_hosts.size(); ++w)
      trace_->name_thread(pid_, static_cast<int>(w),
                          "w" + std::to_string(w) + " " + host_name(plan_.worker_hosts[w]));
    for (size_t s = 0; s < plan_.server_hosts.size(); ++s)
      trace_->name_thread(pid_, static_cast<int>(plan_.worker_hosts.size() + s),
                          "server " + host_name(plan_.server_hosts[s]));
  }
  t0_ = sg4::Engine::get_clock();
  for (size_t w = 0; w < workers_.size(); ++w) {
    workers_[w].done = sg4::Semaphore::create(0);
    workers_[w].gate = sg4::Semaphore::create(0);
    sg4::Actor::create("w" + std::to_string(w), hosts_[static_cast<size_t>(workers_[w].host)],
                       [this, w] { worker(static_cast<int>(w)); });
  }
  for (size_t i = 0; i < sources_.size(); ++i) {
    const FailureSource source = sources_[i];
    sg4::Actor::create("failure-" + std::to_string(i), hosts_[static_cast<size_t>(source.host)],
                       [this, source] { fault_injector(source); });
  }
  detail::run_engine_checked("simulation of '" + plan_.strategy + "'");
  finished_ = true;
  if (gave_up_s_ < 0 && static_cast<long long>(update_end_s_.size()) < target_)
    throw SimulationError("simulation of '" + plan_.strategy + "' ended after " +
                          std::to_string(update_end_s_.size()) + " of " + std::to_string(target_) +
                          " updates");
  for (WorkerState& w : workers_) {
    w.done = nullptr;
    w.gate = nullptr;
  }
  return make_row();
}

}  // namespace

model::ResultRow simulate_asynchronous(const model::Plan& plan, const model::Platform& platform,
                                       const SimOptions& options, model::ChromeTrace* trace,
                                       int trace_pid) {
  AsyncSimulation simulation(plan, platform, options, trace, trace_pid);
  return simulation.run();
}

}  // namespace tauplan::sim
