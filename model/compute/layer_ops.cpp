// layer_ops.cpp: the operations of a transformer layer on one tensor rank (see layer_ops.hpp).
//
// Flop follow the model-flop convention of transformer.hpp (2 per multiply-add, the full s x s
// scores even when causal, backward twice the forward), so that the sum of a layer's ops equals
// Transformer::layer_training_flop exactly (an identity the tests check); a kernel that does
// more or less work than that (a causal kernel skipping the masked half, flash attention's
// backward recomputing the scores) shows in its measured efficiency, not in these counts.
#include "model/compute/layer_ops.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace tauplan::model {

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

const char* to_string(AttentionKernel kernel) {
  return kernel == AttentionKernel::Flash ? "flash" : "math";
}

const char* to_string(ComputeOpKind kind) {
  switch (kind) {
    case ComputeOpKind::Gemm:
      return "gemm";
    case ComputeOpKind::Attention:
      return "attention";
    case ComputeOpKind::Memory:
      return "memory";
  }
  return "?";
}

const char* to_string(ComputePhase phase) {
  switch (phase) {
    case ComputePhase::Forward:
      return "forward";
    case ComputePhase::Backward:
      return "backward";
    case ComputePhase::Recompute:
      return "recompute";
  }
  return "?";
}

const char* to_string(MemoryKernel kernel) {
  switch (kernel) {
    case MemoryKernel::Elementwise:
      return "elementwise";
    case MemoryKernel::Softmax:
      return "softmax";
    case MemoryKernel::Norm:
      return "norm";
    case MemoryKernel::Activation:
      return "activation";
    case MemoryKernel::RmsNorm:
      return "rms_norm";
    case MemoryKernel::LayerNorm:
      return "layer_norm";
    case MemoryKernel::Gelu:
      return "gelu";
    case MemoryKernel::SwiGlu:
      return "swiglu";
    case MemoryKernel::Optimizer:
      return "optimizer";
  }
  return "?";
}

MemoryKernel memory_kernel_family(MemoryKernel kernel) {
  switch (kernel) {
    case MemoryKernel::RmsNorm:
    case MemoryKernel::LayerNorm:
      return MemoryKernel::Norm;
    case MemoryKernel::Gelu:
    case MemoryKernel::SwiGlu:
      return MemoryKernel::Activation;
    default:
      return kernel;
  }
}

std::string LayerShape::problem() const {
  if (hidden < 1 || heads < 1 || kv_heads < 1 || ffn_hidden < 1 || sequence < 1 ||
      !(micro_batch > 0) || tensor < 1 || !(element_bytes > 0) || context < 1)
    return "every size must be positive";
  const bool mla = kv_lora_rank > 0;
  if (!mla && hidden % heads != 0) return "heads must divide hidden";
  if (heads % kv_heads != 0) return "kv_heads must divide heads";
  if (heads % tensor != 0) return "the tensor shard must divide heads";
  if (kv_heads % tensor != 0 && tensor % kv_heads != 0)
    return "the tensor shard must divide kv_heads or be a multiple of it";
  if (!moe_layer && ffn_hidden % tensor != 0) return "the tensor shard must divide ffn_hidden";
  if (sequence % context != 0) return "the context shard must divide the sequence";
  if (mla && (q_lora_rank < 0 || qk_nope_head_dim < 0 || qk_rope_head_dim < 0 ||
              qk_nope_head_dim + qk_rope_head_dim < 1 || v_head_dim < 1))
    return "latent attention's head widths must be positive";
  if (moe_layer) {
    if (experts < 1 || expert_ffn_hidden < 1 || shared_experts < 0 || !(capacity_factor >= 0) ||
        expert_parallel < 1)
      return "every expert size must be positive";
    if (experts_per_token < 1 || experts_per_token > experts)
      return "experts_per_token must be between 1 and the experts";
    if (experts % expert_parallel != 0) return "the expert shard must divide the experts";
    if (static_cast<long long>(shared_experts) * expert_ffn_hidden % tensor != 0)
      return "the tensor shard must divide the shared experts' width";
    if (tensor > 1 && !sequence_parallel)
      return "a MoE layer split over tensor ranks needs sequence parallelism";
  }
  return {};
}

