// transformer_reference.cpp: the double-precision decoder stack and its hand-written backward
// pass (transformer_reference.hpp). Plain loops, standard library only; clarity over speed.
#include "exec/transformer_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace tauplan::exec {
namespace {

// ------------------------------------------------------------------ random numbers

uint64_t splitmix64(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform in (0, 1], never 0, so that its logarithm is finite.
double uniform_open_zero(uint64_t& state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
}

/// One standard normal from two uniforms (Box-Muller, cosine branch).
double standard_normal(uint64_t& state) {
  const double pi = 3.14159265358979323846;
  const double radius = std::sqrt(-2.0 * std::log(uniform_open_zero(state)));
  return radius * std::cos(2.0 * pi * uniform_open_zero(state));
}

void require_valid(const BlockConfig& config) {
  const std::string problem = config.problem();
  if (!problem.empty()) throw std::invalid_argument("transformer block config: " + problem);
}

// ------------------------------------------------------------------ shapes

/// The sizes of one forward pass, as size_t for indexing (heads, widths, ffn and vocabulary are
/// the tensor shard's: the vocabulary is the head's columns).
struct Dims {
  size_t batch, sequence, tokens, hidden, head_dim, heads, kv_heads, q_width, kv_width, ffn,
      vocabulary;
  bool layer_norm, swiglu;
  double epsilon;

  explicit Dims(const BlockConfig& c)
      : batch(static_cast<size_t>(c.micro_batch)),
        sequence(static_cast<size_t>(c.sequence)),
        tokens(static_cast<size_t>(c.tokens())),
        hidden(static_cast<size_t>(c.hidden)),
        head_dim(static_cast<size_t>(c.head_dim())),
        heads(static_cast<size_t>(c.local_heads())),
        kv_heads(static_cast<size_t>(c.local_kv_heads())),
        q_width(static_cast<size_t>(c.local_width())),
        kv_width(static_cast<size_t>(c.local_kv_width())),
        ffn(static_cast<size_t>(c.local_ffn())),
        vocabulary(static_cast<size_t>(c.local_vocabulary())),
        layer_norm(c.norm == BlockNorm::LayerNorm),
        swiglu(c.feed_forward == BlockFeedForward::SwiGlu),
        epsilon(c.norm_epsilon) {}
};

using Vec = std::vector<double>;

// ------------------------------------------------------------------ norms

/// What a norm's backward pass needs: the normalised rows (before gain and bias) and 1/std.
struct NormCache {
  Vec normalized;
  Vec inverse_std;
};

/// y = normalise(x) * gain (+ bias). RMSNorm divides by sqrt(mean(x^2) + eps); LayerNorm
/// subtracts the mean and divides by sqrt(var + eps).
void norm_forward(const Dims& n, const Vec& x, const double* gain, const double* bias,
                  NormCache& cache, Vec& y) {
  const size_t rows = n.tokens, width = n.hidden;
  cache.normalized.assign(rows * width, 0.0);
  cache.inverse_std.assign(rows, 0.0);
  y.assign(rows * width, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const double* row = &x[r * width];
    double mean = 0.0;
    if (n.layer_norm) {
      for (size_t c = 0; c < width; ++c)
        mean += row[c];
      mean /= static_cast<double>(width);
    }
    double second_moment = 0.0;
    for (size_t c = 0; c < width; ++c)
      second_moment += (row[c] - mean) * (row[c] - mean);
    second_moment /= static_cast<double>(width);
    const double inverse_std = 1.0 / std::sqrt(second_moment + n.epsilon);
    cache.inverse_std[r] = inverse_std;
    for (size_t c = 0; c < width; ++c) {
      const double normalized = (row[c] - mean) * inverse_std;
      cache.normalized[r * width + c] = normalized;
      y[r * width + c] = normalized * gain[c] + (bias != nullptr ? bias[c] : 0.0);
    }
  }
}

/// Adds the norm's input gradient to dx and its parameter gradients to dgain (and dbias).
void norm_backward(const Dims& n, const NormCache& cache, const double* gain, const Vec& dy,
                   double* dgain, double* dbias, Vec& dx) {
  const size_t rows = n.tokens, width = n.hidden;
  for (size_t r = 0; r < rows; ++r) {
    double mean_dnormalized = 0.0, mean_dnormalized_normalized = 0.0;
    for (size_t c = 0; c < width; ++c) {
      const size_t e = r * width + c;
      const double dnormalized = dy[e] * gain[c];
      mean_dnormalized += dnormalized;
      mean_dnormalized_normalized += dnormalized * cache.normalized[e];
      dgain[c] += dy[e] * cache.normalized[e];
      if (dbias != nullptr) dbias[c] += dy[e];
    }
    mean_dnormalized /= static_cast<double>(width);
    mean_dnormalized_normalized /= static_cast<double>(width);
    if (!n.layer_norm) mean_dnormalized = 0.0;  // RMSNorm subtracts no mean
    for (size_t c = 0; c < width; ++c) {
      const size_t e = r * width + c;
      dx[e] += cache.inverse_std[r] * (dy[e] * gain[c] - mean_dnormalized -
                                       cache.normalized[e] * mean_dnormalized_normalized);
    }
  }
}

// ------------------------------------------------------------------ linear layers

/// y [rows x out] = x [rows x in] W [in x out].
void linear_forward(const Vec& x, size_t rows, size_t in, const double* w, size_t out, Vec& y) {
  y.assign(rows * out, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < in; ++i) {
      const double xv = x[r * in + i];
      for (size_t o = 0; o < out; ++o)
        y[r * out + o] += xv * w[i * out + o];
    }
}

/// dW += x^T dy and dx += dy W^T.
void linear_backward(const Vec& x, size_t rows, size_t in, const double* w, size_t out,
                     const Vec& dy, double* dw, Vec& dx) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < in; ++i) {
      double dxv = 0.0;
      for (size_t o = 0; o < out; ++o) {
        dw[i * out + o] += x[r * in + i] * dy[r * out + o];
        dxv += dy[r * out + o] * w[i * out + o];
      }
      dx[r * in + i] += dxv;
    }
}

