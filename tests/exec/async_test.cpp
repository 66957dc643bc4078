// async_test.cpp: asynchronous parameter-server training for real (threads), its report and its
// bad inputs; and time-budget local SGD with real per-worker step counts. The MPI transport is
// tested by async_mpi.sh (mpirun -np 5).
#include <catch2/catch.hpp>

#include <numeric>

#include "exec/async_ranks.hpp"
#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
#include "exec/measure.hpp"
#include "exec/report.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

using test::job_from;

namespace {

// Four workers at 1e9 flop/s (the fourth twice as slow: an emulated slowdown of 2) and a server.
model::Platform async_platform() {
  return model::make_crossbar_platform(
      {1e9, 1e9, 1e9, 5e8, 1e9}, 1e9, 1e-5, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Worker,
       model::HostRole::Worker, model::HostRole::Server});
}

const std::string kQuickAsync =
    "strategies: [async-ps]\nworkers: 4\nbatch: 16\nhidden: [16]\ntiming: concurrent\n"
    "max_steps: 400\neval_every: 100\ndata_dir: /nonexistent/fashion\nallow_synthetic: true\n"
    "train_samples: 2000\neval_samples: 200\ntarget_accuracy: 0.999\n";

}  // namespace

TEST_CASE("async threads: every update applied once, staleness counted, the row's schema",
          "[exec][async]") {
  const model::Job job = job_from(kQuickAsync, {{"staleness_bound", "2"}});
  const MeasureRun run =
      measure(job, test::tiny_workload(), async_platform(), {"async-ps"}, nullptr, nullptr);
  REQUIRE(run.measurements.size() == 1);
  const Measurement& m = run.measurements[0];
  CHECK(m.strategy == "async-ps");
  CHECK(m.communicator == "threads");
  CHECK(m.timing == Timing::Concurrent);
  CHECK(m.rounds == 400);  // the target is out of reach: max_steps server updates
  CHECK(m.steps == 400);
  CHECK(m.curve.size() == 4);
  const nlohmann::json row = model::to_json(to_result_row(m));
  CHECK(row["total_s"].get<double>() == Approx(row["round_s"].get<double>() * 400));
  const auto histogram = row["staleness_histogram"].get<std::vector<long long>>();
  // One server: it applies exactly max_steps updates, answering later pushes with a stop.
  CHECK(std::accumulate(histogram.begin(), histogram.end(), 0LL) == 400);
  // SSP s = 2: no worker starts more than 2 steps ahead of the slowest, and no update is staler
  // than (K-1)(2s+1) = 15.
  CHECK(row["clock_skew_max"].get<long long>() <= 2);
  CHECK(row["staleness_version_bound"] == 15);
  CHECK(row["staleness_max"].get<double>() <= 15);
  CHECK(row["updates_per_s"].get<double>() > 0);
  // The emulated slowdown of the fourth worker is reported, and it got fewer updates in.
  const auto& workers = row["async_workers"];
  REQUIRE(workers.size() == 4);
  long long sum = 0;
  for (const auto& w : workers)
    sum += w["updates"].get<long long>();
  CHECK(sum == 400);  // each applied update counted once, by the worker that pushed it
  CHECK(row["per_worker"][3]["slowdown"].get<double>() == Approx(2));
  CHECK(row["emulated_heterogeneity"] == true);
}

TEST_CASE("async threads: two servers share the vector, shards cover it once", "[exec][async]") {
  const auto shards = shard_ranges(10, 3);
  CHECK(shards == std::vector<std::pair<std::size_t, std::size_t>>{{0, 4}, {4, 7}, {7, 10}});
  auto platform = async_platform();
  platform.hosts[3].role = model::HostRole::Server;  // h3 and h4 serve
  const model::Job job = job_from(kQuickAsync, {{"workers", "3"}, {"servers", "2"}});
  const MeasureRun run =
      measure(job, test::tiny_workload(), platform, {"async-ps"}, nullptr, nullptr);
  REQUIRE(run.measurements.size() == 1);
  const nlohmann::json row = model::to_json(to_result_row(run.measurements[0]));
  // Both servers' own processing (as under MPI, tests/exec/async_mpi.sh): server j applied
  // its shard once per update, with 2 messages each; the lead applied every update counted.
  REQUIRE(row["servers"].size() == 2);
  for (int j = 0; j < 2; ++j) {
    const auto& server = row["servers"][static_cast<std::size_t>(j)];
    CHECK(server["server"] == j);
    CHECK(server["messages"].get<long long>() == 2 * server["calls"].get<long long>());
  }
  CHECK(row["servers"][0]["calls"] == row["updates_applied"]);
  const auto histogram = row["staleness_histogram"].get<std::vector<long long>>();
  // The lead applied 400; the other server lags it by at most one update per worker (3) when
  // the lead stops everything.
  CHECK(std::accumulate(histogram.begin(), histogram.end(), 0LL) >= 2 * 400 - 3);
  // Each worker timed its pushes' replies: the first comes after the pushes were posted and no
  // later than the last (per cycle, so for the medians over the same cycles too).
  REQUIRE(row["async_workers"].size() == 3);
  for (const auto& w : row["async_workers"]) {
    const double first = w["first_reply_median_s"].get<double>();
    const double last = w["last_reply_median_s"].get<double>();
    CHECK(first > 0);
    CHECK(first <= last);
  }
}

