// trainer_test.cpp: executing Plans for real: the strategies' equivalences, determinism,
// timing modes, emulated heterogeneity and bad inputs.
#include <catch2/catch.hpp>

#include <map>
#include <utility>

#include <string>

#include "exec/cpu_replica.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

Measurement run_trainer(const model::Plan& plan, const Dataset& data, const TrainOptions& options,
                        const model::Platform& platform =
                            model::make_crossbar_platform(std::vector<double>(8, 1e9), 1e9, 1e-5)) {
  ThreadCommunicator comm(plan.workers);
  return train(plan, platform, data, test::tiny_shape(), comm, cpu_replica_factory(), options);
}

}  // namespace

TEST_CASE("sync with K workers equals one worker at batch b, to float rounding",
          "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(30);
  const Measurement single = run_trainer(test::make_plan("single", 1, 32), data, o);
  const Measurement sync = run_trainer(test::make_plan("sync", 4, 32), data, o);
  REQUIRE(single.final_parameters.size() == test::tiny_shape().parameters());
  CHECK(sync.steps == 30);
  CHECK(test::max_abs_diff(single.final_parameters, sync.final_parameters) < 1e-5);
  // Not trivially equal: training moved the parameters.
  std::vector<float> initial(single.final_parameters.size());
  init_parameters(test::tiny_shape(), o.seed, initial.data());
  CHECK(test::max_abs_diff(single.final_parameters, initial) > 1e-2);
}

TEST_CASE("local-sgd with tau = 1 equals sync", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(30);
  const Measurement sync = run_trainer(test::make_plan("sync", 4, 32), data, o);
  const Measurement local = run_trainer(test::make_plan("local-sgd", 4, 8, 1), data, o);
  CHECK(local.rounds == 30);
  CHECK(test::max_abs_diff(sync.final_parameters, local.final_parameters) < 1e-5);
}

TEST_CASE("local-sgd with tau > 1 differs from sync and counts rounds", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(24);
  const Measurement local = run_trainer(test::make_plan("local-sgd", 2, 8, 4), data, o);
  CHECK(local.rounds == 6);
  CHECK(local.steps == 24);
  CHECK(local.steps_per_round == 4);
  const Measurement sync = run_trainer(test::make_plan("sync", 2, 16), data, o);
  CHECK(test::max_abs_diff(sync.final_parameters, local.final_parameters) > 1e-4);
}

TEST_CASE("a fixed seed gives the same accuracy curve twice in lockstep", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(40);
  const model::Plan plan = test::make_plan("local-sgd", 3, 16, 2);
  const Measurement a = run_trainer(plan, data, o);
  const Measurement b = run_trainer(plan, data, o);
  REQUIRE(a.curve.size() == b.curve.size());
  REQUIRE(a.curve.size() >= 4);
  for (std::size_t i = 0; i < a.curve.size(); ++i) {
    CHECK(a.curve[i].accuracy == b.curve[i].accuracy);
    CHECK(a.curve[i].train_loss == b.curve[i].train_loss);
    CHECK(a.curve[i].steps == b.curve[i].steps);
  }
  CHECK(a.final_parameters == b.final_parameters);
  TrainOptions other = o;
  other.seed = 4;
  CHECK(run_trainer(plan, data, other).final_parameters != a.final_parameters);
}

TEST_CASE("concurrent timing computes the same model as lockstep", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(20);
  const model::Plan plan = test::make_plan("sync", 3, 30);
  const Measurement lock = run_trainer(plan, data, o);
  o.timing = Timing::Concurrent;
  const Measurement conc = run_trainer(plan, data, o);
  CHECK(conc.final_parameters == lock.final_parameters);
  CHECK(conc.timing == Timing::Concurrent);
  CHECK(conc.total_s > 0);
  CHECK(conc.sync_s > 0);
}

TEST_CASE("training reaches a target and stops there", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(2000);
  o.learning_rate = 0.1;
  o.target_accuracy = 0.8;
  o.eval_every_steps = 10;
  const Measurement m = run_trainer(test::make_plan("sync", 2, 32), data, o);
  CHECK(m.reached);
  CHECK(m.final_accuracy >= 0.8);
  CHECK(m.steps < 2000);
  REQUIRE_FALSE(m.curve.empty());
  CHECK(m.curve.back().steps == m.steps);
  CHECK(m.total_s > 0);
  CHECK(m.round_mean_s * static_cast<double>(m.rounds) == Approx(m.total_s));
  CHECK(m.per_worker.size() == 2);
  CHECK(m.per_worker[0].compute_median_s > 0);
  CHECK(m.compute_s > 0);
  CHECK(m.sync_s > 0);
}

