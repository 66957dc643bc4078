// transformer_block.hpp: the decoder block stack of transformer_config.hpp in fp32 on the CPU,
// forward and backward, and an Adam step to train it.
//
// Matrix products (Q, K, V, the per-head scores and weighted values, the output projection, the
// feed-forward and the vocabulary head, forward and backward) go through cpu_blas.hpp (OpenBLAS,
// or Eigen); norms, softmaxes and activations are contiguous loops. Activations are kept per
// layer in the object, workspaces are sized once at construction, so a step allocates nothing.
// The stack is exposed in pieces — embedding, each layer, each sublayer, the head — so that a
// pipeline stage can run a range of layers and a tensor-parallel wrapper can put its all-reduce
// between a sublayer's partial output and the residual add. A block built with config.tensor > 1
// is one Megatron rank's shard: fewer heads and feed-forward columns, V / tensor columns of the
// vocabulary head. Its tensor group's all-reduces are asked of a TensorReduce the caller gives,
// at Megatron's places: the vocabulary-parallel embedding's output (each rank looks up the
// tokens of its V / tensor rows), the gradient of each norm's output before the norm's backward
// (f), and the head's vocabulary-parallel softmax cross-entropy (per token the maximum logit,
// then the sum of exponentials with the target's logit, and in head_backward the gradient of
// the final norm's output); the sublayers' partial outputs forward (g) are summed by the caller
// before the residual add. Without one (a lone shard, or tensor 1) the block's rows and columns
// are the whole table and softmax and it is tensor rank 0 (a target outside its columns adds no
// target logit).
// GELU is the tanh approximation. The memory-bound loops are block_kernels.hpp's (the ones the
// calibration times). Checked against the double reference
// (transformer_reference.hpp). What it leaves out: mixed precision, dropout, KV caches,
// fused attention (the causal scores are computed in full and masked), more than one set of
// saved activations per layer (a pipeline with several micro-batches in flight keeps one block
// per micro-batch in flight).
#pragma once

#include <cstddef>
#include <vector>

#include "exec/transformer_config.hpp"

namespace tauplan::exec {

/// The tensor group's reductions that a shard's embedding, norms' backward and vocabulary-parallel
/// head (Megatron's vocab_parallel_cross_entropy) ask for and do not do themselves. Every rank
/// of the group calls them in the same order with the same n; each replaces values[0..n) by
/// the element-wise maximum or sum over the group, the same bits on every rank.
class TensorReduce {
 public:
  virtual ~TensorReduce() = default;
  /// This block's tensor rank r: it holds vocabulary columns [r V/t, (r+1) V/t).
  virtual int rank() const = 0;
  virtual void max(float* values, size_t n) = 0;
  virtual void sum(float* values, size_t n) = 0;
};

class CpuTransformerBlock {
 public:
  /// Throws std::invalid_argument naming config.problem() when the shape is invalid.
  explicit CpuTransformerBlock(const BlockConfig& config);

  const BlockConfig& config() const { return config_; }
  const BlockParameters& layout() const { return layout_; }
  size_t parameter_count() const { return layout_.total; }

  /// Mean next-token cross-entropy of `tokens` (micro_batch rows of sequence + 1 tokens, as
  /// reference_loss_and_gradients takes them) and, when `gradients` is not null, its gradient
  /// (parameter_count() floats, overwritten). Throws std::invalid_argument for a token outside
  /// [0, vocabulary).
  float loss_and_gradients(const float* parameters, const int* tokens, float* gradients);

  // ---- The stack in pieces. `hidden` is the residual stream, [tokens x hidden] floats, token
  // t = row * sequence + position. Parameter gradients are ADDED to `gradients` (the whole flat
  // vector); loss_and_gradients zeroes it first.

  /// hidden = token embedding + position embedding of the input tokens. With `reduce` (a
  /// tensor shard), Megatron's vocabulary-parallel embedding: this rank looks up only the tokens
  /// of its rows [r V/t, (r+1) V/t) of the (whole-sized) table, zeros for the others, and one sum
  /// over the group gives every rank the whole embedding.
  void embed_forward(const float* parameters, const int* tokens, float* hidden,
                     TensorReduce* reduce = nullptr) const;
  /// Adds the embeddings' gradients (with `reduce`, the token rows of this rank's range only; no
  /// message).
  void embed_backward(const int* tokens, const float* hidden_gradient, float* gradients,
                      const TensorReduce* reduce = nullptr) const;
  /// hidden = layer `layer` applied to hidden (in place); saves its activations.
  void layer_forward(int layer, const float* parameters, float* hidden);
  /// On entry the gradient of the layer's output, on return of its input (in place).
  void layer_backward(int layer, const float* parameters, float* hidden_gradient, float* gradients);
  /// Final norm, head and mean cross-entropy against the targets of `tokens`; when `gradients`
  /// is not null, adds the head's gradient there and keeps this rank's part of the gradient of
  /// the final norm's output for head_backward. With config.tensor > 1, `reduce` combines the
  /// tensor group's ranks: two calls (a max of `tokens` floats, a sum of 2 x tokens), the loss
  /// then the same on every rank, the head's gradient the rank's own columns. Null: no
  /// reductions, the block is tensor rank 0 and its columns the whole softmax.
  float head_forward(const float* parameters, const int* tokens, const float* hidden,
                     float* gradients, TensorReduce* reduce = nullptr);
  /// After head_forward with gradients: writes the gradient of its `hidden` to hidden_gradient
  /// and adds the final norm's gradients; with `reduce`, one sum of tokens x hidden first (the
  /// output projection's input gradient), so both are the same on every rank.
  void head_backward(const float* parameters, float* hidden_gradient, float* gradients,
                     TensorReduce* reduce = nullptr);
  /// head_forward, then (hidden_gradient not null) head_backward.
  float head_loss_and_gradients(const float* parameters, const int* tokens, const float* hidden,
                                float* hidden_gradient, float* gradients,
                                TensorReduce* reduce = nullptr);