namespace {

/// Widths on one tensor rank.
struct RankWidths {
  double tokens;          ///< M = b s / c: rows of every GEMM on the rank's context shard
  double norm_tokens;     ///< rows of the norms and residuals: M / t with sequence parallelism
  double queries;         ///< s / c: query rows of the attention core per sequence
  double keys;            ///< s: key rows the queries attend to
  double qk_dim;          ///< query/key head width: d = h / a, or MLA's nope + rope
  double v_dim;           ///< value head width: d, or MLA's v_head_dim
  double local_heads;     ///< a / t
  double local_kv_heads;  ///< max(1, kv/t): K/V heads are replicated when t > kv_heads; MLA a/t
  double query_width;     ///< a d / t (the QKV GEMM's query columns)
  double kv_width;        ///< max(1, kv/t) d
  double value_width;     ///< a / t x v_dim: the attention output's width
  double ffn;             ///< f / t
  double head_batch;      ///< b a / t: (sample, head) pairs of the attention core
  // A MoE layer:
  double routed_tokens;  ///< M': the rank's tokens the router routes (norm_tokens)
  double copies;         ///< k': token copies per routed token, k x the capacity factor (or k)
  double local_experts;  ///< E / expert_parallel
  double expert_rows;    ///< M' k' / local_experts: rows of each local expert's GEMMs
};

RankWidths widths(const LayerShape& s) {
  RankWidths w{};
  w.tokens = s.micro_batch * s.sequence / s.context;
  w.norm_tokens = s.sequence_parallel ? w.tokens / s.tensor : w.tokens;
  w.queries = static_cast<double>(s.sequence) / s.context;
  w.keys = s.sequence;
  const double head_dim = static_cast<double>(s.hidden) / s.heads;
  const bool mla = s.kv_lora_rank > 0;
  w.qk_dim = mla ? s.qk_nope_head_dim + s.qk_rope_head_dim : head_dim;
  w.v_dim = mla ? s.v_head_dim : head_dim;
  w.local_heads = static_cast<double>(s.heads) / s.tensor;
  w.query_width = w.local_heads * head_dim;
  w.local_kv_heads = mla                      ? w.local_heads
                     : s.kv_heads >= s.tensor ? static_cast<double>(s.kv_heads) / s.tensor
                                              : 1.0;
  w.kv_width = w.local_kv_heads * head_dim;
  w.value_width = w.local_heads * w.v_dim;
  w.ffn = static_cast<double>(s.ffn_hidden) / s.tensor;
  w.head_batch = s.micro_batch * w.local_heads;
  if (s.moe_layer) {
    w.routed_tokens = w.norm_tokens;
    w.copies = s.experts_per_token * (s.capacity_factor > 0 ? s.capacity_factor : 1);
    w.local_experts = static_cast<double>(s.experts) / s.expert_parallel;
    w.expert_rows = w.routed_tokens * w.copies / w.local_experts;
  }
  return w;
}

ComputeOp gemm(const std::string& name, ComputePhase phase, double m, double n, double k,
               double count, double element_bytes) {
  ComputeOp op;
  op.name = name;
  op.kind = ComputeOpKind::Gemm;
  op.phase = phase;
  op.m = m;
  op.n = n;
  op.k = k;
  op.count = count;
  op.flop = 2 * m * n * k * count;
  op.bytes = (m * k + k * n + m * n) * count * element_bytes;
  return op;
}

MemoryKernel norm_kernel(const LayerShape& shape) {
  return shape.layer_norm ? MemoryKernel::LayerNorm : MemoryKernel::RmsNorm;
}

ComputeOp memory(const std::string& name, ComputePhase phase, double bytes,
                 MemoryKernel kernel = MemoryKernel::Elementwise) {
  ComputeOp op;
  op.name = name;
  op.kind = ComputeOpKind::Memory;
  op.phase = phase;
  op.bytes = bytes;
  op.memory_kernel = kernel;
  return op;
}

/// A GEMM so narrow that it streams its operands rather than computing (the router's [M x h] x
/// [h x E], E = 8 for Mixtral: 2E / e flop per byte read, far below any GPU's ridge point of
/// hundreds): timed as memory traffic of its operands and result, its flop kept for the counts.
ComputeOp streamed(ComputeOp gemm_op) {
  gemm_op.kind = ComputeOpKind::Memory;
  gemm_op.memory_kernel = MemoryKernel::Elementwise;
  return gemm_op;
}

/// The backward of a forward GEMM [m x k] x [k x n]: the input gradient [m x n] x [n x k] and
/// the weight gradient [k x m] x [m x n].
void add_weight_gemm_backward(std::vector<ComputeOp>& ops, const ComputeOp& forward,
                              double element_bytes) {
  ops.push_back(gemm(forward.name + ".dgrad", ComputePhase::Backward, forward.m, forward.k,
                     forward.n, forward.count, element_bytes));
  ops.push_back(gemm(forward.name + ".wgrad", ComputePhase::Backward, forward.k, forward.n,
                     forward.m, forward.count, element_bytes));
}

/// The attention core's forward: flash (one kernel) or math (Q K^T, the scaled, masked softmax
/// over the stored scores, P V), in `phase` (Forward, or Recompute). Per (sample, head): the
/// rank's queries against the sequence's keys, scores of the query/key width, values of v_dim.
void add_attention_forward(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w,
                           ComputePhase phase) {
  const double e = s.element_bytes, q = w.queries, k = w.keys;
  if (s.attention == AttentionKernel::Flash) {
    ComputeOp op;
    op.name = "attention.flash";
    op.kind = ComputeOpKind::Attention;
    op.phase = phase;
    op.m = q;
    op.n = k;
    op.k = w.qk_dim;
    op.count = w.head_batch;
    op.causal = true;
    op.flop = 2 * q * k * (w.qk_dim + w.v_dim) * w.head_batch;
    // Q read and the output written once, K and V of the rank's K/V heads read once (with
    // context parallelism, the whole sequence's as its blocks pass).
    const double key_tokens = w.tokens * s.context;
    op.bytes = (w.tokens * w.local_heads * (w.qk_dim + w.v_dim) +
                key_tokens * w.local_kv_heads * (w.qk_dim + w.v_dim)) *
               e;
    ops.push_back(op);
    return;
  }
  ops.push_back(gemm("attention.scores", phase, q, k, w.qk_dim, w.head_batch, e));
  // The scale, causal mask and softmax read the scores and write the probabilities.
  ops.push_back(
      memory("attention.softmax", phase, 2 * w.head_batch * q * k * e, MemoryKernel::Softmax));
  // Dropout on the probabilities (torch.nn.Dropout after Megatron's fused softmax): reads them,
  // writes its output and a 1-byte mask.
  if (s.dropout)
    ops.push_back(memory("attention.dropout", phase, (2 * e + 1) * w.head_batch * q * k));
  ops.push_back(gemm("attention.context", phase, q, w.v_dim, k, w.head_batch, e));
}

void add_attention_backward(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w) {
  const double e = s.element_bytes, q = w.queries, k = w.keys;
  if (s.attention == AttentionKernel::Flash) {
    ComputeOp op;
    op.name = "attention.flash.backward";
    op.kind = ComputeOpKind::Attention;
    op.phase = ComputePhase::Backward;
    op.m = q;
    op.n = k;
    op.k = w.qk_dim;
    op.count = w.head_batch;
    op.causal = true;
    op.flop = 4 * q * k * (w.qk_dim + w.v_dim) * w.head_batch;
    // Q, K, V, O, dO read; dQ, dK, dV written.
    const double key_tokens = w.tokens * s.context;
    op.bytes = (2 * w.tokens * w.local_heads * (w.qk_dim + w.v_dim) +
                2 * key_tokens * w.local_kv_heads * (w.qk_dim + w.v_dim)) *
               e;
    ops.push_back(op);
    return;
  }
  // O = P V: dP = dO V^T, dV = P^T dO; S = Q K^T: dQ = dS K, dK = dS^T Q.
  ops.push_back(
      gemm("attention.context.dprobs", ComputePhase::Backward, q, k, w.v_dim, w.head_batch, e));
  ops.push_back(
      gemm("attention.context.dvalues", ComputePhase::Backward, k, w.v_dim, q, w.head_batch, e));
  // The dropout's backward reads the gradient and the mask and writes the probabilities'.
  if (s.dropout)
    ops.push_back(memory("attention.dropout.backward", ComputePhase::Backward,
                         (2 * e + 1) * w.head_batch * q * k));
  // The softmax backward reads P and dP and writes dS.
  ops.push_back(memory("attention.softmax.backward", ComputePhase::Backward,
                       3 * w.head_batch * q * k * e, MemoryKernel::Softmax));
  ops.push_back(
      gemm("attention.scores.dqueries", ComputePhase::Backward, q, w.qk_dim, k, w.head_batch, e));
  ops.push_back(
      gemm("attention.scores.dkeys", ComputePhase::Backward, k, w.qk_dim, q, w.head_batch, e));
}

/// A feed-forward's rows, inner width and count of identical GEMMs, by its name's prefix: the
/// dense "ffn", a MoE layer's local routed experts "moe.experts" and its shared ones
/// "moe.shared".
struct FfnDims {
  double rows, width, count;
};

FfnDims ffn_dims(const std::string& prefix, const LayerShape& s, const RankWidths& w) {
  if (prefix == "moe.experts")
    return {w.expert_rows, static_cast<double>(s.expert_ffn_hidden), w.local_experts};
  if (prefix == "moe.shared")
    return {w.tokens, static_cast<double>(s.shared_experts) * s.expert_ffn_hidden / s.tensor, 1};
  return {w.tokens, w.ffn, 1};
}

/// A feed-forward of the model's kind: SwiGLU's gate and up GEMM, its activation (reads the gate
/// and up, writes the product) and the down GEMM; GELU's up, activation, down.
void add_ffn(std::vector<ComputeOp>& ops, const std::string& prefix, const LayerShape& s,
             const RankWidths& w, ComputePhase phase) {
  const double e = s.element_bytes, h = s.hidden;
  const FfnDims d = ffn_dims(prefix, s, w);
  if (s.swiglu) {
    ops.push_back(gemm(prefix + ".gate_up", phase, d.rows, 2 * d.width, h, d.count, e));
    ops.push_back(memory(prefix + ".swiglu", phase, 3 * d.rows * d.width * e * d.count,
                         MemoryKernel::SwiGlu));
  } else {
    ops.push_back(gemm(prefix + ".up", phase, d.rows, d.width, h, d.count, e));
    ops.push_back(
        memory(prefix + ".gelu", phase, 2 * d.rows * d.width * e * d.count, MemoryKernel::Gelu));
  }
  ops.push_back(gemm(prefix + ".down", phase, d.rows, h, d.width, d.count, e));
}

/// The activation's backward: SwiGLU reads the gate, the up projection and dY and writes both
/// input gradients (5 per element); GELU reads its input and dY and writes dX (3).
ComputeOp activation_backward(const ComputeOp& forward, const LayerShape& s, const RankWidths& w) {
  const bool swiglu = forward.memory_kernel == MemoryKernel::SwiGlu;
  const std::string prefix = forward.name.substr(0, forward.name.rfind('.'));
  const FfnDims d = ffn_dims(prefix, s, w);
  return memory(forward.name + ".backward", ComputePhase::Backward,
                (swiglu ? 5 : 3) * d.rows * d.width * s.element_bytes * d.count,
                forward.memory_kernel);
}

/// MLA's projections before the attention core: Q through its latent (or directly), K and V
/// through theirs.
void add_mla_projections(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w,
                         ComputePhase phase) {
  const double e = s.element_bytes, h = s.hidden, ql = s.q_lora_rank, kvl = s.kv_lora_rank;
  const MemoryKernel norm = norm_kernel(s);
  if (s.q_lora_rank > 0) {
    ops.push_back(gemm("attention.q_down", phase, w.norm_tokens, ql, h, 1, e));
    ops.push_back(memory("attention.q_norm", phase, 2 * w.norm_tokens * ql * e, norm));
    ops.push_back(gemm("attention.q_up", phase, w.tokens, w.local_heads * w.qk_dim, ql, 1, e));
  } else {
    ops.push_back(gemm("attention.q", phase, w.tokens, w.local_heads * w.qk_dim, h, 1, e));
  }
  ops.push_back(gemm("attention.kv_down", phase, w.norm_tokens, kvl + s.qk_rope_head_dim, h, 1, e));
  ops.push_back(memory("attention.kv_norm", phase, 2 * w.norm_tokens * kvl * e, norm));
  ops.push_back(gemm("attention.kv_up", phase, w.tokens,
                     w.local_heads * (s.qk_nope_head_dim + s.v_head_dim), kvl, 1, e));
}

/// Bytes of the router's softmax and top-k over the E logits (fp32): the softmax reads the
/// logits and writes the probabilities, the top-k reads them; its backward reads the
/// probabilities and their gradient and writes the logits'.
double router_bytes(const LayerShape& s, const RankWidths& w) {
  return 3 * w.routed_tokens * s.experts * 4.0;
}

/// Bytes of moving the k' token copies to their experts' order (or back): read and written.
double permute_bytes(const LayerShape& s, const RankWidths& w) {
  return 2 * w.routed_tokens * w.copies * s.hidden * s.element_bytes;
}

/// A MoE feed-forward: router, softmax and top-k, permutation, local experts, unpermutation
/// (the gate-weighted sum), shared experts.
void add_moe(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w,
             ComputePhase phase) {
  ops.push_back(streamed(
      gemm("moe.router", phase, w.routed_tokens, s.experts, s.hidden, 1, s.element_bytes)));
  ops.push_back(memory("moe.router.softmax", phase, router_bytes(s, w), MemoryKernel::Softmax));
  ops.push_back(memory("moe.permute", phase, permute_bytes(s, w)));
  add_ffn(ops, "moe.experts", s, w, phase);
  ops.push_back(memory("moe.unpermute", phase, permute_bytes(s, w)));
  if (s.shared_experts > 0) add_ffn(ops, "moe.shared", s, w, phase);
}

/// The layer's forward in `phase` (the caller adds each op's backward).
std::vector<ComputeOp> forward_ops(const LayerShape& s, const RankWidths& w, ComputePhase phase) {
  const double e = s.element_bytes, h = s.hidden;
  // A norm (LayerNorm or RMSNorm alike) reads its row once and writes it once; its statistics
  // are h times smaller.
  const MemoryKernel norm = norm_kernel(s);
  std::vector<ComputeOp> ops;
  ops.push_back(memory("norm1", phase, 2 * w.norm_tokens * h * e, norm));
  if (s.kv_lora_rank > 0)
    add_mla_projections(ops, s, w, phase);
  else
    ops.push_back(gemm("qkv", phase, w.tokens, w.query_width + 2 * w.kv_width, h, 1, e));
  add_attention_forward(ops, s, w, phase);
  ops.push_back(gemm("attention.output", phase, w.tokens, h, w.value_width, 1, e));
  // The residual add reads the stream and the branch and writes the sum; with dropout (Megatron's
  // fused bias-dropout-add) it also writes the branch's 1-byte mask.
  const double residual_bytes = 3 * w.norm_tokens * h * e + (s.dropout ? w.norm_tokens * h : 0);
  ops.push_back(memory("residual1", phase, residual_bytes));
  ops.push_back(memory("norm2", phase, 2 * w.norm_tokens * h * e, norm));
  if (s.moe_layer)
    add_moe(ops, s, w, phase);
  else
    add_ffn(ops, "ffn", s, w, phase);
  ops.push_back(memory("residual2", phase, residual_bytes));
  return ops;
}

bool is_weight_gemm(const ComputeOp& op) {
  return op.kind == ComputeOpKind::Gemm && op.name.rfind("attention.scores", 0) != 0 &&
         op.name.rfind("attention.context", 0) != 0;
}

/// The width of a norm op's rows: the layer's two over h, MLA's latent norms over their ranks.
double norm_width(const ComputeOp& op, const LayerShape& s) {
  if (op.name == "attention.q_norm") return s.q_lora_rank;
  if (op.name == "attention.kv_norm") return s.kv_lora_rank;
  return s.hidden;
}

/// The backward of one forward op (GEMMs, memory-bound passes, the attention core).
void add_backward(std::vector<ComputeOp>& ops, const ComputeOp& op, const LayerShape& shape,
                  const RankWidths& w) {
  const double e = shape.element_bytes, h = shape.hidden;
  if (op.name == "moe.router") {  // its two backward GEMMs are as narrow: streamed too
    std::vector<ComputeOp> backward;
    add_weight_gemm_backward(backward, op, e);
    for (const ComputeOp& gemm_op : backward)
      ops.push_back(streamed(gemm_op));
  } else if (is_weight_gemm(op)) {
    add_weight_gemm_backward(ops, op, e);
  } else if (op.memory_kernel == MemoryKernel::SwiGlu || op.memory_kernel == MemoryKernel::Gelu) {
    ops.push_back(activation_backward(op, shape, w));
  } else if (op.memory_kernel == norm_kernel(shape) && op.kind == ComputeOpKind::Memory) {
    // Reads the input and dY, writes dX (the gain's gradient is a reduction of the same).
    ops.push_back(memory(op.name + ".backward", ComputePhase::Backward,
                         3 * w.norm_tokens * norm_width(op, shape) * e, norm_kernel(shape)));
  } else if (op.name == "residual1" || op.name == "residual2") {
    // The branch's gradient joins the stream's: read two, write one.
    ops.push_back(memory(op.name + ".backward", ComputePhase::Backward, 3 * w.norm_tokens * h * e));
    // The branch's dropout: its gradient times the mask, read both, write one.
    if (shape.dropout)
      ops.push_back(memory(op.name + ".dropout.backward", ComputePhase::Backward,
                           (2 * e + 1) * w.norm_tokens * h));
  } else if (op.name == "moe.router.softmax") {
    ops.push_back(memory(op.name + ".backward", ComputePhase::Backward, router_bytes(shape, w),
                         MemoryKernel::Softmax));
  } else if (op.name == "moe.unpermute") {
    // Scatters the gradient back to the k' copies and reads the experts' outputs for the gates'
    // gradient: the forward's traffic and one more read of the copies.
    ops.push_back(
        memory(op.name + ".backward", ComputePhase::Backward, 1.5 * permute_bytes(shape, w)));
  } else if (op.name == "moe.permute") {
    // Gathers the copies' gradients back into token order (summed per token).
    ops.push_back(memory(op.name + ".backward", ComputePhase::Backward, permute_bytes(shape, w)));
  } else if (op.name == "attention.context" || op.kind == ComputeOpKind::Attention) {
    add_attention_backward(ops, shape, w);
  }
}

}  // namespace