TEST_CASE("slower hosts are emulated by scaling their compute time", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const model::Platform platform = test::platform_with_speeds({2e9, 1e9, 0.5e9});
  const model::Plan plan = test::make_plan("sync", 3, 30, 1, platform);
  const std::vector<double> s = worker_slowdowns(plan, platform);
  CHECK(s == std::vector<double>{1, 2, 4});
  const Measurement m = run_trainer(plan, data, test::quick_options(10), platform);
  CHECK(m.emulated);
  REQUIRE(m.per_worker.size() == 3);
  CHECK(m.per_worker[2].slowdown == 4);
  CHECK(m.per_worker[2].compute_median_s == Approx(4 * m.per_worker[2].measured_median_s));
  // The reference is the platform's fastest worker, whatever hosts the plan uses.
  model::Plan slow_single;
  slow_single.workers = 1;
  slow_single.worker_hosts = {1};
  CHECK(worker_slowdowns(slow_single, platform) == std::vector<double>{2});
  TrainOptions off = test::quick_options(10);
  off.emulate_slowdown = false;
  CHECK_FALSE(run_trainer(plan, data, off, platform).emulated);
}

TEST_CASE("a speed split gives faster workers more samples", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const model::Platform platform = test::platform_with_speeds({3e9, 1e9});
  const model::Plan plan = test::make_plan("sync", 2, 40, 1, platform, model::BatchSplit::Speed);
  const Measurement m = run_trainer(plan, data, test::quick_options(5), platform);
  CHECK(m.per_worker[0].samples == 30);
  CHECK(m.per_worker[1].samples == 10);
  CHECK(integer_samples({2.5, 2.5, 1.0}) == std::vector<long long>{3, 2, 1});
}

TEST_CASE("gradient buckets (overlap) combine the whole vector", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(15);
  const model::Plan plain = test::make_plan("sync", 2, 32);
  const model::Plan buckets = test::make_plan(
      "sync", 2, 32, 1, model::make_crossbar_platform(std::vector<double>(8, 1e9), 1e9, 1e-5),
      model::BatchSplit::Even, true, 100);
  REQUIRE(buckets.count(model::OpKind::Collective) >= 2);
  const Measurement a = run_trainer(plain, data, o);
  const Measurement b = run_trainer(buckets, data, o);
  CHECK(a.final_parameters == b.final_parameters);
  // Lockstep composes the buckets on the virtual clock; the run says it did not overlap for real.
  CHECK(b.extra.value("overlap", std::string()).find("after the whole backward pass (lockstep") !=
        std::string::npos);
  CHECK_FALSE(a.extra.contains("overlap"));
  // Concurrent threads: several workers in one process, so the buckets run after the pass.
  TrainOptions concurrent = o;
  concurrent.timing = Timing::Concurrent;
  const Measurement c = run_trainer(buckets, data, concurrent);
  CHECK(c.extra.value("overlap", std::string()).find("more than one worker in this process") !=
        std::string::npos);
  CHECK(test::max_abs_diff(a.final_parameters, c.final_parameters) < 1e-6);
}

TEST_CASE("Adasum runs for sync and for local-sgd parameter deltas", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(12);
  o.combine = CombineRule::Adasum;
  const Measurement sync = run_trainer(test::make_plan("sync", 2, 32), data, o);
  const Measurement local = run_trainer(test::make_plan("local-sgd", 2, 16, 3), data, o);
  CHECK(sync.combine == CombineRule::Adasum);
  CHECK(local.steps == 12);
  // With one worker, Adasum is the identity: the same model as the mean.
  const Measurement one_a = run_trainer(test::make_plan("local-sgd", 1, 16, 3), data, o);
  o.combine = CombineRule::Mean;
  const Measurement one_m = run_trainer(test::make_plan("local-sgd", 1, 16, 3), data, o);
  CHECK(test::max_abs_diff(one_a.final_parameters, one_m.final_parameters) < 1e-6);
}

TEST_CASE("impossible jobs are InputErrors", "[exec][trainer]") {
  const Dataset data = test::tiny_data(100, 50);
  const TrainOptions o = test::quick_options(5);
  SECTION("a batch larger than the training set") {
    CHECK_THROWS_MATCHES(
        run_trainer(test::make_plan("sync", 2, 101), data, o), InputError,
        Catch::Predicate<InputError>([](const InputError& e) { return e.key() == "batch"; }));
    CHECK_THROWS_AS(run_trainer(test::make_plan("local-sgd", 4, 30, 2), data, o), InputError);
  }
  SECTION("K different from the communicator's workers") {
    ThreadCommunicator comm(3);
    const model::Plan plan = test::make_plan("sync", 2, 20);
    CHECK_THROWS_MATCHES(train(plan, model::make_crossbar_platform({1e9, 1e9}, 1e9, 1e-5), data,
                               test::tiny_shape(), comm, cpu_replica_factory(), o),
                         InputError, Catch::Predicate<InputError>([](const InputError& e) {
                           return e.key() == "workers";
                         }));
  }
  SECTION("an MLP that does not fit the data") {
    ThreadCommunicator comm(1);
    MlpShape wrong;
    wrong.widths = {10, 4};
    CHECK_THROWS_AS(
        train(test::make_plan("single", 1, 10), model::make_crossbar_platform({1e9}, 1e9, 1e-5),
              data, wrong, comm, cpu_replica_factory(), o),
        InputError);
  }
}

