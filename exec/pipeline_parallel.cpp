// pipeline_parallel.cpp: the model-parallel step (schedules, sends, data all-reduce), training
// loop, evaluation and reports.
#include "exec/pipeline_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/layout_program.hpp"
#include "exec/rank_threads.hpp"
#include "exec/sampler.hpp"
#include "exec/tensor_parallel.hpp"
#include "model/base/error.hpp"
#include "model/base/statistics.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::exec {
namespace {

// One tag per kind of message; messages of one kind between two ranks keep their order.
constexpr int kTagTensor = 1, kTagForward = 2, kTagBackward = 3, kTagData = 4, kTagEval = 5,
              kTagControl = 6, kTagReport = 7, kTagGather = 8, kTagSlices = 9;

/// Softmax cross-entropy of `n` rows of logits: returns the summed loss and writes
/// d(loss)/d(logits) scaled by `scale` (1 / the global batch), as exec/mlp.cpp computes it.
double softmax_cross_entropy(const float* logits, const int* labels, int n, int classes,
                             float scale, std::vector<float>& gradient) {
  gradient.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(classes));
  double loss = 0;
  for (int i = 0; i < n; ++i) {
    const float* z = logits + static_cast<std::size_t>(i) * static_cast<std::size_t>(classes);
    float* d = gradient.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(classes);
    const float top = *std::max_element(z, z + classes);
    double sum = 0;
    for (int c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(z[c] - top));
    const int label = labels[i];
    loss += std::log(sum) - static_cast<double>(z[label] - top);
    for (int c = 0; c < classes; ++c)
      d[c] = static_cast<float>(std::exp(static_cast<double>(z[c] - top)) / sum) * scale;
    d[label] -= scale;
  }
  return loss;
}

/// The Plan a run executes: the caller's (ModelParallelOptions::plan), else the layout's Plan
/// lowered from the options.
class PlanInUse {
 public:
  explicit PlanInUse(const ModelParallelOptions& options) {
    if (!options.plan) owned_ = mlp_layout_plan(options);
    plan_ = options.plan ? options.plan : &*owned_;
  }
  PlanInUse(const PlanInUse&) = delete;
  PlanInUse& operator=(const PlanInUse&) = delete;
  const model::Plan& plan() const { return *plan_; }

 private:
  std::optional<model::Plan> owned_;
  const model::Plan* plan_ = nullptr;
};

/// One rank of the mesh: its coordinates, its stage shard, its program (its part of the Plan,
/// exec/layout_program.hpp), the handlers of its passes' compute (run_program makes the
/// sends) and the step that runs them and its data group's reduction.
class RankEngine final : private PassHandlers {
 public:
  RankEngine(const ModelParallelOptions& options, PeerGroup& peers, const model::Plan& plan)
      : o_(options),
        peers_(peers),
        t_i_(peers.rank() % options.tensor),
        d_i_((peers.rank() / options.tensor) % options.data),
        p_i_(peers.rank() / (options.tensor * options.data)),
        stage_(make_stage(options, p_i_, t_i_)),
        program_(rank_program(plan, peers.rank())) {
    for (int k = 0; k < o_.tensor; ++k)
      group_.members.push_back(rank_of(d_i_, k, p_i_));
    group_.peers = &peers_;
    group_.tag = kTagTensor;
    group_.comm_seconds = &comm_s_;
    group_.allreduces = &allreduces_;
    check_program(plan);
  }

  int rank_of(int d, int t, int p) const { return t + o_.tensor * (d + o_.data * p); }
  bool first_stage() const { return p_i_ == 0; }
  bool last_stage() const { return p_i_ == o_.pipeline - 1; }
  int data_index() const { return d_i_; }
  int tensor_index() const { return t_i_; }
  int stage_index() const { return p_i_; }
  TensorParallelStage& stage() { return stage_; }
  long long replica_batch() const { return o_.batch / o_.data; }
  /// The rank that reports losses and accuracies (replica 0, tensor rank 0, last stage).
  int reporter() const { return rank_of(0, 0, o_.pipeline - 1); }

  /// Forward and backward of this replica's batch (rows of x and y: replica_batch()), the passes
  /// in the order of the rank's program, with gradients summed over the program's reductions
  /// (the data group). Returns this rank's summed loss (last stage) or 0.
  double step(const float* x, const int* y) {
    comm_s_ = 0;
    allreduces_ = 0;
    messages_ = 0;
    stage_.zero_gradients();
    const std::size_t m = static_cast<std::size_t>(o_.micro_batches);
    stashes_.assign(m, {});
    logit_gradients_.assign(m, {});
    step_x_ = x;
    step_y_ = y;
    loss_ = 0;
    executed_.clear();
    run_program(program_, *this,
                ProgramTransfers{&peers_, group_.members, t_i_, kTagForward, kTagBackward,
                                 kTagSlices, &comm_s_, &messages_});
    return loss_;
  }

