// trainer.cpp: compiles a Plan's round into segments of per-worker ops closed by collectives,
// runs them round after round on real replicas, and keeps the lockstep or concurrent clock.
#include "exec/trainer.hpp"

#include <time.h>
#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include "exec/bucket_stream.hpp"
#include "exec/sampler.hpp"
#include "exec/worker_pool.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {

const char* to_string(Timing timing) {
  return timing == Timing::Lockstep ? "lockstep" : "concurrent";
}

bool parse_timing(const std::string& text, Timing& timing) {
  if (text == "lockstep") {
    timing = Timing::Lockstep;
    return true;
  }
  if (text == "concurrent") {
    timing = Timing::Concurrent;
    return true;
  }
  return false;
}

void describe_run(Measurement& m, const TrainOptions& options, const Dataset& data,
                  const MlpShape& shape) {
  m.engine = options.engine;
  m.dataset = data.name;
  m.dataset_source = data.source;
  m.synthetic = data.synthetic;
  m.mlp = shape.to_string();
  m.parameters = static_cast<long long>(shape.parameters());
  m.learning_rate = options.learning_rate;
  m.seed = options.seed;
  m.target_accuracy = options.target_accuracy;
}

std::vector<double> worker_slowdowns(const model::Plan& plan, const model::Platform& platform) {
  const auto k = static_cast<std::size_t>(plan.workers);
  std::vector<double> slowdowns(k, 1.0);
  if (plan.worker_hosts.size() != k) return slowdowns;
  std::vector<double> speeds;
  for (int host : plan.worker_hosts) {
    if (host < 0 || host >= static_cast<int>(platform.hosts.size())) return slowdowns;
    const double speed = platform.hosts[static_cast<std::size_t>(host)].speed_flops;
    if (!(speed > 0)) return slowdowns;
    speeds.push_back(speed);
  }
  // The reference is the fastest worker host of the whole platform, so that every strategy
  // of a job (single on one host, sync on K) is emulated on the same scale.
  double fastest = *std::max_element(speeds.begin(), speeds.end());
  for (const model::Host& h : platform.hosts)
    if (h.role == model::HostRole::Worker) fastest = std::max(fastest, h.speed_flops);
  for (std::size_t i = 0; i < k; ++i)
    slowdowns[i] = fastest / speeds[i];
  return slowdowns;
}

std::vector<long long> integer_samples(const std::vector<double>& samples) {
  double total = 0;
  for (double s : samples)
    total += std::max(0.0, s);
  const auto target = static_cast<long long>(std::llround(total));
  std::vector<long long> out(samples.size());
  std::vector<std::pair<double, std::size_t>> remainders;
  long long assigned = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double s = std::max(0.0, samples[i]);
    out[i] = static_cast<long long>(std::floor(s));
    assigned += out[i];
    remainders.emplace_back(s - std::floor(s), i);
  }
  // Largest remainder first; ties go to the lower worker index.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t j = 0; assigned < target && j < remainders.size(); ++j, ++assigned)
    ++out[remainders[j].second];
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

namespace {

using Clock = std::chrono::steady_clock;

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

/// Measures one op on the wall clock, or on the thread's CPU clock.
class Stopwatch {
 public:
  explicit Stopwatch(bool cpu)
      : cpu_(cpu), wall0_(Clock::now()), cpu0_(cpu ? thread_cpu_seconds() : 0) {}
  double seconds() const {
    if (cpu_) return thread_cpu_seconds() - cpu0_;
    return std::chrono::duration<double>(Clock::now() - wall0_).count();
  }

