// simulator.cpp: the Plan -> S4U lowering and its round loop (see simulator.hpp).
//
// Actors: one driver (the job: starts rounds, restarts them after failures), one worker per
// plan worker on its host (its Compute and Update ops, in topological order), runners that take
// ready Collective and Transfer ops one after another (a runner is spawned when an op is ready
// and none is idle: as many as run at once), an actor per server Apply, and one daemon per
// failure source. A private op (private_links.hpp) runs its flows once; its copies sleep its
// memoised time. A
// copy of the job beside it (beside_hosts) is a second Simulation in the same Engine whose
// actors are all daemons, so the Engine stops when the job's last actor ends. Dependencies are
// counted per op; an op becomes ready when its last predecessor completes. Every actor belongs to
// an attempt (a try at the current round); a failure starts a new attempt, kills the actors of the
// old one and cancels its flows, so that nothing stale runs. What it leaves out: see simulator.hpp;
// SimGrid hosts are never turned off (a failure is a job-level event), so SimGrid's own failure
// exceptions do not arise.
#include "sim/simulator.hpp"

#include <xbt/log.h>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/base/notice.hpp"
#include "model/ir/strategy.hpp"
#include "sim/async_simulation.hpp"
#include "sim/fault_source.hpp"
#include "sim/latency_jitter.hpp"
#include "sim/platform_loader.hpp"
#include "sim/private_links.hpp"
#include "sim/progress.hpp"
#include "sim/random.hpp"
#include "sim/rendezvous.hpp"
#include "sim/sg_engine.hpp"
#include "sim/simulation_base.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(tauplan_sim, "tauplan: the SimGrid backend");

namespace sg4 = simgrid::s4u;

namespace tauplan::sim {
namespace {

/// A round that fails this many times in a row is given up (failures come faster than rounds).
constexpr int kMaxAttemptsPerRound = 1000;
/// Stack of an unguarded actor, KiB: our actor bodies are shallow (a few frames of the simulator
/// and SimGrid's simcalls); SimGrid's default is 8192.
constexpr int kUnguardedStackKiB = 256;
/// Largest collectives x ops product for which mark_lone_collectives runs (bits of memory).
constexpr double kLoneCheckBits = 2e8;

/// Ops a worker does not run: collectives and transfers (runners), server applies.
bool is_task(model::OpKind kind) {
  return kind == model::OpKind::Collective || kind == model::OpKind::Transfer ||
         kind == model::OpKind::Apply;
}

struct SimOp {
  model::OpKind kind = model::OpKind::Barrier;
  std::string label;
  int worker = -1;  ///< Compute and Update
  int host = -1;    ///< platform host of the actor that runs it
  double overhead_s = 0;
  double flop = 0;
  int steps = 1;
  double fixed_time_s = -1;
  std::string algorithm;
  std::vector<int> group;
  FlowProgram program;
  /// No other collective of the plan can run at the same time (neither precedes the other is
  /// impossible), so its repeated steps may be reused.
  bool network_to_itself = false;
  /// Memoised private op (private_links.hpp): index of its signature, -1 when not private.
  int memo = -1;
  std::vector<int> preds;
  std::vector<int> succs;
  int prev_on_worker = -1;  ///< the op its worker runs just before (sequence within a round)
  // State of the current attempt.
  int pending = 0;
  bool started = false;
  bool done = false;
  double start = 0;
  double end = 0;
  sg4::SemaphorePtr ready;  ///< Compute and Update: released when the op is ready
};

struct RoundRecord {
  double duration_s = 0;
  double compute_s = 0;     ///< on the critical path, per step
  double comm_s = 0;        ///< on the critical path
  double collective_s = 0;  ///< all collectives of the round
  int attempts = 1;
};

struct FaultRecord {
  std::string host;
  double time_s = 0;
  long long round = 0;
  double lost_work_s = 0;
  double stall_s = 0;
  std::string outcome;
};

class Simulation : detail::SimulationBase {
 public:
  Simulation(const model::Plan& plan, const model::Platform& platform, const SimOptions& options,
             model::ChromeTrace* trace, int trace_pid)
      : SimulationBase(plan, platform, options, trace, trace_pid) {}

  model::ResultRow run();

  /// A job beside another: starts `offset_s` after it, runs rounds until the other job is done
  /// (its actors are daemons, so the engine stops when the other job's last actor ends), and
  /// reports nothing.
  void run_as_background(double offset_s) {
    background_ = true;
    start_offset_s_ = offset_s;
  }
  /// Checks and builds the job and creates its driver; the Engine runs afterwards.
  void start();
  /// The row once the Engine has run.
  model::ResultRow finish();

 private:
  /// Called first in every actor body: a background job's actors are daemons.
  void enter_actor() const {
    if (background_) sg4::Actor::self()->daemonize();
  }
  void check_platform() const;
  void build_ops();
  void setup_workers();
  void mark_lone_collectives();
  void mark_private_ops();
  /// Guard pages on stacks or not, from the job's size (sim README, "At scale"): each guarded
  /// stack is two memory mappings and Linux allows 65,530 per process (vm.max_map_count), so
  /// about 32k guarded actors abort SimGrid with "Failed to protect stack". An unguarded stack
  /// overflow would go undetected; our actor bodies are shallow.
  void choose_stacks();
  bool unguarded_stacks_ = false;
  /// Task runners: actors that run ready collectives and transfers one after another, so that a
  /// round of hundreds of thousands of them needs as many actors as run at once.
  void spawn_runner();
  void runner(long long attempt);
  std::deque<int> ready_tasks_;    ///< ready, each claimed by a runner spawned or woken for it
  sg4::SemaphorePtr tasks_ready_;  ///< idle runners wait here
  int idle_runners_ = 0;           ///< idle and not yet claimed
  std::vector<sg4::SemaphorePtr> retired_semaphores_;  ///< tasks_ready_ of aborted attempts
  long long runners_spawned_ = 0;

  // Actor bodies.
  void driver();
  void worker(int w, long long attempt, long long first_round);
  void collective(int op, long long attempt);
  void run_host_work(const std::vector<HostWork>& work) const;
  void fault_injector(FailureSource source);
  /// Last call of a task actor: it leaves tasks_live_ (unless a failure has moved on).
  void end_task(long long attempt) {
    if (!stale(attempt)) tasks_live_.erase(sg4::this_actor::get_pid());
  }

