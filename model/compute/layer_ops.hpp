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
// Dropout (LayerShape::dropout, off by default: the models of today train without it) adds the
// traffic of PyTorch's dropout as Megatron-LM ran it in 2021-22 (--attention-dropout and
// --hidden-dropout both default 0.1 in its megatron/arguments.py; Korthikanti et al. 2022,
// arXiv 2205.05198, Section 4.1, counts their 1-byte masks): on the math path, the softmax
// output's dropout, an unfused pass over the s x s probabilities that reads them and writes its
// output and its mask, (2e + 1) bytes per score, and its backward, which reads the gradient and
// the mask and writes the input gradient, (2e + 1) again (a flash kernel applies dropout inside,
// no extra traffic); after the attention and the feed-forward blocks, the fused bias-dropout-add
// writes the mask beside the residual sum (+1 byte per value) and its backward multiplies the
// gradient by the mask in a pass of its own ((2e + 1) bytes per value). Recomputation repeats
// the dropout with the forward it repeats.
// A mixture-of-experts layer (LayerShape::moe_layer; transformer.hpp's MixtureOfExperts) runs,
// in place of the dense feed-forward: the router GEMM [M' x h] x [h x E] on the rank's M'
// tokens, timed as the memory traffic of its operands (with E columns it streams: 2E / e flop
// per byte, below any GPU's ridge point; its flop are kept in the counts), as are its two
// backward GEMMs (M' = M / t under sequence parallelism, which a MoE layer split over tensor ranks
// needs: each tensor rank routes its own sequence shard; weights replicated), its softmax and
// top-k over the E logits (fp32, a Softmax kernel); the permutation of the token copies to their
// experts and back (read and written, k' M' h e bytes each way, k' = k x the capacity factor,
// or k when dropless); the E / expert_parallel local experts as `count` GEMMs of the whole expert
// width (expert tensor parallelism 1), each of m = M' k' / (E / expert_parallel) rows: with
// balanced routing a rank receives as many token copies as it sends; the experts' activation;
// and the shared experts as a dense feed-forward of shared x f_e split over t. The all-to-alls
// are the layout cost's. Multi-head latent attention (kv_lora_rank > 0; DeepSeek-V2, arXiv
// 2405.04434, Section 2.1) replaces the QKV GEMM by the down-projections q_a [M' x q_lora_rank]
// and kv_a [M' x (kv_lora_rank + rope)] on the rank's M' tokens (weights replicated; the latent
// is then gathered, so only the latent crosses ranks), their norms, and the up-projections
// q_b [M x a/t (nope + rope)] and kv_b [M x a/t (nope + v)] split by heads (q_proj from h when
// q_lora_rank is 0); the attention core's scores have the query/key head width nope + rope, its
// values v_head_dim. Context parallelism (LayerShape::context = c, ring attention with a
// load-balanced causal split): every GEMM and memory-bound op sees M = b s / c tokens, the
// attention kernel s / c queries against all s keys (the full-matrix flop convention above,
// 1 / c of it per rank; the K/V blocks of the other ranks read as they pass).
// What it leaves out: biases (added to the GEMM's epilogue, free), rotary embeddings (a
// memory-bound pass, counted as one), the optimizer step (per parameter, not per layer), and the
// tensor-parallel, expert-parallel and context-parallel communication (the layout cost's).
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
/// (compute_profile.hpp's memory_kernels): a masked row softmax over attention scores, or the
/// cross-entropy's over the vocabulary, and its backward (Softmax); a row norm and its backward,
/// RMSNorm or LayerNorm (two reductions per row instead of one); the feed-forward's activation
/// function and its backward, GELU (tanh form) or SwiGLU; or a plain element-wise pass, the
/// residual adds (Elementwise); or the optimizer's update of each parameter (Optimizer: Adam reads
/// the parameter, its gradient and two moments and writes three, with a square root and a
/// division per element; not a layer op: the caller times a step's update with it). layer_ops
/// tags each op with its variant (RmsNorm, LayerNorm, Gelu, SwiGlu); Norm and Activation are the
/// families, which a profile may have measured as a whole (one figure for every norm, every
/// activation). A profile times an op at its variant's figure, else its family's, else its
/// memory_bandwidth_Bps.
enum class MemoryKernel {
  Elementwise,
  Softmax,
  Norm,
  Activation,
  RmsNorm,
  LayerNorm,
  Gelu,
  SwiGlu,
  Optimizer
};
constexpr int kMemoryKernelKinds = 9;
/// Norm for RmsNorm and LayerNorm, Activation for Gelu and SwiGlu, else the kind itself.
MemoryKernel memory_kernel_family(MemoryKernel kernel);
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
  /// Trains with dropout on the attention probabilities and on both blocks' outputs (the
  /// memory-bound passes the header describes); false adds none.
  bool dropout = false;
  /// A mixture-of-experts feed-forward in place of the dense one (the header's MoE ops):
  /// `experts` routed experts of `expert_ffn_hidden` (the model's activation, SwiGLU or GELU),
  /// `experts_per_token` of them per token, `shared_experts` every token passes through;
  /// capacity_factor > 0 pads each expert's rows to that multiple of its balanced share (0:
  /// dropless); the experts split over `expert_parallel` ranks, each whole.
  bool moe_layer = false;
  int experts = 0;
  int experts_per_token = 0;
  int expert_ffn_hidden = 0;
  int shared_experts = 0;
  double capacity_factor = 0;
  int expert_parallel = 1;
  /// Context-parallel ranks the sequence is split over (1: none).
  int context = 1;
  /// Multi-head latent attention when kv_lora_rank > 0 (q_lora_rank 0: Q projected from h).
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
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
