// block_kernels.cpp: the CPU block's memory-bound loops (block_kernels.hpp).
#include "exec/block_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace tauplan::exec::kernels {
namespace {

constexpr float kGeluScale = 0.7978845608f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

/// tanh(z) = 1 - 2 / (1 + e^{2z}): one expf, whose cost does not depend on z (tanhf's does).
/// e^{2z} overflows to inf above z = 44 (giving 1) and underflows to 0 below -44 (giving -1).
inline float tanh_by_exp(float z) {
  return 1.0f - 2.0f / (1.0f + std::exp(2.0f * z));
}

inline float sigmoid(float g) {
  return 1.0f / (1.0f + std::exp(-g));
}

}  // namespace

void causal_softmax_forward(float* scores, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    float* row = scores + i * n;
    const float largest = *std::max_element(row, row + i + 1);
    float total = 0.0f;
    for (std::size_t l = 0; l <= i; ++l) {
      row[l] = std::exp(row[l] - largest);
      total += row[l];
    }
    const float inverse_total = 1.0f / total;
    for (std::size_t l = 0; l <= i; ++l)
      row[l] *= inverse_total;
    std::fill(row + i + 1, row + n, 0.0f);
  }
}

void softmax_backward(const float* probabilities, const float* probabilities_gradient,
                      float* score_gradient, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float* p = probabilities + i * n;
    const float* dp = probabilities_gradient + i * n;
    float* ds = score_gradient + i * n;
    float weighted = 0.0f;
    for (std::size_t l = 0; l < n; ++l)
      weighted += p[l] * dp[l];
    for (std::size_t l = 0; l < n; ++l)
      ds[l] = p[l] * (dp[l] - weighted);
  }
}

void norm_forward(bool layer_norm, std::size_t rows, std::size_t width, float epsilon,
                  const float* input, const float* gain, const float* bias, float* normalized,
                  float* inverse_std, float* output) {
  const float inverse_width = 1.0f / static_cast<float>(width);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* x = input + r * width;
    float* xn = normalized + r * width;
    float* y = output + r * width;
    float mean = 0.0f;
    if (layer_norm) {
      for (std::size_t c = 0; c < width; ++c)
        mean += x[c];
      mean *= inverse_width;
    }
    float second_moment = 0.0f;
    for (std::size_t c = 0; c < width; ++c)
      second_moment += (x[c] - mean) * (x[c] - mean);
    const float row_inverse_std = 1.0f / std::sqrt(second_moment * inverse_width + epsilon);
    inverse_std[r] = row_inverse_std;
    for (std::size_t c = 0; c < width; ++c)
      xn[c] = (x[c] - mean) * row_inverse_std;
    if (bias != nullptr) {
      for (std::size_t c = 0; c < width; ++c)
        y[c] = xn[c] * gain[c] + bias[c];
    } else {
      for (std::size_t c = 0; c < width; ++c)
        y[c] = xn[c] * gain[c];
    }
  }
}

void norm_backward(bool layer_norm, std::size_t rows, std::size_t width, const float* normalized,
                   const float* inverse_std, const float* gain, const float* output_gradient,
                   float* input_gradient, float* gain_gradient, float* bias_gradient) {
  const float inverse_width = 1.0f / static_cast<float>(width);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* dy = output_gradient + r * width;
    const float* xn = normalized + r * width;
    float* dx = input_gradient + r * width;
    float mean_dnormalized = 0.0f, mean_dnormalized_normalized = 0.0f;
    for (std::size_t c = 0; c < width; ++c) {
      const float dnormalized = dy[c] * gain[c];
      mean_dnormalized += dnormalized;
      mean_dnormalized_normalized += dnormalized * xn[c];
      gain_gradient[c] += dy[c] * xn[c];
    }
    if (bias_gradient != nullptr) add_into(bias_gradient, dy, width);
    mean_dnormalized = layer_norm ? mean_dnormalized * inverse_width : 0.0f;
    mean_dnormalized_normalized *= inverse_width;
    const float row_inverse_std = inverse_std[r];
    for (std::size_t c = 0; c < width; ++c)
      dx[c] = row_inverse_std *
              (dy[c] * gain[c] - mean_dnormalized - xn[c] * mean_dnormalized_normalized);
  }
}

void gelu_forward(const float* input, float* output, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) {
    const float u = input[e];
    output[e] = 0.5f * u * (1.0f + tanh_by_exp(kGeluScale * (u + kGeluCubic * u * u * u)));
  }
}

void gelu_backward(const float* input, const float* output_gradient, float* input_gradient,
                   std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) {
    const float u = input[e];
    const float t = tanh_by_exp(kGeluScale * (u + kGeluCubic * u * u * u));
    input_gradient[e] =
        output_gradient[e] * (0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * kGeluScale *
                                                      (1.0f + 3.0f * kGeluCubic * u * u));
  }
}

void swiglu_forward(const float* gate, const float* up, float* output, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e)
    output[e] = gate[e] * sigmoid(gate[e]) * up[e];
}

void swiglu_backward(const float* gate, const float* up, const float* output_gradient,
                     float* gate_gradient, float* up_gradient, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) {
    const float g = gate[e], s = sigmoid(g);
    up_gradient[e] = output_gradient[e] * g * s;
    gate_gradient[e] = output_gradient[e] * up[e] * s * (1.0f + g * (1.0f - s));
  }
}

void add_into(float* target, const float* source, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e)
    target[e] += source[e];
}

}  // namespace tauplan::exec::kernels