  void start_attempt();
  void spawn_workers();
  void make_ready(int op);
  void complete(int op);
  void run_compute(SimOp& op, int w);
  void fail(int host);
  void record_round();
  int trace_track(int host) const;
  bool stale(long long attempt) const { return attempt != attempt_; }
  model::ResultRow make_row() const;

  bool background_ = false;
  double start_offset_s_ = 0;

  std::vector<SimOp> ops_;
  std::vector<std::vector<int>> worker_ops_;
  std::vector<bool> host_in_job_;
  std::vector<int> server_track_;  ///< trace track of a server host, -1 if none
  long long rounds_to_simulate_ = 1;
  std::unique_ptr<ProgressMeter> progress_;  ///< wall-clock progress of long runs, on stderr
  std::unique_ptr<LatencyJitter> jitter_;    ///< with options_.latency_jitter, not in background

  // Job state.
  long long round_ = 0;
  long long attempt_ = 0;
  int done_ops_ = 0;
  bool aborted_ = false;
  bool finished_ = false;
  bool workers_alive_ = false;
  double attempt_start_ = 0;
  double restart_until_ = 0;
  int attempts_this_round_ = 0;
  double round_start_ = 0;
  sg4::SemaphorePtr round_event_;
  std::vector<sg4::ActorPtr> workers_live_;
  /// Runners and apply actors of the current attempt that have not ended, by pid (a failure
  /// kills them): runners are reused and an apply forgets itself when it ends, so this follows
  /// the tasks in flight, not the tasks of the round (hundreds of thousands in a large layout).
  std::unordered_set<long> tasks_live_;
  /// Flows of the collectives in flight (each shared with its collective actor, so that a
  /// killed actor never sees its vector vanish), by op; dropped when the collective ends.
  std::unordered_map<int, std::shared_ptr<std::vector<sg4::CommPtr>>> in_flight_;
  double stall_until_ = 0;  ///< a failure between rounds delays the next round's start
  double gave_up_s_ = -1;   ///< time spent on the round that was given up, -1 if none

  // Stragglers, per worker.
  std::vector<double> slow_factor_;
  std::vector<double> slow_fraction_;
  std::vector<Rng> worker_rng_;

  // Measurements.
  std::vector<RoundRecord> rounds_;
  std::vector<FaultRecord> faults_;
  std::vector<double> worker_busy_s_;
  std::vector<long long> worker_steps_;
  std::vector<long long> worker_slow_steps_;
  long long flows_started_ = 0;
  long long flows_reused_ = 0;
  /// Flows of private ops that took a memoised copy's time instead of running.
  long long flows_memoised_ = 0;
  std::vector<double> memo_s_;  ///< per signature: its time alone, -1 until first run
};

void Simulation::check_platform() const {
  if (detail::engine() == nullptr || !platform_loaded())
    throw InputError(options_.origin, "platform",
                     "a platform loaded with sim::load_platform before simulating");
  if (platform_.source_hash != detail::loaded_source_hash() ||
      platform_.hosts.size() != detail::loaded_hosts().size())
    throw InputError(options_.origin, "platform",
                     "the platform loaded in this process (" + detail::loaded_source_file() +
                         "); SimGrid holds one platform per process",
                     platform_.source_file);
}

void Simulation::build_ops() {
  const std::vector<model::OpId> order = plan_.topological_order();
  std::vector<int> position(plan_.op_count(), -1);
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = static_cast<int>(i);
  const auto workers = static_cast<int>(plan_.worker_hosts.size());
  worker_ops_.assign(static_cast<size_t>(workers), {});
  const Granularity granularity = options_.granularity;

  ops_.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const model::Op& op = plan_.op(order[i]);
    SimOp& sim = ops_[i];
    sim.kind = op.kind;
    sim.label = op.label;
    for (auto pred : plan_.predecessors(order[i]))
      sim.preds.push_back(position[pred]);
    for (auto succ : plan_.successors(order[i]))
      sim.succs.push_back(position[succ]);
    std::sort(sim.preds.begin(), sim.preds.end());
    std::sort(sim.succs.begin(), sim.succs.end());
    switch (op.kind) {
      case model::OpKind::Compute:
      case model::OpKind::Update: {
        if (op.worker < 0 || op.worker >= workers)
          throw std::logic_error("plan op '" + op.label + "' names worker " +
                                 std::to_string(op.worker) + " of " + std::to_string(workers));
        sim.worker = op.worker;
        sim.host = plan_.worker_hosts[static_cast<size_t>(op.worker)];
        sim.overhead_s = op.overhead_s;
        sim.flop = op.flop;
        sim.steps = op.kind == model::OpKind::Compute ? std::max(op.steps, 0) : 1;
        auto& sequence = worker_ops_[static_cast<size_t>(op.worker)];
        sim.prev_on_worker = sequence.empty() ? -1 : sequence.back();
        sequence.push_back(static_cast<int>(i));
        break;
      }
      case model::OpKind::Collective: {
        sim.algorithm = op.algorithm;
        sim.group = op.group;
        sim.fixed_time_s = op.fixed_time_s;
        model::CollectiveCall call;
        call.payload = op.payload;
        call.bytes = op.bytes;
        call.servers = plan_.server_hosts;
        for (int w : op.group) {
          if (w < 0 || w >= workers)
            throw std::logic_error("collective '" + op.label + "' names worker " +
                                   std::to_string(w));
          call.hosts.push_back(plan_.worker_hosts[static_cast<size_t>(w)]);
        }
        if (op.fixed_time_s < 0) {
          sim.program =
              lower_collective(op.algorithm, call, platform_, granularity, options_.origin);
          for (FlowStage& stage : sim.program.stages)  // calls back to back: each stage again
            stage.repeat *= op.repeat;
        }
        sim.host = sim.program.coordinator_host >= 0
                       ? sim.program.coordinator_host
                       : (call.hosts.empty() ? plan_.worker_hosts.front() : call.hosts.front());
        break;
      }
      case model::OpKind::Transfer: {
        // One flow between the endpoints' hosts, driven from the source like a collective.
        const int src = plan_.host_of(op.source), dst = plan_.host_of(op.destination);
        sim.algorithm = "transfer";
        sim.group = {op.worker};
        sim.fixed_time_s = op.fixed_time_s;
        sim.program.coordinator_host = src;
        if (src != dst && op.bytes > 0)
          sim.program.stages.push_back(
              FlowStage{"transfer", {Flow{src, dst, op.bytes}}, op.repeat, 0, {}});
        sim.host = src;
        break;
      }
      case model::OpKind::Apply:
        sim.algorithm = "apply";
        sim.group = {op.worker};
        sim.host = plan_.server_hosts.at(static_cast<size_t>(op.server));
        sim.flop = op.flop;
        break;
      case model::OpKind::Barrier:
        break;
    }
  }
}

void Simulation::mark_lone_collectives() {
  // A collective has the network to itself when every other collective precedes or follows it
  // in the round (rounds never overlap) and no link changes over time (profiles).
  if (detail::loaded_platform_has_link_profiles()) return;
  std::vector<int> collectives;
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].kind == model::OpKind::Collective) collectives.push_back(static_cast<int>(i));
  // The all-pairs check costs collectives x ops bits: a large layout's round (tens of thousands
  // of collectives) has it done by mark_private_ops instead, link by link.
  if (static_cast<double>(collectives.size()) * static_cast<double>(ops_.size()) > kLoneCheckBits)
    return;
  // reach[c][op]: op is reachable from collective c (ops are in topological order).
  std::vector<std::vector<bool>> reach;
  for (int c : collectives) {
    std::vector<bool> seen(ops_.size(), false);
    seen[static_cast<size_t>(c)] = true;
    for (size_t i = static_cast<size_t>(c); i < ops_.size(); ++i)
      if (seen[i])
        for (int succ : ops_[i].succs)
          seen[static_cast<size_t>(succ)] = true;
    reach.push_back(std::move(seen));
  }
  for (size_t a = 0; a < collectives.size(); ++a) {
    bool alone = true;
    for (size_t b = 0; b < collectives.size() && alone; ++b)
      if (a != b)
        alone = reach[a][static_cast<size_t>(collectives[b])] ||
                reach[b][static_cast<size_t>(collectives[a])];
    ops_[static_cast<size_t>(collectives[a])].network_to_itself = alone;
  }
}

