// calibrate.cpp: timed steps and combines, medians of thread CPU time.
#include "exec/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "exec/tensor_parallel.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

void check_request(const CalibrationRequest& r, const Dataset& data) {
  const std::string origin = "<calibration>";
  if (r.batches.empty()) throw InputError(origin, "batches", "at least one batch size");
  for (int b : r.batches)
    if (b < 1 || b > data.train_size())
      throw InputError(origin, "batches",
                       "batch sizes from 1 to " + std::to_string(data.train_size()),
                       std::to_string(b));
  if (r.floats.empty()) throw InputError(origin, "floats", "at least one size");
  for (double n : r.floats)
    if (!(n >= 1) || !std::isfinite(n))
      throw InputError(origin, "floats", "finite sizes >= 1 float", std::to_string(n));
  if (r.replicas < 1 || r.steps < 1 || r.combines < 1)
    throw InputError(origin, "replicas, steps, combines", "whole numbers >= 1");
}

}  // namespace

CalibrationMeasurements measure_cpu_calibration(const CalibrationRequest& request,
                                                const Dataset& data, const MlpShape& shape) {
  check_request(request, data);
  CalibrationMeasurements out;
  std::mt19937_64 rng(request.seed);
  std::uniform_int_distribution<long long> pick(0, data.train_size() - 1);
  const auto features = static_cast<std::size_t>(data.features);
  const int k = request.replicas;

  std::vector<std::unique_ptr<Mlp>> replicas;
  for (int r = 0; r < std::max(k, 2); ++r) {
    replicas.push_back(std::make_unique<Mlp>(shape));
    replicas.back()->init(request.seed + static_cast<std::uint64_t>(r));
  }
  // Distinct batch sizes, and distinct combine sizes capped at the gradient's length.
  const std::set<int> batch_set(request.batches.begin(), request.batches.end());
  const std::vector<int> batches(batch_set.begin(), batch_set.end());
  const std::size_t parameters = replicas.front()->parameter_count();
  std::set<std::size_t> size_set;
  for (double f : request.floats)
    size_set.insert(static_cast<std::size_t>(std::min(f, static_cast<double>(parameters))));
  const std::vector<std::size_t> sizes(size_set.begin(), size_set.end());
  if (batches.size() < 2)
    throw InputError("<calibration>", "batches",
                     "at least 2 distinct batch sizes (a line needs 2)");
  if (k > 1 && sizes.size() < 2)
    throw InputError("<calibration>", "floats",
                     "at least 2 distinct combine sizes up to the gradient's " +
                         std::to_string(parameters) + " floats");
  const int largest = batches.back();
  std::vector<float> x(static_cast<std::size_t>(largest) * features);
  std::vector<int> y(static_cast<std::size_t>(largest));
  auto forward_backward = [&](Mlp& mlp, int b) {
    for (int i = 0; i < b; ++i) {
      const long long row = pick(rng);
      std::memcpy(x.data() + static_cast<std::size_t>(i) * features, data.train_row(row),
                  features * sizeof(float));
      y[static_cast<std::size_t>(i)] = data.train_y[static_cast<std::size_t>(row)];
    }
    mlp.forward_backward(x.data(), y.data(), b);
  };
  auto timed = [](auto&& f) {
    const double t0 = thread_cpu_seconds();
    f();
    return thread_cpu_seconds() - t0;
  };

  // Lockstep sync rounds: every replica's forward + backward, the combine of their gradients,
  // then every replica's update; a step is its forward + backward + update.
  ThreadCommunicator comm(k);
  const std::vector<double> weights(static_cast<std::size_t>(k), 1.0);
  std::vector<float*> gradients;
  for (int r = 0; r < k; ++r)
    gradients.push_back(replicas[static_cast<std::size_t>(r)]->gradients());
  std::map<std::size_t, std::vector<double>> combine_times;
  std::map<int, std::vector<double>> step_times;
  // Batch sizes take turns round by round, so that a slow spell of the machine (a virtual
  // machine's host is not ours) falls on every size alike instead of bending the line.
  const int rounds = 1 + (request.steps + k - 1) / k;  // the first is a warm-up
  std::vector<double> step_s(static_cast<std::size_t>(k));
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t bi = 0; bi < batches.size(); ++bi) {
      const int b = batches[bi];
      for (int r = 0; r < k; ++r)
        step_s[static_cast<std::size_t>(r)] =
            timed([&] { forward_backward(*replicas[static_cast<std::size_t>(r)], b); });
      if (k > 1) {
        // Sizes rotate against batch sizes, so that no size always follows the same batches.
        const std::size_t n = sizes[(bi + static_cast<std::size_t>(round)) % sizes.size()];
        const double t = timed([&] { comm.combine(gradients, weights, n, CombineRule::Mean); });
        if (round > 0) combine_times[n].push_back(t);
      }
      for (int r = 0; r < k; ++r) {
        step_s[static_cast<std::size_t>(r)] +=
            timed([&] { replicas[static_cast<std::size_t>(r)]->sgd_step(0.01f); });
        if (round > 0) step_times[b].push_back(step_s[static_cast<std::size_t>(r)]);
      }
    }
  }
  for (int b : batches)
    out.steps.push_back({b, median(step_times[b])});
  if (k == 1) {
    // One worker never combines; time a combine of two buffers so that the platform still has
    // a communication fit (warm caches: the only measurement possible without a round).
    ThreadCommunicator pair(2);
    const std::vector<double> two(2, 1.0);
    std::vector<float*> buffers{replicas[0]->gradients(), replicas[1]->gradients()};
    for (int c = 0; c < request.combines; ++c)
      for (std::size_t n : sizes)
        combine_times[n].push_back(
            timed([&] { pair.combine(buffers, two, n, CombineRule::Mean); }));
  }
  for (const auto& [n, t] : combine_times) {
    const double floats = static_cast<double>(n);
    out.combines.push_back({std::max(k, 2), floats, floats * sizeof(float), median(t)});
  }
  return out;
}