// ------------------------------------------------------------------ activations

const double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
const double kGeluCubic = 0.044715;

/// GELU, tanh approximation: 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))).
double gelu(double u) {
  return 0.5 * u * (1.0 + std::tanh(kGeluScale * (u + kGeluCubic * u * u * u)));
}
double gelu_derivative(double u) {
  const double t = std::tanh(kGeluScale * (u + kGeluCubic * u * u * u));
  return 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * kGeluScale * (1.0 + 3.0 * kGeluCubic * u * u);
}
double sigmoid(double g) {
  return 1.0 / (1.0 + std::exp(-g));
}

// ------------------------------------------------------------------ attention

/// One layer's saved activations.
struct LayerCache {
  NormCache norm1;
  Vec normed1, q, k, v;
  Vec probabilities;  ///< [batch][heads][query i][key l], zero for l > i
  Vec attention;      ///< [tokens x q_width], heads side by side
  NormCache norm2;
  Vec normed2, gate, up, activation;
};

size_t probability_index(const Dims& n, size_t b, size_t head, size_t i, size_t l) {
  return ((b * n.heads + head) * n.sequence + i) * n.sequence + l;
}

/// Causal grouped-query attention over q, k, v of `cache`: fills probabilities and attention.
void attention_forward(const Dims& n, LayerCache& cache) {
  const size_t group = n.heads / n.kv_heads, d = n.head_dim, s = n.sequence;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  cache.probabilities.assign(n.batch * n.heads * s * s, 0.0);
  cache.attention.assign(n.tokens * n.q_width, 0.0);
  Vec scores(s);
  for (size_t b = 0; b < n.batch; ++b)
    for (size_t head = 0; head < n.heads; ++head) {
      const size_t kv_head = head / group;
      for (size_t i = 0; i < s; ++i) {
        const double* q = &cache.q[(b * s + i) * n.q_width + head * d];
        double largest = -std::numeric_limits<double>::infinity();
        for (size_t l = 0; l <= i; ++l) {
          const double* k = &cache.k[(b * s + l) * n.kv_width + kv_head * d];
          double dot = 0.0;
          for (size_t c = 0; c < d; ++c)
            dot += q[c] * k[c];
          scores[l] = dot * scale;
          largest = std::max(largest, scores[l]);
        }
        double total = 0.0;
        for (size_t l = 0; l <= i; ++l)
          total += std::exp(scores[l] - largest);
        double* out = &cache.attention[(b * s + i) * n.q_width + head * d];
        for (size_t l = 0; l <= i; ++l) {
          const double p = std::exp(scores[l] - largest) / total;
          cache.probabilities[probability_index(n, b, head, i, l)] = p;
          const double* v = &cache.v[(b * s + l) * n.kv_width + kv_head * d];
          for (size_t c = 0; c < d; ++c)
            out[c] += p * v[c];
        }
      }
    }
}