void Simulation::mark_private_ops() {
  // Exact only where a private op's time depends on nothing but its own flows (see
  // private_links.hpp): not with link profiles, a rendezvous protocol or a job beside this one.
  // Nor with latency jitter: a memoised time is one round's draw.
  if (!options_.reuse_steps || platform_.protocol.rendezvous || background_ ||
      options_.latency_jitter > 0 || !options_.beside_hosts.empty() ||
      detail::loaded_platform_has_link_profiles())
    return;
  RoundOrder order;
  order.links.resize(ops_.size());
  order.succs.resize(ops_.size());
  order.next_on_worker.assign(ops_.size(), -1);
  for (size_t i = 0; i < ops_.size(); ++i) {
    order.succs[i] = ops_[i].succs;
    if (is_task(ops_[i].kind) && ops_[i].fixed_time_s < 0)
      order.links[i] = program_links(ops_[i].program, platform_);
  }
  for (const auto& sequence : worker_ops_)
    for (size_t k = 1; k < sequence.size(); ++k)
      order.next_on_worker[static_cast<size_t>(sequence[k - 1])] = sequence[k];
  const std::vector<bool> alone = private_link_ops(order);
  std::unordered_map<std::string, int> signatures;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!alone[i]) continue;
    const auto [it, inserted] = signatures.emplace(program_signature(ops_[i].program, platform_),
                                                   static_cast<int>(signatures.size()));
    ops_[i].memo = it->second;
    ops_[i].network_to_itself = true;  // alone on its links: its repeated steps are identical
  }
  memo_s_.assign(signatures.size(), -1.0);
}

void Simulation::choose_stacks() {
  // Live actors: the workers, and at most one runner per task in flight (runners are reused).
  // Stacks are guarded or not for the whole simulation: SimGrid frees a stack by the guard size
  // in force when it is freed, so it must not change while actors live.
  if (static_cast<double>(worker_ops_.size()) * 2 > options_.guarded_actor_limit) {
    sg4::Engine::set_config("contexts/guard-size:0");
    sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kUnguardedStackKiB));
  }
  // What is in force, which an earlier simulation of this process may have set.
  unguarded_stacks_ = simgrid::config::get_value<int>("contexts/guard-size") == 0;
}

void Simulation::setup_workers() {
  const size_t workers = plan_.worker_hosts.size();
  slow_factor_.assign(workers, 1.0);
  slow_fraction_.assign(workers, 0.0);
  worker_busy_s_.assign(workers, 0.0);
  worker_steps_.assign(workers, 0);
  worker_slow_steps_.assign(workers, 0);
  worker_rng_.clear();
  for (size_t w = 0; w < workers; ++w)
    worker_rng_.emplace_back(stream_seed(options_.seed, 1, w));
  for (const Straggler& s : options_.stragglers) {
    const int host = platform_.find_host(s.host);
    if (host < 0)
      throw InputError(options_.origin_of("stragglers"), "a host of " + platform_.source_file,
                       "'" + s.host + "'");
    for (size_t w = 0; w < workers; ++w)
      if (plan_.worker_hosts[w] == host) {
        slow_factor_[w] = s.factor;
        slow_fraction_[w] = s.fraction;
      }
  }
  host_in_job_.assign(platform_.hosts.size(), false);
  for (int h : plan_.worker_hosts)
    host_in_job_[static_cast<size_t>(h)] = true;
  server_track_.assign(platform_.hosts.size(), -1);
  int track = static_cast<int>(workers);
  for (const SimOp& op : ops_)
    if (is_task(op.kind) && op.host >= 0 && !host_in_job_[static_cast<size_t>(op.host)] &&
        server_track_[static_cast<size_t>(op.host)] < 0)
      server_track_[static_cast<size_t>(op.host)] = track++;
  for (size_t h = 0; h < server_track_.size(); ++h)
    if (server_track_[h] >= 0) host_in_job_[h] = true;
}

void Simulation::driver() {
  enter_actor();
  if (start_offset_s_ > 0) sg4::this_actor::sleep_for(start_offset_s_);
  for (round_ = 0; round_ < rounds_to_simulate_; ++round_) {
    if (jitter_) jitter_->draw(round_);
    round_start_ = now();
    attempts_this_round_ = 0;
    for (;;) {
      ++attempts_this_round_;
      start_attempt();
      round_event_->acquire();
      if (!aborted_) break;
      // The round was lost to a failure: stall until the restart (failures during the stall
      // push it further), then try the round again.
      while (now() < restart_until_)
        sg4::this_actor::sleep_until(t0_ + restart_until_);
      if (attempts_this_round_ >= kMaxAttemptsPerRound) {
        gave_up_s_ = now() - round_start_;
        finished_ = true;
        return;
      }
    }
    record_round();
    if (progress_) progress_->update(round_ + 1);
    XBT_VERB("round %lld done in %g s", round_, rounds_.back().duration_s);
  }
  finished_ = true;
}