 private:
  bool cpu_;
  Clock::time_point wall0_;
  double cpu0_;
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Sleeps until shortly before `instant`, then spins to it (a sleep wakes up to ~100 us late).
void wait_until(Clock::time_point instant) {
  std::this_thread::sleep_until(instant - std::chrono::microseconds(300));
  while (Clock::now() < instant) {
  }
}

constexpr double kFractionEps = 1e-9;

struct ProgramOp {
  model::OpKind kind = model::OpKind::Barrier;
  std::string label;
  std::string trace_name;  // the simulator's span name (trace_event.hpp)
  int worker = -1;
  int steps = 1;
  double fraction = 1;
  bool fold_update = true;
  model::CollectivePayload payload = model::CollectivePayload::Gradients;
  std::size_t slice_begin = 0;
  std::size_t slice_end = 0;
  std::vector<int> group;  // a collective's subgroup of the workers, in order (empty: all K)
  std::vector<std::size_t> preds;
};

struct Segment {
  std::vector<std::size_t> ops;  // compute and update ops, dependency order
  long long sync = -1;           // closing collective or barrier, or -1
};

struct Program {
  std::vector<ProgramOp> ops;
  std::vector<Segment> segments;
  int steps_per_round = 1;  // real SGD steps per worker per round (sample stream stride)
};

bool is_sync(model::OpKind kind) {
  return kind == model::OpKind::Collective || kind == model::OpKind::Barrier;
}

Program compile(const model::Plan& plan, std::size_t parameters, const KeyOrigins& origins) {
  Program program;
  const std::vector<model::OpId> order = plan.topological_order();
  std::map<model::OpId, std::size_t> index;
  for (std::size_t i = 0; i < order.size(); ++i)
    index[order[i]] = i;

  std::vector<bool> has_update(static_cast<std::size_t>(plan.workers), false);
  for (model::OpId v : order) {
    const model::Op& op = plan.op(v);
    if (op.kind == model::OpKind::Update && op.worker >= 0 && op.worker < plan.workers)
      has_update[static_cast<std::size_t>(op.worker)] = true;
  }

  double gradient_bytes = 0;
  for (model::OpId v : order) {
    const model::Op& op = plan.op(v);
    if (op.kind == model::OpKind::Collective && op.payload == model::CollectivePayload::Gradients)
      gradient_bytes += op.bytes;
  }

  std::vector<double> steps_per_worker(static_cast<std::size_t>(plan.workers), 0.0);
  double gradient_done = 0;  // bytes of bucketed gradient collectives already sliced
  for (model::OpId v : order) {
    const model::Op& op = plan.op(v);
    ProgramOp p;
    p.kind = op.kind;
    p.label = op.label.empty() ? model::to_string(op.kind) : op.label;
    p.trace_name = trace_name(op);
    p.worker = op.worker;
    p.steps = std::max(1, op.steps);
    p.fraction = op.step_fraction;
    p.payload = op.payload;
    for (auto pred : plan.predecessors(v))
      p.preds.push_back(index.at(pred));
    if (op.kind == model::OpKind::Transfer || op.kind == model::OpKind::Apply)
      throw InputError(origins.of("strategies"),
                       "a plan of compute, update, collective and barrier ops (exec runs "
                       "transfers and server applies only in asynchronous plans)",
                       "'" + plan.strategy + "' with a " + model::to_string(op.kind) + " op");
    const bool worker_op = op.kind == model::OpKind::Compute || op.kind == model::OpKind::Update;
    if (worker_op && (op.worker < 0 || op.worker >= plan.workers)) p.worker = -1;  // not ours
    if (op.kind == model::OpKind::Compute && p.worker >= 0) {
      p.fold_update = p.steps > 1 || !has_update[static_cast<std::size_t>(p.worker)];
      steps_per_worker[static_cast<std::size_t>(p.worker)] +=
          p.fraction >= 1 - kFractionEps ? p.steps : p.fraction;
    }
    if (op.kind == model::OpKind::Collective) {
      if (!op.group.empty() && static_cast<int>(op.group.size()) != plan.workers) {
        if (plan.overlap)
          throw InputError(origins.of("overlap"),
                           "false for a plan with collectives over subgroups of the workers (exec "
                           "cuts gradient buckets only from collectives over all K)",
                           "true");
        p.group = op.group;
      }
      p.slice_begin = 0;
      p.slice_end = parameters;
      if (plan.overlap && op.payload == model::CollectivePayload::Gradients && gradient_bytes > 0) {
        // Buckets follow the backward pass: the last layers' gradients (the end of the flat
        // vector) are reduced first.
        const auto end_of = [&](double bytes_done) {
          return parameters - static_cast<std::size_t>(std::llround(
                                  static_cast<double>(parameters) * bytes_done / gradient_bytes));
        };
        p.slice_end = end_of(gradient_done);
        gradient_done += op.bytes;
        p.slice_begin = end_of(gradient_done);
      }
    }
    program.ops.push_back(std::move(p));
  }

  double most_steps = 0;
  for (double s : steps_per_worker)
    most_steps = std::max(most_steps, s);
  program.steps_per_round =
      std::max(plan.steps_per_round, static_cast<int>(std::ceil(most_steps - kFractionEps)));
  program.steps_per_round = std::max(1, program.steps_per_round);

  // Segments: runs of worker ops closed by a collective or barrier. A worker op that depends
  // on another worker's op of the open segment starts a new one, so that the workers of one
  // segment are independent and may run in parallel.
  Segment current;
  std::vector<bool> in_current(program.ops.size(), false);
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const ProgramOp& p = program.ops[i];
    if (is_sync(p.kind)) {
      current.sync = static_cast<long long>(i);
      program.segments.push_back(std::move(current));
      current = Segment{};
      std::fill(in_current.begin(), in_current.end(), false);
      continue;
    }
    for (std::size_t pred : p.preds) {
      if (in_current[pred] && program.ops[pred].worker != p.worker) {
        program.segments.push_back(std::move(current));
        current = Segment{};
        std::fill(in_current.begin(), in_current.end(), false);
        break;
      }
    }
    current.ops.push_back(i);
    in_current[i] = true;
  }
  if (!current.ops.empty()) program.segments.push_back(std::move(current));
  return program;
}

struct WorkerState {
  int worker = 0;
  long long samples = 0;
  long long offset = 0;  // in the global step's samples
  double slowdown = 1;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<Sampler> sampler;
  std::vector<float> batch_x;
  std::vector<int> batch_y;
  // Per round.
  int local_step = 0;
  double fraction_done = 0;
  double partial_step_s = 0;
  bool pending_gradient = false;
  bool budget_slept = false;  // budget_steps already slept the emulated slowdown (concurrent)
  double round_busy_s = 0;    // compute + update, emulated
  // Whole run.
  std::vector<double> step_s;  // measured duration of each real step
  double loss_sum = 0;
  long long loss_count = 0;
};

/// One round's clock as its ops run; reset by begin_round.
struct RoundClock {
  std::vector<double> end;  // per op: when it ended (lockstep virtual, or from the round's start)
  double sync_total = 0;    // the round's synchronisation time
  // Concurrent: this process's collectives of the round, (entry, duration) from round start.
  std::vector<double> sync_spans;
  Clock::time_point start;  // the round's start (concurrent: the instant agreed by all)
  double lateness = 0;      // concurrent: how long after `start` this process began
  double offset = 0;        // the round's start from origin_ (concurrent trace time)
};

/// What a run keeps across its rounds: per-round series and the evaluation bookkeeping.
struct RunSeries {
  std::vector<double> round_times, round_compute, round_sync;
  std::vector<double> start_lateness;  // concurrent: per round, the latest process's lateness
  double loss_sum_seen = 0;
  long long loss_count_seen = 0;
  long long budget_evaluated_at = 0;
};

class Runner {
 public:
  Runner(const model::Plan& plan, const model::Platform& platform, const Dataset& data,
         const MlpShape& shape, Communicator& comm, const ReplicaFactory& factory,
         const TrainOptions& options)
      : plan_(plan), data_(data), shape_(shape), comm_(comm), options_(options) {
    validate();
    program_ = compile(plan, shape.parameters(), options.origins);
    sample_stride_ =
        plan.round_budget_s > 0 ? 2LL * program_.steps_per_round + 1 : program_.steps_per_round;
    samples_ = integer_samples(plan.worker_samples);
    slowdowns_ = options.emulate_slowdown ? worker_slowdowns(plan, platform)
                                          : std::vector<double>(samples_.size(), 1.0);
    long long step_samples = 0;
    for (long long s : samples_)
      step_samples += s;
    check_batch(step_samples);
    parameters_ = shape.parameters();

    std::vector<float> initial(parameters_);
    init_parameters(shape, options.seed, initial.data());
    for (int l = 0; l < comm.local_workers(); ++l) {
      auto w = std::make_unique<WorkerState>();
      w->worker = comm.first_local_worker() + l;
      const auto wi = static_cast<std::size_t>(w->worker);
      w->samples = samples_[wi];
      for (std::size_t i = 0; i < wi; ++i)
        w->offset += samples_[i];
      w->slowdown = slowdowns_[wi];
      w->replica = factory(shape, w->worker);
      if (w->replica->memory() != comm.memory())
        throw std::logic_error("exec: replica and communicator live in different memory");
      assert(w->replica->parameter_count() == parameters_);
      w->replica->set_parameters_from_host(initial.data());
      w->sampler = std::make_unique<Sampler>(data.train_size(), step_samples, options.seed);
      w->batch_x.resize(static_cast<std::size_t>(w->samples) *
                        static_cast<std::size_t>(data.features));
      w->batch_y.resize(static_cast<std::size_t>(w->samples));
      local_index_[w->worker] = workers_.size();
      workers_.push_back(std::move(w));
    }
    cpu_clock_ = options.timing == Timing::Lockstep && options.clock == ComputeClock::ThreadCpu &&
                 comm.memory() == MemorySpace::Host;
    if (options.timing == Timing::Concurrent && workers_.size() > 1)
      pool_ = std::make_unique<WorkerPool>(static_cast<int>(workers_.size()));
    if (plan.overlap) set_up_overlap();
  }