std::vector<ComputeOp> layer_ops(const LayerShape& shape, Recompute recompute) {
  const RankWidths w = widths(shape);
  std::vector<ComputeOp> ops = forward_ops(shape, w, ComputePhase::Forward);
  const std::vector<ComputeOp> forward = ops;

  if (recompute == Recompute::Full) {
    const std::vector<ComputeOp> again = forward_ops(shape, w, ComputePhase::Recompute);
    ops.insert(ops.end(), again.begin(), again.end());
  } else if (recompute == Recompute::Selective) {
    add_attention_forward(ops, shape, w, ComputePhase::Recompute);
  }

  // Backward, last sublayer first: each weight GEMM's two GEMMs, each memory-bound op's
  // gradient pass, the attention core's backward.
  for (auto it = forward.rbegin(); it != forward.rend(); ++it)
    add_backward(ops, *it, shape, w);
  return ops;
}

std::vector<ComputeOp> logits_ops(const LayerShape& shape, int vocabulary) {
  const RankWidths w = widths(shape);
  const double e = shape.element_bytes;
  const double local_vocabulary = static_cast<double>(vocabulary) / shape.tensor;
  std::vector<ComputeOp> ops;
  ops.push_back(memory("final_norm", ComputePhase::Forward, 2 * w.norm_tokens * shape.hidden * e,
                       norm_kernel(shape)));
  const ComputeOp logits =
      gemm("logits", ComputePhase::Forward, w.tokens, local_vocabulary, shape.hidden, 1, e);
  ops.push_back(logits);
  // Softmax cross-entropy in fp32 (Megatron's vocab-parallel cross-entropy): the logits read
  // forward, read again and their gradient written backward.
  ops.push_back(memory("cross_entropy", ComputePhase::Forward, w.tokens * local_vocabulary * 4,
                       MemoryKernel::Softmax));
  ops.push_back(memory("cross_entropy.backward", ComputePhase::Backward,
                       2 * w.tokens * local_vocabulary * 4, MemoryKernel::Softmax));
  add_weight_gemm_backward(ops, logits, e);
  ops.push_back(memory("final_norm.backward", ComputePhase::Backward,
                       3 * w.norm_tokens * shape.hidden * e, norm_kernel(shape)));
  return ops;
}

double total_flop(const std::vector<ComputeOp>& ops) {
  double flop = 0;
  for (const ComputeOp& op : ops)
    flop += op.flop;
  return flop;
}

}  // namespace tauplan::model