void Simulation::start_attempt() {
  while (now() < stall_until_)
    sg4::this_actor::sleep_until(t0_ + stall_until_);
  const long long attempt = attempt_;
  aborted_ = false;
  attempt_start_ = now();
  done_ops_ = 0;
  in_flight_.clear();
  if (!tasks_ready_) tasks_ready_ = sg4::Semaphore::create(0);
  for (SimOp& op : ops_) {
    op.pending = static_cast<int>(op.preds.size());
    op.started = op.done = false;
    op.start = op.end = 0;
  }
  if (!workers_alive_) spawn_workers();
  if (ops_.empty()) {
    round_event_->release();
    return;
  }
  for (size_t i = 0; i < ops_.size() && !stale(attempt); ++i)
    if (ops_[i].pending == 0) make_ready(static_cast<int>(i));
}

void Simulation::spawn_workers() {
  for (SimOp& op : ops_)
    if (op.kind == model::OpKind::Compute || op.kind == model::OpKind::Update)
      op.ready = sg4::Semaphore::create(0);
  for (size_t w = 0; w < worker_ops_.size(); ++w) {
    if (worker_ops_[w].empty()) continue;
    const int host = plan_.worker_hosts[w];
    const long long attempt = attempt_;
    const long long first_round = round_;
    if (stale(attempt)) return;
    workers_live_.push_back(sg4::Actor::create(
        "w" + std::to_string(w), hosts_[static_cast<size_t>(host)],
        [this, w, attempt, first_round] { worker(static_cast<int>(w), attempt, first_round); }));
  }
  workers_alive_ = true;
}

void Simulation::worker(int w, long long attempt, long long first_round) {
  enter_actor();
  const auto& sequence = worker_ops_[static_cast<size_t>(w)];
  for (long long r = first_round; r < rounds_to_simulate_; ++r)
    for (int index : sequence) {
      SimOp& op = ops_[static_cast<size_t>(index)];
      op.ready->acquire();
      if (stale(attempt)) return;
      op.start = now();
      op.started = true;
      run_compute(op, w);
      if (stale(attempt)) return;
      worker_busy_s_[static_cast<size_t>(w)] += now() - op.start;
      complete(index);
    }
}

void Simulation::run_compute(SimOp& op, int w) {
  const auto wi = static_cast<size_t>(w);
  if (op.kind == model::OpKind::Update) {
    if (op.overhead_s > 0) sg4::this_actor::sleep_for(op.overhead_s);
    if (op.flop > 0) sg4::this_actor::execute(op.flop);
    return;
  }
  // Compute: `steps` steps, each overhead + flop, a straggler's slow steps x factor.
  const double factor = slow_factor_[wi];
  const double fraction = slow_fraction_[wi];
  auto step_factor = [&]() {
    ++worker_steps_[wi];
    if (factor == 1.0 || fraction <= 0) return 1.0;
    const bool slow = fraction >= 1 || worker_rng_[wi].uniform() < fraction;
    if (!slow) return 1.0;
    ++worker_slow_steps_[wi];
    return factor;
  };
  if (options_.granularity == Granularity::Coarse) {
    double scale = 0;
    for (int s = 0; s < op.steps; ++s)
      scale += step_factor();
    if (op.overhead_s > 0) sg4::this_actor::sleep_for(op.overhead_s * scale);
    if (op.flop > 0) sg4::this_actor::execute(op.flop * scale);
    return;
  }
  for (int s = 0; s < op.steps; ++s) {
    const double f = step_factor();
    if (op.overhead_s > 0) sg4::this_actor::sleep_for(op.overhead_s * f);
    if (op.flop > 0) sg4::this_actor::execute(op.flop * f);
  }
}

/// A stage's work after its flows (a server's processing): each item on its host, all at once.
void Simulation::run_host_work(const std::vector<HostWork>& work) const {
  if (work.empty()) return;
  std::vector<sg4::ExecPtr> running;
  running.reserve(work.size());
  for (const HostWork& w : work)
    running.push_back(hosts_[static_cast<size_t>(w.host)]->exec_async(w.flop));
  for (const sg4::ExecPtr& exec : running)
    exec->wait();
}

void Simulation::collective(int index, long long attempt) {
  enter_actor();
  if (stale(attempt)) return;
  SimOp& op = ops_[static_cast<size_t>(index)];
  op.start = now();
  op.started = true;
  const double memo_s = op.memo >= 0 ? memo_s_[static_cast<size_t>(op.memo)] : -1;
  if (op.fixed_time_s >= 0) {
    if (op.fixed_time_s > 0) sg4::this_actor::sleep_for(op.fixed_time_s);
  } else if (memo_s >= 0) {
    // A copy of a private op already simulated: alone on its links, it takes the same time.
    sg4::this_actor::sleep_for(memo_s);
    flows_memoised_ += op.program.flow_count();
  } else {
    auto shared = std::make_shared<std::vector<sg4::CommPtr>>();
    in_flight_[index] = shared;
    std::vector<sg4::CommPtr>& comms = *shared;
    if (platform_.protocol.rendezvous) {
      // Host by host, without step barriers (sim/rendezvous.hpp). Coarse granularity keeps a
      // barrier after each merged stage, for the latencies of the steps it merged.
      const auto stop = [this, attempt] { return stale(attempt); };
      std::vector<const FlowStage*> steps;
      for (const FlowStage& stage : op.program.stages) {
        for (long long r = 0; r < stage.repeat; ++r)
          steps.push_back(&stage);
        if (options_.granularity == Granularity::Coarse || stage.extra_latency_s > 0 ||
            !stage.work_after.empty()) {
          if (!run_rendezvous_steps(steps, platform_.protocol, hosts_, comms, stop, flows_started_))
            return;
          steps.clear();
          if (stage.extra_latency_s > 0) sg4::this_actor::sleep_for(stage.extra_latency_s);
          if (stale(attempt)) return;
          run_host_work(stage.work_after);
          if (stale(attempt)) return;
        }
      }
      if (!steps.empty() &&
          !run_rendezvous_steps(steps, platform_.protocol, hosts_, comms, stop, flows_started_))
        return;
      if (stale(attempt)) return;
      in_flight_.erase(index);
      complete(index);
      return;
    }
    const bool reuse = options_.reuse_steps && op.network_to_itself;
    for (const FlowStage& stage : op.program.stages) {
      double step_s = -1;
      for (long long r = 0; r < stage.repeat; ++r) {
        if (reuse && step_s >= 0) {
          // Steady state: the remaining steps are the step just simulated, repeated.
          const long long left = stage.repeat - r;
          sg4::this_actor::sleep_for(step_s * static_cast<double>(left));
          flows_reused_ += left * static_cast<long long>(stage.flows.size());
          break;
        }
        const double step_start = now();
        comms.clear();
        comms.reserve(stage.flows.size());
        for (const Flow& flow : stage.flows)
          comms.push_back(sg4::Comm::sendto_async(
              hosts_[static_cast<size_t>(flow.src_host)],
              hosts_[static_cast<size_t>(flow.dst_host)],
              static_cast<std::uint64_t>(std::llround(std::max(flow.bytes, 0.0)))));
        flows_started_ += static_cast<long long>(stage.flows.size());
        sg4::Comm::wait_all(comms);
        if (stale(attempt)) return;
        if (stage.extra_latency_s > 0) sg4::this_actor::sleep_for(stage.extra_latency_s);
        if (stale(attempt)) return;
        step_s = now() - step_start;
      }
      if (stale(attempt)) return;
      run_host_work(stage.work_after);
      if (stale(attempt)) return;
    }
    comms.clear();
    in_flight_.erase(index);
    if (stale(attempt)) return;
    if (op.memo >= 0) memo_s_[static_cast<size_t>(op.memo)] = now() - op.start;
  }
  if (stale(attempt)) return;
  complete(index);
}