  Measurement run();

 private:
  void validate() const;
  void check_batch(long long step_samples) const;
  /// With plan.overlap: the bucket stream when this run can overlap for real (concurrent timing,
  /// one host worker in this process, a communicator that combines from a second thread, no
  /// update folded into a step), and extra["overlap"] saying which way the buckets ran.
  void set_up_overlap();
  /// forward_backward releasing each bucket to the stream as the backward pass finalises it,
  /// the emulated slowdown slept layer by layer before each release; `slept_s` gets the sleeps.
  double compute_streaming(WorkerState& w, double& slept_s);
  /// Runs the op's real step (streaming) or the one before it; records the step once, whole.
  void run_streamed_part(const ProgramOp& op, std::size_t i, long long round, RoundClock& rc);
  bool is_local(int worker) const { return local_index_.count(worker) > 0; }
  WorkerState& local(int worker) { return *workers_[local_index_.at(worker)]; }

  double real_step(WorkerState& w, long long round, bool fold);
  double run_worker_op(const ProgramOp& op, long long round);
  double budget_steps(WorkerState& w, long long round, bool fold);
  double run_sync_op(const ProgramOp& op);
  void run_collective(const ProgramOp& op);
  /// This process's workers taking part in a collective, in its group's order.
  std::vector<WorkerState*> collective_members(const ProgramOp& op);
  /// combine() over all K, or combine_group() over the op's subgroup.
  void combine(const ProgramOp& op, const std::vector<float*>& buffers,
               const std::vector<double>& weights, std::size_t n);
  void emulate(double measured_s, double slowdown) const;
  double evaluate();
  /// Resets the workers and the round clock, snapshots Adasum's parameters, aligns the start.
  void begin_round(long long round, bool adasum_params, RoundClock& rc);
  /// Runs a segment's worker ops one after another (lockstep, or one local worker).
  void run_segment_serial(const Segment& segment, long long round, RoundClock& rc);
  /// Runs a segment's worker ops on the pool, one thread per local worker (concurrent).
  void run_segment_pooled(const Segment& segment, long long round, RoundClock& rc);
  /// Runs the collective or barrier that closes a segment, and times it.
  void run_segment_sync(const Segment& segment, long long round, RoundClock& rc);
  /// Agrees on the round's time, compute and sync across processes; advances the clock.
  void close_round(RoundClock& rc, RunSeries& series);
  /// Evaluates after a round and adds a point to the curve; true when the target is reached.
  bool evaluate_point(long long round, RunSeries& series);
  /// Fills the measurement's totals and medians once the rounds are done.
  void summarize(Clock::time_point run_start, const RunSeries& series);
  /// Fills the per-worker reports, shared across processes, and the time budget's extras.
  void report_workers();
  /// Records a worker op's span (trace time: virtual in lockstep, wall from origin_ otherwise).
  void record(const ProgramOp& op, long long round, double start_s, double duration_s);
  /// Records a collective's span on every local worker's track (barriers are not traced, as in
  /// the simulator); `messages` sent by this process for it.
  void record_sync(const ProgramOp& op, long long round, double start_s, double duration_s,
                   long long messages);