  /// Replica 0 pushes `count` rows through its pipeline; the reporter sends the accuracy to
  /// every rank. Every rank returns it.
  double accuracy(const Dataset& data, long long count) {
    long long correct = 0;
    if (d_i_ == 0) {
      const int chunk = 1000, classes = o_.shape.classes();
      std::vector<float> buffer, output;
      TensorParallelStage::Stash stash;
      for (long long start = 0; start < count; start += chunk) {
        const int n = static_cast<int>(std::min<long long>(chunk, count - start));
        const float* in = nullptr;
        if (first_stage()) {
          in = data.test_x.data() +
               static_cast<std::size_t>(start) * static_cast<std::size_t>(data.features);
        } else {
          receive(rank_of(0, t_i_, p_i_ - 1), buffer, n * stage_.input_width(), kTagEval);
          in = buffer.data();
        }
        stage_.forward(in, n, stash, output, group_);
        if (!last_stage()) {
          peers_.send(rank_of(0, t_i_, p_i_ + 1), output.data(), output.size(), kTagEval);
          continue;
        }
        for (int i = 0; i < n; ++i) {
          const float* z =
              output.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(classes);
          const long long best = std::max_element(z, z + classes) - z;
          if (best == data.test_y[static_cast<std::size_t>(start + i)]) ++correct;
        }
      }
    }
    float accuracy = static_cast<float>(static_cast<double>(correct) / static_cast<double>(count));
    if (peers_.rank() == reporter()) {
      for (int r = 0; r < peers_.size(); ++r)
        if (r != reporter()) peers_.send(r, &accuracy, 1, kTagControl);
    } else {
      peers_.recv(reporter(), &accuracy, 1, kTagControl);
    }
    return static_cast<double>(accuracy);
  }

  double comm_s() const { return comm_s_; }
  /// (forward?, micro-batch) of the last step's passes, in the order they ran.
  const std::vector<std::pair<bool, int>>& executed() const { return executed_; }
  long long allreduces() const { return allreduces_; }
  long long messages() const { return messages_; }

 private:
  int micro_rows() const { return static_cast<int>(replica_batch() / o_.micro_batches); }

  std::vector<float>& prepare(const ProgramPass& pass) override {
    executed_.emplace_back(pass.forward, pass.micro_batch);
    const int width = pass.forward ? stage_.input_width() : stage_.output_width();
    buffer_.resize(static_cast<std::size_t>(micro_rows()) * static_cast<std::size_t>(width));
    return buffer_;
  }

  /// A forward from the step's samples (first stage) or the received activations, the loss on
  /// the last stage; a backward from the loss's gradient (last stage) or the received one.
  const std::vector<float>& run(const ProgramPass& pass, bool received) override {
    const std::size_t jj = static_cast<std::size_t>(pass.micro_batch);
    const int n = micro_rows();
    const std::size_t rows = jj * static_cast<std::size_t>(n);
    if (pass.forward) {
      const float* in =
          received ? buffer_.data() : step_x_ + rows * static_cast<std::size_t>(o_.shape.inputs());
      stage_.forward(in, n, stashes_[jj], output_, group_);
      if (last_stage())
        loss_ += softmax_cross_entropy(output_.data(), step_y_ + rows, n, o_.shape.classes(),
                                       1.0f / static_cast<float>(o_.batch), logit_gradients_[jj]);
      return output_;
    }
    const float* gradient = received ? buffer_.data() : logit_gradients_[jj].data();
    stage_.backward(gradient, n, stashes_[jj], first_stage() ? nullptr : &input_gradient_, group_);
    stashes_[jj] = {};
    return input_gradient_;
  }

  /// The data group's sum (the loss is already scaled by 1 / the global batch).
  void reduce(const std::vector<int>& group) override {
    allreduce_sum(peers_, group, stage_.gradients(), stage_.parameter_count(), kTagData);
  }

  static TensorParallelStage make_stage(const ModelParallelOptions& o, int stage, int tensor) {
    const std::vector<int> layers = model::stage_layers(o.shape.layers(), o.pipeline);
    int first = 0;
    for (int r = 0; r < stage; ++r)
      first += layers[static_cast<std::size_t>(r)];
    return TensorParallelStage(o.shape, first, first + layers[static_cast<std::size_t>(stage)],
                               tensor, o.tensor);
  }

