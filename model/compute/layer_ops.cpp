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
      !(micro_batch > 0) || tensor < 1 || !(element_bytes > 0))
    return "every size must be positive";
  if (hidden % heads != 0) return "heads must divide hidden";
  if (heads % kv_heads != 0) return "kv_heads must divide heads";
  if (heads % tensor != 0) return "the tensor shard must divide heads";
  if (kv_heads % tensor != 0 && tensor % kv_heads != 0)
    return "the tensor shard must divide kv_heads or be a multiple of it";
  if (ffn_hidden % tensor != 0) return "the tensor shard must divide ffn_hidden";
  return {};
}

namespace {

/// Widths on one tensor rank.
struct RankWidths {
  double tokens;       ///< M = b s: rows of every GEMM
  double norm_tokens;  ///< rows of the norms and residuals: M / t with sequence parallelism
  double head_dim;     ///< d = h / a
  double local_heads;  ///< a / t
  double query_width;  ///< a d / t
  double kv_width;     ///< max(1, kv/t) d: K/V heads are replicated when t > kv_heads
  double ffn;          ///< f / t
  double head_batch;   ///< b a / t: (sample, head) pairs of the attention core
};

RankWidths widths(const LayerShape& s) {
  RankWidths w{};
  w.tokens = s.micro_batch * s.sequence;
  w.norm_tokens = s.sequence_parallel ? w.tokens / s.tensor : w.tokens;
  w.head_dim = static_cast<double>(s.hidden) / s.heads;
  w.local_heads = static_cast<double>(s.heads) / s.tensor;
  w.query_width = w.local_heads * w.head_dim;
  const double local_kv = s.kv_heads >= s.tensor ? static_cast<double>(s.kv_heads) / s.tensor : 1.0;
  w.kv_width = local_kv * w.head_dim;
  w.ffn = static_cast<double>(s.ffn_hidden) / s.tensor;
  w.head_batch = s.micro_batch * w.local_heads;
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
/// over the stored scores, P V), in `phase` (Forward, or Recompute).
void add_attention_forward(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w,
                           ComputePhase phase) {
  const double seq = s.sequence, e = s.element_bytes;
  if (s.attention == AttentionKernel::Flash) {
    ComputeOp op;
    op.name = "attention.flash";
    op.kind = ComputeOpKind::Attention;
    op.phase = phase;
    op.m = op.n = seq;
    op.k = w.head_dim;
    op.count = w.head_batch;
    op.causal = true;
    op.flop = 4 * seq * seq * w.head_dim * w.head_batch;
    // Q, K, V read once (K and V of the rank's K/V heads), the output written once.
    op.bytes = (2 * w.tokens * w.query_width + 2 * w.tokens * w.kv_width) * e;
    ops.push_back(op);
    return;
  }
  ops.push_back(gemm("attention.scores", phase, seq, seq, w.head_dim, w.head_batch, e));
  // The scale, causal mask and softmax read the scores and write the probabilities.
  ops.push_back(
      memory("attention.softmax", phase, 2 * w.head_batch * seq * seq * e, MemoryKernel::Softmax));
  // Dropout on the probabilities (torch.nn.Dropout after Megatron's fused softmax): reads them,
  // writes its output and a 1-byte mask.
  if (s.dropout)
    ops.push_back(memory("attention.dropout", phase, (2 * e + 1) * w.head_batch * seq * seq));
  ops.push_back(gemm("attention.context", phase, seq, w.head_dim, seq, w.head_batch, e));
}

void add_attention_backward(std::vector<ComputeOp>& ops, const LayerShape& s, const RankWidths& w) {
  const double seq = s.sequence, e = s.element_bytes;
  if (s.attention == AttentionKernel::Flash) {
    ComputeOp op;
    op.name = "attention.flash.backward";
    op.kind = ComputeOpKind::Attention;
    op.phase = ComputePhase::Backward;
    op.m = op.n = seq;
    op.k = w.head_dim;
    op.count = w.head_batch;
    op.causal = true;
    op.flop = 8 * seq * seq * w.head_dim * w.head_batch;
    // Q, K, V, O, dO read; dQ, dK, dV written.
    op.bytes = (4 * w.tokens * w.query_width + 4 * w.tokens * w.kv_width) * e;
    ops.push_back(op);
    return;
  }
  // O = P V: dP = dO V^T, dV = P^T dO; S = Q K^T: dQ = dS K, dK = dS^T Q.
  ops.push_back(gemm("attention.context.dprobs", ComputePhase::Backward, seq, seq, w.head_dim,
                     w.head_batch, e));
  ops.push_back(gemm("attention.context.dvalues", ComputePhase::Backward, seq, w.head_dim, seq,
                     w.head_batch, e));
  // The dropout's backward reads the gradient and the mask and writes the probabilities'.
  if (s.dropout)
    ops.push_back(memory("attention.dropout.backward", ComputePhase::Backward,
                         (2 * e + 1) * w.head_batch * seq * seq));
  // The softmax backward reads P and dP and writes dS.
  ops.push_back(memory("attention.softmax.backward", ComputePhase::Backward,
                       3 * w.head_batch * seq * seq * e, MemoryKernel::Softmax));
  ops.push_back(gemm("attention.scores.dqueries", ComputePhase::Backward, seq, w.head_dim, seq,
                     w.head_batch, e));
  ops.push_back(gemm("attention.scores.dkeys", ComputePhase::Backward, seq, w.head_dim, seq,
                     w.head_batch, e));
}

/// The layer's forward in `phase` (the caller adds each op's backward).
std::vector<ComputeOp> forward_ops(const LayerShape& s, const RankWidths& w, ComputePhase phase) {
  const double e = s.element_bytes, h = s.hidden;
  // A norm (LayerNorm or RMSNorm alike) reads its row once and writes it once; its statistics
  // are h times smaller.
  const MemoryKernel norm = norm_kernel(s);
  std::vector<ComputeOp> ops;
  ops.push_back(memory("norm1", phase, 2 * w.norm_tokens * h * e, norm));
  ops.push_back(gemm("qkv", phase, w.tokens, w.query_width + 2 * w.kv_width, h, 1, e));
  add_attention_forward(ops, s, w, phase);
  ops.push_back(gemm("attention.output", phase, w.tokens, h, w.query_width, 1, e));
  // The residual add reads the stream and the branch and writes the sum; with dropout (Megatron's
  // fused bias-dropout-add) it also writes the branch's 1-byte mask.
  const double residual_bytes = 3 * w.norm_tokens * h * e + (s.dropout ? w.norm_tokens * h : 0);
  ops.push_back(memory("residual1", phase, residual_bytes));
  ops.push_back(memory("norm2", phase, 2 * w.norm_tokens * h * e, norm));
  if (s.swiglu) {
    ops.push_back(gemm("ffn.gate_up", phase, w.tokens, 2 * w.ffn, h, 1, e));
    ops.push_back(memory("ffn.swiglu", phase, 3 * w.tokens * w.ffn * e, MemoryKernel::SwiGlu));
  } else {
    ops.push_back(gemm("ffn.up", phase, w.tokens, w.ffn, h, 1, e));
    ops.push_back(memory("ffn.gelu", phase, 2 * w.tokens * w.ffn * e, MemoryKernel::Gelu));
  }
  ops.push_back(gemm("ffn.down", phase, w.tokens, h, w.ffn, 1, e));
  ops.push_back(memory("residual2", phase, residual_bytes));
  return ops;
}

bool is_weight_gemm(const ComputeOp& op) {
  return op.kind == ComputeOpKind::Gemm && op.name.rfind("attention.scores", 0) != 0 &&
         op.name.rfind("attention.context", 0) != 0;
}

}  // namespace

std::vector<ComputeOp> layer_ops(const LayerShape& shape, Recompute recompute) {
  const RankWidths w = widths(shape);
  const double e = shape.element_bytes, h = shape.hidden;
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
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const ComputeOp& op = *it;
    if (is_weight_gemm(op)) {
      add_weight_gemm_backward(ops, op, e);
    } else if (op.name == "ffn.swiglu") {
      // Reads the gate, the up projection and dY; writes both input gradients.
      ops.push_back(memory("ffn.swiglu.backward", ComputePhase::Backward, 5 * w.tokens * w.ffn * e,
                           MemoryKernel::SwiGlu));
    } else if (op.name == "ffn.gelu") {
      ops.push_back(memory("ffn.gelu.backward", ComputePhase::Backward, 3 * w.tokens * w.ffn * e,
                           MemoryKernel::Gelu));
    } else if (op.name == "norm1" || op.name == "norm2") {
      // Reads the input and dY, writes dX (the gain's gradient is a reduction of the same).
      ops.push_back(memory(op.name + ".backward", ComputePhase::Backward, 3 * w.norm_tokens * h * e,
                           norm_kernel(shape)));
    } else if (op.name == "residual1" || op.name == "residual2") {
      // The branch's gradient joins the stream's: read two, write one.
      ops.push_back(
          memory(op.name + ".backward", ComputePhase::Backward, 3 * w.norm_tokens * h * e));
      // The branch's dropout: its gradient times the mask, read both, write one.
      if (shape.dropout)
        ops.push_back(memory(op.name + ".dropout.backward", ComputePhase::Backward,
                             (2 * e + 1) * w.norm_tokens * h));
    } else if (op.name == "attention.context" || op.kind == ComputeOpKind::Attention) {
      add_attention_backward(ops, shape, w);
    }
  }
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