  const model::Plan& plan_;
  const Dataset& data_;
  const MlpShape& shape_;
  Communicator& comm_;
  TrainOptions options_;
  Program program_;
  std::vector<long long> samples_;
  std::vector<double> slowdowns_;
  std::size_t parameters_ = 0;
  std::vector<std::unique_ptr<WorkerState>> workers_;
  std::map<int, std::size_t> local_index_;
  std::unique_ptr<WorkerPool> pool_;
  // Overlap: the stream and, per program op, its bucket's index in the round (-1: not streamed).
  std::unique_ptr<BucketStream> stream_;
  std::vector<long long> stream_bucket_;
  long long buckets_streamed_ = 0, buckets_during_backward_ = 0;
  std::vector<float> round_start_params_;
  std::vector<std::vector<float>> deltas_;
  Measurement out_;
  double clock_s_ = 0;        // training time before the current round
  Clock::time_point origin_;  // the aligned start of training (trace zero in concurrent mode)
  bool tracing_ = false;
  bool cpu_clock_ = false;  // time CPU work by thread CPU time (lockstep, host replicas)
  // Global steps a round spans in the sample stream: the steps per round, or with a time budget
  // the most steps any worker may take (twice the plan's most, plus one).
  long long sample_stride_ = 1;
  long long budget_steps_done_ = 0;  // time budget: the most steps of any worker, cumulated
};

void Runner::validate() const {
  if (plan_.workers < 1 || static_cast<int>(plan_.worker_samples.size()) != plan_.workers)
    throw std::logic_error("exec: plan '" + plan_.strategy + "' has " +
                           std::to_string(plan_.worker_samples.size()) + " worker_samples for " +
                           std::to_string(plan_.workers) + " workers");
  if (comm_.workers() != plan_.workers)
    throw InputError(
        options_.origins.of("workers"),
        std::to_string(comm_.workers()) + " (the workers of the " + comm_.name() + " communicator)",
        std::to_string(plan_.workers));
  if (shape_.inputs() != data_.features || shape_.classes() != data_.classes)
    throw InputError(options_.origins.of("data_dir"),
                     "data with " + std::to_string(shape_.inputs()) + " features and " +
                         std::to_string(shape_.classes()) + " classes (the MLP's)",
                     data_.name + " with " + std::to_string(data_.features) + " and " +
                         std::to_string(data_.classes));
  for (auto v : plan_.op_ids()) {
    const model::Op& op = plan_.op(v);
    if (op.kind == model::OpKind::Collective && !op.group.empty() &&
        static_cast<int>(op.group.size()) != plan_.workers && !comm_.runs_subgroups())
      throw InputError(options_.origins.of("strategies"),
                       "a plan whose collectives span all K workers (the " + comm_.name() +
                           " communicator runs none over a subgroup; the threads and mpi ones do)",
                       "'" + plan_.strategy + "' with '" + op.label + "' over " +
                           std::to_string(op.group.size()) + " of " +
                           std::to_string(plan_.workers) + " workers");
    if (op.kind == model::OpKind::Collective && !op.group.empty() &&
        static_cast<int>(op.group.size()) != plan_.workers &&
        options_.combine == CombineRule::Adasum &&
        (comm_.size() > 1 || op.payload == model::CollectivePayload::Parameters))
      throw InputError(options_.origins.of("combine"),
                       "mean for collectives over subgroups of MPI ranks or of parameters (Adasum "
                       "over a subgroup runs in one process, on gradients: parameter deltas need "
                       "each member's own start of the round)",
                       "adasum");
  }
  if (options_.combine == CombineRule::Adasum && comm_.memory() != MemorySpace::Host &&
      plan_.count(model::OpKind::Collective) > 0) {
    for (auto v : plan_.op_ids())
      if (plan_.op(v).kind == model::OpKind::Collective &&
          plan_.op(v).payload == model::CollectivePayload::Parameters)
        throw InputError(options_.origins.of("combine"),
                         "mean for parameter averaging on the GPU (Adasum of parameter deltas "
                         "runs on host buffers only)",
                         "adasum");
  }
}

void Runner::set_up_overlap() {
  std::string why_not;
  if (options_.timing != Timing::Concurrent)
    why_not =
        "lockstep timing: the plan's DAG composes the buckets with the backward pass on the "
        "virtual clock";
  else if (comm_.memory() != MemorySpace::Host)
    why_not = "device replicas";
  else if (workers_.size() != 1)
    why_not = "more than one worker in this process";
  else if (!comm_.combines_from_second_thread())
    why_not = "the " + comm_.name() + " communicator combines from one thread only";
  else if (plan_.round_budget_s > 0)
    why_not = "time-budget rounds";
  for (const ProgramOp& op : program_.ops)
    if (why_not.empty() && op.kind == model::OpKind::Compute && op.worker >= 0 &&
        is_local(op.worker) && op.fold_update)
      why_not = "an update folded into the step";
  if (!why_not.empty()) {
    out_.extra["overlap"] = "buckets all-reduced after the whole backward pass (" + why_not + ")";
    return;
  }
  stream_bucket_.assign(program_.ops.size(), -1);
  long long buckets = 0;
  for (std::size_t i = 0; i < program_.ops.size(); ++i) {
    const ProgramOp& op = program_.ops[i];
    if (op.kind == model::OpKind::Collective && op.payload == model::CollectivePayload::Gradients &&
        op.group.empty())
      stream_bucket_[i] = buckets++;
  }
  stream_ = std::make_unique<BucketStream>();
  out_.extra["overlap"] =
      "buckets all-reduced on a second thread as the backward pass finalises them";
}

void Runner::check_batch(long long step_samples) const {
  if (step_samples < 1)
    throw InputError(options_.origins.of("batch"), "at least one sample per step",
                     std::to_string(step_samples));
  for (std::size_t k = 0; k < samples_.size(); ++k)
    if (samples_[k] > std::numeric_limits<int>::max())
      throw InputError(options_.origins.of("batch"), "fewer samples per worker step",
                       std::to_string(samples_[k]));
  if (step_samples > data_.train_size())
    throw InputError(options_.origins.of("batch"),
                     "at most " + std::to_string(data_.train_size()) +
                         " samples per step over all workers (the training set of " + data_.name +
                         ")",
                     std::to_string(step_samples));
}

double Runner::budget_steps(WorkerState& w, long long round, bool fold) {
  // Time-budget local SGD: steps while the next one (taken to last as long as the previous)
  // fits in the budget; at least one, at most the sample stride. The clock is the op's own:
  // the lockstep virtual clock (measured x slowdown), or in concurrent timing the wall clock
  // from the op's start, the emulated slowdown's sleeps included.
  const auto start = Clock::now();
  double measured = 0, elapsed = 0, last = 0;
  while (w.local_step < sample_stride_) {
    if (w.local_step > 0 && elapsed + last > plan_.round_budget_s) break;
    const double step = real_step(w, round, fold);
    measured += step;
    if (options_.timing == Timing::Concurrent) {
      emulate(step, w.slowdown);
      elapsed = seconds_between(start, Clock::now());
      last = step * w.slowdown;
    } else {
      last = step * w.slowdown;
      elapsed += last;
    }
  }
  // The concurrent sleeps are taken here, step by step; the caller's emulate() must not repeat
  // them, so it is given the measured time with the sleeps already done (see run_worker_op).
  w.budget_slept = options_.timing == Timing::Concurrent;
  return measured;
}

void Runner::emulate(double measured_s, double slowdown) const {
  if (options_.timing == Timing::Concurrent && slowdown > 1)
    std::this_thread::sleep_for(std::chrono::duration<double>((slowdown - 1) * measured_s));
}

double Runner::real_step(WorkerState& w, long long round, bool fold) {
  const Stopwatch watch(cpu_clock_);
  const long long global_step =
      round * sample_stride_ + std::min<long long>(w.local_step, sample_stride_ - 1);
  ++w.local_step;
  const std::vector<int> idx = w.sampler->indices(global_step, w.offset, w.samples);
  const auto features = static_cast<std::size_t>(data_.features);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(w.batch_x.data() + i * features, data_.train_row(idx[i]), features * sizeof(float));
    w.batch_y[i] = data_.train_y[static_cast<std::size_t>(idx[i])];
  }
  double slept = 0;  // the emulated slowdown, slept inside a streamed step
  const double loss =
      stream_ ? compute_streaming(w, slept)
              : w.replica->compute(w.batch_x.data(), w.batch_y.data(), static_cast<int>(w.samples));
  if (fold)
    w.replica->sgd_step(static_cast<float>(options_.learning_rate));
  else
    w.pending_gradient = true;
  w.loss_sum += loss;
  ++w.loss_count;
  const double measured = watch.seconds() - slept;
  w.step_s.push_back(measured);
  return measured;
}