  /// The program must place this rank where exec's rank order does (check_place) and charge what
  /// its shard runs, before any message: each pass's tensor all-reduces over its tensor group,
  /// whole sends (no all-gather), and its data group's reduction. A Plan of another layout is
  /// refused here on every rank it misplaces (a refusal after the first message would leave the
  /// other ranks waiting).
  void check_program(const model::Plan& plan) const {
    const MeshRank place{o_.data, o_.tensor, o_.pipeline, o_.micro_batches, peers_.rank()};
    const auto wrong = [&](const std::string& what) {
      refuse_program("layout trainer", plan, place, what);
    };
    std::vector<std::vector<int>> reductions;
    if (o_.data > 1) reductions.push_back(place.data_group());
    check_place("layout trainer", plan, program_, place, reductions);
    for (const ProgramPass& pass : program_.passes) {
      const long long runs =
          pass.forward ? stage_.forward_allreduces() : stage_.backward_allreduces(!first_stage());
      if (pass.tensor_allreduces != runs)
        wrong(fmt::format("a pass charged {} tensor all-reduces, where the shard runs {}",
                          pass.tensor_allreduces, runs));
      if (pass.tensor_allreduces > 0 && pass.tensor_group != group_.members)
        wrong("a tensor all-reduce over another group");
      if (pass.send_slice || pass.gather_sends > 0)
        wrong("its stage sends are slices that the receivers all-gather (a transformer's)");
    }
  }

  void receive(int from, std::vector<float>& buffer, int n, int tag) {
    buffer.resize(static_cast<std::size_t>(n));
    timed_receive(peers_, from, buffer, tag, comm_s_);
  }

  const ModelParallelOptions& o_;
  PeerGroup& peers_;
  int t_i_, d_i_, p_i_;
  TensorParallelStage stage_;
  RankProgram program_;
  std::vector<std::pair<bool, int>> executed_;
  TensorGroup group_;
  // The step's state, for the pass handlers: its samples, each micro-batch's stash and loss
  // gradient, the received input, the output and input gradient to send.
  const float* step_x_ = nullptr;
  const int* step_y_ = nullptr;
  std::vector<TensorParallelStage::Stash> stashes_;
  std::vector<std::vector<float>> logit_gradients_;
  std::vector<float> buffer_, output_, input_gradient_;
  double loss_ = 0;
  double comm_s_ = 0;
  long long allreduces_ = 0;
  long long messages_ = 0;
};

}  // namespace

model::Plan mlp_layout_plan(const ModelParallelOptions& o) {
  check_model_parallel(o);
  model::Workload workload;
  workload.name = "mlp " + o.shape.to_string();
  workload.source = o.origins.file;
  workload.mlp_widths = o.shape.widths;
  workload.parameters = static_cast<double>(o.shape.parameters());
  for (int l = 0; l < o.shape.layers(); ++l)
    workload.flop_per_sample += 6.0 * o.shape.widths[static_cast<std::size_t>(l)] *
                                o.shape.widths[static_cast<std::size_t>(l) + 1];
  return layout_plan(workload, LayoutShape{o.data, o.tensor, o.pipeline, o.micro_batches,
                                           o.schedule, o.batch, o.origins});
}

std::string ModelParallelOptions::label() const {
  std::string label = fmt::format("d{} t{} p{} m{}", data, tensor, pipeline, micro_batches);
  if (pipeline > 1) label += std::string(" ") + model::to_string(schedule);
  return label;
}

void check_model_parallel(const ModelParallelOptions& o) {
  const int layers = o.shape.layers();
  if (o.data < 1 || o.tensor < 1 || o.pipeline < 1 || o.micro_batches < 1)
    throw InputError(o.origins.of("workers"), "data, tensor, pipeline and micro-batch counts >= 1");
  if (o.pipeline > layers)
    throw InputError(
        o.origins.of("pipeline_parallel"),
        fmt::format("at most the {} layers of the MLP {}", layers, o.shape.to_string()),
        std::to_string(o.pipeline));
  const std::vector<int> counts = model::stage_layers(layers, o.pipeline);
  int first = 0;
  for (int count : counts) {
    try {
      TensorParallelStage(o.shape, first, first + count, 0, o.tensor);
    } catch (const std::invalid_argument& e) {
      throw InputError(
          o.origins.of("tensor_parallel"),
          fmt::format("a divisor of the split layers' widths of {}", o.shape.to_string()),
          fmt::format("{} ({})", o.tensor, e.what()));
    }
    first += count;
  }
  if (o.batch % (static_cast<long long>(o.data) * o.micro_batches) != 0)
    throw InputError(o.origins.of("micro_batches"),
                     fmt::format("a divisor of the {} samples each replica takes (batch {} / "
                                 "data_parallel {})",
                                 o.batch / o.data, o.batch, o.data),
                     std::to_string(o.micro_batches));
}

