// mlp_kernels.hpp: the MLP's element-wise passes, fused so that each touches its data once.
//
// Everything between the matrix products (cpu_blas.hpp) of a training step: the bias written
// into the rows a product then accumulates into, ReLU in place, softmax with cross-entropy and
// its gradient and the last bias gradient in one pass, the ReLU mask of a backward product with
// its bias gradient in one pass, and the SGD update. Matrices are row-major, rows = samples.
// The float versions are compiled three times (x86-64-v4 with AVX-512, x86-64-v3 with AVX2 and
// FMA, and the x86-64 baseline) and the loader picks the one the CPU runs (GCC's function
// multiversioning), so the binary stays portable. The three compute the same bits: no
// multiply-add contraction, no reassociation (sums run over rows in order). What it leaves out:
// other activations and losses, and threads (these passes are a small part of a step).
#pragma once

#include <cstddef>

namespace tauplan::exec::kernels {

/// Every row of the rows x cols matrix z := bias.
void fill_rows(float* z, const float* bias, int rows, int cols);
void fill_rows(double* z, const double* bias, int rows, int cols);

/// z := max(z, 0) over `count` values.
void relu_in_place(float* z, std::size_t count);
void relu_in_place(double* z, std::size_t count);

/// Mean softmax cross-entropy of rows x classes logits against labels. When `delta` is given,
/// writes d(mean loss)/d(logits) into it (rows x classes) and its column sums, the gradient of
/// the last layer's bias, into `bias_grad`. Returns the mean loss (accumulated in double).
double softmax_cross_entropy(const float* logits, const int* labels, int rows, int classes,
                             float* delta, float* bias_grad);
double softmax_cross_entropy(const double* logits, const int* labels, int rows, int classes,
                             double* delta, double* bias_grad);

/// Backward through ReLU: grad := grad where activation > 0, else 0 (rows x cols; activation
/// is the layer's output max(z, 0), positive exactly where z is); bias_grad := column sums.
void relu_backward(float* grad, const float* activation, int rows, int cols, float* bias_grad);
void relu_backward(double* grad, const double* activation, int rows, int cols, double* bias_grad);

/// parameters -= lr * gradients over `count` values.
void sgd_update(float* parameters, const float* gradients, float lr, std::size_t count);
void sgd_update(double* parameters, const double* gradients, double lr, std::size_t count);

/// Which of the compiled versions runs here: "x86-64-v4 (AVX-512)", "x86-64-v3 (AVX2, FMA)" or
/// "x86-64 baseline" (what the loader's CPU check chose).
const char* selected_isa();

}  // namespace tauplan::exec::kernels