double Runner::compute_streaming(WorkerState& w, double& slept_s) {
  auto since = Clock::now();
  const auto pace = [&] {
    if (w.slowdown > 1) {
      const auto now = Clock::now();
      std::this_thread::sleep_for(
          std::chrono::duration<double>((w.slowdown - 1) * seconds_between(since, now)));
      since = Clock::now();
      slept_s += seconds_between(now, since);
    }
  };
  const double loss = w.replica->compute_with_ready(
      w.batch_x.data(), w.batch_y.data(), static_cast<int>(w.samples), [&](std::size_t first) {
        pace();
        stream_->mark_ready(first);
      });
  pace();
  stream_->step_done();
  return loss;
}

double Runner::run_worker_op(const ProgramOp& op, long long round) {
  WorkerState& w = local(op.worker);
  double measured = 0;
  if (op.kind == model::OpKind::Compute) {
    if (w.samples == 0) {
      if (stream_) stream_->step_done();  // nothing to compute: every bucket may go
      return 0;
    }
    if (plan_.round_budget_s > 0) {
      measured = budget_steps(w, round, op.fold_update);
    } else if (op.fraction >= 1 - kFractionEps) {
      for (int s = 0; s < op.steps; ++s)
        measured += real_step(w, round, op.fold_update);
    } else {
      // A part of a step (forward, a backward bucket): the real step runs at its first part and
      // its time is shared among the parts by their fractions.
      if (w.fraction_done < kFractionEps) w.partial_step_s = real_step(w, round, op.fold_update);
      measured = w.partial_step_s * op.fraction;
      w.fraction_done += op.fraction;
      if (w.fraction_done >= 1 - kFractionEps) w.fraction_done = 0;
    }
  } else if (op.kind == model::OpKind::Update) {
    if (!w.pending_gradient) return 0;
    const Stopwatch watch(cpu_clock_);
    w.replica->sgd_step(static_cast<float>(options_.learning_rate));
    w.pending_gradient = false;
    measured = watch.seconds();
  }
  // A streamed step slept its slowdown layer by layer (compute_streaming).
  if (!w.budget_slept && !(stream_ && op.kind == model::OpKind::Compute))
    emulate(measured, w.slowdown);
  w.budget_slept = false;
  const double duration = measured * w.slowdown;
  w.round_busy_s += duration;
  return duration;
}

double Runner::run_sync_op(const ProgramOp& op) {
  comm_.barrier();  // S excludes waiting for stragglers
  // The CPU clock times in-process reductions done by this thread only.
  const Stopwatch watch(cpu_clock_ && comm_.size() == 1 && comm_.combines_on_calling_thread());
  run_collective(op);
  return comm_.max_all(watch.seconds());
}

void Runner::run_collective(const ProgramOp& op) {
  if (op.kind == model::OpKind::Barrier) {
    comm_.barrier();
    return;
  }
  const std::size_t n = op.slice_end - op.slice_begin;
  std::vector<WorkerState*> members = collective_members(op);
  std::vector<double> weights;
  for (WorkerState* w : members)
    weights.push_back(
        static_cast<double>(w->samples) *
        (op.payload == model::CollectivePayload::Parameters ? std::max(1, w->local_step) : 1));
  std::vector<float*> buffers;
  if (op.payload == model::CollectivePayload::Gradients) {
    for (WorkerState* w : members)
      buffers.push_back(w->replica->gradients() + op.slice_begin);
    combine(op, buffers, weights, n);
  } else if (options_.combine == CombineRule::Mean) {
    for (WorkerState* w : members)
      buffers.push_back(w->replica->parameters() + op.slice_begin);
    combine(op, buffers, weights, n);
  } else {
    // Adasum of the round's parameter deltas (host memory, checked in validate()).
    deltas_.resize(members.size());
    for (std::size_t l = 0; l < members.size(); ++l) {
      deltas_[l].resize(n);
      const float* p = members[l]->replica->parameters() + op.slice_begin;
      const float* p0 = round_start_params_.data() + op.slice_begin;
      for (std::size_t i = 0; i < n; ++i)
        deltas_[l][i] = p[i] - p0[i];
      buffers.push_back(deltas_[l].data());
    }
    combine(op, buffers, weights, n);
    for (std::size_t l = 0; l < members.size(); ++l) {
      float* p = members[l]->replica->parameters() + op.slice_begin;
      const float* p0 = round_start_params_.data() + op.slice_begin;
      for (std::size_t i = 0; i < n; ++i)
        p[i] = p0[i] + deltas_[l][i];
    }
  }
}

std::vector<WorkerState*> Runner::collective_members(const ProgramOp& op) {
  std::vector<WorkerState*> members;
  if (op.group.empty()) {
    for (auto& w : workers_)
      members.push_back(w.get());
  } else {
    for (int worker : op.group)
      if (is_local(worker)) members.push_back(&local(worker));
  }
  return members;
}

void Runner::combine(const ProgramOp& op, const std::vector<float*>& buffers,
                     const std::vector<double>& weights, std::size_t n) {
  if (op.group.empty())
    comm_.combine(buffers, weights, n, options_.combine);
  else
    comm_.combine_group(op.group, buffers, weights, n, options_.combine);
}