void Simulation::make_ready(int index) {
  SimOp& op = ops_[static_cast<size_t>(index)];
  XBT_VERB("round %lld attempt %lld: '%s' ready", round_, attempt_, op.label.c_str());
  switch (op.kind) {
    case model::OpKind::Compute:
    case model::OpKind::Update:
      op.ready->release();
      break;
    case model::OpKind::Collective:
    case model::OpKind::Transfer:
      ready_tasks_.push_back(index);
      if (idle_runners_ > 0) {
        --idle_runners_;  // claimed now, so that the next ready task does not count on it
        tasks_ready_->release();
      } else {
        spawn_runner();
      }
      break;
    case model::OpKind::Apply: {
      const long long attempt = attempt_;
      tasks_live_.insert(sg4::Actor::create("apply-" + std::to_string(index),
                                            hosts_[static_cast<size_t>(op.host)],
                                            [this, index, attempt] {
                                              enter_actor();
                                              SimOp& apply = ops_[static_cast<size_t>(index)];
                                              apply.start = now();
                                              apply.started = true;
                                              if (apply.flop > 0)
                                                sg4::this_actor::execute(apply.flop);
                                              if (!stale(attempt)) complete(index);
                                              end_task(attempt);
                                            })
                             ->get_pid());
      break;
    }
    case model::OpKind::Barrier:
      op.start = now();
      op.started = true;
      complete(index);
      break;
  }
}

void Simulation::spawn_runner() {
  const long long attempt = attempt_;
  const int host = ops_[static_cast<size_t>(ready_tasks_.back())].host;
  tasks_live_.insert(sg4::Actor::create("runner-" + std::to_string(runners_spawned_++),
                                        hosts_[static_cast<size_t>(host)],
                                        [this, attempt] { runner(attempt); })
                         ->get_pid());
}

void Simulation::runner(long long attempt) {
  // A daemon: idle runners wait for tasks that no longer come once the job has ended.
  sg4::Actor::self()->daemonize();
  for (;;) {
    // A runner is spawned or woken for one queued task: the queue is never empty here.
    const int index = ready_tasks_.front();
    ready_tasks_.pop_front();
    collective(index, attempt);
    if (stale(attempt)) return;
    ++idle_runners_;
    tasks_ready_->acquire();
    if (stale(attempt)) return;
  }
}

void Simulation::complete(int index) {
  SimOp& op = ops_[static_cast<size_t>(index)];
  XBT_VERB("round %lld attempt %lld: '%s' done", round_, attempt_, op.label.c_str());
  op.end = now();
  op.done = true;
  // Decide here whether this op ends the round: making successors ready yields to other actors,
  // which may complete ops meanwhile.
  const bool last = ++done_ops_ == static_cast<int>(ops_.size());
  const long long attempt = attempt_;
  for (int succ : op.succs) {
    if (stale(attempt)) return;
    if (--ops_[static_cast<size_t>(succ)].pending == 0) make_ready(succ);
  }
  if (last && !stale(attempt)) round_event_->release();
}

void Simulation::fault_injector(FailureSource source) {
  run_fault_injector(
      source, t0_, [this] { return finished_; }, [this](int host) { fail(host); });
}