namespace {

/// One worker's replica taking training steps on random batches, timed on the wall clock: the
/// data-parallel replica's code (exec/mlp.hpp), or with `layout_code` the layout trainer's
/// (exec/tensor_parallel.hpp: the whole model as one stage of one rank, its gradients added up
/// over a step's passes and zeroed after the update, the output's gradient a constant: the loss's
/// few flop left out).
class TimedSteps {
 public:
  TimedSteps(const Dataset& data, const MlpShape& shape, std::uint64_t init_seed,
             std::uint64_t sample_seed, int largest_batch, bool layout_code = false)
      : data_(data),
        mlp_(shape),
        rng_(sample_seed),
        pick_(0, data.train_size() - 1),
        x_(static_cast<std::size_t>(largest_batch) * static_cast<std::size_t>(data.features)),
        y_(static_cast<std::size_t>(largest_batch)) {
    mlp_.init(init_seed);
    if (layout_code) {
      stage_ = std::make_unique<TensorParallelStage>(shape, 0, shape.layers(), 0, 1);
      stage_->load(mlp_.parameters());
      output_gradient_.assign(static_cast<std::size_t>(largest_batch) *
                                  static_cast<std::size_t>(stage_->output_width()),
                              1e-3f);
    }
  }
  /// Seconds of `steps` steps of `passes` passes at batch b each (sampling, forward and
  /// backward) and one update. The replica's code writes the whole gradient on every pass; the
  /// layout trainer's adds each pass's weight gradients into its own and zeroes them once a step,
  /// as a layout's rank does.
  double run(int b, int steps, int passes = 1) {
    const auto features = static_cast<std::size_t>(data_.features);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      for (int pass = 0; pass < passes; ++pass) {
        for (int i = 0; i < b; ++i) {
          const long long row = pick_(rng_);
          std::memcpy(x_.data() + static_cast<std::size_t>(i) * features, data_.train_row(row),
                      features * sizeof(float));
          y_[static_cast<std::size_t>(i)] = data_.train_y[static_cast<std::size_t>(row)];
        }
        if (stage_) {
          stage_->forward(x_.data(), b, stash_, output_, TensorGroup{});
          stage_->backward(output_gradient_.data(), b, stash_, nullptr, TensorGroup{});
        } else {
          mlp_.forward_backward(x_.data(), y_.data(), b);
        }
      }
      if (stage_) {
        stage_->sgd_step(0.01f);
        stage_->zero_gradients();
      } else {
        mlp_.sgd_step(0.01f);
      }
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  const Dataset& data_;
  Mlp mlp_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<long long> pick_;
  std::vector<float> x_;
  std::vector<int> y_;
  std::unique_ptr<TensorParallelStage> stage_;  ///< the layout trainer's code, when asked
  TensorParallelStage::Stash stash_;
  std::vector<float> output_, output_gradient_;
};

}  // namespace

ConcurrentSteps measure_concurrent_steps(const CalibrationRequest& request, const Dataset& data,
                                         const MlpShape& shape) {
  check_request(request, data);
  const int k = request.replicas;
  const bool micro = request.micro_batches > 1;
  if (micro && (request.micro_batch < 1 || request.micro_batch > data.train_size()))
    throw InputError("<calibration>", "micro_batch",
                     "a micro-batch of 1 to " + std::to_string(data.train_size()) + " samples",
                     std::to_string(request.micro_batch));
  const std::set<int> batch_set(request.batches.begin(), request.batches.end());
  const std::vector<int> batches(batch_set.begin(), batch_set.end());
  const std::size_t turns = batches.size() + (micro ? 1 : 0);  // the micro-batched step last
  const int per_thread = 1 + (request.steps + k - 1) / k;      // the first is a warm-up
  std::vector<std::vector<std::vector<double>>> times(static_cast<std::size_t>(k),
                                                      std::vector<std::vector<double>>(turns));
  std::vector<std::thread> threads;
  for (int t = 0; t < k; ++t)
    threads.emplace_back([&, t] {
      TimedSteps steps(data, shape, request.seed + static_cast<std::uint64_t>(t),
                       request.seed * 31 + static_cast<std::uint64_t>(t),
                       std::max(batches.back(), micro ? request.micro_batch : 0),
                       request.layout_code);
      // Batch sizes take turns step by step, as in the lockstep calibration.
      for (int step = 0; step < per_thread; ++step)
        for (std::size_t bi = 0; bi < turns; ++bi) {
          const double s = bi < batches.size()
                               ? steps.run(batches[bi], 1)
                               : steps.run(request.micro_batch, 1, request.micro_batches);
          if (step > 0) times[static_cast<std::size_t>(t)][bi].push_back(s);
        }
    });
  for (auto& thread : threads)
    thread.join();
  ConcurrentSteps out;
  for (std::size_t bi = 0; bi < turns; ++bi) {
    std::vector<double> all;
    for (const auto& per : times)
      all.insert(all.end(), per[bi].begin(), per[bi].end());
    if (bi < batches.size()) {
      out.steps.push_back({batches[bi], median(all)});
    } else {
      out.micro_batches = request.micro_batches;
      out.micro_step = {request.micro_batch, median(all)};
    }
  }
  return out;
}

namespace {

/// Per batch size, the median over rounds of the busiest worker's seconds per step; busy[w][r]
/// is worker w's round r (batch sizes take turns; the first turn is a warm-up). Fills `samples`
/// when given.
std::vector<StepPoint> busiest_medians(const std::vector<std::vector<double>>& busy,
                                       const std::vector<int>& batches, int steps_per_round,
                                       RankRoundSamples* samples) {
  std::vector<StepPoint> out;
  const std::size_t total = busy.empty() ? 0 : busy[0].size();
  if (samples) *samples = {batches, {}};
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    std::vector<double> per_step;
    std::vector<std::vector<double>> rounds_of_batch;
    for (std::size_t r = batches.size() + bi; r < total; r += batches.size()) {
      std::vector<double> workers_of_round;
      for (const auto& per : busy)
        workers_of_round.push_back(per[r] / steps_per_round);
      per_step.push_back(*std::max_element(workers_of_round.begin(), workers_of_round.end()));
      rounds_of_batch.push_back(std::move(workers_of_round));
    }
    if (samples) samples->seconds.push_back(std::move(rounds_of_batch));
    out.push_back({batches[bi], median(per_step)});
  }
  return out;
}

void check_rounds(int steps_per_round, int rounds, double wait_s) {
  if (steps_per_round < 1 || rounds < 1 || !(wait_s >= 0) || wait_s > 10)
    throw InputError("<calibration>", "rounds",
                     "steps per round and rounds >= 1, a wait of 0 to 10 s",
                     fmt::format("{}, {}, {}", steps_per_round, rounds, wait_s));
}

}  // namespace