/// From d(attention), the gradients of q, k and v (dq, dk, dv sized and zeroed by the caller).
void attention_backward(const Dims& n, const LayerCache& cache, const Vec& dattention, Vec& dq,
                        Vec& dk, Vec& dv) {
  const size_t group = n.heads / n.kv_heads, d = n.head_dim, s = n.sequence;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Vec dprobabilities(s);
  for (size_t b = 0; b < n.batch; ++b)
    for (size_t head = 0; head < n.heads; ++head) {
      const size_t kv_head = head / group;
      for (size_t i = 0; i < s; ++i) {
        const size_t q_at = (b * s + i) * n.q_width + head * d;
        const double* dout = &dattention[q_at];
        double weighted = 0.0;  // sum over l of p * dp
        for (size_t l = 0; l <= i; ++l) {
          const size_t kv_at = (b * s + l) * n.kv_width + kv_head * d;
          const double p = cache.probabilities[probability_index(n, b, head, i, l)];
          double dp = 0.0;
          for (size_t c = 0; c < d; ++c) {
            dp += dout[c] * cache.v[kv_at + c];
            dv[kv_at + c] += p * dout[c];
          }
          dprobabilities[l] = dp;
          weighted += p * dp;
        }
        for (size_t l = 0; l <= i; ++l) {
          const size_t kv_at = (b * s + l) * n.kv_width + kv_head * d;
          const double p = cache.probabilities[probability_index(n, b, head, i, l)];
          const double dscore = p * (dprobabilities[l] - weighted) * scale;
          for (size_t c = 0; c < d; ++c) {
            dq[q_at + c] += dscore * cache.k[kv_at + c];
            dk[kv_at + c] += dscore * cache.q[q_at + c];
          }
        }
      }
    }
}

// ------------------------------------------------------------------ one layer

struct Model {
  const Dims& n;
  const BlockParameters& layout;
  const double* parameters;

  const double* at(const ParameterSlot& slot) const {
    return slot.size() > 0 ? parameters + slot.offset : nullptr;
  }
};

/// x += Attn(Norm1(x)) Wo; x += FFN(Norm2(x)), saving what the backward pass needs.
void layer_forward(const Model& m, const LayerSlots& slots, Vec& x, LayerCache& cache) {
  const Dims& n = m.n;
  norm_forward(n, x, m.at(slots.norm1_gain), m.at(slots.norm1_bias), cache.norm1, cache.normed1);
  linear_forward(cache.normed1, n.tokens, n.hidden, m.at(slots.wq), n.q_width, cache.q);
  linear_forward(cache.normed1, n.tokens, n.hidden, m.at(slots.wk), n.kv_width, cache.k);
  linear_forward(cache.normed1, n.tokens, n.hidden, m.at(slots.wv), n.kv_width, cache.v);
  attention_forward(n, cache);
  Vec sublayer;
  linear_forward(cache.attention, n.tokens, n.q_width, m.at(slots.wo), n.hidden, sublayer);
  for (size_t e = 0; e < x.size(); ++e)
    x[e] += sublayer[e];

  norm_forward(n, x, m.at(slots.norm2_gain), m.at(slots.norm2_bias), cache.norm2, cache.normed2);
  linear_forward(cache.normed2, n.tokens, n.hidden, m.at(slots.w_up), n.ffn, cache.up);
  cache.activation.assign(cache.up.size(), 0.0);
  if (n.swiglu) {
    linear_forward(cache.normed2, n.tokens, n.hidden, m.at(slots.w_gate), n.ffn, cache.gate);
    for (size_t e = 0; e < cache.up.size(); ++e)
      cache.activation[e] = cache.gate[e] * sigmoid(cache.gate[e]) * cache.up[e];
  } else {
    for (size_t e = 0; e < cache.up.size(); ++e)
      cache.activation[e] = gelu(cache.up[e]);
  }
  linear_forward(cache.activation, n.tokens, n.ffn, m.at(slots.w2), n.hidden, sublayer);
  for (size_t e = 0; e < x.size(); ++e)
    x[e] += sublayer[e];
}

