// layer_ops.hpp: a transformer layer's training step as the operations a framework runs on one
// tensor-parallel rank, each with its shape, flop and memory traffic.
//
// Per layer and micro-batch (b sequences of s tokens, hidden h, a heads of which kv_heads carry
// K and V, feed-forward width f, tensor shard t, as Megatron-LM splits them: Shoeybi et al.
// 2019, arXiv 1909.08053, Section 3): the weight GEMMs (QKV, attention output, the feed-forward
// projections: GELU two, SwiGLU three), each with an [M x K] x [K x N] shape, M = b s tokens;
// backward runs two GEMMs per forward GEMM (the input gradient [M x N] x [N x K] and the weight
// gradient [K x M] x [M x N]). Attention is either the math path (Q K^T and P V as batched
// GEMMs, a softmax over the s x s scores, which are stored) or a fused flash kernel (Dao et al.
// 2022, arXiv 2205.14135: the same 4 b s^2 h flop forward, causal half of it done, no s x s
// matrix in memory; backward 2.5x the forward's flop, counting the recomputed scores, Dao 2023,
// arXiv 2307.08691, Section 3). The memory-bound operations (norms, activation function,
// residual adds, softmax and its mask on the math path) are counted in bytes read plus written,
// each tagged with its kernel kind (MemoryKernel), which a profile may time at its own rate.
// Recomputation adds the forward again (full) or the attention core's (selective). Element
// bytes e are the activations' (2 for bf16). Dependency-free: built on the GPU machine too.
// What it leaves out: dropout (the models of today train without it), biases (added to the
// GEMM's epilogue, free), rotary embeddings (a memory-bound pass, counted as one), the
// optimizer step (per parameter, not per layer), and the tensor-parallel communication (the
// layout cost's).
#pragma once

#include <string>
#include <vector>

namespace tauplan::model {

/// Activation recomputation (Korthikanti et al. 2022, arXiv 2205.05198): none; selective (the
/// attention scores, softmax and dropout are recomputed in backward); full (only each layer's
/// input is stored and the whole forward is run again in backward).
enum class Recompute { None, Selective, Full };
/// How attention is computed: a fused kernel that never stores the s x s scores, or the math
/// path of two batched GEMMs around a softmax that does.
enum class AttentionKernel { Flash, Math };

const char* to_string(Recompute recompute);
const char* to_string(AttentionKernel kernel);

enum class ComputeOpKind { Gemm, Attention, Memory };
enum class ComputePhase { Forward, Backward, Recompute };
/// The kind of kernel a memory-bound op is, for a profile that measured what each kind reaches
/// (compute_profile.hpp's memory_kernels): a masked row softmax over attention scores and its
/// backward (Softmax), a row norm and its backward (Norm), the feed-forward's activation function
/// and its backward (Activation), or a plain element-wise pass: residual adds, the
/// cross-entropy (Elementwise). A profile without the class's figure times it at its
/// memory_bandwidth_Bps.
enum class MemoryKernel { Elementwise, Softmax, Norm, Activation };
const char* to_string(ComputeOpKind kind);
const char* to_string(ComputePhase phase);
const char* to_string(MemoryKernel kernel);

/// One layer on one tensor rank, as the compute model needs it.
struct LayerShape {
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn_hidden = 0;
  bool swiglu = false;
  bool layer_norm = true;  ///< LayerNorm (mean and variance) or RMSNorm
  int sequence = 0;
  double micro_batch = 1;
  int tensor = 1;
  bool sequence_parallel = false;
  AttentionKernel attention = AttentionKernel::Math;
  double element_bytes = 2;
  /// Empty when the shape can be split this way, else what is wrong.
  std::string problem() const;
};

/// One operation: `count` identical GEMMs of [m x k] x [k x n] (Gemm; a batched GEMM has
/// count = batch), an attention kernel over `count` = b x heads/t heads of sequence m = n and
/// head width k (Attention), or `bytes` of memory traffic (Memory) of a `memory_kernel` kind.
struct ComputeOp {
  std::string name;
  ComputeOpKind kind = ComputeOpKind::Memory;
  ComputePhase phase = ComputePhase::Forward;
  double m = 0, n = 0, k = 0;
  double count = 1;
  double flop = 0;   ///< all `count` of them
  double bytes = 0;  ///< memory traffic of all of them (Memory: the whole cost)
  bool causal = false;
  MemoryKernel memory_kernel = MemoryKernel::Elementwise;  ///< Memory ops only
};

/// The operations of one layer's forward, backward and recomputation on one tensor rank.
std::vector<ComputeOp> layer_ops(const LayerShape& shape, Recompute recompute);

/// The logits GEMM of the last stage ([b s x h] x [h x V/t]) forward and backward, and the
/// softmax cross-entropy's traffic.
std::vector<ComputeOp> logits_ops(const LayerShape& shape, int vocabulary);

/// Sum of the flop of `ops` (for checks against the closed forms of transformer.hpp).
double total_flop(const std::vector<ComputeOp>& ops);

}  // namespace tauplan::model
