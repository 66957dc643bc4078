// analytic_test.cpp: T0, T1, T2 against SparkNet's closed forms, computed by hand here.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "model/analytic/analytic.hpp"
#include "model/convergence/convergence.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;

namespace {
// 4 hosts at 1e12 flop/s; each host link 1e9 B/s and 10 us, so a route is 20 us and 1e9 B/s.
model::Platform homogeneous() {
  return model::make_crossbar_platform({1e12, 1e12, 1e12, 1e12}, 1e9, 10e-6);
}
constexpr double kAlpha = 20e-6, kBeta = 1e9, kN = 4e6, kFlopPerSample = 1e9, kSpeed = 1e12;
double C(double samples) {
  return samples * kFlopPerSample / kSpeed;
}
double ring_S(int k) {
  return 2.0 * (k - 1) * (kAlpha + kN / (k * kBeta));
}
}  // namespace

TEST_CASE("T0, T1 and T2 equal SparkNet's formulas on a homogeneous platform") {
  const auto platform = homogeneous();
  const auto workload = test::round_workload();
  const model::FixedCounts convergence(1000);  // Na = 1000, Ma = ceil(1000 / tau)
  const double b = 64;
  const int K = 4, tau = 10;
  const auto options = test::options(K, b, tau);

  const auto t0 = model::analyze(
      model::make_plan("single", options, workload, platform, convergence), platform);
  CHECK(t0.round_s == Approx(C(b)).epsilon(1e-12));
  CHECK(t0.total_s == Approx(1000 * C(b)).epsilon(1e-12));

  const auto t1 =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  CHECK(t1.compute_s == Approx(C(b / K)).epsilon(1e-12));
  CHECK(t1.comm_s == Approx(ring_S(K)).epsilon(1e-12));
  CHECK(t1.total_s == Approx(1000 * (C(b / K) + ring_S(K))).epsilon(1e-12));

  const auto t2 = model::analyze(
      model::make_plan("local-sgd", options, workload, platform, convergence), platform);
  CHECK(t2.rounds == 100);
  CHECK(t2.round_s == Approx(tau * C(b) + ring_S(K)).epsilon(1e-12));
  CHECK(t2.total_s == Approx(100 * (tau * C(b) + ring_S(K))).epsilon(1e-12));
}

TEST_CASE("result rows keep total = rounds x round and local-sgd round = tau x compute + comm") {
  const auto platform = homogeneous();
  const auto workload = test::round_workload();
  const model::CriticalBatch convergence(500, 1000, 0.3);
  for (int tau : {1, 4, 16}) {
    const auto options = test::options(4, 32, tau);
    std::vector<model::ResultRow> rows;
    for (const char* s : {"single", "sync", "local-sgd"})
      rows.push_back(
          model::analyze(model::make_plan(s, options, workload, platform, convergence), platform));
    model::fill_speedups(rows);
    for (const auto& row : rows) {
      CHECK(row.total_s == Approx(static_cast<double>(row.rounds) * row.round_s).epsilon(1e-12));
      CHECK(row.speedup == Approx(rows[0].total_s / row.total_s).epsilon(1e-12));
    }
    CHECK(rows[2].round_s == Approx(tau * rows[2].compute_s + rows[2].comm_s).epsilon(1e-12));
    CHECK(rows[2].rounds ==
          static_cast<long long>(std::ceil(convergence.local_sgd_rounds(32, 4, tau) - 1e-9)));
  }
}

TEST_CASE("a heterogeneous sync step waits for the slowest worker") {
  // speeds 1, 1, 2, 4 Tflop/s; even split of 64 samples = 16 each: the 1 Tflop/s hosts decide.
  const auto platform = model::make_crossbar_platform({1e12, 1e12, 2e12, 4e12}, 1e9, 10e-6);
  const auto workload = test::round_workload();
  const model::FixedCounts convergence(10);
  auto options = test::options(4, 64);
  const auto even =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  CHECK(even.round_s == Approx(16 * kFlopPerSample / 1e12 + ring_S(4)).epsilon(1e-12));
  CHECK(even.compute_s == Approx(16 * kFlopPerSample / 1e12).epsilon(1e-12));

  options.split = model::BatchSplit::Speed;
  const auto plan = model::make_plan("sync", options, workload, platform, convergence);
  // samples in proportion to speed: 64 * (1, 1, 2, 4) / 8 = 8, 8, 16, 32: compute is equal.
  REQUIRE(plan.worker_samples == std::vector<double>{8, 8, 16, 32});
  const auto speed = model::analyze(plan, platform);
  CHECK(speed.round_s == Approx(8 * kFlopPerSample / 1e12 + ring_S(4)).epsilon(1e-12));
  CHECK(speed.round_s < even.round_s);
}