nlohmann::json ModelParallelReport::to_json() const {
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [step, accuracy_at] : accuracy_curve)
    curve.push_back({{"step", step}, {"accuracy", accuracy_at}});
  return {{"transport", transport},
          {"layout", label},
          {"timing", "concurrent: every rank on the wall clock at once (steady_clock)"},
          {"steps", steps},
          {"reached_target", reached_target},
          {"accuracy", accuracy},
          {"train_loss", train_loss},
          {"wall_s", wall_s},
          {"step_s", step_s},
          {"ranks", ranks_json(ranks)},
          {"accuracy_curve", curve}};
}

ModelParallelReport train_model_parallel(const ModelParallelOptions& options, const Dataset& data,
                                         PeerGroup& peers) {
  check_model_parallel(options);
  if (peers.size() != options.workers())
    throw InputError(
        options.origins.of("workers"),
        fmt::format("as many ranks as data x tensor x pipeline ({})", options.workers()),
        std::to_string(peers.size()));
  const PlanInUse plan(options);
  RankEngine engine(options, peers, plan.plan());
  std::vector<float> full(options.shape.parameters());
  init_parameters(options.shape, options.seed, full.data());
  engine.stage().load(full.data());

  const long long replica = engine.replica_batch();
  const int features = data.features;
  Sampler sampler(data.train_size(), options.batch, options.seed);
  const long long test_count =
      options.test_limit > 0 ? std::min(options.test_limit, data.test_size()) : data.test_size();
  ModelParallelReport report;
  report.transport = peers.name();
  report.label = options.label();
  std::vector<double> step_times, comm_times, compute_times;
  std::vector<float> x(static_cast<std::size_t>(replica) * static_cast<std::size_t>(features));
  std::vector<int> y(static_cast<std::size_t>(replica));
  long long allreduces = 0, messages = 0;
  for (long long s = 0; s < options.max_steps; ++s) {
    const std::vector<int> rows = sampler.indices(s, engine.data_index() * replica, replica);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (engine.first_stage())
        std::copy(data.train_row(rows[i]), data.train_row(rows[i]) + features,
                  x.begin() + static_cast<long>(i) * features);
      y[i] = data.train_y[static_cast<std::size_t>(rows[i])];
    }
    const auto start = Clock::now();
    const double loss = engine.step(x.data(), y.data());
    engine.stage().sgd_step(options.learning_rate);
    const double step_s = seconds_since(start);
    step_times.push_back(step_s);
    comm_times.push_back(engine.comm_s());
    compute_times.push_back(step_s - engine.comm_s());
    allreduces = engine.allreduces();
    messages = engine.messages();
    report.wall_s += step_s;
    report.steps = s + 1;
    if (peers.rank() == engine.reporter()) report.train_loss = loss / static_cast<double>(replica);
    const bool evaluate = (s + 1) % options.eval_every == 0 || s + 1 == options.max_steps;
    if (!evaluate) continue;
    report.accuracy = engine.accuracy(data, test_count);
    report.accuracy_curve.push_back({s + 1, report.accuracy});
    report.curve_wall_s.push_back(report.wall_s);
    if (options.target_accuracy > 0 && report.accuracy >= options.target_accuracy) {
      report.reached_target = true;
      break;
    }
  }

  // Every rank's medians and per-step times to rank 0.
  RankTimes mine;
  mine.rank = peers.rank();
  mine.data_index = engine.data_index();
  mine.tensor_index = engine.tensor_index();
  mine.stage = engine.stage_index();
  mine.step_s = model::median(step_times);
  mine.compute_s = model::median(compute_times);
  mine.comm_s = model::median(comm_times);
  mine.tensor_allreduces = allreduces;
  mine.messages = messages;
  const std::size_t steps = step_times.size();
  std::vector<float> packed = {static_cast<float>(mine.step_s), static_cast<float>(mine.compute_s),
                               static_cast<float>(mine.comm_s),
                               static_cast<float>(mine.tensor_allreduces),
                               static_cast<float>(mine.messages)};
  for (double t : step_times)
    packed.push_back(static_cast<float>(t));
  float loss = static_cast<float>(report.train_loss);
  if (peers.rank() == engine.reporter() && engine.reporter() != 0)
    peers.send(0, &loss, 1, kTagReport);
  if (peers.rank() != 0) {
    peers.send(0, packed.data(), packed.size(), kTagReport);
    peers.barrier();
    return report;
  }
  if (engine.reporter() != 0) peers.recv(engine.reporter(), &loss, 1, kTagReport);
  report.train_loss = static_cast<double>(loss);
  std::vector<double> slowest(step_times);
  report.ranks.push_back(mine);
  for (int r = 1; r < peers.size(); ++r) {
    std::vector<float> theirs(5 + steps);
    peers.recv(r, theirs.data(), theirs.size(), kTagReport);
    RankTimes t;
    t.rank = r;
    t.tensor_index = r % options.tensor;
    t.data_index = (r / options.tensor) % options.data;
    t.stage = r / (options.tensor * options.data);
    t.step_s = static_cast<double>(theirs[0]);
    t.compute_s = static_cast<double>(theirs[1]);
    t.comm_s = static_cast<double>(theirs[2]);
    t.tensor_allreduces = std::llround(theirs[3]);
    t.messages = std::llround(theirs[4]);
    for (std::size_t i = 0; i < steps; ++i)
      slowest[i] = std::max(slowest[i], static_cast<double>(theirs[5 + i]));
    report.ranks.push_back(t);
  }
  report.step_s = model::median(slowest);
  peers.barrier();
  return report;
}