/// dx holds the gradient of the layer's output; on return, of its input. Parameter gradients
/// are added to `grad` (the whole flat gradient).
void layer_backward(const Model& m, const LayerSlots& slots, const LayerCache& cache, Vec& dx,
                    double* grad) {
  const Dims& n = m.n;
  auto g = [grad](const ParameterSlot& slot) {
    return slot.size() > 0 ? grad + slot.offset : nullptr;
  };
  // Feed-forward sublayer.
  Vec dactivation(n.tokens * n.ffn, 0.0);
  linear_backward(cache.activation, n.tokens, n.ffn, m.at(slots.w2), n.hidden, dx, g(slots.w2),
                  dactivation);
  Vec dnormed2(n.tokens * n.hidden, 0.0), dup(dactivation.size(), 0.0);
  if (n.swiglu) {
    Vec dgate(dactivation.size(), 0.0);
    for (size_t e = 0; e < dactivation.size(); ++e) {
      const double s = sigmoid(cache.gate[e]);
      dup[e] = dactivation[e] * cache.gate[e] * s;
      dgate[e] = dactivation[e] * cache.up[e] * s * (1.0 + cache.gate[e] * (1.0 - s));
    }
    linear_backward(cache.normed2, n.tokens, n.hidden, m.at(slots.w_gate), n.ffn, dgate,
                    g(slots.w_gate), dnormed2);
  } else {
    for (size_t e = 0; e < dactivation.size(); ++e)
      dup[e] = dactivation[e] * gelu_derivative(cache.up[e]);
  }
  linear_backward(cache.normed2, n.tokens, n.hidden, m.at(slots.w_up), n.ffn, dup, g(slots.w_up),
                  dnormed2);
  norm_backward(n, cache.norm2, m.at(slots.norm2_gain), dnormed2, g(slots.norm2_gain),
                g(slots.norm2_bias), dx);

  // Attention sublayer.
  Vec dattention(n.tokens * n.q_width, 0.0);
  linear_backward(cache.attention, n.tokens, n.q_width, m.at(slots.wo), n.hidden, dx, g(slots.wo),
                  dattention);
  Vec dq(n.tokens * n.q_width, 0.0), dk(n.tokens * n.kv_width, 0.0), dv(dk.size(), 0.0);
  attention_backward(n, cache, dattention, dq, dk, dv);
  Vec dnormed1(n.tokens * n.hidden, 0.0);
  linear_backward(cache.normed1, n.tokens, n.hidden, m.at(slots.wq), n.q_width, dq, g(slots.wq),
                  dnormed1);
  linear_backward(cache.normed1, n.tokens, n.hidden, m.at(slots.wk), n.kv_width, dk, g(slots.wk),
                  dnormed1);
  linear_backward(cache.normed1, n.tokens, n.hidden, m.at(slots.wv), n.kv_width, dv, g(slots.wv),
                  dnormed1);
  norm_backward(n, cache.norm1, m.at(slots.norm1_gain), dnormed1, g(slots.norm1_gain),
                g(slots.norm1_bias), dx);
}

void check_tokens(const BlockConfig& config, const std::vector<int>& tokens) {
  const size_t expected =
      static_cast<size_t>(config.micro_batch) * static_cast<size_t>(config.sequence + 1);
  if (tokens.size() != expected)
    throw std::invalid_argument("reference_loss_and_gradients: expected " +
                                std::to_string(expected) + " tokens, got " +
                                std::to_string(tokens.size()));
  for (int t : tokens)
    if (t < 0 || t >= config.vocabulary)
      throw std::invalid_argument("reference_loss_and_gradients: token " + std::to_string(t) +
                                  " outside [0, vocabulary)");
}

}  // namespace

std::vector<float> init_block_parameters(const BlockConfig& config, uint64_t seed) {
  require_valid(config);
  const BlockParameters layout = block_parameters(config);
  std::vector<float> parameters(layout.total, 0.0f);
  uint64_t state = seed;
  const double matrix_std = 0.02;
  const double output_std = matrix_std / std::sqrt(2.0 * config.layers);
  auto normal = [&](const ParameterSlot& slot, double std_dev) {
    for (size_t e = 0; e < slot.size(); ++e)
      parameters[slot.offset + e] = static_cast<float>(std_dev * standard_normal(state));
  };
  auto ones = [&](const ParameterSlot& slot) {
    std::fill_n(parameters.begin() + static_cast<std::ptrdiff_t>(slot.offset), slot.size(), 1.0f);
  };
  normal(layout.token_embedding, matrix_std);
  normal(layout.position_embedding, matrix_std);
  for (const LayerSlots& l : layout.layers) {
    ones(l.norm1_gain);
    normal(l.wq, matrix_std);
    normal(l.wk, matrix_std);
    normal(l.wv, matrix_std);
    normal(l.wo, output_std);
    ones(l.norm2_gain);
    normal(l.w_gate, matrix_std);  // empty with GELU
    normal(l.w_up, matrix_std);
    normal(l.w2, output_std);
  }
  ones(layout.final_gain);
  normal(layout.head, matrix_std);
  return parameters;  // biases stay 0
}