TEST_CASE("the speed split equalises compute within one sample when shares are not whole") {
  const auto platform =
      model::make_crossbar_platform({1e12, 1.3e12, 2.7e12, 3.1e12, 0.9e12}, 1e9, 1e-5);
  const auto workload = test::round_workload();
  for (double b : {5.0, 37.0, 101.0, 1000.0}) {
    auto options = test::options(5, b);
    options.split = model::BatchSplit::Speed;
    const auto plan = model::make_plan("sync", options, workload, platform, model::FixedCounts(1));
    double total = 0, slowest = 0, fastest = 1e300;
    for (size_t w = 0; w < 5; ++w) {
      const double speed = platform.hosts[static_cast<size_t>(plan.worker_hosts[w])].speed_flops;
      const double t = plan.worker_samples[w] * kFlopPerSample / speed;
      total += plan.worker_samples[w];
      slowest = std::max(slowest, t);
      fastest = std::min(fastest, t);
    }
    CHECK(total == b);
    // the spread of per-worker compute is at most one sample on the slowest host
    CHECK(slowest - fastest <= kFlopPerSample / 0.9e12 + 1e-15);
  }
}

TEST_CASE("what-if overrides: C(b) and S given in seconds") {
  const auto platform = homogeneous();
  const auto workload = test::round_workload();
  auto options = test::options(4, 64, 5);
  options.compute_s = 0.5;  // C(64) = 0.5 s on the fastest worker
  options.comm_s = 0.25;    // S = 0.25 s
  const model::FixedCounts convergence(100);
  const auto t0 = model::analyze(
      model::make_plan("single", options, workload, platform, convergence), platform);
  const auto t1 =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  const auto t2 = model::analyze(
      model::make_plan("local-sgd", options, workload, platform, convergence), platform);
  CHECK(t0.round_s == Approx(0.5));
  CHECK(t1.round_s == Approx(0.5 / 4 + 0.25));  // C(b/K) = C(b)/K without overhead
  CHECK(t2.round_s == Approx(5 * 0.5 + 0.25));

  options.step_overhead_s = 0.1;  // C(n) = 0.1 + 0.4 n / 64
  const auto t1o =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  CHECK(t1o.round_s == Approx(0.1 + 0.4 / 4 + 0.25));
}

TEST_CASE("overlapping the all-reduce with backward never loses and never beats compute") {
  auto workload = test::round_workload();
  // four equal layers: 2.5e5 parameters (1e6 bytes) and 2.5e8 flop per sample each
  for (int i = 0; i < 4; ++i)
    workload.layers.push_back({"l" + std::to_string(i), 2.5e5, 2.5e8});
  const auto platform = homogeneous();
  auto options = test::options(4, 256);
  const model::FixedCounts convergence(1);
  const auto plain =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  options.overlap = true;
  options.bucket_bytes = 1e6;  // one bucket per layer
  const auto plan = model::make_plan("sync", options, workload, platform, convergence);
  CHECK(plan.count(model::OpKind::Collective) == 4);
  CHECK(plan.count(model::OpKind::Compute) == 4 * (1 + 4));
  const auto overlapped = model::analyze(plan, platform);
  CHECK(overlapped.round_s <= plain.round_s + 1e-12);
  CHECK(overlapped.round_s >= C(64) - 1e-12);
  // compute dominates here: the exposed communication is the last bucket's all-reduce
  const double last_bucket = 2.0 * 3 * (kAlpha + 1e6 / (4 * kBeta));
  CHECK(overlapped.round_s == Approx(C(64) + last_bucket).epsilon(1e-9));
  CHECK(overlapped.round_s == Approx(overlapped.compute_s + overlapped.comm_s).epsilon(1e-12));
}

