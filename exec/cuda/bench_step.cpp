// bench_step.cpp: time one training step (forward, backward, SGD) of the CUDA MLP.
//
// The batch is device-resident (uploaded once), as in pytorch_step.py, so both time the same
// work: fp32 GEMMs without TF32, a fused softmax cross-entropy, SGD over one flat vector.
// Steps are enqueued back to back after --warmup untimed steps (cuBLAS heuristics and
// workspaces settle), in 5 rounds of --steps/5 each timed by the host clock around the round
// and a final stream synchronisation; step_ms is the median round's time per step (the same
// method as pytorch_step.py). With --graph the whole step (forward, backward, SGD) is also
// captured once as a CUDA graph and replayed (DeviceMlp::capture_step/replay_step), timed the
// same way (graph_step_ms); then N = min(--steps, 20) graph replays from the initial
// parameters are checked against N plain steps from them: bitwise equal, or within 1e-6
// relative (max |a - b| / max |a| over the parameter vector), else exit 1. With --cpu it also
// times the CPU step (exec/mlp: OpenBLAS, or Eigen without it; one thread). Usage:
//   tauplan_cuda_bench_step [--widths 784,256,128,10] [--batch 256] [--steps 200]
//                           [--warmup 20] [--graph] [--cpu]
// Prints one JSON line. Exit 77 without a GPU, 1 on a CUDA error or a failed graph check, 2
// on a bad argument.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
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

constexpr int kRounds = 5;

/// Median over kRounds rounds of the per-step time of `steps / kRounds` steps (at least 1 per
/// round) enqueued back to back; `sync` waits for the device at the end of each round.
double time_steps(int steps, const std::function<void()>& step, const std::function<void()>& sync) {
  const int per_round = std::max(1, steps / kRounds);
  std::vector<double> rounds;
  for (int r = 0; r < kRounds; ++r) {
    sync();
    const auto t0 = Clock::now();
    for (int s = 0; s < per_round; ++s)
      step();
    sync();
    rounds.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / per_round);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

struct Comparison {
  bool bitwise = true;
  double max_rel = 0;  ///< max |a - b| / max |a|
};

Comparison compare(const std::vector<float>& a, const std::vector<float>& b) {
  Comparison c;
  c.bitwise =
      a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
  }
  c.max_rel = scale > 0 ? diff / scale : diff;
  return c;
}

}  // namespace

int main(int argc, char** argv) try {
  MlpShape shape;
  int batch = 256, steps = 200, warmup = 20;
  bool cpu = false, graph = false;
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
    } else if (a == "--graph") {
      graph = true;
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
  const auto sync = [&] { mlp.synchronize(); };
  const auto plain_step = [&] {
    mlp.forward_backward(batch, false);
    mlp.sgd_step(lr);
  };
  const double gpu_s = time_steps(steps, plain_step, sync);
  const double loss = mlp.forward_backward(batch, true);

  // The same step as one CUDA graph, then N replays against N plain steps from the same start.
  double graph_s = -1, graph_max_rel = -1;
  bool graph_bitwise = false, graph_ok = true;
  const int check_steps = std::min(steps, 20);
  if (graph) {
    mlp.set_parameters(params.data());
    mlp.capture_step(batch, lr);
    for (int s = 0; s < warmup; ++s)
      mlp.replay_step();
    graph_s = time_steps(
        steps, [&] { mlp.replay_step(); }, sync);

    std::vector<float> after_plain(params.size()), after_graph(params.size());
    mlp.set_parameters(params.data());
    for (int s = 0; s < check_steps; ++s)
      plain_step();
    mlp.get_parameters(after_plain.data());
    mlp.set_parameters(params.data());
    for (int s = 0; s < check_steps; ++s)
      mlp.replay_step();
    mlp.get_parameters(after_graph.data());
    const Comparison c = compare(after_plain, after_graph);
    graph_bitwise = c.bitwise;
    graph_max_rel = c.max_rel;
    graph_ok = c.bitwise || c.max_rel <= 1e-6;
    // The parameters must have moved, else the check compares nothing.
    if (compare(params, after_plain).bitwise) graph_ok = false;
  }

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
      "\"final_loss\": %.4f, \"cpu_step_ms\": %.4f",
      cuda::device_description(0).c_str(), shape.to_string().c_str(), batch, steps, gpu_s * 1e3,
      batch / gpu_s, shape.flop_per_sample() * batch / gpu_s / 1e12, loss,
      cpu_s < 0 ? -1.0 : cpu_s * 1e3);
  if (graph)
    std::printf(
        ", \"graph_step_ms\": %.4f, \"graph_samples_per_s\": %.0f, \"graph_check_steps\": %d, "
        "\"graph_bitwise\": %s, \"graph_max_rel_diff\": %.3e, \"graph_ok\": %s",
        graph_s * 1e3, batch / graph_s, check_steps, graph_bitwise ? "true" : "false",
        graph_max_rel, graph_ok ? "true" : "false");
  std::printf("}\n");
  if (!graph_ok)
    std::fprintf(stderr,
                 "tauplan_cuda_bench_step: graph replays differ from plain steps (max relative "
                 "difference %.3e, bound 1e-6)\n",
                 graph_max_rel);
  return graph_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::printf("{\"impl\": \"tauplan-cuda\", \"error\": \"%s\"}\n", e.what());
  std::fprintf(stderr, "tauplan_cuda_bench_step: error: %s\n", e.what());
  return 1;
}