void Simulation::fail(int host) {
  FaultRecord fault;
  fault.host = host_name(host);
  fault.time_s = now();
  fault.round = round_;
  if (!host_in_job_[static_cast<size_t>(host)]) {
    fault.outcome = "ignored: host not used by the job";
    faults_.push_back(fault);
    return;
  }
  if (aborted_) {
    // Already stalled by an earlier failure: the replacement is delayed.
    const double until = std::max(restart_until_, fault.time_s + options_.restart_s);
    fault.stall_s = until - restart_until_;
    fault.outcome = "failed during the restart stall; restart delayed";
    restart_until_ = until;
    faults_.push_back(fault);
    return;
  }
  const int track = trace_track(host);
  if (done_ops_ == static_cast<int>(ops_.size())) {
    // Between rounds: nothing is lost, but the next round waits for the replacement.
    fault.stall_s = options_.restart_s;
    fault.outcome = "failed between rounds; next round delayed";
    stall_until_ = std::max(stall_until_, fault.time_s + options_.restart_s);
    faults_.push_back(fault);
    if (trace_ != nullptr) {
      trace_->instant(pid_, track, "host failure " + fault.host, "fault", fault.time_s);
      trace_->span(pid_, track, "stall (restart)", "fault", fault.time_s, fault.stall_s);
    }
    return;
  }
  // Abort the attempt: bump the attempt first, so that every actor of the old one is stale
  // whatever runs next, then stop what they were doing.
  ++attempt_;
  aborted_ = true;
  fault.lost_work_s = fault.time_s - attempt_start_;
  fault.stall_s = options_.restart_s;
  fault.outcome = "round restarted from the last averaged parameters";
  restart_until_ = fault.time_s + options_.restart_s;
  faults_.push_back(fault);
  if (trace_ != nullptr) {
    for (const SimOp& op : ops_) {
      if (!op.started || op.done || op.kind == model::OpKind::Barrier) continue;
      const std::string name = "aborted: " + op.label;
      if (is_task(op.kind)) {
        for (int w : op.group)
          trace_->span(pid_, w, name, "fault", op.start, fault.time_s - op.start);
      } else {
        trace_->span(pid_, op.worker, name, "fault", op.start, fault.time_s - op.start);
      }
    }
    trace_->instant(pid_, track, "host failure " + fault.host, "fault", fault.time_s,
                    {{"lost_work_s", std::to_string(fault.lost_work_s)},
                     {"stall_s", std::to_string(fault.stall_s)}});
    trace_->span(pid_, track, "stall (restart)", "fault", fault.time_s, fault.stall_s);
  }
  std::vector<sg4::ActorPtr> victims;
  victims.swap(workers_live_);
  for (long pid : tasks_live_)
    if (sg4::ActorPtr task = sg4::Actor::by_pid(pid)) victims.push_back(task);
  tasks_live_.clear();
  ready_tasks_.clear();
  idle_runners_ = 0;
  for (auto& actor : victims)
    actor->kill();
  // New runners wait on a new semaphore (a wake-up handed to a killed runner must not reach
  // them); the old one is kept until the end, SimGrid refusing to destroy one still waited on.
  retired_semaphores_.push_back(tasks_ready_);
  tasks_ready_ = sg4::Semaphore::create(0);
  for (auto& [op, comms] : in_flight_)
    for (auto& comm : *comms)
      if (comm->get_state() == sg4::Activity::State::STARTED) comm->cancel();
  in_flight_.clear();
  workers_alive_ = false;
  round_event_->release();
}

int Simulation::trace_track(int host) const {
  for (size_t w = 0; w < plan_.worker_hosts.size(); ++w)
    if (plan_.worker_hosts[w] == host) return static_cast<int>(w);
  const int server = server_track_[static_cast<size_t>(host)];
  return server >= 0 ? server : 0;
}

void Simulation::record_round() {
  RoundRecord record;
  record.duration_s = now() - round_start_;
  record.attempts = attempts_this_round_;
  // The critical path of the attempt that succeeded: from the op that ended last, walk back
  // through whichever predecessor (or the worker's previous op) ended last.
  int last = -1;
  for (size_t i = 0; i < ops_.size(); ++i)
    if (last < 0 || ops_[i].end > ops_[static_cast<size_t>(last)].end) last = static_cast<int>(i);
  double compute = 0;
  double comm = 0;
  for (int i = last; i >= 0;) {
    const SimOp& op = ops_[static_cast<size_t>(i)];
    if (is_task(op.kind))
      comm += op.end - op.start;
    else if (op.kind != model::OpKind::Barrier)
      compute += op.end - op.start;
    int next = -1;
    auto consider = [&](int candidate) {
      if (candidate >= 0 && (next < 0 || ops_[static_cast<size_t>(candidate)].end >
                                             ops_[static_cast<size_t>(next)].end))
        next = candidate;
    };
    for (int p : op.preds)
      consider(p);
    consider(op.prev_on_worker);
    i = next;
  }
  record.compute_s = compute / std::max(plan_.steps_per_round, 1);
  record.comm_s = comm;
  for (const SimOp& op : ops_)
    if (is_task(op.kind)) record.collective_s += op.end - op.start;
  rounds_.push_back(record);

  if (trace_ == nullptr) return;
  const std::string round_name = std::to_string(round_);
  for (const SimOp& op : ops_) {
    if (op.kind == model::OpKind::Barrier) continue;
    if (is_task(op.kind)) {
      const std::string name = op.label + " (" + op.algorithm + ")";
      model::ChromeTrace::Args args = {{"round", round_name},
                                       {"flows", std::to_string(op.program.flow_count())}};
      for (int w : op.group)
        trace_->span(pid_, w, name, "comm", op.start, op.end - op.start, args);
      const int server = server_track_[static_cast<size_t>(op.host)];
      if (server >= 0) trace_->span(pid_, server, name, "comm", op.start, op.end - op.start, args);
    } else {
      trace_->span(pid_, op.worker, op.label,
                   op.kind == model::OpKind::Compute ? "compute" : "update", op.start,
                   op.end - op.start, {{"round", round_name}, {"steps", std::to_string(op.steps)}});
    }
  }
}

