// transformer_block.cpp: the fp32 CPU decoder stack (transformer_block.hpp). One function per
// sublayer; every matrix product through cpu_blas.hpp, the element-wise passes as plain loops.
#include "exec/transformer_block.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

void add_into(float* target, const float* source, size_t n) {
  for (size_t e = 0; e < n; ++e)
    target[e] += source[e];
}

const float kGeluScale = 0.7978845608f;  // sqrt(2 / pi)
const float kGeluCubic = 0.044715f;

float sigmoid(float g) {
  return 1.0f / (1.0f + std::exp(-g));
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
  for (std::vector<float>* w :
       {&stream_, &stream_gradient_, &sublayer_, &sublayer_gradient_, &norm_gradient_})
    w->assign(stream, 0.0f);
  q_gradient_.assign(count(tokens_, q_width_), 0.0f);
  attention_gradient_.assign(count(tokens_, q_width_), 0.0f);
  k_gradient_.assign(count(tokens_, kv_width_), 0.0f);
  v_gradient_.assign(count(tokens_, kv_width_), 0.0f);
  score_gradient_.assign(count(config.sequence, config.sequence), 0.0f);
  for (std::vector<float>* w : {&gate_gradient_, &up_gradient_, &activation_gradient_})
    w->assign(count(tokens_, ffn_), 0.0f);
  logits_.assign(count(tokens_, vocabulary_), 0.0f);
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

void CpuTransformerBlock::embed_forward(const float* parameters, const int* tokens,
                                        float* hidden) const {
  const size_t h = static_cast<size_t>(hidden_);
  const int s = config_.sequence;
  for (int t = 0; t < tokens_; ++t) {
    const int row = t / s, position = t % s;
    const size_t token = static_cast<size_t>(tokens[row * (s + 1) + position]);
    const float* token_row = parameters + layout_.token_embedding.offset + token * h;
    const float* position_row =
        parameters + layout_.position_embedding.offset + static_cast<size_t>(position) * h;
    float* out = hidden + static_cast<size_t>(t) * h;
    for (size_t c = 0; c < h; ++c)
      out[c] = token_row[c] + position_row[c];
  }
}

void CpuTransformerBlock::embed_backward(const int* tokens, const float* hidden_gradient,
                                         float* gradients) const {
  const size_t h = static_cast<size_t>(hidden_);
  const int s = config_.sequence;
  for (int t = 0; t < tokens_; ++t) {
    const int row = t / s, position = t % s;
    const size_t token = static_cast<size_t>(tokens[row * (s + 1) + position]);
    float* token_row = gradients + layout_.token_embedding.offset + token * h;
    float* position_row =
        gradients + layout_.position_embedding.offset + static_cast<size_t>(position) * h;
    const float* d = hidden_gradient + static_cast<size_t>(t) * h;
    for (size_t c = 0; c < h; ++c) {
      token_row[c] += d[c];
      position_row[c] += d[c];
    }
  }
}

// ------------------------------------------------------------------ norms

void CpuTransformerBlock::norm_forward(const float* input, const ParameterSlot& gain,
                                       const ParameterSlot& bias, const float* parameters,
                                       NormActivations& saved) const {
  const size_t h = static_cast<size_t>(hidden_);
  const bool layer_norm = config_.norm == BlockNorm::LayerNorm;
  const float epsilon = static_cast<float>(config_.norm_epsilon);
  const float inverse_width = 1.0f / static_cast<float>(hidden_);
  const float* g = parameters + gain.offset;
  const float* b = layer_norm ? parameters + bias.offset : nullptr;
  for (size_t r = 0; r < static_cast<size_t>(tokens_); ++r) {
    const float* x = input + r * h;
    float* normalized = saved.normalized.data() + r * h;
    float* y = saved.output.data() + r * h;
    float mean = 0.0f;
    if (layer_norm) {
      for (size_t c = 0; c < h; ++c)
        mean += x[c];
      mean *= inverse_width;
    }
    float second_moment = 0.0f;
    for (size_t c = 0; c < h; ++c)
      second_moment += (x[c] - mean) * (x[c] - mean);
    const float inverse_std = 1.0f / std::sqrt(second_moment * inverse_width + epsilon);
    saved.inverse_std[r] = inverse_std;
    for (size_t c = 0; c < h; ++c)
      normalized[c] = (x[c] - mean) * inverse_std;
    if (b != nullptr) {
      for (size_t c = 0; c < h; ++c)
        y[c] = normalized[c] * g[c] + b[c];
    } else {
      for (size_t c = 0; c < h; ++c)
        y[c] = normalized[c] * g[c];
    }
  }
}

void CpuTransformerBlock::norm_backward(const NormActivations& saved, const ParameterSlot& gain,
                                        const ParameterSlot& bias, const float* parameters,
                                        const float* output_gradient, float* input_gradient,
                                        float* gradients) const {
  const size_t h = static_cast<size_t>(hidden_);
  const bool layer_norm = config_.norm == BlockNorm::LayerNorm;
  const float inverse_width = 1.0f / static_cast<float>(hidden_);
  const float* g = parameters + gain.offset;
  float* dgain = gradients + gain.offset;
  float* dbias = layer_norm ? gradients + bias.offset : nullptr;
  for (size_t r = 0; r < static_cast<size_t>(tokens_); ++r) {
    const float* dy = output_gradient + r * h;
    const float* normalized = saved.normalized.data() + r * h;
    float* dx = input_gradient + r * h;
    float mean_dnormalized = 0.0f, mean_dnormalized_normalized = 0.0f;
    for (size_t c = 0; c < h; ++c) {
      const float dnormalized = dy[c] * g[c];
      mean_dnormalized += dnormalized;
      mean_dnormalized_normalized += dnormalized * normalized[c];
      dgain[c] += dy[c] * normalized[c];
    }
    if (dbias != nullptr) add_into(dbias, dy, h);
    mean_dnormalized = layer_norm ? mean_dnormalized * inverse_width : 0.0f;
    mean_dnormalized_normalized *= inverse_width;
    const float inverse_std = saved.inverse_std[r];
    for (size_t c = 0; c < h; ++c)
      dx[c] = inverse_std *
              (dy[c] * g[c] - mean_dnormalized - normalized[c] * mean_dnormalized_normalized);
  }
}

// ------------------------------------------------------------------ layers

void CpuTransformerBlock::layer_forward(int layer, const float* parameters, float* hidden) {
  const size_t n = count(tokens_, hidden_);
  attention_forward(layer, parameters, hidden, sublayer_.data());
  add_into(hidden, sublayer_.data(), n);
  feed_forward_forward(layer, parameters, hidden, sublayer_.data());
  add_into(hidden, sublayer_.data(), n);
}

void CpuTransformerBlock::layer_backward(int layer, const float* parameters, float* hidden_gradient,
                                         float* gradients) {
  const size_t n = count(tokens_, hidden_);
  feed_forward_backward(layer, parameters, hidden_gradient, sublayer_gradient_.data(), gradients);
  add_into(hidden_gradient, sublayer_gradient_.data(), n);
  attention_backward(layer, parameters, hidden_gradient, sublayer_gradient_.data(), gradients);
  add_into(hidden_gradient, sublayer_gradient_.data(), n);
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
      for (size_t i = 0; i < s_size; ++i) {  // causal softmax of row i over keys 0..i
        float* scores = p + i * s_size;
        const float largest = *std::max_element(scores, scores + i + 1);
        float total = 0.0f;
        for (size_t l = 0; l <= i; ++l) {
          scores[l] = std::exp(scores[l] - largest);
          total += scores[l];
        }
        const float inverse_total = 1.0f / total;
        for (size_t l = 0; l <= i; ++l)
          scores[l] *= inverse_total;
        std::fill(scores + i + 1, scores + s_size, 0.0f);
      }
      float* out = a.attention.data() + first * static_cast<size_t>(q_width_) + count(head, d);
      gemm(false, false, s, d, s, 1.0f, p, s, v, kv_width_, 0.0f, out, q_width_);
    }
  linear(tokens_, q_width_, hidden_, a.attention.data(), parameters + slots.wo.offset, output);
}

