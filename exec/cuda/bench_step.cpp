// bench_step.cpp: time one training step (forward, backward, SGD) of the CUDA MLP.
//
// The batch is device-resident (uploaded once), as in pytorch_step.py, so both time the same
// work: fp32 GEMMs without TF32, a fused softmax cross-entropy, SGD over one flat vector.
// Steps are enqueued back to back and the mean over --steps is reported after --warmup
// untimed steps (cuBLAS heuristics and workspaces settle). With --cpu it also times the CPU
// step (exec/mlp: OpenBLAS, or Eigen without it; one thread) on this machine. Usage:
//   tauplan_cuda_bench_step [--widths 784,256,128,10] [--batch 256] [--steps 200]
//                           [--warmup 20] [--cpu]
// Prints one JSON line. Exit 77 without a GPU, 2 on a bad argument.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/mlp.hpp"

using namespace tauplan::exec;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "tauplan_cuda_bench_step: error: %s\n", message.c_str());
  std::exit(2);
}

std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> widths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int w = std::atoi(item.c_str());
    if (w < 1) usage("--widths: expected positive integers separated by commas, got " + text);
    widths.push_back(w);
  }
  if (widths.size() < 2) usage("--widths: expected at least an input and an output width");
  return widths;
}

}  // namespace

int main(int argc, char** argv) {
  MlpShape shape;
  int batch = 256, steps = 200, warmup = 20;
  bool cpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": expected a value");
      return argv[++i];
    };
    if (a == "--widths") {
      shape.widths = parse_widths(value());
    } else if (a == "--batch") {
      batch = std::atoi(value().c_str());
    } else if (a == "--steps") {
      steps = std::atoi(value().c_str());
    } else if (a == "--warmup") {
      warmup = std::atoi(value().c_str());
    } else if (a == "--cpu") {
      cpu = true;
    } else {
      usage("unknown argument " + a);
    }
  }
  if (batch < 1 || steps < 1 || warmup < 0) usage("--batch and --steps must be >= 1");

  std::string why;
  if (cuda::usable_devices(&why) == 0) {
    std::printf("{\"impl\": \"tauplan-cuda\", \"skipped\": \"%s\"}\n", why.c_str());
    return 77;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<std::size_t>(batch) * static_cast<std::size_t>(shape.inputs()));
  for (float& v : x)
    v = normal(rng);
  std::vector<int> y(static_cast<std::size_t>(batch));
  for (int& v : y)
    v = static_cast<int>(rng() % static_cast<unsigned>(shape.classes()));
  std::vector<float> params(shape.parameters());
  init_parameters(shape, 1, params.data());

  cuda::DeviceMlp mlp(shape, 0);
  mlp.set_parameters(params.data());
  mlp.upload(x.data(), y.data(), batch);
  const float lr = 1e-3f;
  for (int s = 0; s < warmup; ++s) {
    mlp.forward_backward(batch, false);
    mlp.sgd_step(lr);
  }
  mlp.synchronize();
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) {
    mlp.forward_backward(batch, false);
    mlp.sgd_step(lr);
  }
  mlp.synchronize();
  const double gpu_s = std::chrono::duration<double>(Clock::now() - t0).count() / steps;
  const double loss = mlp.forward_backward(batch, true);

  double cpu_s = -1;
  if (cpu) {
    Mlp host(shape);
    std::copy(params.begin(), params.end(), host.parameters());
    const int cpu_steps = std::max(3, std::min(steps, 50));
    host.forward_backward(x.data(), y.data(), batch);
    const auto c0 = Clock::now();
    for (int s = 0; s < cpu_steps; ++s) {
      host.forward_backward(x.data(), y.data(), batch);
      host.sgd_step(lr);
    }
    cpu_s = std::chrono::duration<double>(Clock::now() - c0).count() / cpu_steps;
  }
  std::printf(
      "{\"impl\": \"tauplan-cuda\", \"device\": \"%s\", \"widths\": \"%s\", \"batch\": %d, "
      "\"steps\": %d, \"step_ms\": %.4f, \"samples_per_s\": %.0f, \"tflops\": %.3f, "
      "\"final_loss\": %.4f, \"cpu_step_ms\": %.4f}\n",
      cuda::device_description(0).c_str(), shape.to_string().c_str(), batch, steps, gpu_s * 1e3,
      batch / gpu_s, shape.flop_per_sample() * batch / gpu_s / 1e12, loss,
      cpu_s < 0 ? -1.0 : cpu_s * 1e3);
  return 0;
}