void Runner::record(const ProgramOp& op, long long round, double start_s, double duration_s) {
  if (!tracing_) return;
  TraceEvent e;
  e.name = op.trace_name;
  e.category = op.kind == model::OpKind::Compute ? "compute" : "update";
  e.track = op.worker;
  e.round = round;
  e.start_s = start_s;
  e.duration_s = duration_s;
  e.steps = op.steps;
  out_.trace.push_back(std::move(e));
}

void Runner::record_sync(const ProgramOp& op, long long round, double start_s, double duration_s,
                         long long messages) {
  if (!tracing_ || op.kind != model::OpKind::Collective) return;
  const std::vector<WorkerState*> members = collective_members(op);
  for (const WorkerState* w : members) {
    TraceEvent e;
    e.name = op.trace_name;
    e.category = "comm";
    e.track = w->worker;
    e.round = round;
    e.start_s = start_s;
    e.duration_s = duration_s;
    e.messages = w == members.front() ? messages : 0;  // counted once per process
    out_.trace.push_back(std::move(e));
  }
}

double Runner::evaluate() {
  double accuracy = -1;
  if (comm_.rank() == 0) {
    long long n = data_.test_size();
    if (options_.eval_samples > 0) n = std::min(n, options_.eval_samples);
    const long long hits =
        workers_.front()->replica->correct(data_.test_x.data(), data_.test_y.data(), n);
    accuracy = n > 0 ? static_cast<double>(hits) / static_cast<double>(n) : 0;
  }
  return comm_.max_all(accuracy);
}

void Runner::begin_round(long long round, bool adasum_params, RoundClock& rc) {
  tracing_ = round < options_.trace_rounds;
  for (auto& w : workers_) {
    w->local_step = 0;
    w->fraction_done = 0;
    w->round_busy_s = 0;
  }
  if (adasum_params) {
    round_start_params_.resize(parameters_);
    workers_.front()->replica->get_parameters_to_host(round_start_params_.data());
  }
  std::fill(rc.end.begin(), rc.end.end(), 0.0);
  rc.sync_total = 0;
  rc.sync_spans.clear();
  if (stream_) {
    // The round's gradient buckets, in the order the backward pass finalises them.
    std::vector<BucketStream::Bucket> buckets;
    for (std::size_t i = 0; i < program_.ops.size(); ++i) {
      if (stream_bucket_[i] < 0) continue;
      const ProgramOp& op = program_.ops[i];
      buckets.push_back({op.slice_begin, [this, &op] {
                           const long long before = comm_.messages_sent();
                           run_collective(op);
                           return comm_.messages_sent() - before;
                         }});
    }
    stream_->start_round(std::move(buckets));
  }
  if (options_.timing == Timing::Concurrent) {
    // Every round starts at one agreed instant on every process (not at a barrier's release,
    // which lets ranks go milliseconds apart); lateness is how far past it this one woke.
    rc.start = comm_.agree_round_start();
    wait_until(rc.start);
    rc.lateness = std::max(0.0, seconds_between(rc.start, Clock::now()));
  } else {
    rc.start = Clock::now();
  }
  rc.offset = seconds_between(origin_, rc.start);
}

void Runner::run_segment_serial(const Segment& segment, long long round, RoundClock& rc) {
  const bool concurrent = options_.timing == Timing::Concurrent;
  for (std::size_t i : segment.ops) {
    const ProgramOp& op = program_.ops[i];
    if (op.worker < 0 || !is_local(op.worker)) continue;
    if (stream_ && op.kind == model::OpKind::Compute && op.fraction < 1 - kFractionEps) {
      run_streamed_part(op, i, round, rc);
      continue;
    }
    const auto wall0 = Clock::now();
    const double duration = run_worker_op(op, round);
    double start = 0;
    if (!concurrent) {
      for (std::size_t p : op.preds)
        start = std::max(start, rc.end[p]);
    } else {
      start = seconds_between(rc.start, wall0);
    }
    rc.end[i] = start + duration;
    record(op, round, concurrent ? rc.offset + start : clock_s_ + start, duration);
  }
}

void Runner::run_streamed_part(const ProgramOp& op, std::size_t i, long long round,
                               RoundClock& rc) {
  // The first part of the step runs it whole, releasing the buckets as it goes; the later
  // parts (backward buckets) are already done. The trace shows the step once, as it ran.
  const bool first = local(op.worker).fraction_done < kFractionEps;
  const auto wall0 = Clock::now();
  run_worker_op(op, round);
  const auto wall1 = Clock::now();
  rc.end[i] = seconds_between(rc.start, wall1);
  if (!first || !tracing_) return;
  ProgramOp whole = op;
  whole.trace_name = "w" + std::to_string(op.worker) + " forward+backward (buckets streamed)";
  record(whole, round, rc.offset + seconds_between(rc.start, wall0), seconds_between(wall0, wall1));
}

void Runner::run_segment_pooled(const Segment& segment, long long round, RoundClock& rc) {
  // Concurrent: each local worker runs its ops of the segment on its own thread.
  std::vector<std::vector<std::size_t>> by_worker(workers_.size());
  for (std::size_t i : segment.ops) {
    const ProgramOp& op = program_.ops[i];
    if (op.worker >= 0 && is_local(op.worker)) by_worker[local_index_.at(op.worker)].push_back(i);
  }
  std::vector<double> starts(program_.ops.size(), 0.0);
  pool_->run(static_cast<int>(workers_.size()), [&](int l) {
    for (std::size_t i : by_worker[static_cast<std::size_t>(l)]) {
      const auto wall0 = Clock::now();
      run_worker_op(program_.ops[i], round);
      starts[i] = seconds_between(rc.start, wall0);
      rc.end[i] = seconds_between(rc.start, Clock::now());
    }
  });
  for (const auto& list : by_worker)
    for (std::size_t i : list)
      record(program_.ops[i], round, rc.offset + starts[i], rc.end[i] - starts[i]);
}

