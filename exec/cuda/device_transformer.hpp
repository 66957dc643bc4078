// device_transformer.hpp: the decoder block stack of transformer_config.hpp on one NVIDIA GPU,
// bf16 compute with fp32 master weights (plain C++ interface: no CUDA header needed to use it).
//
// What it models: token + learned position embedding, `layers` pre-norm blocks (norm, causal
// grouped-query attention, output projection, residual; norm, GELU or SwiGLU feed-forward,
// residual), a final norm, an untied vocabulary head and the mean next-token cross-entropy, with
// the flat fp32 parameter layout of block_parameters(), so the same vector moves between this,
// the fp32 CPU block and the double reference. A tensor > 1 config is one Megatron rank's shard
// (fewer local heads and feed-forward columns), computed alone: no communication.
//
// Precision (mixed precision as Megatron-LM and PyTorch autocast do it):
//  - parameters: fp32 master copy, a bf16 copy refreshed after every load and Adam step; every
//    GEMM reads the bf16 weights; norm gains/biases and embeddings are read in fp32;
//  - GEMMs: cuBLAS cublasGemmEx / cublasGemmStridedBatchedEx, bf16 inputs, CUBLAS_COMPUTE_32F
//    accumulation. Outputs are bf16 where the result only feeds another GEMM or an element-wise
//    kernel (Q, K, V, scores/probabilities, attention output, feed-forward activations and their
//    gradients), and fp32 where a sum or a cancellation follows: the residual stream (the Wo and
//    W2 GEMMs accumulate into it with beta = 1), the gradients with respect to norm outputs (two
//    or three GEMMs accumulate into them), dP of the softmax backward, dQ/dK/dV (heads of a
//    group accumulate into a shared K/V head), the logits, and every weight gradient (written
//    in fp32 straight into the gradient vector);
//  - kernels: norms, softmax, cross-entropy and Adam compute in fp32.
//
// Attention is the math path: per (sample, head) S = Q K^T / sqrt(d) by strided batched GEMMs
// (s x s scores stored in bf16, all of them: no causal skipping in the GEMM), a causal-mask +
// softmax kernel (fp32 math) writing P in place, O = P V; backward dV = P^T dO, dP = dO V^T
// (fp32), dS = P (dP - rowsum(P dP)) written over P, dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
// Grouped-query heads: query head j uses K/V head j / (local_heads / local_kv_heads); the
// gradients of the query heads of a group accumulate into their K/V head (beta = 1).
//
// What it leaves out: a flash attention kernel (the math path stores the s x s probabilities of
// every head of every layer), fused kernels (GEMM epilogues, fused norm+residual), rotary
// embeddings, dropout, linear biases, loss scaling (bf16 needs none), gradient clipping,
// CUDA graphs, tensor-parallel communication, activation recomputation.
//
// Adam: AdamW (Loshchilov & Hutter 2019) in fp32, PyTorch's ordering: p *= 1 - lr wd; m, v
// updated; p -= lr mhat / (sqrt(vhat) + eps), with bias corrections; defaults beta1 0.9,
// beta2 0.95, eps 1e-8, weight decay 0 (GPT-3's betas; decay off so that the short training
// check depends on nothing but the gradients). Its m and v are allocated at the first step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec/transformer_config.hpp"

namespace tauplan::exec::cuda {

/// One op of a per-op timing pass (time_layer_stack_ops): the label of the kernel, GEMM or copy
/// (the string its error messages use) and the ms from the previous op's end event to its own.
struct OpTime {
  const char* what = "";
  float ms = 0.f;
};

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
};

/// Free and total memory of `device` in bytes (cudaMemGetInfo).
std::size_t free_device_memory(int device, std::size_t* total = nullptr);

class DeviceTransformerBlock {
 public:
  /// Allocates parameters, gradients and activations on `device` for config.micro_batch
  /// sequences; initialises nothing. Throws std::invalid_argument for an invalid config and
  /// std::runtime_error on a CUDA or cuBLAS error (out of memory included).
  DeviceTransformerBlock(const BlockConfig& config, int device);
  ~DeviceTransformerBlock();
  DeviceTransformerBlock(const DeviceTransformerBlock&) = delete;
  DeviceTransformerBlock& operator=(const DeviceTransformerBlock&) = delete;

  /// Device bytes the block allocates (with Adam's m and v when `adam`), for a fit check.
  static std::size_t device_bytes(const BlockConfig& config, bool adam);

  const BlockConfig& config() const;
  std::size_t parameter_count() const;
  void set_adam(const AdamConfig& adam);
  /// Synchronise and check for errors after every kernel and GEMM, so that an asynchronous
  /// fault names its kernel (also on with TAUPLAN_CUDA_SYNC_CHECK=1 in the environment).
  void set_debug_sync(bool on);

  /// Uploads the fp32 master parameters (block_parameters layout) and refreshes the bf16 copy.
  void set_parameters(const std::vector<float>& host);
  /// Fills the parameters on the device: matrices and embeddings uniform with standard
  /// deviation `scale`, gains 1, biases 0 (for timing: no host vector of billions of floats).
  void randomize_parameters(uint64_t seed, float scale);
  std::vector<float> parameters() const;
  std::vector<float> gradients() const;

  /// Forward and backward of the whole model on micro_batch rows of sequence + 1 tokens (inputs
  /// tokens[r][0..s-1], targets tokens[r][1..s]); the gradients (of the mean loss) replace the
  /// previous ones. Waits and returns the mean loss.
  float loss_and_gradients(const int* host_tokens);
  /// AdamW step with learning rate `lr` on the current gradients (asynchronous).
  void step(float lr);

  /// Uploads tokens for the timed steps (device-resident afterwards).
  void upload_tokens(const int* host_tokens);
  /// Raw timings (ms, CUDA events, one per step) of `reps` training steps on the uploaded tokens,
  /// after `warmup` untimed ones: zero the gradients, forward, backward, AdamW.
  std::vector<float> time_training_steps(int warmup, int reps, float lr);

  /// Layer stack only (no embedding, no final norm, no head): fills the stack's input and the
  /// upstream gradient of its output with uniform random numbers (standard deviation 1).
  void randomize_layer_io(uint64_t seed);
  /// Forward of every layer from that input, then backward from that upstream gradient (weight
  /// gradients by GEMM straight into the gradient vector, the input gradient, norm gain
  /// gradients); asynchronous. No gradient zeroing, no optimizer step.
  void layer_stack_forward_backward();
  /// Raw timings (ms, CUDA events) of `reps` layer_stack_forward_backward() after `warmup`.
  std::vector<float> time_layer_stack(int warmup, int reps);

  /// Per-op timing of the layer stack (diagnosis only; the other paths record no events): after
  /// `warmup` plain passes, `reps` passes of layer_stack_forward_backward() with a CUDA event
  /// recorded before the first launch and after every kernel, cuBLAS call and copy; per pass,
  /// the ops in launch order with the time between consecutive events (the GPU runs them
  /// back to back, so each includes the gap before it; the events add a few us each).
  std::vector<std::vector<OpTime>> time_layer_stack_ops(int warmup, int reps);

  void synchronize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tauplan::exec::cuda