std::vector<StepPoint> measure_rank_rounds(PeerGroup& peers, int workers,
                                           const CalibrationRequest& request, const Dataset& data,
                                           const MlpShape& shape, int steps_per_round, int rounds,
                                           double wait_s, RankRoundSamples* samples) {
  check_request(request, data);
  check_rounds(steps_per_round, rounds, wait_s);
  if (workers < 1 || workers > peers.size())
    throw InputError("<calibration>", "workers",
                     "1 to " + std::to_string(peers.size()) + " (the ranks)",
                     std::to_string(workers));
  const std::set<int> batch_set(request.batches.begin(), request.batches.end());
  const std::vector<int> batches(batch_set.begin(), batch_set.end());
  const std::size_t total = (static_cast<std::size_t>(rounds) + 1) * batches.size();
  const int me = peers.rank();
  const bool computes = me < workers;
  std::vector<float> mine(total, 0.0f);
  {
    const std::uint64_t seed = request.seed + static_cast<std::uint64_t>(me);
    TimedSteps steps(data, shape, seed, seed * 31, batches.back());
    for (std::size_t r = 0; r < total; ++r) {
      peers.barrier();
      if (computes)
        mine[r] = static_cast<float>(steps.run(batches[r % batches.size()], steps_per_round));
      peers.barrier();
      if (me == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
        while (std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
      }
    }
  }
  constexpr int kBusyTag = 7201;
  if (me != 0) {
    if (computes) peers.send(0, mine.data(), mine.size(), kBusyTag);
    peers.barrier();
    return {};
  }
  std::vector<std::vector<double>> busy(static_cast<std::size_t>(workers));
  busy[0].assign(mine.begin(), mine.end());
  for (int w = 1; w < workers; ++w) {
    std::vector<float> theirs(total);
    peers.recv(w, theirs.data(), theirs.size(), kBusyTag);
    busy[static_cast<std::size_t>(w)].assign(theirs.begin(), theirs.end());
  }
  peers.barrier();
  return busiest_medians(busy, batches, steps_per_round, samples);
}

nlohmann::json steps_json(const CalibrationMeasurements& measured) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepPoint& p : measured.steps)
    steps.push_back({{"batch", p.batch}, {"seconds", p.seconds}});
  return steps;
}

