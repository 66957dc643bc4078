// compute_calibration_test.cpp: the CPU compute calibration (exec/compute_calibration.hpp) makes
// a profile that the strict reader accepts, measures only its hold-out sizes (5 x 2^j), and no
// GEMM of the transformer validation jobs (experiments/transformer/validate-*.yaml) at any of
// their layouts has a dimension the calibration measures.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "exec/compute_calibration.hpp"
#include "model/base/error.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"
#include "model/ir/compute_shapes.hpp"
#include "study/common/inputs.hpp"

using namespace tauplan;

TEST_CASE("compute calibration: a tiny request writes a profile read_compute_profile accepts") {
  exec::ComputeCalibrationRequest r;
  r.m_dims = {20, 40};
  r.nk_dims = {20, 80};
  r.threads = 2;
  r.stream_floats = 1 << 16;
  r.stream_passes = 2;
  r.batched_counts = {10};
  r.batched_dims = {20, 40};
  const exec::ComputeCalibration c = exec::measure_compute_calibration(r);
  CHECK(c.profile.gemms.size() == 8);
  CHECK(c.profile.batched_gemms.size() == 8);
  for (const model::BatchedGemmSample& g : c.profile.batched_gemms) {
    CHECK(g.count == 10);
    CHECK(exec::is_calibration_dimension(static_cast<long long>(g.m)));
    CHECK(g.seconds > 0);
  }
  // Every variant the block runs is measured; the families (norm, activation) are left to them.
  for (int kind = 0; kind < model::kMemoryKernelKinds; ++kind) {
    const auto k = static_cast<model::MemoryKernel>(kind);
    CAPTURE(model::to_string(k));
    const bool family = k == model::MemoryKernel::Norm || k == model::MemoryKernel::Activation;
    CHECK((c.profile.memory_kernel_Bps[kind] > 0) == !family);
  }
  CHECK(c.profile.precision == "fp32");
  CHECK(c.profile.peak_flops > 0);
  CHECK(c.profile.memory_bandwidth_Bps > 0);
  CHECK(c.handoff_latency_s > 0);
  for (const model::GemmSample& g : c.profile.gemms) {
    CHECK(exec::is_calibration_dimension(static_cast<long long>(g.m)));
    CHECK(exec::is_calibration_dimension(static_cast<long long>(g.n)));
    CHECK(exec::is_calibration_dimension(static_cast<long long>(g.k)));
    // The peak is the best measured rate: no sample is faster.
    CHECK(2 * g.m * g.n * g.k / g.seconds <= c.profile.peak_flops * (1 + 1e-12));
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "tauplan-compute-profile-test.json").string();
  std::ofstream(path) << model::compute_profile_json(c.profile);
  const model::ComputeProfile back = model::read_compute_profile(path);
  CHECK(back.gemms.size() == c.profile.gemms.size());
  CHECK(back.device == c.profile.device);
  CHECK(back.batched_gemms.size() == 8);
  CHECK(back.memory_kernel_Bps[static_cast<int>(model::MemoryKernel::Softmax)] ==
        c.profile.memory_kernel_Bps[static_cast<int>(model::MemoryKernel::Softmax)]);
  std::filesystem::remove(path);
}

TEST_CASE("compute calibration: sizes outside the hold-out rule are refused") {
  CHECK(exec::is_calibration_dimension(20));
  CHECK(exec::is_calibration_dimension(2560));
  CHECK_FALSE(exec::is_calibration_dimension(16));
  CHECK_FALSE(exec::is_calibration_dimension(384));
  CHECK_FALSE(exec::is_calibration_dimension(60));
  for (int d : exec::default_calibration_m_dims())
    CHECK(exec::is_calibration_dimension(d));
  exec::ComputeCalibrationRequest r;
  r.nk_dims = {20, 64};
  CHECK_THROWS_AS(exec::measure_compute_calibration(r), InputError);
  r.nk_dims = {};
  CHECK_THROWS_AS(exec::measure_compute_calibration(r), InputError);
  r.nk_dims = {20};
  r.batched_dims = {32};
  CHECK_THROWS_AS(exec::measure_compute_calibration(r), InputError);
  r.batched_dims = {20};
  r.batched_counts = {64};
  CHECK_THROWS_AS(exec::measure_compute_calibration(r), InputError);
}

TEST_CASE("compute calibration: the validation jobs' GEMM shapes are held out") {
  for (const std::string job :
       {"validate-small", "validate-wide", "validate-heldout", "validate-heldout2"}) {
    const model::JobInputs inputs =
        study::load_inputs("experiments/transformer/" + job + ".yaml", {});
    REQUIRE(inputs.workload.transformer);
    const double batch = static_cast<double>(inputs.job.integer("batch"));
    const int k = static_cast<int>(inputs.job.integer("workers"));
    // The micro-batches of single, sync-K and pipeline-K (micro_batches 4), tensor 1 and K.
    for (double micro : {batch, batch / k, batch / 4})
      for (int tensor : {1, k}) {
        model::LayerShape s =
            model::layer_shape(*inputs.workload.transformer, micro, tensor, false);
        s.element_bytes = 4;
        auto ops = model::layer_ops(s, model::Recompute::None);
        const auto logits = model::logits_ops(s, inputs.workload.transformer->vocabulary);
        ops.insert(ops.end(), logits.begin(), logits.end());
        for (const model::ComputeOp& op : ops) {
          if (op.kind != model::ComputeOpKind::Gemm) continue;
          INFO(job << " " << op.name << " " << op.m << " " << op.n << " " << op.k);
          // As the profile looks a GEMM up: the stacked [count m x k] x [k x n], or the batched
          // form's count and member [m x k] x [k x n].
          CHECK_FALSE(exec::is_calibration_dimension(static_cast<long long>(op.m * op.count)));
          CHECK_FALSE(exec::is_calibration_dimension(static_cast<long long>(op.m)));
          if (op.count > 1)
            CHECK_FALSE(exec::is_calibration_dimension(static_cast<long long>(op.count)));
          CHECK_FALSE(exec::is_calibration_dimension(static_cast<long long>(op.n)));
          CHECK_FALSE(exec::is_calibration_dimension(static_cast<long long>(op.k)));
        }
      }
  }
}

TEST_CASE("compute calibration: a layout's all-reduce timed per group, every group at once") {
  // Two groups of 2 threads: one point per size, in order, with bytes 4 x floats and a positive
  // time; three threads in pairs (the third waits at the barriers); a group of one, or larger
  // than the threads, is refused.
  const std::vector<exec::AllReducePoint> points =
      exec::measure_thread_allreduce(4, 2, {64, 4096}, 3);
  REQUIRE(points.size() == 2);
  CHECK(points[0].bytes == 256);
  CHECK(points[1].bytes == 16384);
  CHECK(points[0].seconds > 0);
  CHECK(points[1].seconds > 0);
  CHECK(exec::measure_thread_allreduce(3, 2, {64}, 2).size() == 1);
  CHECK_THROWS_AS(exec::measure_thread_allreduce(2, 3, {64}, 3), std::invalid_argument);
  CHECK_THROWS_AS(exec::measure_thread_allreduce(2, 1, {64}, 3), std::invalid_argument);
  CHECK_THROWS_AS(exec::measure_thread_allreduce(2, 2, {0}, 3), std::invalid_argument);
  CHECK_THROWS_AS(exec::measure_thread_allreduce(2, 2, {64}, 0), std::invalid_argument);
}