void Runner::run_segment_sync(const Segment& segment, long long round, RoundClock& rc) {
  const auto si = static_cast<std::size_t>(segment.sync);
  const ProgramOp& op = program_.ops[si];
  if (options_.timing != Timing::Concurrent) {
    const long long sent_before = comm_.messages_sent();
    double ready = 0;
    for (std::size_t p : op.preds)
      ready = std::max(ready, rc.end[p]);
    ready = comm_.max_all(ready);
    const double duration = run_sync_op(op);
    rc.end[si] = ready + duration;
    rc.sync_total += duration;
    record_sync(op, round, clock_s_ + ready, duration, comm_.messages_sent() - sent_before);
  } else {
    // No barrier: the collective starts when this process's workers are done, or (a streamed
    // bucket) ran on the stream's thread as soon as the backward pass had finalised it.
    Clock::time_point enter, leave;
    long long messages = 0;
    if (stream_ && stream_bucket_[si] >= 0) {
      const BucketStream::Done done = stream_->wait(static_cast<std::size_t>(stream_bucket_[si]));
      enter = done.enter;
      leave = done.leave;
      messages = done.messages;
      ++buckets_streamed_;
      if (done.during_backward) ++buckets_during_backward_;
    } else {
      if (stream_) stream_->wait_all();  // MPI is called from one thread at a time
      const long long sent_before = comm_.messages_sent();
      enter = Clock::now();
      run_collective(op);
      leave = Clock::now();
      messages = comm_.messages_sent() - sent_before;
    }
    const double start = seconds_between(rc.start, enter);
    const double duration = seconds_between(enter, leave);
    rc.end[si] = start + duration;
    // A process with no member of a subgroup's collective enters it at "-1": close_round
    // takes the critical process among the members.
    const bool member = op.group.empty() || !collective_members(op).empty();
    rc.sync_spans.push_back(member ? start : -1.0);
    rc.sync_spans.push_back(member ? duration : 0.0);
    record_sync(op, round, rc.offset + start, duration, messages);
  }
}

void Runner::close_round(RoundClock& rc, RunSeries& series) {
  const bool budget = plan_.round_budget_s > 0;
  const long long spr = program_.steps_per_round;
  double busy = 0;
  for (auto& w : workers_)
    busy = std::max(busy, budget ? w->round_busy_s / std::max(1, w->local_step) : w->round_busy_s);
  double round_s = 0;
  if (options_.timing != Timing::Concurrent) {
    for (double e : rc.end)
      round_s = std::max(round_s, e);
    round_s = comm_.max_all(round_s);
    busy = comm_.max_all(busy);
  } else {
    // One gather per round, after the round: [end, busy, (entry, duration) per collective].
    std::vector<double> mine{seconds_between(rc.start, Clock::now()), busy, rc.lateness};
    mine.insert(mine.end(), rc.sync_spans.begin(), rc.sync_spans.end());
    const std::vector<double> all = comm_.all_gather(mine);
    const std::size_t stride = mine.size();
    busy = 0;
    double latest = 0;
    for (std::size_t p = 0; p < all.size(); p += stride) {
      round_s = std::max(round_s, all[p]);
      busy = std::max(busy, all[p + 1]);
      latest = std::max(latest, all[p + 2]);
    }
    series.start_lateness.push_back(latest);
    for (std::size_t c = 3; c < stride; c += 2) {
      std::size_t critical = 0;  // the process that entered this collective last
      for (std::size_t p = 0; p < all.size(); p += stride)
        if (all[p + c] > all[critical + c]) critical = p;
      rc.sync_total += all[critical + c + 1];
    }
  }
  series.round_times.push_back(round_s);
  // Per step: of the busiest worker (with a budget: the slowest step, each worker's own count).
  series.round_compute.push_back(budget ? busy : busy / static_cast<double>(spr));
  series.round_sync.push_back(rc.sync_total);
  clock_s_ += round_s;
  if (budget) {
    double most = 0;
    for (auto& w : workers_)
      most = std::max(most, static_cast<double>(w->local_step));
    budget_steps_done_ += static_cast<long long>(comm_.max_all(most));
  }
}

bool Runner::evaluate_point(long long round, RunSeries& series) {
  const long long spr = program_.steps_per_round;
  series.budget_evaluated_at = budget_steps_done_;
  const auto eval_start = Clock::now();
  AccuracyPoint point;
  point.round = round + 1;
  point.steps = plan_.round_budget_s > 0 ? budget_steps_done_ : (round + 1) * spr;
  point.time_s = clock_s_;
  point.accuracy = evaluate();
  double loss_sum = 0;
  long long loss_count = 0;
  for (auto& w : workers_) {
    loss_sum += w->loss_sum;
    loss_count += w->loss_count;
  }
  point.train_loss = loss_count > series.loss_count_seen
                         ? (loss_sum - series.loss_sum_seen) /
                               static_cast<double>(loss_count - series.loss_count_seen)
                         : 0;
  series.loss_sum_seen = loss_sum;
  series.loss_count_seen = loss_count;
  out_.curve.push_back(point);
  out_.final_accuracy = point.accuracy;
  out_.eval_wall_s += seconds_between(eval_start, Clock::now());
  out_.rounds = round + 1;
  if (options_.target_accuracy > 0 && point.accuracy >= options_.target_accuracy) {
    out_.reached = true;
    return true;
  }
  return false;
}

void Runner::summarize(Clock::time_point run_start, const RunSeries& series) {
  const long long spr = program_.steps_per_round;
  out_.steps = plan_.round_budget_s > 0 ? budget_steps_done_ : out_.rounds * spr;
  out_.steps_per_round = static_cast<int>(spr);
  out_.clock = cpu_clock_ ? "thread-cpu" : "wall";
  out_.total_s = clock_s_;
  out_.round_median_s = median(series.round_times);
  out_.round_mean_s = out_.rounds > 0 ? clock_s_ / static_cast<double>(out_.rounds) : 0;
  out_.compute_median_s = median(series.round_compute);
  out_.compute_s = mean(series.round_compute);
  out_.sync_s = median(series.round_sync);
  out_.sync_mean_s = mean(series.round_sync);
  out_.wall_s = seconds_between(run_start, Clock::now());
  if (!series.start_lateness.empty() && comm_.agrees_round_start()) {
    // How late the latest process started each round past the agreed instant, each on its own
    // clock (the agreement arriving after the instant, wake-up jitter; an error in the clock
    // offsets does not show here, it moves the instant itself).
    out_.extra["round_start"] = "agreed instant (clock offsets to rank 0)";
    out_.extra["round_start_lateness_median_s"] = median(series.start_lateness);
    out_.extra["round_start_lateness_max_s"] =
        *std::max_element(series.start_lateness.begin(), series.start_lateness.end());
  }
  if (stream_) {
    // Measured evidence of overlap: the share of streamed buckets (least over the processes)
    // whose collective entered before this process's backward pass had ended.
    const double share = buckets_streamed_ > 0 ? static_cast<double>(buckets_during_backward_) /
                                                     static_cast<double>(buckets_streamed_)
                                               : 0.0;
    out_.extra["buckets_entered_during_backward"] = -comm_.max_all(-share);
  }
  if (options_.keep_parameters) {
    out_.final_parameters.resize(parameters_);
    workers_.front()->replica->get_parameters_to_host(out_.final_parameters.data());
  }
}

