// block_kernels.hpp: the memory-bound kernels of exec's fp32 CPU decoder block
// (transformer_block.hpp) as free functions: the causal row softmax and its backward, LayerNorm
// and RMSNorm forward and backward, GELU (tanh form) and SwiGLU forward and backward, the
// residual add.
//
// The block runs exactly these, and so do the compute calibration (compute_calibration.hpp, the
// bandwidth each kind reaches on this CPU) and bench/layer_breakdown, so the kernels that are
// timed cannot drift from the kernels that train. Plain loops over contiguous rows, no
// allocation. GELU's tanh is computed as 1 - 2 / (1 + exp(2 z)): glibc's tanhf takes a slow path
// (expm1f) for |z| above about 0.55 and a fast one below, so its cost depended on the values
// (a layer of block-heldout ran 58 ms on small test weights and 75 ms on the trainer's initial
// ones); expf's cost does not. What it leaves out: SIMD intrinsics (the compiler vectorises what
// it can at -O2), multithreading (a rank is one thread), dropout.
#pragma once

#include <cstddef>

namespace tauplan::exec::kernels {

/// In place over an [n x n] tile of row-major scores: row i becomes the softmax of its keys
/// 0..i, zeros above the diagonal.
void causal_softmax_forward(float* scores, std::size_t n);
/// dS = P * (dP - sum_l P dP) per row of an [n x n] tile; `score_gradient` may be `probabilities_
/// gradient` (in place).
void softmax_backward(const float* probabilities, const float* probabilities_gradient,
                      float* score_gradient, std::size_t n);

/// Row norm of `rows` rows of `width`: LayerNorm (mean and variance; `bias` added when not null)
/// or RMSNorm (layer_norm false). Writes the normalised rows (before gain), each row's inverse
/// standard deviation and the output.
void norm_forward(bool layer_norm, std::size_t rows, std::size_t width, float epsilon,
                  const float* input, const float* gain, const float* bias, float* normalized,
                  float* inverse_std, float* output);
/// Its backward: writes `input_gradient`, ADDS the gain's (and, when not null, the bias's)
/// gradients.
void norm_backward(bool layer_norm, std::size_t rows, std::size_t width, const float* normalized,
                   const float* inverse_std, const float* gain, const float* output_gradient,
                   float* input_gradient, float* gain_gradient, float* bias_gradient);

/// GELU, tanh approximation (Hendrycks and Gimpel 2016, arXiv 1606.08415, eq. 2).
void gelu_forward(const float* input, float* output, std::size_t n);
void gelu_backward(const float* input, const float* output_gradient, float* input_gradient,
                   std::size_t n);

/// SwiGLU (Shazeer 2020, arXiv 2002.05202): output = silu(gate) * up.
void swiglu_forward(const float* gate, const float* up, float* output, std::size_t n);
void swiglu_backward(const float* gate, const float* up, const float* output_gradient,
                     float* gate_gradient, float* up_gradient, std::size_t n);

/// target += source.
void add_into(float* target, const float* source, std::size_t n);

}  // namespace tauplan::exec::kernels
