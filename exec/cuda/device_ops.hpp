// device_ops.hpp: the CUDA kernels of the backend, as plain functions (internal header).
//
// Every function enqueues work on `stream` (a cudaStream_t passed as void*) on the current
// device and returns at once; pointers are device pointers. Reductions are deterministic:
// fixed block partitions and tree orders, no floating-point atomics. What it leaves out:
// fused GEMM epilogues (cuBLAS does the GEMMs; these kernels do the rest).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace tauplan::exec::cuda::ops {

/// z[i, j] += b[j] over an n x width row-major matrix; a = max(z, 0) when `a` is not null.
void bias_activation(float* z, float* a, const float* b, int n, int width, void* stream);
/// da[i] = z[i] > 0 ? da[i] : 0.
void relu_mask(float* da, const float* z, std::size_t count, void* stream);
/// Per row of logits: losses[i] = log sum exp - logit of the label; dlogits = (softmax -
/// one-hot) * scale (skipped when dlogits is null).
void softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, float* losses,
                           int n, int classes, float scale, void* stream);
/// *hits += number of rows whose first maximal logit is the label.
void count_hits(const float* logits, const int* labels, int n, int classes, int* hits,
                void* stream);
void fill(float* x, float value, std::size_t n, void* stream);
/// out[i] = sum_k scales[k] * inputs[k][i] accumulated in double in k order; `inputs` and
/// `scales` are device arrays of k entries; out may alias an input.
void weighted_sum(const float* const* inputs, const double* scales, int k, std::size_t n,
                  float* out, void* stream);
/// out[i] = s * in[i] (out may alias in).
void scale(const float* in, double s, std::size_t n, float* out, void* stream);
/// Adasum of a and b into out (may alias a or b); `scratch` holds at least
/// adasum_scratch_doubles(n) doubles.
void adasum_pair(const float* a, const float* b, std::size_t n, float* out, double* scratch,
                 void* stream);
std::size_t adasum_scratch_doubles(std::size_t n);

/// Throws std::runtime_error naming `what` when `code` (a cudaError_t) is not success.
void check_cuda(int code, const char* what);

/// Combines K device vectors on the current device (combine.hpp's rules: weighted mean in k
/// order; Adasum as a pairwise tree after scaling by K w_k / sum w). Keeps its workspace
/// between calls. Results are written to `out` (may alias an input); the caller synchronises.
class Combiner {
 public:
  Combiner() = default;
  ~Combiner();
  Combiner(const Combiner&) = delete;
  Combiner& operator=(const Combiner&) = delete;
  void mean(const std::vector<const float*>& inputs, const std::vector<double>& weights,
            std::size_t n, float* out, void* stream);
  void adasum(const std::vector<const float*>& inputs, const std::vector<double>& weights,
              std::size_t n, float* out, void* stream);

 private:
  void reserve(std::size_t k, std::size_t n);
  const float** pointers_ = nullptr;  // device array of k pointers
  double* scales_ = nullptr;          // device array of k scales
  std::size_t k_capacity_ = 0;
  float* work_ = nullptr;  // k x n floats for Adasum's tree
  std::size_t work_capacity_ = 0;
  double* scratch_ = nullptr;
  std::size_t scratch_capacity_ = 0;
};

}  // namespace tauplan::exec::cuda::ops