double reference_loss_and_gradients(const BlockConfig& config,
                                    const std::vector<double>& parameters,
                                    const std::vector<int>& tokens,
                                    std::vector<double>* gradients) {
  require_valid(config);
  const BlockParameters layout = block_parameters(config);
  if (parameters.size() != layout.total)
    throw std::invalid_argument("reference_loss_and_gradients: expected " +
                                std::to_string(layout.total) + " parameters, got " +
                                std::to_string(parameters.size()));
  check_tokens(config, tokens);
  const Dims n(config);
  const Model m{n, layout, parameters.data()};
  const size_t s = n.sequence, h = n.hidden, row_length = n.sequence + 1;

  // Embeddings.
  Vec x(n.tokens * h, 0.0);
  for (size_t t = 0; t < n.tokens; ++t) {
    const size_t b = t / s, i = t % s;
    const size_t token = static_cast<size_t>(tokens[b * row_length + i]);
    const double* token_row = m.at(layout.token_embedding) + token * h;
    const double* position_row = m.at(layout.position_embedding) + i * h;
    for (size_t c = 0; c < h; ++c)
      x[t * h + c] = token_row[c] + position_row[c];
  }
  std::vector<LayerCache> caches(layout.layers.size());
  for (size_t l = 0; l < layout.layers.size(); ++l)
    layer_forward(m, layout.layers[l], x, caches[l]);

  // Final norm, head, cross-entropy; dlogits = (softmax - one-hot) / tokens.
  NormCache final_cache;
  Vec normed, logits;
  norm_forward(n, x, m.at(layout.final_gain), m.at(layout.final_bias), final_cache, normed);
  linear_forward(normed, n.tokens, h, m.at(layout.head), n.vocabulary, logits);
  double loss = 0.0;
  Vec dlogits(logits.size(), 0.0);
  for (size_t t = 0; t < n.tokens; ++t) {
    const size_t b = t / s, i = t % s;
    const size_t target = static_cast<size_t>(tokens[b * row_length + i + 1]);
    const double* row = &logits[t * n.vocabulary];
    const double largest = *std::max_element(row, row + n.vocabulary);
    double total = 0.0;
    for (size_t c = 0; c < n.vocabulary; ++c)
      total += std::exp(row[c] - largest);
    // A shard's columns alone (tensor rank 0's): a target outside them adds no target logit.
    const bool here = target < n.vocabulary;
    loss += largest + std::log(total) - (here ? row[target] : 0.0);
    for (size_t c = 0; c < n.vocabulary; ++c)
      dlogits[t * n.vocabulary + c] =
          (std::exp(row[c] - largest) / total - (c == target ? 1.0 : 0.0)) /
          static_cast<double>(n.tokens);
  }
  loss /= static_cast<double>(n.tokens);
  if (gradients == nullptr) return loss;

  gradients->assign(layout.total, 0.0);
  double* grad = gradients->data();
  Vec dnormed(n.tokens * h, 0.0), dx(n.tokens * h, 0.0);
  linear_backward(normed, n.tokens, h, m.at(layout.head), n.vocabulary, dlogits,
                  grad + layout.head.offset, dnormed);
  norm_backward(n, final_cache, m.at(layout.final_gain), dnormed, grad + layout.final_gain.offset,
                layout.final_bias.size() > 0 ? grad + layout.final_bias.offset : nullptr, dx);
  for (size_t l = layout.layers.size(); l-- > 0;)
    layer_backward(m, layout.layers[l], caches[l], dx, grad);
  for (size_t t = 0; t < n.tokens; ++t) {
    const size_t b = t / s, i = t % s;
    const size_t token = static_cast<size_t>(tokens[b * row_length + i]);
    double* token_row = grad + layout.token_embedding.offset + token * h;
    double* position_row = grad + layout.position_embedding.offset + i * h;
    for (size_t c = 0; c < h; ++c) {
      token_row[c] += dx[t * h + c];
      position_row[c] += dx[t * h + c];
    }
  }
  return loss;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument("relative_error: sizes " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " differ");
  double difference = 0.0, reference = 0.0;
  for (size_t e = 0; e < a.size(); ++e) {
    difference += (a[e] - b[e]) * (a[e] - b[e]);
    reference += b[e] * b[e];
  }
  difference = std::sqrt(difference);
  return reference > 0.0 ? difference / std::sqrt(reference) : difference;
}

}  // namespace tauplan::exec