  /// output = Attn(Norm1(input)) Wo, this block's heads only (a tensor rank's partial sum);
  /// the residual add is the caller's.
  void attention_forward(int layer, const float* parameters, const float* input, float* output);
  /// input_gradient = (overwritten) the gradient of `input`, given the gradient of the
  /// sublayer's output: this block's part of it, or with `reduce` the whole of it on every rank
  /// (the gradient of the norm's output is summed over the group before the norm's backward,
  /// Megatron's f, so the norm's own gradients are whole too).
  void attention_backward(int layer, const float* parameters, const float* output_gradient,
                          float* input_gradient, float* gradients, TensorReduce* reduce = nullptr);
  /// output = FFN(Norm2(input)), this block's columns only; the residual add is the caller's.
  void feed_forward_forward(int layer, const float* parameters, const float* input, float* output);
  void feed_forward_backward(int layer, const float* parameters, const float* output_gradient,
                             float* input_gradient, float* gradients,
                             TensorReduce* reduce = nullptr);

 private:
  struct NormActivations {
    std::vector<float> normalized;   ///< before gain and bias
    std::vector<float> inverse_std;  ///< per token
    std::vector<float> output;
  };
  struct LayerActivations {
    NormActivations norm1, norm2;
    std::vector<float> q, k, v;
    std::vector<float> probabilities;  ///< [row][head][query][key], zero above the diagonal
    std::vector<float> attention;      ///< [tokens x local_width], heads side by side
    std::vector<float> gate, up, activation;
  };

  void norm_forward(const float* input, const ParameterSlot& gain, const ParameterSlot& bias,
                    const float* parameters, NormActivations& saved) const;
  void norm_backward(const NormActivations& saved, const ParameterSlot& gain,
                     const ParameterSlot& bias, const float* parameters,
                     const float* output_gradient, float* input_gradient, float* gradients) const;
  void check_tokens(const int* tokens) const;
  /// The token rows [first, end) this block looks up: all of them, or with `reduce` its rank's.
  struct VocabularyRows {
    int first = 0, end = 0;
  };
  VocabularyRows embedding_rows(const TensorReduce* reduce) const;

  BlockConfig config_;
  BlockParameters layout_;
  int tokens_, hidden_, head_dim_, heads_, kv_heads_, q_width_, kv_width_, ffn_, vocabulary_;
  int local_vocabulary_;  ///< the head's columns here
  std::vector<LayerActivations> layers_;
  NormActivations final_norm_;
  // Workspaces, sized at construction.
  std::vector<float> stream_, stream_gradient_, sublayer_, sublayer_gradient_, norm_gradient_;
  std::vector<float> q_gradient_, k_gradient_, v_gradient_, attention_gradient_;
  std::vector<float> score_gradient_;  ///< [sequence x sequence], one head at a time
  std::vector<float> gate_gradient_, up_gradient_, activation_gradient_;
  std::vector<float> logits_;     ///< [tokens x local vocabulary]; becomes d(loss)/d(logits)
  std::vector<float> token_max_;  ///< [tokens]: the largest logit of each token
  /// [2 x tokens]: each token's sum of exp(logit - max), then its target's logit (0 where
  /// another tensor rank holds the target's column)
  std::vector<float> token_sums_;
  /// [tokens x hidden]: head_forward's part of the gradient of the final norm's output
  std::vector<float> head_gradient_;
};

/// Adam (Kingma and Ba) with bias correction, no weight decay, in fp32.
struct AdamSettings {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};
/// The moments of every parameter and the number of steps taken; sized by the first step.
struct AdamState {
  std::vector<float> first_moment, second_moment;
  long steps = 0;
};
/// parameters -= lr * m_hat / (sqrt(v_hat) + eps) over `count` parameters.
void adam_step(const AdamSettings& settings, AdamState& state, float* parameters,
               const float* gradients, size_t count);

}  // namespace tauplan::exec