TEST_CASE("trace events cover the recorded rounds", "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(6);
  o.trace_rounds = 2;
  const Measurement m = run_trainer(test::make_plan("sync", 2, 16), data, o);
  // Per round: 2 computes, the all-reduce on each worker's track, 2 updates.
  CHECK(m.trace.size() == 12);
  std::map<std::string, int> per_category;
  for (const TraceEvent& e : m.trace) {
    CHECK(e.round < 2);
    CHECK(e.duration_s >= 0);
    CHECK((e.track == 0 || e.track == 1));
    ++per_category[e.category];
    if (e.category == "comm") CHECK(e.name == "all-reduce (ring)");
    if (e.category == "compute") CHECK(e.steps == 1);
    CHECK(e.messages == 0);  // shared memory: no messages
  }
  CHECK(per_category == std::map<std::string, int>{{"comm", 4}, {"compute", 4}, {"update", 4}});
}

namespace {

/// The thread communicator, recording which workers' buffers each combine got.
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(int workers) : threads_(workers) {}
  std::string name() const override { return "recording"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int workers() const override { return threads_.workers(); }
  int local_workers() const override { return threads_.workers(); }
  int first_local_worker() const override { return 0; }
  MemorySpace memory() const override { return MemorySpace::Host; }
  void combine(const std::vector<float*>& buffers, const std::vector<double>& weights,
               std::size_t n, CombineRule rule) override {
    calls.push_back({{}, buffers.size()});
    threads_.combine(buffers, weights, n, rule);
  }
  bool runs_subgroups() const override { return true; }
  void combine_group(const std::vector<int>& group, const std::vector<float*>& buffers,
                     const std::vector<double>& weights, std::size_t n, CombineRule rule) override {
    calls.push_back({group, buffers.size()});
    threads_.combine_group(group, buffers, weights, n, rule);
  }
  void barrier() override {}
  double max_all(double value) override { return value; }

  std::vector<std::pair<std::vector<int>, std::size_t>> calls;  // group (empty: all), buffers

 private:
  ThreadCommunicator threads_;
};

}  // namespace

TEST_CASE("a collective over a subgroup combines its members only, in group order",
          "[exec][trainer]") {
  // The communicator: buffers of workers 3 and 1 (weights 1 and 3) become their weighted mean.
  ThreadCommunicator threads(4);
  std::vector<float> a{1, 2}, b{5, 10};
  threads.combine_group({3, 1}, {a.data(), b.data()}, {1.0, 3.0}, 2, CombineRule::Mean);
  CHECK(a == std::vector<float>{4, 8});
  CHECK(b == std::vector<float>{4, 8});

  // The trainer: sync at K = 4 with its all-reduce narrowed to workers 2 and 0 combines only
  // their gradients (2 buffers, group {2, 0}), so workers 1 and 3 step on their own and the
  // replicas drift apart: the run differs from sync's.
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(6);
  model::Plan narrowed = test::make_plan("sync", 4, 32);
  for (auto v : narrowed.op_ids())
    if (narrowed.op(v).kind == model::OpKind::Collective) narrowed.op(v).group = {2, 0};
  const model::Platform platform =
      model::make_crossbar_platform(std::vector<double>(8, 1e9), 1e9, 1e-5);
  RecordingCommunicator recording(4);
  const Measurement pairs =
      train(narrowed, platform, data, test::tiny_shape(), recording, cpu_replica_factory(), o);
  CHECK(test::max_abs_diff(pairs.final_parameters,
                           run_trainer(test::make_plan("sync", 4, 32), data, o).final_parameters) >
        1e-4);
  REQUIRE(recording.calls.size() == 6);
  for (const auto& [group, buffers] : recording.calls) {
    CHECK(group == std::vector<int>{2, 0});
    CHECK(buffers == 2);
  }
  // A communicator that runs no subgroup collective refuses such a plan before training.
  class AllOnly final : public Communicator {
   public:
    std::string name() const override { return "all-only"; }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int workers() const override { return 4; }
    int local_workers() const override { return 4; }
    int first_local_worker() const override { return 0; }
    MemorySpace memory() const override { return MemorySpace::Host; }
    void combine(const std::vector<float*>&, const std::vector<double>&, std::size_t,
                 CombineRule) override {}
    void barrier() override {}
    double max_all(double value) override { return value; }
  } all_only;
  CHECK_THROWS_AS(
      train(narrowed, platform, data, test::tiny_shape(), all_only, cpu_replica_factory(), o),
      InputError);
}