ModelParallelReport train_model_parallel_threads(const ModelParallelOptions& options,
                                                 const Dataset& data) {
  check_model_parallel(options);
  const PlanInUse plan(options);
  ModelParallelOptions shared = options;
  shared.plan = &plan.plan();
  ThreadPeerHub hub(options.workers());
  ModelParallelReport report;
  on_threads(
      options.workers(),
      [&](int r) {
        ModelParallelReport mine = train_model_parallel(shared, data, hub.peer(r));
        if (r == 0) report = std::move(mine);
      },
      [&hub] { hub.abort(); });
  return report;
}

StepGradients step_gradients(const ModelParallelOptions& options,
                             const std::vector<float>& parameters, const float* x, const int* y,
                             PeerGroup& peers) {
  check_model_parallel(options);
  const PlanInUse plan(options);
  RankEngine engine(options, peers, plan.plan());
  engine.stage().load(parameters.data());
  const long long replica = engine.replica_batch();
  const std::size_t offset = static_cast<std::size_t>(engine.data_index() * replica);
  const double loss =
      engine.step(x + offset * static_cast<std::size_t>(options.shape.inputs()), y + offset);
  StepGradients result;
  result.passes = engine.executed();
  result.gradients.assign(options.shape.parameters(), 0.0f);
  if (engine.data_index() == 0) engine.stage().add_gradients_to(result.gradients.data());
  std::vector<int> everyone(static_cast<std::size_t>(peers.size()));
  for (int r = 0; r < peers.size(); ++r)
    everyone[static_cast<std::size_t>(r)] = r;
  allreduce_sum(peers, everyone, result.gradients.data(), result.gradients.size(), kTagGather);
  // Loss: each replica's last stage, tensor rank 0, holds its summed loss.
  std::vector<float> counts(static_cast<std::size_t>(3 * peers.size()), 0.0f);
  const std::size_t me = static_cast<std::size_t>(3 * peers.rank());
  counts[me] = engine.last_stage() && engine.tensor_index() == 0 ? static_cast<float>(loss) : 0;
  counts[me + 1] = static_cast<float>(engine.allreduces());
  counts[me + 2] = static_cast<float>(engine.messages());
  allreduce_sum(peers, everyone, counts.data(), counts.size(), kTagGather);
  for (int r = 0; r < peers.size(); ++r) {
    const std::size_t at = static_cast<std::size_t>(3 * r);
    result.loss += static_cast<double>(counts[at]);
    result.tensor_allreduces.push_back(std::llround(counts[at + 1]));
    result.messages.push_back(std::llround(counts[at + 2]));
  }
  result.loss /= static_cast<double>(options.batch);
  return result;
}

StepGradients step_gradients_threads(const ModelParallelOptions& options,
                                     const std::vector<float>& parameters, const float* x,
                                     const int* y) {
  check_model_parallel(options);
  const PlanInUse plan(options);
  ModelParallelOptions shared = options;
  shared.plan = &plan.plan();
  ThreadPeerHub hub(options.workers());
  StepGradients result;
  on_threads(
      options.workers(),
      [&](int r) {
        StepGradients mine = step_gradients(shared, parameters, x, y, hub.peer(r));
        if (r == 0) result = std::move(mine);
      },
      [&hub] { hub.abort(); });
  return result;
}

}  // namespace tauplan::exec