void CpuTransformerBlock::attention_backward(int layer, const float* parameters,
                                             const float* output_gradient, float* input_gradient,
                                             float* gradients) {
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
      for (size_t i = 0; i < s_size; ++i) {
        const float* p_row = p + i * s_size;
        float* d_row = dscores + i * s_size;
        float weighted = 0.0f;
        for (size_t l = 0; l < s_size; ++l)
          weighted += p_row[l] * d_row[l];
        for (size_t l = 0; l < s_size; ++l)
          d_row[l] = p_row[l] * (d_row[l] - weighted);
      }
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
    for (size_t e = 0; e < n; ++e)
      a.activation[e] = a.gate[e] * sigmoid(a.gate[e]) * a.up[e];
  } else {
    for (size_t e = 0; e < n; ++e) {
      const float u = a.up[e];
      a.activation[e] = 0.5f * u * (1.0f + std::tanh(kGeluScale * (u + kGeluCubic * u * u * u)));
    }
  }
  linear(tokens_, ffn_, hidden_, a.activation.data(), parameters + slots.w2.offset, output);
}

void CpuTransformerBlock::feed_forward_backward(int layer, const float* parameters,
                                                const float* output_gradient, float* input_gradient,
                                                float* gradients) {
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
    for (size_t e = 0; e < n; ++e) {
      const float g = a.gate[e], s = sigmoid(g);
      dup[e] = dactivation[e] * g * s;
      dgate[e] = dactivation[e] * a.up[e] * s * (1.0f + g * (1.0f - s));
    }
    linear_weight_gradient(tokens_, hidden_, ffn_, normed, dgate, gradients + slots.w_gate.offset);
    linear_input_gradient(tokens_, hidden_, ffn_, dgate, parameters + slots.w_gate.offset, dnormed,
                          0.0f);
  } else {
    for (size_t e = 0; e < n; ++e) {
      const float u = a.up[e];
      const float t = std::tanh(kGeluScale * (u + kGeluCubic * u * u * u));
      dup[e] = dactivation[e] * (0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * kGeluScale *
                                                         (1.0f + 3.0f * kGeluCubic * u * u));
    }
  }
  linear_weight_gradient(tokens_, hidden_, ffn_, normed, dup, gradients + slots.w_up.offset);
  linear_input_gradient(tokens_, hidden_, ffn_, dup, parameters + slots.w_up.offset, dnormed,
                        config_.feed_forward == BlockFeedForward::SwiGlu ? 1.0f : 0.0f);
  norm_backward(a.norm2, slots.norm2_gain, slots.norm2_bias, parameters, dnormed, input_gradient,
                gradients);
}

