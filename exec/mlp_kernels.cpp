// mlp_kernels.cpp: the fused element-wise passes; float versions multiversioned per CPU level.
//
// Compiled with -ffp-contract=off (exec/CMakeLists.txt) so that every version rounds alike, and
// with the vectoriser's dynamic cost model so that -O2 builds vectorise these loops too.
#include "exec/mlp_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

// GCC function multiversioning needs ifunc (glibc, ELF); elsewhere one portable version.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define TAUPLAN_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define TAUPLAN_HAVE_CPU_CLONES 1
#else
#define TAUPLAN_CPU_CLONES
#endif

// The shared bodies are inlined into each version, so each is compiled for that version's CPU.
#if defined(__GNUC__)
#define TAUPLAN_INLINE inline __attribute__((always_inline))
#else
#define TAUPLAN_INLINE inline
#endif

namespace tauplan::exec::kernels {

namespace {

std::size_t cells(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

template <typename Scalar>
TAUPLAN_INLINE void fill_rows_body(Scalar* z, const Scalar* bias, int rows, int cols) {
  for (int i = 0; i < rows; ++i)
    std::memcpy(z + cells(i, cols), bias, static_cast<std::size_t>(cols) * sizeof(Scalar));
}

template <typename Scalar>
TAUPLAN_INLINE void relu_body(Scalar* __restrict z, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    z[i] = z[i] > Scalar(0) ? z[i] : Scalar(0);
}

template <typename Scalar>
TAUPLAN_INLINE double softmax_cross_entropy_body(const Scalar* __restrict logits,
                                                 const int* __restrict labels, int rows,
                                                 int classes, Scalar* __restrict delta,
                                                 Scalar* __restrict bias_grad) {
  double loss = 0;
  const Scalar inv_rows = Scalar(1) / static_cast<Scalar>(rows);
  if (delta)
    for (int c = 0; c < classes; ++c)
      bias_grad[c] = Scalar(0);
  for (int i = 0; i < rows; ++i) {
    const Scalar* z = logits + cells(i, classes);
    const int label = labels[i];
    assert(label >= 0 && label < classes);
    Scalar top = z[0];
    for (int c = 1; c < classes; ++c)
      top = z[c] > top ? z[c] : top;
    Scalar sum = 0;
    if (delta) {
      Scalar* d = delta + cells(i, classes);
      for (int c = 0; c < classes; ++c) {
        d[c] = std::exp(z[c] - top);
        sum += d[c];
      }
      const Scalar scale = inv_rows / sum;  // softmax / rows
      for (int c = 0; c < classes; ++c)
        d[c] *= scale;
      d[label] -= inv_rows;
      for (int c = 0; c < classes; ++c)
        bias_grad[c] += d[c];
    } else {
      for (int c = 0; c < classes; ++c)
        sum += std::exp(z[c] - top);
    }
    loss += std::log(static_cast<double>(sum)) - static_cast<double>(z[label] - top);
  }
  return loss / rows;
}

template <typename Scalar>
TAUPLAN_INLINE void relu_backward_body(Scalar* __restrict grad, const Scalar* __restrict activation,
                                       int rows, int cols, Scalar* __restrict bias_grad) {
  for (int j = 0; j < cols; ++j)
    bias_grad[j] = Scalar(0);
  for (int i = 0; i < rows; ++i) {
    Scalar* g = grad + cells(i, cols);
    const Scalar* a = activation + cells(i, cols);
    for (int j = 0; j < cols; ++j) {
      const Scalar masked = a[j] > Scalar(0) ? g[j] : Scalar(0);
      g[j] = masked;
      bias_grad[j] += masked;
    }
  }
}

template <typename Scalar>
TAUPLAN_INLINE void sgd_body(Scalar* __restrict parameters, const Scalar* __restrict gradients,
                             Scalar lr, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    parameters[i] -= lr * gradients[i];
}

}  // namespace

TAUPLAN_CPU_CLONES void fill_rows(float* z, const float* bias, int rows, int cols) {
  fill_rows_body(z, bias, rows, cols);
}
void fill_rows(double* z, const double* bias, int rows, int cols) {
  fill_rows_body(z, bias, rows, cols);
}

TAUPLAN_CPU_CLONES void relu_in_place(float* z, std::size_t count) {
  relu_body(z, count);
}
void relu_in_place(double* z, std::size_t count) {
  relu_body(z, count);
}

TAUPLAN_CPU_CLONES double softmax_cross_entropy(const float* logits, const int* labels, int rows,
                                                int classes, float* delta, float* bias_grad) {
  return softmax_cross_entropy_body(logits, labels, rows, classes, delta, bias_grad);
}
double softmax_cross_entropy(const double* logits, const int* labels, int rows, int classes,
                             double* delta, double* bias_grad) {
  return softmax_cross_entropy_body(logits, labels, rows, classes, delta, bias_grad);
}

TAUPLAN_CPU_CLONES void relu_backward(float* grad, const float* activation, int rows, int cols,
                                      float* bias_grad) {
  relu_backward_body(grad, activation, rows, cols, bias_grad);
}
void relu_backward(double* grad, const double* activation, int rows, int cols, double* bias_grad) {
  relu_backward_body(grad, activation, rows, cols, bias_grad);
}

TAUPLAN_CPU_CLONES void sgd_update(float* parameters, const float* gradients, float lr,
                                   std::size_t count) {
  sgd_body(parameters, gradients, lr, count);
}
void sgd_update(double* parameters, const double* gradients, double lr, std::size_t count) {
  sgd_body(parameters, gradients, lr, count);
}

const char* selected_isa() {
#ifdef TAUPLAN_HAVE_CPU_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4 (AVX-512)";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2, FMA)";
#endif
  return "x86-64 baseline";
}

}  // namespace tauplan::exec::kernels