TEST_CASE("async exec refuses lockstep timing, CUDA and a wrong communicator", "[exec][async]") {
  auto measure_with = [](const std::map<std::string, std::string>& flags) {
    const model::Job job = job_from(kQuickAsync, flags);
    return measure(job, test::tiny_workload(), async_platform(), {"async-ps"}, nullptr, nullptr);
  };
  CHECK_THROWS_WITH(measure_with({{"timing", "lockstep"}}),
                    Catch::Contains("command line: --timing: expected concurrent for async-ps"));
  CHECK_THROWS_WITH(measure_with({{"communicator", "mpi"}}),
                    Catch::Contains("command line: --communicator: expected threads or auto"));
  CHECK_THROWS_WITH(measure_with({{"batch", "900"}}),
                    Catch::Contains("command line: --batch: expected a per-worker batch"));
}

TEST_CASE("async threads on Fashion-MNIST reach 85% test accuracy with K = 4, s = 2",
          "[exec][async][fashion]") {
  // The acceptance run: real data (dataset-fashion-mnist), one server, 4 worker threads, SSP
  // bound 2; accuracy on 1000 test images every 100 updates. About 3 s on 2 cores.
  REQUIRE(fashion_mnist_present(default_data_dir()));
  const model::Job job = job_from(
      "strategies: [async-ps]\nworkers: 4\nbatch: 32\nstaleness_bound: 2\ntiming: concurrent\n"
      "learning_rate: 0.1\nmax_steps: 6000\neval_every: 100\neval_samples: 1000\n"
      "target_accuracy: 0.85\n");
  const auto platform = model::make_crossbar_platform(
      {1e12, 1e12, 1e12, 1e12, 1e12}, 1e9, 1e-5, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Worker,
       model::HostRole::Worker, model::HostRole::Server});
  const MeasureRun run =
      measure(job, model::load_workload("fashion-mlp"), platform, {"async-ps"}, nullptr, nullptr);
  REQUIRE(run.measurements.size() == 1);
  const Measurement& m = run.measurements[0];
  CHECK(m.dataset == "fashion-mnist");
  CHECK_FALSE(m.synthetic);
  CHECK(m.reached);
  CHECK(m.final_accuracy >= 0.85);
  const nlohmann::json row = model::to_json(to_result_row(m));
  CHECK(row["staleness_max"].get<double>() <= row["staleness_version_bound"].get<double>());
  CHECK(row["clock_skew_max"].get<long long>() <= 2);
  CHECK(row["staleness_mean"].get<double>() > 0);  // asynchronous for real
}

TEST_CASE("time-budget local SGD: real step counts follow each worker's speed",
          "[exec][budget][timing]") {
  // Worker 1 is emulated 4 times slower: it fits about a quarter of worker 0's steps. Two
  // workers, so that concurrent timing has a core each on a 2-core machine (the wall clock of an
  // oversubscribed core would count the scheduler's time slices as steps).
  const auto platform = model::make_crossbar_platform({1e9, 2.5e8}, 1e9, 1e-5);
  for (const char* timing : {"lockstep", "concurrent"}) {
    INFO(timing);
    const model::Job job = job_from(
        "workers: 2\nbatch: 128\nhidden: [64]\nmax_steps: 300\neval_every: 100\n"
        "data_dir: /nonexistent/fashion\nallow_synthetic: true\ntrain_samples: 2000\n"
        "eval_samples: 200\ntarget_accuracy: 0.999\nround_budget_s: 10ms\n",
        {{"timing", timing}});
    const MeasureRun run =
        measure(job, test::tiny_workload(), platform, {"local-sgd"}, nullptr, nullptr);
    REQUIRE(run.measurements.size() == 1);
    const nlohmann::json row = model::to_json(to_result_row(run.measurements[0]));
    const auto steps = row["local_steps_mean"].get<std::vector<double>>();
    REQUIRE(steps.size() == 2);
    CHECK(steps[1] >= 1);
    CHECK(steps[0] > (std::string(timing) == "lockstep" ? 2 : 1) * steps[1]);
    CHECK(row["round_budget_s"].get<double>() == Approx(0.01));
    CHECK(row["steps"].get<long long>() >= 300);
  }
}
