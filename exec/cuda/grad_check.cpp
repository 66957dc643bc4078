// grad_check.cpp: the CUDA backend against the CPU reference (exits 77 without a GPU).
//
// Checks, for a small MLP and for the default 784-256-128-10 at batch 64: the loss and the
// gradient of the CUDA MLP against the double-precision CPU MLP (relative L2 error of the
// gradient under 1e-3, the acceptance bound for fp32), the SGD step, the hit count, the
// device communicator's mean and Adasum against combine.cpp, and a short sync run of two
// logical workers on the GPU against the same run on the CPU. Prints one JSON line per check
// and a summary; exit 0 when all pass, 1 otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/combine.hpp"
#include "exec/cuda/cuda_backend.hpp"
#include "exec/mlp.hpp"
#include "exec/thread_communicator.hpp"

using namespace tauplan::exec;

namespace {

int failures = 0;

void report(const std::string& name, double value, double bound, const std::string& what) {
  const bool ok = value <= bound;
  if (!ok) ++failures;
  std::printf("{\"check\": \"%s\", \"%s\": %.3e, \"bound\": %.1e, \"ok\": %s}\n", name.c_str(),
              what.c_str(), value, bound, ok ? "true" : "false");
}

double rel_l2(const std::vector<double>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

struct Batch {
  std::vector<float> x;
  std::vector<int> y;
};

Batch random_batch(int n, int features, int classes, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  Batch b;
  b.x.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(features));
  for (float& v : b.x)
    v = normal(rng);
  b.y.resize(static_cast<std::size_t>(n));
  for (int& v : b.y)
    v = static_cast<int>(rng() % static_cast<unsigned>(classes));
  return b;
}

void check_gradients(const MlpShape& shape, int n) {
  const std::string tag = shape.to_string() + " b=" + std::to_string(n);
  std::vector<float> params(shape.parameters());
  init_parameters(shape, 1, params.data());
  const Batch batch = random_batch(n, shape.inputs(), shape.classes(), 2);

  BasicMlp<double> ref(shape);
  std::copy(params.begin(), params.end(), ref.parameters());
  const std::vector<double> xd(batch.x.begin(), batch.x.end());
  const double loss_ref = ref.forward_backward(xd.data(), batch.y.data(), n);
  const std::vector<double> g_ref(ref.gradients(), ref.gradients() + ref.parameter_count());

  cuda::DeviceMlp gpu(shape, 0);
  gpu.set_parameters(params.data());
  gpu.upload(batch.x.data(), batch.y.data(), n);
  const double loss_gpu = gpu.forward_backward(n, true);
  std::vector<float> g_gpu(shape.parameters());
  gpu.get_gradients(g_gpu.data());
  report("loss " + tag, std::fabs(loss_gpu - loss_ref) / std::fabs(loss_ref), 1e-5,
         "relative_error");
  report("gradient " + tag, rel_l2(g_ref, g_gpu), 1e-3, "relative_l2_error");

  // SGD: p - lr g, elementwise.
  const float lr = 0.05f;
  gpu.sgd_step(lr);
  std::vector<float> after(shape.parameters());
  gpu.get_parameters(after.data());
  double worst = 0;
  for (std::size_t i = 0; i < after.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(after[i]) -
                                      (static_cast<double>(params[i]) -
                                       static_cast<double>(lr) * static_cast<double>(g_gpu[i]))));
  report("sgd step " + tag, worst, 1e-6, "max_abs_error");

  // Hit counts on 3000 samples (chunks) against the float CPU model.
  Mlp cpu(shape);
  std::copy(after.begin(), after.end(), cpu.parameters());
  const Batch test = random_batch(3000, shape.inputs(), shape.classes(), 3);
  const long long cpu_hits = cpu.correct(test.x.data(), test.y.data(), 3000);
  const long long gpu_hits = gpu.correct(test.x.data(), test.y.data(), 3000, 1024);
  report("hits " + tag, static_cast<double>(std::llabs(cpu_hits - gpu_hits)), 2,
         "hit_count_difference");
}

