// transformer_block.cpp: the fp32 CPU decoder stack (transformer_block.hpp). One function per
// sublayer; every matrix product through cpu_blas.hpp, the element-wise passes as plain loops.
#include "exec/transformer_block.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/block_kernels.hpp"
#include "exec/cpu_blas.hpp"

namespace tauplan::exec {
namespace {

size_t count(int a, int b) {
  return static_cast<size_t>(a) * static_cast<size_t>(b);
}

/// y [rows x out] = x [rows x in] W [in x out] (beta 0: overwrite; 1: accumulate).
void linear(int rows, int in, int out, const float* x, const float* w, float* y,
            float beta = 0.0f) {
  gemm(false, false, rows, out, in, 1.0f, x, in, w, out, beta, y, out);
}
/// dx [rows x in] = dy W^T (beta 0: overwrite; 1: accumulate).
void linear_input_gradient(int rows, int in, int out, const float* dy, const float* w, float* dx,
                           float beta) {
  gemm(false, true, rows, in, out, 1.0f, dy, out, w, out, beta, dx, in);
}
/// dW [in x out] += x^T dy.
void linear_weight_gradient(int rows, int in, int out, const float* x, const float* dy, float* dw) {
  gemm(true, false, in, out, rows, 1.0f, x, in, dy, out, 1.0f, dw, out);
}

}  // namespace

CpuTransformerBlock::CpuTransformerBlock(const BlockConfig& config) : config_(config) {
  const std::string problem = config.problem();
  if (!problem.empty()) throw std::invalid_argument("transformer block config: " + problem);
  layout_ = block_parameters(config);
  tokens_ = config.tokens();
  hidden_ = config.hidden;
  head_dim_ = config.head_dim();
  heads_ = config.local_heads();
  kv_heads_ = config.local_kv_heads();
  q_width_ = config.local_width();
  kv_width_ = config.local_kv_width();
  ffn_ = config.local_ffn();
  vocabulary_ = config.vocabulary;
  local_vocabulary_ = config.local_vocabulary();

  const size_t stream = count(tokens_, hidden_);
  auto size_norm = [&](NormActivations& n) {
    n.normalized.assign(stream, 0.0f);
    n.inverse_std.assign(static_cast<size_t>(tokens_), 0.0f);
    n.output.assign(stream, 0.0f);
  };
  layers_.resize(static_cast<size_t>(config.layers));
  for (LayerActivations& a : layers_) {
    size_norm(a.norm1);
    size_norm(a.norm2);
    a.q.assign(count(tokens_, q_width_), 0.0f);
    a.k.assign(count(tokens_, kv_width_), 0.0f);
    a.v.assign(count(tokens_, kv_width_), 0.0f);
    a.probabilities.assign(
        count(config.micro_batch, heads_) * count(config.sequence, config.sequence), 0.0f);
    a.attention.assign(count(tokens_, q_width_), 0.0f);
    if (config.feed_forward == BlockFeedForward::SwiGlu) a.gate.assign(count(tokens_, ffn_), 0.0f);
    a.up.assign(count(tokens_, ffn_), 0.0f);
    a.activation.assign(count(tokens_, ffn_), 0.0f);
  }
  size_norm(final_norm_);
  for (std::vector<float>* w : {&stream_, &stream_gradient_, &sublayer_, &sublayer_gradient_,
                                &norm_gradient_, &head_gradient_})
    w->assign(stream, 0.0f);
  q_gradient_.assign(count(tokens_, q_width_), 0.0f);
  attention_gradient_.assign(count(tokens_, q_width_), 0.0f);
  k_gradient_.assign(count(tokens_, kv_width_), 0.0f);
  v_gradient_.assign(count(tokens_, kv_width_), 0.0f);
  score_gradient_.assign(count(config.sequence, config.sequence), 0.0f);
  for (std::vector<float>* w : {&gate_gradient_, &up_gradient_, &activation_gradient_})
    w->assign(count(tokens_, ffn_), 0.0f);
  logits_.assign(count(tokens_, local_vocabulary_), 0.0f);
  token_max_.assign(static_cast<size_t>(tokens_), 0.0f);
  token_sums_.assign(2 * static_cast<size_t>(tokens_), 0.0f);
}

float CpuTransformerBlock::loss_and_gradients(const float* parameters, const int* tokens,
                                              float* gradients) {
  check_tokens(tokens);
  embed_forward(parameters, tokens, stream_.data());
  for (int l = 0; l < config_.layers; ++l)
    layer_forward(l, parameters, stream_.data());
  if (gradients == nullptr)
    return head_loss_and_gradients(parameters, tokens, stream_.data(), nullptr, nullptr);
  std::fill(gradients, gradients + layout_.total, 0.0f);
  const float loss = head_loss_and_gradients(parameters, tokens, stream_.data(),
                                             stream_gradient_.data(), gradients);
  for (int l = config_.layers - 1; l >= 0; --l)
    layer_backward(l, parameters, stream_gradient_.data(), gradients);
  embed_backward(tokens, stream_gradient_.data(), gradients);
  return loss;
}

void CpuTransformerBlock::check_tokens(const int* tokens) const {
  const size_t n = count(config_.micro_batch, config_.sequence + 1);
  for (size_t e = 0; e < n; ++e)
    if (tokens[e] < 0 || tokens[e] >= vocabulary_)
      throw std::invalid_argument("CpuTransformerBlock: token " + std::to_string(tokens[e]) +
                                  " outside [0, vocabulary)");
}

// ------------------------------------------------------------------ embedding

void CpuTransformerBlock::embed_forward(const float* parameters, const int* tokens, float* hidden,
                                        TensorReduce* reduce) const {
  const size_t h = static_cast<size_t>(hidden_);
  const int s = config_.sequence;
  const VocabularyRows rows = embedding_rows(reduce);
  for (int t = 0; t < tokens_; ++t) {
    const int row = t / s;
    const int token = tokens[row * (s + 1) + t % s];
    float* out = hidden + static_cast<size_t>(t) * h;
    if (token < rows.first || token >= rows.end) {
      std::fill(out, out + h, 0.0f);
      continue;
    }
    const float* token_row =
        parameters + layout_.token_embedding.offset + static_cast<size_t>(token) * h;
    std::copy(token_row, token_row + h, out);
  }
  // Megatron's vocabulary-parallel embedding: a token's row lives on one rank, the others add
  // zeros, so the sum is that row on every rank, bit for bit.
  if (reduce != nullptr) reduce->sum(hidden, count(tokens_, hidden_));
  for (int t = 0; t < tokens_; ++t) {
    const float* position_row =
        parameters + layout_.position_embedding.offset + static_cast<size_t>(t % s) * h;
    float* out = hidden + static_cast<size_t>(t) * h;
    for (size_t c = 0; c < h; ++c)
      out[c] += position_row[c];
  }
}

void CpuTransformerBlock::embed_backward(const int* tokens, const float* hidden_gradient,
                                         float* gradients, const TensorReduce* reduce) const {
  const size_t h = static_cast<size_t>(hidden_);
  const int s = config_.sequence;
  const VocabularyRows rows = embedding_rows(reduce);
  for (int t = 0; t < tokens_; ++t) {
    const int row = t / s, position = t % s;
    const int token = tokens[row * (s + 1) + position];
    float* position_row =
        gradients + layout_.position_embedding.offset + static_cast<size_t>(position) * h;
    const float* d = hidden_gradient + static_cast<size_t>(t) * h;
    for (size_t c = 0; c < h; ++c)
      position_row[c] += d[c];
    if (token < rows.first || token >= rows.end) continue;
    float* token_row = gradients + layout_.token_embedding.offset + static_cast<size_t>(token) * h;
    for (size_t c = 0; c < h; ++c)
      token_row[c] += d[c];
  }
}

CpuTransformerBlock::VocabularyRows CpuTransformerBlock::embedding_rows(
    const TensorReduce* reduce) const {
  if (reduce == nullptr) return {0, vocabulary_};
  const int share = vocabulary_ / config_.tensor;
  return {reduce->rank() * share, (reduce->rank() + 1) * share};
}

// ------------------------------------------------------------------ norms

void CpuTransformerBlock::norm_forward(const float* input, const ParameterSlot& gain,
                                       const ParameterSlot& bias, const float* parameters,
                                       NormActivations& saved) const {
  const bool layer_norm = config_.norm == BlockNorm::LayerNorm;
  kernels::norm_forward(layer_norm, static_cast<size_t>(tokens_), static_cast<size_t>(hidden_),
                        static_cast<float>(config_.norm_epsilon), input, parameters + gain.offset,
                        layer_norm ? parameters + bias.offset : nullptr, saved.normalized.data(),
                        saved.inverse_std.data(), saved.output.data());
}

void CpuTransformerBlock::norm_backward(const NormActivations& saved, const ParameterSlot& gain,
                                        const ParameterSlot& bias, const float* parameters,
                                        const float* output_gradient, float* input_gradient,
                                        float* gradients) const {
  const bool layer_norm = config_.norm == BlockNorm::LayerNorm;
  kernels::norm_backward(layer_norm, static_cast<size_t>(tokens_), static_cast<size_t>(hidden_),
                         saved.normalized.data(), saved.inverse_std.data(),
                         parameters + gain.offset, output_gradient, input_gradient,
                         gradients + gain.offset, layer_norm ? gradients + bias.offset : nullptr);
}

// ------------------------------------------------------------------ layers

void CpuTransformerBlock::layer_forward(int layer, const float* parameters, float* hidden) {
  const size_t n = count(tokens_, hidden_);
  attention_forward(layer, parameters, hidden, sublayer_.data());
  kernels::add_into(hidden, sublayer_.data(), n);
  feed_forward_forward(layer, parameters, hidden, sublayer_.data());
  kernels::add_into(hidden, sublayer_.data(), n);
}

void CpuTransformerBlock::layer_backward(int layer, const float* parameters, float* hidden_gradient,
                                         float* gradients) {
  const size_t n = count(tokens_, hidden_);
  feed_forward_backward(layer, parameters, hidden_gradient, sublayer_gradient_.data(), gradients);
  kernels::add_into(hidden_gradient, sublayer_gradient_.data(), n);
  attention_backward(layer, parameters, hidden_gradient, sublayer_gradient_.data(), gradients);
  kernels::add_into(hidden_gradient, sublayer_gradient_.data(), n);
}

// ------------------------------------------------------------------ attention

void CpuTransformerBlock::attention_forward(int layer, const float* parameters, const float* input,
                                            float* output) {
  const LayerSlots& slots = layout_.layers.at(static_cast<size_t>(layer));
  LayerActivations& a = layers_[static_cast<size_t>(layer)];
  norm_forward(input, slots.norm1_gain, slots.norm1_bias, parameters, a.norm1);
  const float* normed = a.norm1.output.data();
  linear(tokens_, hidden_, q_width_, normed, parameters + slots.wq.offset, a.q.data());
  linear(tokens_, hidden_, kv_width_, normed, parameters + slots.wk.offset, a.k.data());
  linear(tokens_, hidden_, kv_width_, normed, parameters + slots.wv.offset, a.v.data());

  const int s = config_.sequence, d = head_dim_, group = heads_ / kv_heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const size_t s_size = static_cast<size_t>(s);
  for (int row = 0; row < config_.micro_batch; ++row)
    for (int head = 0; head < heads_; ++head) {
      const int kv_head = head / group;
      const size_t first = static_cast<size_t>(row) * s_size;  // first token of the row
      const float* q = a.q.data() + first * static_cast<size_t>(q_width_) + count(head, d);
      const float* k = a.k.data() + first * static_cast<size_t>(kv_width_) + count(kv_head, d);
      const float* v = a.v.data() + first * static_cast<size_t>(kv_width_) + count(kv_head, d);
      float* p = a.probabilities.data() + count(row * heads_ + head, s) * s_size;
      gemm(false, true, s, s, d, scale, q, q_width_, k, kv_width_, 0.0f, p, s);
      kernels::causal_softmax_forward(p, s_size);
      float* out = a.attention.data() + first * static_cast<size_t>(q_width_) + count(head, d);
      gemm(false, false, s, d, s, 1.0f, p, s, v, kv_width_, 0.0f, out, q_width_);
    }
  linear(tokens_, q_width_, hidden_, a.attention.data(), parameters + slots.wo.offset, output);
}

void CpuTransformerBlock::attention_backward(int layer, const float* parameters,
                                             const float* output_gradient, float* input_gradient,
                                             float* gradients, TensorReduce* reduce) {
  const LayerSlots& slots = layout_.layers.at(static_cast<size_t>(layer));
  const LayerActivations& a = layers_[static_cast<size_t>(layer)];
  linear_weight_gradient(tokens_, q_width_, hidden_, a.attention.data(), output_gradient,
                         gradients + slots.wo.offset);
  linear_input_gradient(tokens_, q_width_, hidden_, output_gradient, parameters + slots.wo.offset,
                        attention_gradient_.data(), 0.0f);

  const int s = config_.sequence, d = head_dim_, group = heads_ / kv_heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const size_t s_size = static_cast<size_t>(s);
  std::fill(k_gradient_.begin(), k_gradient_.end(), 0.0f);
  std::fill(v_gradient_.begin(), v_gradient_.end(), 0.0f);
  float* dscores = score_gradient_.data();
  for (int row = 0; row < config_.micro_batch; ++row)
    for (int head = 0; head < heads_; ++head) {
      const int kv_head = head / group;
      const size_t first = static_cast<size_t>(row) * s_size;
      const size_t q_at = first * static_cast<size_t>(q_width_) + count(head, d);
      const size_t kv_at = first * static_cast<size_t>(kv_width_) + count(kv_head, d);
      const float* p = a.probabilities.data() + count(row * heads_ + head, s) * s_size;
      const float* dout = attention_gradient_.data() + q_at;
      // dP = dOut V^T; dV += P^T dOut.
      gemm(false, true, s, s, d, 1.0f, dout, q_width_, a.v.data() + kv_at, kv_width_, 0.0f, dscores,
           s);
      gemm(true, false, s, d, s, 1.0f, p, s, dout, q_width_, 1.0f, v_gradient_.data() + kv_at,
           kv_width_);
      // dScores = P * (dP - sum_l P dP), zero above the diagonal because P is.
      kernels::softmax_backward(p, dscores, dscores, s_size);
      // dQ = scale dScores K; dK += scale dScores^T Q.
      gemm(false, false, s, d, s, scale, dscores, s, a.k.data() + kv_at, kv_width_, 0.0f,
           q_gradient_.data() + q_at, q_width_);
      gemm(true, false, s, d, s, scale, dscores, s, a.q.data() + q_at, q_width_, 1.0f,
           k_gradient_.data() + kv_at, kv_width_);
    }

  const float* normed = a.norm1.output.data();
  linear_weight_gradient(tokens_, hidden_, q_width_, normed, q_gradient_.data(),
                         gradients + slots.wq.offset);
  linear_weight_gradient(tokens_, hidden_, kv_width_, normed, k_gradient_.data(),
                         gradients + slots.wk.offset);
  linear_weight_gradient(tokens_, hidden_, kv_width_, normed, v_gradient_.data(),
                         gradients + slots.wv.offset);
  float* dnormed = norm_gradient_.data();
  linear_input_gradient(tokens_, hidden_, q_width_, q_gradient_.data(),
                        parameters + slots.wq.offset, dnormed, 0.0f);
  linear_input_gradient(tokens_, hidden_, kv_width_, k_gradient_.data(),
                        parameters + slots.wk.offset, dnormed, 1.0f);
  linear_input_gradient(tokens_, hidden_, kv_width_, v_gradient_.data(),
                        parameters + slots.wv.offset, dnormed, 1.0f);
  if (reduce != nullptr) reduce->sum(dnormed, count(tokens_, hidden_));  // Megatron's f
  norm_backward(a.norm1, slots.norm1_gain, slots.norm1_bias, parameters, dnormed, input_gradient,
                gradients);
}

// ------------------------------------------------------------------ feed-forward

void CpuTransformerBlock::feed_forward_forward(int layer, const float* parameters,
                                               const float* input, float* output) {
  const LayerSlots& slots = layout_.layers.at(static_cast<size_t>(layer));
  LayerActivations& a = layers_[static_cast<size_t>(layer)];
  norm_forward(input, slots.norm2_gain, slots.norm2_bias, parameters, a.norm2);
  const float* normed = a.norm2.output.data();
  const size_t n = count(tokens_, ffn_);
  linear(tokens_, hidden_, ffn_, normed, parameters + slots.w_up.offset, a.up.data());
  if (config_.feed_forward == BlockFeedForward::SwiGlu) {
    linear(tokens_, hidden_, ffn_, normed, parameters + slots.w_gate.offset, a.gate.data());
    kernels::swiglu_forward(a.gate.data(), a.up.data(), a.activation.data(), n);
  } else {
    kernels::gelu_forward(a.up.data(), a.activation.data(), n);
  }
  linear(tokens_, ffn_, hidden_, a.activation.data(), parameters + slots.w2.offset, output);
}

void CpuTransformerBlock::feed_forward_backward(int layer, const float* parameters,
                                                const float* output_gradient, float* input_gradient,
                                                float* gradients, TensorReduce* reduce) {
  const LayerSlots& slots = layout_.layers.at(static_cast<size_t>(layer));
  const LayerActivations& a = layers_[static_cast<size_t>(layer)];
  const size_t n = count(tokens_, ffn_);
  linear_weight_gradient(tokens_, ffn_, hidden_, a.activation.data(), output_gradient,
                         gradients + slots.w2.offset);
  float* dactivation = activation_gradient_.data();
  linear_input_gradient(tokens_, ffn_, hidden_, output_gradient, parameters + slots.w2.offset,
                        dactivation, 0.0f);
  const float* normed = a.norm2.output.data();
  float* dnormed = norm_gradient_.data();
  float* dup = up_gradient_.data();
  if (config_.feed_forward == BlockFeedForward::SwiGlu) {
    float* dgate = gate_gradient_.data();
    kernels::swiglu_backward(a.gate.data(), a.up.data(), dactivation, dgate, dup, n);
    linear_weight_gradient(tokens_, hidden_, ffn_, normed, dgate, gradients + slots.w_gate.offset);
    linear_input_gradient(tokens_, hidden_, ffn_, dgate, parameters + slots.w_gate.offset, dnormed,
                          0.0f);
  } else {
    kernels::gelu_backward(a.up.data(), dactivation, dup, n);
  }
  linear_weight_gradient(tokens_, hidden_, ffn_, normed, dup, gradients + slots.w_up.offset);
  linear_input_gradient(tokens_, hidden_, ffn_, dup, parameters + slots.w_up.offset, dnormed,
                        config_.feed_forward == BlockFeedForward::SwiGlu ? 1.0f : 0.0f);
  if (reduce != nullptr) reduce->sum(dnormed, count(tokens_, hidden_));  // Megatron's f
  norm_backward(a.norm2, slots.norm2_gain, slots.norm2_bias, parameters, dnormed, input_gradient,
                gradients);
}

// ------------------------------------------------------------------ head and loss

float CpuTransformerBlock::head_forward(const float* parameters, const int* tokens,
                                        const float* hidden, float* gradients,
                                        TensorReduce* reduce) {
  norm_forward(hidden, layout_.final_gain, layout_.final_bias, parameters, final_norm_);
  linear(tokens_, hidden_, local_vocabulary_, final_norm_.output.data(),
         parameters + layout_.head.offset, logits_.data());
  // Megatron's vocabulary-parallel cross-entropy: this rank holds columns [first, first + v).
  const size_t v = static_cast<size_t>(local_vocabulary_);
  const size_t n = static_cast<size_t>(tokens_);
  const int first = (reduce != nullptr ? reduce->rank() : 0) * local_vocabulary_;
  const int s = config_.sequence;
  auto local_target = [&](size_t t) {  // the target's column here, or -1 if another rank's
    const int row = static_cast<int>(t) / s, position = static_cast<int>(t) % s;
    const int target = tokens[row * (s + 1) + position + 1] - first;
    return target >= 0 && target < local_vocabulary_ ? target : -1;
  };
  // The largest logit of each token, over the group.
  for (size_t t = 0; t < n; ++t) {
    const float* logits = logits_.data() + t * v;
    token_max_[t] = *std::max_element(logits, logits + v);
  }
  if (reduce != nullptr) reduce->max(token_max_.data(), n);
  // The sum of exp(logit - max) and the target's logit (0 where another rank holds it), over
  // the group in one call.
  float* totals = token_sums_.data();
  float* target_logits = token_sums_.data() + n;
  for (size_t t = 0; t < n; ++t) {
    float* logits = logits_.data() + t * v;
    const float largest = token_max_[t];
    const int target = local_target(t);
    target_logits[t] = target >= 0 ? logits[target] : 0.0f;
    float total = 0.0f;
    for (size_t c = 0; c < v; ++c) {
      logits[c] = std::exp(logits[c] - largest);  // now unnormalised probabilities
      total += logits[c];
    }
    totals[t] = total;
  }
  if (reduce != nullptr) reduce->sum(token_sums_.data(), 2 * n);
  // loss = log(total) - (target - max), the same on every rank; d(loss)/d(logits) = (softmax -
  // onehot) / T on this rank's columns.
  const float inverse_tokens = 1.0f / static_cast<float>(tokens_);
  double loss = 0.0;
  for (size_t t = 0; t < n; ++t) {
    loss += static_cast<double>(std::log(totals[t]) - (target_logits[t] - token_max_[t]));
    float* logits = logits_.data() + t * v;
    const float scale = inverse_tokens / totals[t];
    for (size_t c = 0; c < v; ++c)
      logits[c] *= scale;
    const int target = local_target(t);
    if (target >= 0) logits[target] -= inverse_tokens;
  }
  if (gradients != nullptr) {
    linear_weight_gradient(tokens_, hidden_, local_vocabulary_, final_norm_.output.data(),
                           logits_.data(), gradients + layout_.head.offset);
    // This rank's part of d(loss)/d(final norm output); head_backward sums it over the group.
    linear_input_gradient(tokens_, hidden_, local_vocabulary_, logits_.data(),
                          parameters + layout_.head.offset, head_gradient_.data(), 0.0f);
  }
  return static_cast<float>(loss / tokens_);
}

void CpuTransformerBlock::head_backward(const float* parameters, float* hidden_gradient,
                                        float* gradients, TensorReduce* reduce) {
  // Summed over the group (Megatron's f before a column-parallel layer), so the final norm's
  // backward is the same on every rank.
  if (reduce != nullptr) reduce->sum(head_gradient_.data(), count(tokens_, hidden_));
  norm_backward(final_norm_, layout_.final_gain, layout_.final_bias, parameters,
                head_gradient_.data(), hidden_gradient, gradients);
}

float CpuTransformerBlock::head_loss_and_gradients(const float* parameters, const int* tokens,
                                                   const float* hidden, float* hidden_gradient,
                                                   float* gradients, TensorReduce* reduce) {
  const float loss = head_forward(parameters, tokens, hidden,
                                  hidden_gradient != nullptr ? gradients : nullptr, reduce);
  if (hidden_gradient != nullptr) head_backward(parameters, hidden_gradient, gradients, reduce);
  return loss;
}

// ------------------------------------------------------------------ Adam

void adam_step(const AdamSettings& settings, AdamState& state, float* parameters,
               const float* gradients, size_t count) {
  if (state.first_moment.size() != count) {
    state.first_moment.assign(count, 0.0f);
    state.second_moment.assign(count, 0.0f);
    state.steps = 0;
  }
  ++state.steps;
  const double steps = static_cast<double>(state.steps);
  const float first_correction =
      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(settings.beta1), steps)));
  const float second_correction =
      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(settings.beta2), steps)));
  const float b1 = settings.beta1, b2 = settings.beta2, rate = settings.learning_rate;
  float* m = state.first_moment.data();
  float* v = state.second_moment.data();
  for (size_t e = 0; e < count; ++e) {
    m[e] = b1 * m[e] + (1.0f - b1) * gradients[e];
    v[e] = b2 * v[e] + (1.0f - b2) * gradients[e] * gradients[e];
    parameters[e] -=
        rate * (m[e] * first_correction) / (std::sqrt(v[e] * second_correction) + settings.epsilon);
  }
}

}  // namespace tauplan::exec