// ------------------------------------------------------------------ head and loss

float CpuTransformerBlock::head_loss_and_gradients(const float* parameters, const int* tokens,
                                                   const float* hidden, float* hidden_gradient,
                                                   float* gradients) {
  norm_forward(hidden, layout_.final_gain, layout_.final_bias, parameters, final_norm_);
  linear(tokens_, hidden_, vocabulary_, final_norm_.output.data(), parameters + layout_.head.offset,
         logits_.data());
  const size_t v = static_cast<size_t>(vocabulary_);
  const int s = config_.sequence;
  const float inverse_tokens = 1.0f / static_cast<float>(tokens_);
  double loss = 0.0;
  for (int t = 0; t < tokens_; ++t) {
    const int row = t / s, position = t % s;
    const size_t target = static_cast<size_t>(tokens[row * (s + 1) + position + 1]);
    float* logits = logits_.data() + static_cast<size_t>(t) * v;
    const float largest = *std::max_element(logits, logits + v);
    const float target_logit = logits[target] - largest;
    float total = 0.0f;
    for (size_t c = 0; c < v; ++c) {
      logits[c] = std::exp(logits[c] - largest);  // now unnormalised probabilities
      total += logits[c];
    }
    loss += static_cast<double>(std::log(total) - target_logit);
    const float scale = inverse_tokens / total;  // d(loss)/d(logits) = (softmax - onehot) / T
    for (size_t c = 0; c < v; ++c)
      logits[c] *= scale;
    logits[target] -= inverse_tokens;
  }
  if (hidden_gradient != nullptr) {
    linear_weight_gradient(tokens_, hidden_, vocabulary_, final_norm_.output.data(), logits_.data(),
                           gradients + layout_.head.offset);
    linear_input_gradient(tokens_, hidden_, vocabulary_, logits_.data(),
                          parameters + layout_.head.offset, norm_gradient_.data(), 0.0f);
    norm_backward(final_norm_, layout_.final_gain, layout_.final_bias, parameters,
                  norm_gradient_.data(), hidden_gradient, gradients);
  }
  return static_cast<float>(loss / tokens_);
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