void check_device_combine() {
  const std::size_t n = 100003;
  const int k = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<std::vector<float>> host(k, std::vector<float>(n));
  for (auto& v : host)
    for (float& x : v)
      x = normal(rng);
  const std::vector<double> weights = {10, 20, 30};
  for (CombineRule rule : {CombineRule::Mean, CombineRule::Adasum}) {
    std::vector<const float*> inputs;
    for (auto& v : host)
      inputs.push_back(v.data());
    std::vector<float> expected(n);
    combine(rule, inputs, weights, n, expected.data());

    // Device buffers live in DeviceMlp parameter vectors of a 1-layer model sized n.
    MlpShape carrier;
    carrier.widths = {static_cast<int>(n) - 1, 1};  // (n-1) weights + 1 bias = n parameters
    std::vector<std::unique_ptr<cuda::DeviceMlp>> bufs;
    std::vector<float*> device;
    for (int j = 0; j < k; ++j) {
      bufs.push_back(std::make_unique<cuda::DeviceMlp>(carrier, 0));
      bufs.back()->set_parameters(host[static_cast<std::size_t>(j)].data());
      device.push_back(bufs.back()->device_parameters());
    }
    cuda::DeviceCommunicator comm(k, 0);
    comm.combine(device, weights, n, rule);
    double worst = 0;
    for (int j = 0; j < k; ++j) {
      std::vector<float> got(n);
      bufs[static_cast<std::size_t>(j)]->get_parameters(got.data());
      for (std::size_t i = 0; i < n; ++i)
        worst = std::max(worst,
                         std::fabs(static_cast<double>(got[i]) - static_cast<double>(expected[i])) /
                             std::max(1.0, std::fabs(static_cast<double>(expected[i]))));
    }
    report(std::string("device combine ") + to_string(rule), worst, 1e-5, "max_rel_error");
  }
}

// Two logical workers, sync SGD, 30 steps: GPU (device communicator) against CPU (threads).
void check_short_training() {
  MlpShape shape;
  shape.widths = {64, 32, 5};
  std::vector<float> init(shape.parameters());
  init_parameters(shape, 9, init.data());
  const int per_worker = 16, steps = 30;
  const float lr = 0.1f;

  std::vector<std::unique_ptr<cuda::CudaReplica>> gpu;
  std::vector<std::unique_ptr<Mlp>> cpu;
  for (int w = 0; w < 2; ++w) {
    gpu.push_back(std::make_unique<cuda::CudaReplica>(shape, 0));
    gpu.back()->set_parameters_from_host(init.data());
    cpu.push_back(std::make_unique<Mlp>(shape));
    std::copy(init.begin(), init.end(), cpu.back()->parameters());
  }
  cuda::DeviceCommunicator dcomm(2, 0);
  ThreadCommunicator tcomm(2);
  for (int s = 0; s < steps; ++s) {
    std::vector<float*> dg, cg;
    for (int w = 0; w < 2; ++w) {
      const Batch b = random_batch(per_worker, 64, 5, static_cast<unsigned>(100 + 2 * s + w));
      gpu[static_cast<std::size_t>(w)]->compute(b.x.data(), b.y.data(), per_worker);
      cpu[static_cast<std::size_t>(w)]->forward_backward(b.x.data(), b.y.data(), per_worker);
      dg.push_back(gpu[static_cast<std::size_t>(w)]->gradients());
      cg.push_back(cpu[static_cast<std::size_t>(w)]->gradients());
    }
    dcomm.combine(dg, {16, 16}, shape.parameters(), CombineRule::Mean);
    tcomm.combine(cg, {16, 16}, shape.parameters(), CombineRule::Mean);
    for (int w = 0; w < 2; ++w) {
      gpu[static_cast<std::size_t>(w)]->sgd_step(lr);
      cpu[static_cast<std::size_t>(w)]->sgd_step(lr);
    }
  }
  std::vector<float> g(shape.parameters());
  gpu[0]->get_parameters_to_host(g.data());
  const std::vector<double> c(cpu[0]->parameters(), cpu[0]->parameters() + shape.parameters());
  report("sync training 2 logical workers, 30 steps", rel_l2(c, g), 1e-4, "relative_l2_error");
}

}  // namespace

int main() {
  std::string why;
  const int devices = cuda::usable_devices(&why);
  if (devices == 0) {
    std::printf("tauplan_cuda_grad_check: no usable GPU (%s): skipped\n", why.c_str());
    return 77;
  }
  std::printf("# device 0: %s; NCCL %d\n", cuda::device_description(0).c_str(),
              cuda::nccl_version());
  try {
    MlpShape small;
    small.widths = {32, 16, 4};
    check_gradients(small, 5);
    check_gradients(MlpShape{}, 64);
    check_gradients(MlpShape{}, 1000);
    check_device_combine();
    check_short_training();
  } catch (const std::exception& e) {
    std::printf("tauplan_cuda_grad_check: error: %s\n", e.what());
    return 1;
  }
  std::printf("# %s: %d check(s) failed\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