model::ResultRow Simulation::make_row() const {
  model::ResultRow row = model::result_header(plan_, "simgrid");

  double simulated_total = 0;
  double compute = 0;
  double comm = 0;
  double collective = 0;
  for (const RoundRecord& r : rounds_) {
    simulated_total += r.duration_s;
    compute += r.compute_s;
    comm += r.comm_s;
    collective += r.collective_s;
  }
  const auto simulated = static_cast<double>(rounds_.size());
  const double mean_round = rounds_.empty() ? 0 : simulated_total / simulated;
  row.round_s = mean_round;
  row.compute_s = rounds_.empty() ? 0 : compute / simulated;
  row.comm_s = rounds_.empty() ? 0 : comm / simulated;
  const auto simulated_rounds = static_cast<long long>(rounds_.size());
  if (gave_up_s_ >= 0) {
    // No extrapolation: the job never gets past this round.
    row.total_s = simulated_total + gave_up_s_;
    row.extra["gave_up"] = "round " + std::to_string(simulated_rounds) + " failed " +
                           std::to_string(kMaxAttemptsPerRound) +
                           " times in a row: failures come faster than a round completes";
  } else if (plan_.rounds <= 0)
    row.total_s = 0;
  else if (simulated_rounds >= plan_.rounds)
    row.total_s = simulated_total;
  else
    row.total_s =
        simulated_total + static_cast<double>(plan_.rounds - simulated_rounds) * mean_round;

  nlohmann::json& extra = row.extra;
  extra["network_model"] = network_model();
  extra["sim_mode"] = to_string(options_.granularity);
  extra["simulated_rounds"] = simulated_rounds;
  extra["extrapolated"] = gave_up_s_ < 0 && plan_.rounds > simulated_rounds;
  if (gave_up_s_ < 0 && plan_.rounds > simulated_rounds)
    extra["extrapolation"] = "total_s = simulated rounds + remaining rounds x mean simulated round";
  extra["seed"] = options_.seed;
  if (options_.latency_jitter > 0) extra["latency_jitter"] = options_.latency_jitter;
  extra["collective_s"] = rounds_.empty() ? 0.0 : collective / simulated;
  extra["flows_started"] = flows_started_;
  if (flows_reused_ > 0) extra["flows_reused"] = flows_reused_;
  if (flows_memoised_ > 0) extra["flows_memoised"] = flows_memoised_;
  if (unguarded_stacks_) extra["unguarded_stacks"] = true;
  extra["flows_represented"] = flows_started_ + flows_reused_ + flows_memoised_;
  extra["convergence_steps"] = plan_.convergence_steps;
  extra["steps_per_round"] = plan_.steps_per_round;
  if (!rounds_.empty()) {
    double shortest = rounds_.front().duration_s;
    double longest = shortest;
    for (const RoundRecord& r : rounds_) {
      shortest = std::min(shortest, r.duration_s);
      longest = std::max(longest, r.duration_s);
    }
    extra["round_s_min"] = shortest;
    extra["round_s_max"] = longest;
  }
  nlohmann::json workers = nlohmann::json::array();
  const double steps_simulated =
      simulated * static_cast<double>(std::max(plan_.steps_per_round, 1));
  for (size_t w = 0; w < plan_.worker_hosts.size(); ++w) {
    nlohmann::json entry = {
        {"host", host_name(plan_.worker_hosts[w])},
        {"samples", plan_.worker_samples.empty() ? 0.0 : plan_.worker_samples[w]},
        {"compute_s", steps_simulated > 0 ? worker_busy_s_[w] / steps_simulated : 0.0}};
    add_straggler_detail(entry, slow_factor_[w], slow_fraction_[w], worker_slow_steps_[w],
                         worker_steps_[w]);
    workers.push_back(entry);
  }
  extra["workers_detail"] = workers;
  if (!options_.failures.empty()) {
    detail::add_failures(extra, faults_, [](const FaultRecord& f, nlohmann::json& entry) {
      entry["round"] = f.round;
      entry["lost_work_s"] = f.lost_work_s;
      return f.lost_work_s + f.stall_s;
    });
    extra["restart_s"] = options_.restart_s;
  }
  return row;
}

model::ResultRow Simulation::run() {
  start();
  detail::run_engine_checked("simulation of '" + plan_.strategy + "'");
  return finish();
}

void Simulation::start() {
  check_platform();
  hosts_ = detail::loaded_hosts();
  if (plan_.worker_hosts.empty())
    throw InputError(options_.origin, "workers", "a plan with at least one worker");
  for (int h : plan_.worker_hosts)
    if (h < 0 || static_cast<size_t>(h) >= hosts_.size())
      throw std::logic_error("plan names host index " + std::to_string(h));
  build_ops();
  // Every host pair a flow joins needs a route (SimGrid aborts on a transfer without one):
  // Platform::route throws an InputError naming the pair before the simulation starts.
  for (const SimOp& op : ops_)
    for (const FlowStage& stage : op.program.stages)
      for (const Flow& flow : stage.flows)
        if (flow.src_host != flow.dst_host) platform_.route(flow.src_host, flow.dst_host);
  mark_lone_collectives();
  mark_private_ops();
  choose_stacks();
  setup_workers();
  const std::vector<FailureSource> sources = failure_sources(options_, plan_, platform_);
  rounds_to_simulate_ =
      background_ ? std::numeric_limits<long long>::max() / 2 : rounds_to_simulate(plan_.rounds);
  if (rounds_to_simulate_ < plan_.rounds && !background_)
    model::notice_once(options_.origin + ": sim_rounds " + std::to_string(options_.sim_rounds) +
                           " < the " + std::to_string(plan_.rounds) + " rounds of '" +
                           plan_.strategy +
                           "': total_s adds the remaining rounds x the mean simulated round",
                       "extrapolated rounds");
  if (!background_)
    progress_ =
        std::make_unique<ProgressMeter>("simulate '" + plan_.strategy + "'", rounds_to_simulate_);

  if (trace_ != nullptr) {
    trace_->name_process(pid_, plan_.strategy + " (simgrid, " + network_model() + ", " +
                                   to_string(options_.granularity) + ")");
    for (size_t w = 0; w < plan_.worker_hosts.size(); ++w)
      trace_->name_thread(pid_, static_cast<int>(w),
                          "w" + std::to_string(w) + " " + host_name(plan_.worker_hosts[w]));
    for (size_t h = 0; h < server_track_.size(); ++h)
      if (server_track_[h] >= 0)
        trace_->name_thread(pid_, server_track_[h], "server " + host_name(static_cast<int>(h)));
  }

  if (options_.latency_jitter > 0 && !background_)
    jitter_ = std::make_unique<LatencyJitter>(options_.latency_jitter, options_.seed);
  t0_ = sg4::Engine::get_clock();
  round_event_ = sg4::Semaphore::create(0);
  sg4::Host* driver_host = hosts_[static_cast<size_t>(plan_.worker_hosts.front())];
  sg4::Actor::create("driver", driver_host, [this] { driver(); });
  for (size_t i = 0; i < sources.size(); ++i) {
    const FailureSource source = sources[i];
    sg4::Actor::create("failure-" + std::to_string(i), hosts_[static_cast<size_t>(source.host)],
                       [this, source] { fault_injector(source); });
  }
  XBT_VERB("simulating %s: %zu ops, %lld rounds", plan_.strategy.c_str(), ops_.size(),
           rounds_to_simulate_);
}

model::ResultRow Simulation::finish() {
  if (progress_) progress_->finish();
  if (!finished_ && !background_)
    throw SimulationError("simulation of '" + plan_.strategy + "' ended after " +
                          std::to_string(rounds_.size()) + " of " +
                          std::to_string(rounds_to_simulate_) + " rounds");
  workers_live_.clear();
  tasks_live_.clear();
  in_flight_.clear();
  ready_tasks_.clear();
  idle_runners_ = 0;
  tasks_ready_ = nullptr;
  retired_semaphores_.clear();
  round_event_ = nullptr;
  for (SimOp& op : ops_)
    op.ready = nullptr;
  jitter_.reset();  // the links' own latencies again
  return make_row();
}

}  // namespace

