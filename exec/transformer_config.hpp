// transformer_config.hpp: the decoder block stack that exec trains, its shape and where each of
// its parameters lives in one flat vector.
//
// A causal decoder language model as GPT and Llama build it, small enough for a CPU: token and
// learned position embeddings, `layers` pre-norm blocks (norm, grouped-query causal attention
// with an output projection, residual; norm, GELU or SwiGLU feed-forward, residual), a final
// norm and an untied vocabulary head, mean cross-entropy of the next token. No biases in the
// linear layers (Llama), no dropout. Matrices are row-major and applied as y = x W with W of
// [in x out]. The same layout is used by the fp32 CPU block, the double reference and the CUDA
// block, so a parameter vector moves between them unchanged. With tensor > 1 the layout is one
// Megatron rank's shard: its query and K/V heads, its feed-forward columns and its V / tensor
// columns of the vocabulary head (the vocabulary-parallel head, Shoeybi et al. 2019); the
// embeddings and norms stay whole (what it leaves out: a vocabulary-parallel token embedding).
// Header-only, no dependencies.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tauplan::exec {

enum class BlockNorm { RmsNorm, LayerNorm };
enum class BlockFeedForward { Gelu, SwiGlu };

struct BlockConfig {
  int vocabulary = 64;
  int hidden = 64;
  int heads = 4;
  int kv_heads = 2;  ///< grouped-query attention: heads / kv_heads query heads share a K and V
  int ffn_hidden = 128;
  int layers = 2;
  int sequence = 32;    ///< tokens per sample
  int micro_batch = 4;  ///< samples per step
  /// Tensor shard: this block holds heads / tensor query heads, max(1, kv_heads / tensor) K/V
  /// heads (Megatron replicates K/V heads when tensor > kv_heads), ffn_hidden / tensor
  /// feed-forward columns and vocabulary / tensor columns of the head (Megatron's
  /// vocabulary-parallel head), as one of `tensor` Megatron ranks does (its all-reduces are not
  /// here). Embeddings and norms are whole on every rank.
  int tensor = 1;
  BlockNorm norm = BlockNorm::RmsNorm;
  BlockFeedForward feed_forward = BlockFeedForward::SwiGlu;
  double norm_epsilon = 1e-5;

  int head_dim() const { return hidden / heads; }
  int kv_width() const { return kv_heads * head_dim(); }
  int local_heads() const { return heads / tensor; }
  int local_kv_heads() const { return kv_heads >= tensor ? kv_heads / tensor : 1; }
  int local_width() const { return local_heads() * head_dim(); }        ///< Q and attention out
  int local_kv_width() const { return local_kv_heads() * head_dim(); }  ///< K and V
  int local_ffn() const { return ffn_hidden / tensor; }
  int local_vocabulary() const { return vocabulary / tensor; }  ///< the head's columns
  int tokens() const { return sequence * micro_batch; }
  /// Empty when the shape is valid, else what is wrong (heads must divide hidden, kv_heads
  /// must divide heads, every size positive, tensor must divide heads, ffn_hidden and
  /// vocabulary).
  std::string problem() const {
    if (vocabulary < 2 || hidden < 1 || heads < 1 || kv_heads < 1 || ffn_hidden < 1 || layers < 1 ||
        sequence < 1 || micro_batch < 1)
      return "every size must be positive (vocabulary >= 2)";
    if (hidden % heads != 0) return "heads must divide hidden";
    if (heads % kv_heads != 0) return "kv_heads must divide heads";
    if (tensor < 1 || heads % tensor != 0) return "tensor must divide heads";
    if (kv_heads % tensor != 0 && tensor % kv_heads != 0)
      return "tensor must divide kv_heads or be a multiple of it";
    if (ffn_hidden % tensor != 0) return "tensor must divide ffn_hidden";
    if (vocabulary % tensor != 0) return "tensor must divide vocabulary";
    return {};
  }
};

