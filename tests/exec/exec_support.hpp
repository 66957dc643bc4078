// exec_support.hpp: small fixtures for exec tests (tiny synthetic data, platforms, plans).
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
#include "exec/mlp.hpp"
#include "exec/trainer.hpp"
#include "exec/transformer_block.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::test {

/// A Gaussian-mixture task of `features` inputs and `classes` classes.
inline exec::Dataset mixture_data(long long train, long long test, int features, int classes,
                                  std::uint64_t seed) {
  exec::SyntheticOptions o;
  o.train_samples = train;
  o.test_samples = test;
  o.features = features;
  o.classes = classes;
  o.separation = 3.0;
  o.label_noise = 0.02;
  o.seed = seed;
  return exec::make_synthetic(o);
}

/// A small Gaussian-mixture task that an MLP learns in a few hundred steps.
inline exec::Dataset tiny_data(long long train = 2000, long long test = 500,
                               std::uint64_t seed = 7) {
  return mixture_data(train, test, 32, 4, seed);
}

inline exec::MlpShape tiny_shape() {
  exec::MlpShape s;
  s.widths = {32, 16, 4};
  return s;
}

/// The tiny MLP as a workload, with per-layer parameters so that overlap has buckets.
inline model::Workload tiny_workload() {
  model::Workload w;
  w.name = "tiny-mlp";
  w.source = "<test>";
  w.parameters = 32 * 16 + 16 + 16 * 4 + 4;
  w.bytes_per_parameter = 4;
  w.flop_per_sample = 6.0 * (32 * 16 + 16 * 4);
  w.layers = {{"fc1", 32 * 16 + 16, 6.0 * 32 * 16}, {"fc2", 16 * 4 + 4, 6.0 * 16 * 4}};
  return w;
}

inline model::Platform platform_with_speeds(const std::vector<double>& speeds) {
  return model::make_crossbar_platform(speeds, 1e9, 1e-5);
}

inline model::Plan make_plan(const std::string& strategy, int workers, double batch, int tau = 1,
                             const model::Platform& platform = model::make_crossbar_platform(
                                 std::vector<double>(8, 1e9), 1e9, 1e-5),
                             model::BatchSplit split = model::BatchSplit::Even,
                             bool overlap = false, double bucket_bytes = 1e9) {
  model::StrategyOptions o;
  o.file = "<test>";
  o.workers = workers;
  o.batch = batch;
  o.tau = tau;
  o.split = split;
  o.overlap = overlap;
  o.bucket_bytes = bucket_bytes;
  o.check_memory = false;
  return model::make_plan(strategy, o, tiny_workload(), platform, model::FixedCounts(1));
}

inline exec::TrainOptions quick_options(long long steps) {
  exec::TrainOptions o;
  o.learning_rate = 0.05;
  o.target_accuracy = 0;  // run all steps
  o.max_steps = steps;
  o.eval_every_steps = 5;
  o.seed = 3;
  o.keep_parameters = true;
  o.origins = "<test>";
  return o;
}

/// A job read from `yaml` (as job.yaml) with the model's and exec's keys, `flags` overriding.
inline model::Job job_from(const std::string& yaml,
                           const std::map<std::string, std::string>& flags = {}) {
  std::vector<model::KeySpec> specs = model::model_job_keys();
  for (const model::KeySpec& s : exec::exec_job_keys())
    specs.push_back(s);
  return model::parse_job_yaml(yaml, "job.yaml", ".", specs, flags);
}

/// A batch of 32 inputs like standardised Fashion-MNIST pixels (784 features drawn from a
/// normal distribution, seed 11), labels of all 10 classes (i mod 10).
struct PixelBatch {
  std::vector<float> x;
  std::vector<int> y;
};

inline PixelBatch pixel_batch() {
  std::mt19937 rng(11);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  PixelBatch batch{std::vector<float>(32 * 784), std::vector<int>(32)};
  for (float& v : batch.x)
    v = pixel(rng);
  for (int i = 0; i < 32; ++i)
    batch.y[static_cast<std::size_t>(i)] = i % 10;
  return batch;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0 : 1e300;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    worst = std::max(worst, d < 0 ? -d : d);
  }
  return worst;
}

/// exec's decoder block of the transformer tests: 3 layers (so that 2 stages split them unevenly,
/// 2 + 1), 4 heads sharing 2 K/V heads, a vocabulary of 32 (so that 2 and 4 tensor ranks each hold
/// 16 or 8 columns of the head), small enough for a step in milliseconds.
inline exec::BlockConfig small_block() {
  exec::BlockConfig c;
  c.vocabulary = 32;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = 48;
  c.layers = 3;
  c.sequence = 12;
  c.micro_batch = 1;
  return c;
}

}  // namespace tauplan::test