namespace detail {

void run_engine_checked(const std::string& what) {
  static bool deadlock_seen = false;
  static bool registered = false;
  if (!registered) {
    registered = true;
    sg4::Engine::on_deadlock_cb([] { deadlock_seen = true; });
  }
  sg4::Engine* engine = detail::engine();
  if (engine == nullptr) throw std::logic_error("run_engine_checked before the Engine started");
  deadlock_seen = false;
  engine->run();
  const size_t leftover = engine->get_actor_count();
  if (deadlock_seen || leftover > 0)
    throw SimulationError(what + " did not end cleanly: " + (deadlock_seen ? "deadlock, " : "") +
                          std::to_string(leftover) + " actor(s) left blocked at t=" +
                          std::to_string(sg4::Engine::get_clock()) + " s");
}

}  // namespace detail

const char* to_string(Granularity granularity) {
  return granularity == Granularity::Coarse ? "coarse" : "step";
}

namespace {

/// `plan` with a copy of it beside it on other hosts (see simulate()).
model::ResultRow simulate_beside(const model::Plan& plan, const model::Platform& platform,
                                 const SimOptions& options, model::ChromeTrace* trace,
                                 int trace_pid) {
  if (plan.asynchronous)
    throw InputError(options.origin_of("beside_hosts"),
                     "a synchronous strategy (a job beside an asynchronous one is not simulated)",
                     plan.strategy);
  if (!options.failures.empty())
    throw InputError(options.origin_of("beside_hosts"),
                     "no failures in the same job (they are per job)",
                     std::to_string(options.failures.size()) + " failure(s)");
  if (options.beside_phases < 1)
    throw InputError(options.origin_of("beside_phases"), "at least 1 offset",
                     std::to_string(options.beside_phases));
  const size_t workers = plan.worker_hosts.size();
  if (options.beside_hosts.size() < workers)
    throw InputError(options.origin_of("beside_hosts"),
                     fmt::format("at least the {} worker host(s) of '{}'", workers, plan.strategy),
                     fmt::format("{} host(s)", options.beside_hosts.size()));
  model::Plan other = plan;
  other.worker_hosts = model::host_indices(
      {options.beside_hosts.begin(), options.beside_hosts.begin() + static_cast<long>(workers)},
      platform, options.origin_of("beside_hosts").first, options.origin_of("beside_hosts").second);
  SimOptions alone = options;
  alone.beside_hosts.clear();
  alone.reuse_steps = false;
  // One round of this job alone spaces the offsets.
  model::Plan one_round = plan;
  one_round.rounds = 1;
  const double round_alone_s = Simulation(one_round, platform, alone, nullptr, 0).run().round_s;

  std::vector<model::ResultRow> rows;
  nlohmann::json offsets = nlohmann::json::array();
  for (int k = 0; k < options.beside_phases; ++k) {
    const double offset_s = round_alone_s * k / options.beside_phases;
    Simulation job(plan, platform, alone, k == 0 ? trace : nullptr, trace_pid);
    Simulation beside(other, platform, alone, nullptr, 0);
    beside.run_as_background(offset_s);
    job.start();
    beside.start();
    detail::run_engine_checked("simulation of '" + plan.strategy + "' beside a copy of it");
    rows.push_back(job.finish());
    offsets.push_back({{"offset_s", offset_s}, {"round_s", rows.back().round_s}});
  }
  model::ResultRow row = rows.front();
  auto mean = [&](double model::ResultRow::*field) {
    double sum = 0;
    for (const model::ResultRow& r : rows)
      sum += r.*field;
    return sum / static_cast<double>(rows.size());
  };
  row.round_s = mean(&model::ResultRow::round_s);
  row.compute_s = mean(&model::ResultRow::compute_s);
  row.comm_s = mean(&model::ResultRow::comm_s);
  row.total_s = mean(&model::ResultRow::total_s);
  double lo = rows.front().round_s, hi = lo;
  for (const model::ResultRow& r : rows) {
    lo = std::min(lo, r.round_s);
    hi = std::max(hi, r.round_s);
  }
  row.extra["beside"] = {{"hosts", std::vector<std::string>(
                                       options.beside_hosts.begin(),
                                       options.beside_hosts.begin() + static_cast<long>(workers))},
                         {"round_alone_s", round_alone_s},
                         {"round_min_s", lo},
                         {"round_max_s", hi},
                         {"phases", offsets}};
  return row;
}

}  // namespace

void check_latency_jitter(const model::Plan& plan, const SimOptions& options) {
  if (!(options.latency_jitter > 0)) return;
  std::string where;
  if (plan.asynchronous)
    where = "an asynchronous strategy";
  else if (!options.beside_hosts.empty())
    where = "a job with beside_hosts";
  else if (options.granularity == Granularity::Coarse)
    where = "sim_mode coarse, whose merged steps' latencies are not drawn";
  else if (detail::loaded_platform_has_latency_profiles())
    where = "a platform with a latency_file, whose profile sets that latency";
  if (where.empty()) return;
  throw InputError(options.origin_of("latency_jitter").first,
                   options.origin_of("latency_jitter").second,
                   "0 for '" + plan.strategy + "' (" + where +
                       "): jitter is drawn per round of one synchronous job, step by step, on "
                       "the links' own latencies",
                   fmt::format("{:g}", options.latency_jitter));
}

model::ResultRow simulate(const model::Plan& plan, const model::Platform& platform,
                          const SimOptions& options, model::ChromeTrace* trace, int trace_pid) {
  check_latency_jitter(plan, options);
  if (!options.beside_hosts.empty())
    return simulate_beside(plan, platform, options, trace, trace_pid);
  if (plan.asynchronous) return simulate_asynchronous(plan, platform, options, trace, trace_pid);
  Simulation simulation(plan, platform, options, trace, trace_pid);
  return simulation.run();
}

std::map<std::string, std::string> context_extra(const SimOptions& options) {
  std::map<std::string, std::string> extra = engine_config();
  extra["simgrid_version"] = simgrid_version();
  extra["sim_mode"] = to_string(options.granularity);
  extra["sim_rounds"] = std::to_string(options.sim_rounds);
  extra["sim_reuse_steps"] = options.reuse_steps ? "true" : "false";
  if (options.latency_jitter > 0)
    extra["latency_jitter"] = fmt::format("{:g}", options.latency_jitter);
  if (!options.failures.empty()) extra["failure_restart_s"] = std::to_string(options.restart_s);
  return extra;
}

}  // namespace tauplan::sim