/// One parameter tensor: rows x cols floats at `offset` in the flat vector (a vector when
/// rows == 1).
struct ParameterSlot {
  std::string name;  ///< e.g. "layer1.wq", "embedding.token"
  int rows = 0;
  int cols = 0;
  size_t offset = 0;
  size_t size() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

/// The parameters of one layer, in order: norm1 gain [1 x h] (and bias with LayerNorm), wq
/// [h x qw], wk [h x kvw], wv [h x kvw], wo [qw x h], norm2 gain (and bias), then w_up [h x f]
/// and w2 [f x h] (GELU) or w_gate [h x f], w_up [h x f], w2 [f x h] (SwiGLU); qw, kvw and f
/// are the tensor shard's (local_width, local_kv_width, local_ffn). Within wq the columns of
/// query head j are j*d..(j+1)*d-1, and query head j uses K/V head j / (local_heads /
/// local_kv_heads).
struct LayerSlots {
  ParameterSlot norm1_gain, norm1_bias, wq, wk, wv, wo, norm2_gain, norm2_bias, w_gate, w_up, w2;
};

struct BlockParameters {
  ParameterSlot token_embedding;     ///< [V x h]
  ParameterSlot position_embedding;  ///< [s x h]
  std::vector<LayerSlots> layers;
  ParameterSlot final_gain, final_bias;  ///< [1 x h]; bias only with LayerNorm
  /// [h x V / tensor]: columns [r V/t, (r+1) V/t) of the unsplit [h x V] head on tensor rank r
  ParameterSlot head;
  size_t total = 0;
  std::vector<ParameterSlot> all() const {
    std::vector<ParameterSlot> out{token_embedding, position_embedding};
    for (const LayerSlots& l : layers)
      for (const ParameterSlot& s : {l.norm1_gain, l.norm1_bias, l.wq, l.wk, l.wv, l.wo,
                                     l.norm2_gain, l.norm2_bias, l.w_gate, l.w_up, l.w2})
        if (s.size() > 0) out.push_back(s);
    out.push_back(final_gain);
    if (final_bias.size() > 0) out.push_back(final_bias);
    out.push_back(head);
    return out;
  }
};

/// Where every parameter lives. GELU's single input projection is `w_up` (w_gate is empty).
inline BlockParameters block_parameters(const BlockConfig& c) {
  BlockParameters p;
  size_t at = 0;
  auto slot = [&at](const std::string& name, int rows, int cols) {
    ParameterSlot s{name, rows, cols, at};
    at += s.size();
    return s;
  };
  const bool layer_norm = c.norm == BlockNorm::LayerNorm;
  p.token_embedding = slot("embedding.token", c.vocabulary, c.hidden);
  p.position_embedding = slot("embedding.position", c.sequence, c.hidden);
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = "layer" + std::to_string(i) + ".";
    LayerSlots l;
    l.norm1_gain = slot(n + "norm1.gain", 1, c.hidden);
    if (layer_norm) l.norm1_bias = slot(n + "norm1.bias", 1, c.hidden);
    l.wq = slot(n + "wq", c.hidden, c.local_width());
    l.wk = slot(n + "wk", c.hidden, c.local_kv_width());
    l.wv = slot(n + "wv", c.hidden, c.local_kv_width());
    l.wo = slot(n + "wo", c.local_width(), c.hidden);
    l.norm2_gain = slot(n + "norm2.gain", 1, c.hidden);
    if (layer_norm) l.norm2_bias = slot(n + "norm2.bias", 1, c.hidden);
    if (c.feed_forward == BlockFeedForward::SwiGlu)
      l.w_gate = slot(n + "w_gate", c.hidden, c.local_ffn());
    l.w_up = slot(n + "w_up", c.hidden, c.local_ffn());
    l.w2 = slot(n + "w2", c.local_ffn(), c.hidden);
    p.layers.push_back(l);
  }
  p.final_gain = slot("final.gain", 1, c.hidden);
  if (layer_norm) p.final_bias = slot("final.bias", 1, c.hidden);
  p.head = slot("head", c.hidden, c.local_vocabulary());
  p.total = at;
  return p;
}

}  // namespace tauplan::exec