nlohmann::json combines_json(const CalibrationMeasurements& measured) {
  nlohmann::json combines = nlohmann::json::array();
  for (const CombinePoint& p : measured.combines)
    combines.push_back({{"workers", p.workers}, {"bytes", p.bytes}, {"seconds", p.seconds}});
  return combines;
}

CpuCalibration fit_cpu_calibration(const CalibrationMeasurements& measured,
                                   const model::Workload& workload, int hosts,
                                   const std::string& calibrated_from, const std::string& date) {
  CpuCalibration out;
  out.measured = measured;
  std::vector<double> batches, step_s, traffic, combine_s;
  for (const StepPoint& p : measured.steps) {
    batches.push_back(p.batch);
    step_s.push_back(p.seconds);
  }
  for (const CombinePoint& p : measured.combines) {
    traffic.push_back(p.workers * p.bytes);
    combine_s.push_back(p.seconds);
  }
  out.compute = model::fit_line(batches, step_s, "step fit");
  if (!(out.compute.slope > 0))
    throw InputError("<calibration>", "batches",
                     "batch sizes far enough apart that the step time grows with them");
  out.comm = model::fit_line(traffic, combine_s, "combine fit", true);
  if (!(out.comm.slope > 0))
    throw InputError("<calibration>", "floats",
                     "combine sizes far enough apart that the combine time grows with them");
  // A negative intercept is noise around a cost too small to resolve, written as 0; it is worth
  // a warning only when it is not small against the shortest time measured (then the line
  // itself is in doubt).
  auto check_intercept = [&out](const model::LinearFit& fit, const std::vector<double>& y,
                                const std::string& what) {
    if (fit.intercept >= 0) return;
    const double shortest = *std::min_element(y.begin(), y.end());
    if (-fit.intercept > 0.05 * shortest)
      out.warnings.push_back(what + " fitted as " + std::to_string(fit.intercept) +
                             " s < 0 (more than 5% of the shortest time measured), written as 0");
  };
  check_intercept(out.compute, step_s, "step intercept");
  check_intercept(out.comm, combine_s, "combine alpha");
  model::Calibration& c = out.calibration;
  c.hosts = hosts;
  c.workload = workload.name;
  c.flop_per_sample = workload.flop_per_sample;
  c.update_flop = workload.parameters * workload.update_flop_per_parameter;
  c.step_intercept_s = std::max(0.0, out.compute.intercept);
  c.per_sample_s = out.compute.slope;
  c.r2_compute = out.compute.r2;
  c.alpha_s = std::max(0.0, out.comm.intercept);
  c.beta_Bps = 1.0 / out.comm.slope;
  c.r2_comm = out.comm.r2;
  c.calibrated_from = calibrated_from;
  c.date = date;
  if (measured.micro_batches > 1) {
    const int m = measured.micro_batches;
    const double one_pass =
        out.compute.intercept + out.compute.slope * m * measured.micro_step.batch;
    const double pass = (measured.micro_step.seconds - one_pass) / (m - 1);
    const double room = std::max(0.0, c.step_intercept_s - c.update_flop / c.speed_flops());
    c.pass_overhead_s = std::clamp(pass, 0.0, room);
    if (pass < 0 || pass > room)
      out.warnings.push_back("a pass's fixed cost fitted as " + std::to_string(pass) +
                             " s, outside [0, the intercept less the update] = [0, " +
                             std::to_string(room) + "]: written as " +
                             std::to_string(c.pass_overhead_s));
  }
  return out;
}

}  // namespace tauplan::exec