TEST_CASE("the evaluator's critical path splits a round into compute and exposed communication") {
  model::Plan plan;
  plan.worker_hosts = {0, 1};
  auto compute = [&](int w, double flop) {
    model::Op op;
    op.kind = model::OpKind::Compute;
    op.worker = w;
    op.flop = flop;
    return plan.add(op);
  };
  const auto platform = model::make_crossbar_platform({1e12, 1e12}, 1e9, 0);
  const auto a = compute(0, 1e12), b = compute(1, 3e12);
  model::Op s;
  s.kind = model::OpKind::Collective;
  s.fixed_time_s = 0.5;
  const auto c = plan.add(s);
  plan.depend(a, c);
  plan.depend(b, c);
  const auto timing = model::evaluate(model::compile(plan, platform));
  CHECK(timing.round_s == Approx(3.5));
  CHECK(timing.compute_s == Approx(3.0));
  CHECK(timing.comm_s == Approx(0.5));
}

TEST_CASE("sync with micro-batches: one step overhead, the same flop, one all-reduce per step") {
  const auto platform = homogeneous();
  const auto workload = test::round_workload();
  const model::FixedCounts convergence(1000);
  const int K = 4, m = 4;
  const double b = 64, overhead = 1e-3;
  auto options = test::options(K, b);
  options.step_overhead_s = overhead;
  options.micro_batches = m;
  const auto t1 =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  // Gradient accumulation: m micro-batches of b/(K m) samples, the step's fixed cost once (it
  // holds the update, done once a step), then one ring all-reduce (fairseq's --update-freq).
  CHECK(t1.compute_s == Approx(overhead + C(b / K)).epsilon(1e-12));
  CHECK(t1.comm_s == Approx(ring_S(K)).epsilon(1e-12));
  CHECK(t1.round_s == Approx(overhead + C(b / K) + ring_S(K)).epsilon(1e-12));
  // With m = 1 it is plain sync.
  options.micro_batches = 1;
  const auto plain =
      model::analyze(model::make_plan("sync", options, workload, platform, convergence), platform);
  CHECK(plain.compute_s == Approx(overhead + C(b / K)).epsilon(1e-12));
  // Every worker needs a sample per micro-batch.
  options.micro_batches = 17;  // 16 samples per worker
  CHECK_THROWS_WITH(model::make_plan("sync", options, workload, platform, convergence),
                    Catch::Contains("micro_batches"));
}

TEST_CASE("a host's pass_overhead_s: m passes a step for sync, one for single") {
  // A calibrated platform's pass cost (model/inputs/calibration.hpp) is paid on every pass: m
  // times a step by sync with m micro-batches, once by single (one pass a step).
  auto platform = homogeneous();
  const auto workload = test::round_workload();
  const model::FixedCounts convergence(1000);
  const int K = 4, m = 4;
  const double b = 64, pass = 2e-4;
  auto compute_s = [&](const char* strategy, int micro) {
    auto options = test::options(strategy == std::string("single") ? 1 : K, b);
    options.micro_batches = micro;
    return model::analyze(model::make_plan(strategy, options, workload, platform, convergence),
                          platform)
        .compute_s;
  };
  std::map<std::string, double> without;
  for (const char* strategy : {"sync", "single"})
    without[strategy] = compute_s(strategy, strategy == std::string("sync") ? m : 1);
  for (model::Host& h : platform.hosts)
    h.properties["pass_overhead_s"] = "0.0002";
  CHECK(compute_s("sync", m) - without["sync"] == Approx(m * pass).epsilon(1e-9));
  CHECK(compute_s("single", 1) - without["single"] == Approx(pass).epsilon(1e-9));
}

TEST_CASE("sync with micro-batches: memory is checked for one micro-batch") {
  auto workload = test::round_workload();
  workload.activation_bytes_per_sample = 1e9;  // 1 GB per sample; the model 8 MB
  const auto platform =
      model::make_crossbar_platform({1e12, 1e12}, 1e9, 10e-6, /*gpu_memory_bytes=*/8.5e9);
  const model::FixedCounts convergence(1);
  auto options = test::options(2, 32);  // 16 samples per worker: 16 GB, does not fit
  CHECK_THROWS_WITH(model::make_plan("sync", options, workload, platform, convergence),
                    Catch::Contains("batch"));
  options.micro_batches = 2;  // 8 samples per micro-batch: 8 GB, fits
  CHECK_NOTHROW(model::make_plan("sync", options, workload, platform, convergence));
}