void Runner::report_workers() {
  // Per-worker C(b): medians of this process's workers, then shared so every rank reports all.
  const std::vector<std::string> hosts = comm_.process_hosts();  // MPI: one worker per rank
  out_.per_worker.resize(samples_.size());
  for (std::size_t k = 0; k < samples_.size(); ++k) {
    WorkerReport& r = out_.per_worker[k];
    r.worker = static_cast<int>(k);
    r.host = k < plan_.worker_hosts.size() ? plan_.worker_hosts[k] : -1;
    r.slowdown = slowdowns_[k];
    r.samples = samples_[k];
    double measured = -1;
    long long steps = -1;
    if (is_local(r.worker)) {
      WorkerState& w = local(r.worker);
      measured = median(w.step_s);
      steps = static_cast<long long>(w.step_s.size());
    }
    r.measured_median_s = comm_.max_all(measured);
    r.steps = static_cast<long long>(comm_.max_all(static_cast<double>(steps)));
    r.compute_median_s = r.measured_median_s * r.slowdown;
    if (k < hosts.size() && comm_.local_workers() == 1) r.ran_on = hosts[k];
  }
  if (plan_.round_budget_s > 0) {
    // The real per-worker step counts the budget gave, mean per round.
    std::vector<double> steps;
    for (const WorkerReport& r : out_.per_worker)
      steps.push_back(
          out_.rounds > 0 ? static_cast<double>(r.steps) / static_cast<double>(out_.rounds) : 0.0);
    out_.extra["round_budget_s"] = plan_.round_budget_s;
    out_.extra["local_steps_mean"] = steps;
    out_.extra["budget_clock"] = options_.timing == Timing::Lockstep
                                     ? "lockstep virtual clock (measured x slowdown)"
                                     : "wall clock (concurrent, emulated slowdown slept)";
  }
}

Measurement Runner::run() {
  const auto run_start = Clock::now();
  const long long spr = program_.steps_per_round;
  // A time budget's steps are known only as they are taken: its rounds run until max_steps
  // steps (of its busiest worker), evaluated every eval_every of them.
  const bool budget = plan_.round_budget_s > 0;
  const long long max_rounds = budget ? std::max(1LL, options_.max_steps)
                                      : std::max(1LL, (options_.max_steps + spr - 1) / spr);
  const long long eval_every = std::max(1LL, (options_.eval_every_steps + spr - 1) / spr);
  const bool adasum_params =
      options_.combine == CombineRule::Adasum && comm_.memory() == MemorySpace::Host;
  const bool concurrent = options_.timing == Timing::Concurrent;

  RunSeries series;
  RoundClock rc;
  rc.end.assign(program_.ops.size(), 0.0);

  comm_.align_start();  // every process of the run, servers included
  origin_ = Clock::now();
  for (long long round = 0; round < max_rounds; ++round) {
    begin_round(round, adasum_params, rc);
    for (const Segment& segment : program_.segments) {
      if (!concurrent || !pool_)
        run_segment_serial(segment, round, rc);
      else
        run_segment_pooled(segment, round, rc);
      if (segment.sync >= 0) run_segment_sync(segment, round, rc);
    }
    close_round(rc, series);

    const bool last =
        round + 1 == max_rounds || (budget && budget_steps_done_ >= options_.max_steps);
    const bool due =
        budget ? budget_steps_done_ - series.budget_evaluated_at >= options_.eval_every_steps
               : (round + 1) % eval_every == 0;
    if ((due || last) && evaluate_point(round, series)) break;  // the target accuracy is reached
    out_.rounds = round + 1;
    if (last) break;
  }

  comm_.finish();  // server processes leave their serving loop
  summarize(run_start, series);
  report_workers();
  return out_;
}

}  // namespace

Measurement train(const model::Plan& plan, const model::Platform& platform, const Dataset& data,
                  const MlpShape& shape, Communicator& comm, const ReplicaFactory& factory,
                  const TrainOptions& options) {
  Runner runner(plan, platform, data, shape, comm, factory, options);
  Measurement m = runner.run();
  m.strategy = plan.strategy;
  m.workers = plan.workers;
  m.tau = plan.tau;
  m.batch = plan.batch;
  m.split = model::to_string(plan.split);
  m.collective = plan.collective;
  m.communicator = comm.name();
  for (int j = 0;
       j < comm.size() - comm.workers() && j < static_cast<int>(plan.server_hosts.size()); ++j) {
    const int host = plan.server_hosts[static_cast<std::size_t>(j)];
    m.server_hosts.push_back(host >= 0 && host < static_cast<int>(platform.hosts.size())
                                 ? platform.hosts[static_cast<std::size_t>(host)].name
                                 : "server " + std::to_string(j));
  }
  describe_run(m, options, data, shape);
  m.timing = options.timing;
  m.combine = options.combine;
  for (std::size_t k = 0; k < m.per_worker.size(); ++k) {
    const int host = m.per_worker[k].host;
    if (host >= 0 && host < static_cast<int>(platform.hosts.size()))
      m.per_worker[k].host_name = platform.hosts[static_cast<std::size_t>(host)].name;
    if (m.per_worker[k].slowdown != 1.0) m.emulated = true;
  }
  return m;
}

}  // namespace tauplan::exec
