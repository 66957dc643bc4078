// combine.cpp: weighted mean and recursive pairwise Adasum over host float vectors.
#include "exec/combine.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tauplan::exec {

const char* to_string(CombineRule rule) {
  return rule == CombineRule::Mean ? "mean" : "adasum";
}

bool parse_combine_rule(const std::string& text, CombineRule& rule) {
  if (text == "mean") {
    rule = CombineRule::Mean;
    return true;
  }
  if (text == "adasum") {
    rule = CombineRule::Adasum;
    return true;
  }
  return false;
}

namespace {

double weight_sum(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) {
    assert(w >= 0);
    total += w;
  }
  assert(total > 0);
  return total;
}

}  // namespace

void combine_mean(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                  std::size_t n, float* out) {
  assert(!inputs.empty() && inputs.size() == weights.size());
  const double total = weight_sum(weights);
  // Every element is accumulated in the same order (0 + s_0 x_0 + s_1 x_1 + ...), worker by
  // worker so that the loops vectorise; `out` is written last, so it may alias any input.
  thread_local std::vector<double> acc;
  acc.assign(n, 0.0);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const double s = weights[k] / total;
    const float* x = inputs[k];
    for (std::size_t i = 0; i < n; ++i)
      acc[i] += s * static_cast<double>(x[i]);
  }
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(acc[i]);
}

void adasum_pair(const float* a, const float* b, std::size_t n, float* out) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  // A zero vector contributes nothing; its coefficient is irrelevant, so keep it finite.
  const double ca = aa > 0 ? 1.0 - ab / (2.0 * aa) : 1.0;
  const double cb = bb > 0 ? 1.0 - ab / (2.0 * bb) : 1.0;
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(ca * static_cast<double>(a[i]) + cb * static_cast<double>(b[i]));
}

void combine_adasum(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                    std::size_t n, float* out) {
  assert(!inputs.empty() && inputs.size() == weights.size());
  const double total = weight_sum(weights);
  const std::size_t k_count = inputs.size();
  // Working copies, scaled so that equal weights leave the vectors unchanged.
  std::vector<std::vector<float>> level(k_count, std::vector<float>(n));
  for (std::size_t k = 0; k < k_count; ++k) {
    const double s = static_cast<double>(k_count) * weights[k] / total;
    if (s == 1.0) {
      std::memcpy(level[k].data(), inputs[k], n * sizeof(float));
    } else {
      for (std::size_t i = 0; i < n; ++i)
        level[k][i] = static_cast<float>(s * static_cast<double>(inputs[k][i]));
    }
  }
  while (level.size() > 1) {
    std::vector<std::vector<float>> next;
    next.reserve((level.size() + 1) / 2);
    for (std::size_t k = 0; k + 1 < level.size(); k += 2) {
      adasum_pair(level[k].data(), level[k + 1].data(), n, level[k].data());
      next.push_back(std::move(level[k]));
    }
    if (level.size() % 2 == 1) next.push_back(std::move(level.back()));
    level = std::move(next);
  }
  std::memcpy(out, level.front().data(), n * sizeof(float));
}

void combine(CombineRule rule, const std::vector<const float*>& inputs,
             const std::vector<double>& weights, std::size_t n, float* out) {
  if (rule == CombineRule::Mean)
    combine_mean(inputs, weights, n, out);
  else
    combine_adasum(inputs, weights, n, out);
}

void mean_of_pushes(const std::vector<const float*>& pushed, std::size_t len, float* mean) {
  std::vector<double> weights;
  for (const float* p : pushed)
    weights.push_back(static_cast<double>(p[len]));
  combine_mean(pushed, weights, len, mean);
}

void apply_sgd(float* shard, const float* gradient, std::size_t n, float rate) {
  for (std::size_t i = 0; i < n; ++i)
    shard[i] -= rate * gradient[i];
}

}  // namespace tauplan::exec
