// transformer.cpp: parameter, flop and activation counts of a transformer, and its YAML reader.
//
// Mixture-of-experts layers and multi-head latent attention follow transformer.hpp; what each
// count assumes beyond the papers is written beside it (activation bytes of the MoE and MLA
// tensors, how tensor and expert parallelism split them).
#include "model/inputs/transformer.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/workload.hpp"

namespace tauplan::model {

const char* to_string(FeedForward kind) {
  return kind == FeedForward::SwiGlu ? "swiglu" : "gelu";
}

const char* to_string(LayerKind kind) {
  return kind == LayerKind::Moe ? "moe" : "dense";
}

namespace {

/// Parameters of one feed-forward of inner width f: SwiGLU gate and up (h x f) and down (f x h),
/// GELU up and down; with biases, f per column GEMM and h for the down projection.
double ffn_parameters(const Transformer& t, double f) {
  const double h = t.hidden;
  if (t.feed_forward == FeedForward::SwiGlu) return 3 * h * f + (t.linear_bias ? 2 * f + h : 0);
  return 2 * h * f + (t.linear_bias ? f + h : 0);
}

/// Multiply-adds per token of one feed-forward of inner width f.
double ffn_macs(const Transformer& t, double f) {
  return (t.feed_forward == FeedForward::SwiGlu ? 3 : 2) * static_cast<double>(t.hidden) * f;
}

/// Parameters of a norm over `width` values (the gain, and the bias of a LayerNorm).
double norm_over(const Transformer& t, double width) {
  return t.normalization == Normalization::LayerNorm ? 2 * width : width;
}

/// MLA's weights split over tensor ranks by heads: q_b (q_lora_rank x a (nope + rope)), or q_proj
/// (h x a (nope + rope)) without a query bottleneck; kv_b (kv_lora_rank x a (nope + v)); o_proj
/// (a v x h). DeepSeek-V2, arXiv 2405.04434, Sections 2.1.2-2.1.3 (W^UQ, W^QR; W^UK, W^UV;
/// W^O); the shapes of DeepSeek-V3's modeling_deepseek.py on Hugging Face (no biases).
double mla_head_parameters(const Transformer& t) {
  const LatentAttention& m = t.mla;
  const double h = t.hidden, a = t.heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  const double q = (m.q_lora_rank > 0 ? m.q_lora_rank : h) * a * qk;
  return q + static_cast<double>(m.kv_lora_rank) * a * (m.qk_nope_head_dim + m.v_head_dim) +
         a * m.v_head_dim * h;
}

/// MLA's low-rank down-projections and their norms, which every tensor rank holds whole:
/// q_a_proj (h x q_lora_rank) and q_a_layernorm (q_lora_rank) when q_lora_rank > 0 (W^DQ), and
/// kv_a_proj_with_mqa (h x (kv_lora_rank + rope): W^DKV and the shared rotary key W^KR) and
/// kv_a_layernorm (kv_lora_rank).
double mla_replicated_parameters(const Transformer& t) {
  const LatentAttention& m = t.mla;
  const double h = t.hidden;
  const double q = m.q_lora_rank > 0 ? h * m.q_lora_rank + norm_over(t, m.q_lora_rank) : 0;
  return q + h * (m.kv_lora_rank + m.qk_rope_head_dim) + norm_over(t, m.kv_lora_rank);
}

/// Multiply-adds per token of MLA's projections (every weight once).
double mla_macs(const Transformer& t) {
  const LatentAttention& m = t.mla;
  const double h = t.hidden;
  const double q_down = m.q_lora_rank > 0 ? h * m.q_lora_rank : 0;
  return q_down + h * (m.kv_lora_rank + m.qk_rope_head_dim) + mla_head_parameters(t);
}

}  // namespace

LayerKind Transformer::layer_kind(int layer) const {
  return is_moe() && layer >= moe.first_dense_layers ? LayerKind::Moe : LayerKind::Dense;
}

int Transformer::layers_of_kind(LayerKind kind, int first, int count) const {
  const int end = first + std::max(count, 0);
  const int boundary = is_moe() ? std::clamp(moe.first_dense_layers, first, end) : end;
  return kind == LayerKind::Dense ? boundary - first : end - boundary;
}

double Transformer::expert_parameters() const {
  return is_moe() ? ffn_parameters(*this, moe.expert_ffn_hidden) : 0;
}

double Transformer::routed_expert_parameters() const {
  return moe.experts * expert_parameters();
}

double Transformer::active_parameters() const {
  // Each token skips experts - k routed experts of every MoE layer.
  const double skipped = static_cast<double>(moe.experts - moe.experts_per_token) *
                         expert_parameters() * layers_of_kind(LayerKind::Moe, 0, layers);
  return parameters() - skipped;
}

double Transformer::moe_dispatch_values(double tokens) const {
  const double padding = moe.capacity_factor > 0 ? moe.capacity_factor : 1;
  return tokens * moe.experts_per_token * hidden * padding;
}

double Transformer::kv_values_per_token() const {
  if (mla.enabled())
    return static_cast<double>(heads) *
           (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim);
  return 2 * kv_width();
}

double Transformer::kv_width() const {
  return static_cast<double>(kv_heads) * head_dim();
}

double Transformer::attention_parameters() const {
  if (mla.enabled()) return mla_head_parameters(*this) + mla_replicated_parameters(*this);
  const double h = hidden, kv = kv_width();
  // Q and O are h x h; K and V are h x (kv_heads head_dim).
  const double weights = 2 * h * h + 2 * h * kv;
  const double biases = linear_bias ? 2 * h + 2 * kv : qkv_bias ? h + 2 * kv : 0;
  return weights + biases;
}

double Transformer::feed_forward_parameters(LayerKind kind) const {
  if (kind == LayerKind::Dense || !is_moe()) return ffn_parameters(*this, ffn_hidden);
  // The router (h x experts, no bias: Mixtral's `gate`, DeepSeek-V3's MoEGate weight; V3's
  // e_score_correction_bias, 256 values per layer set by its balancing rule, not by gradients,
  // is left out), the routed experts and the shared ones.
  const double router = static_cast<double>(hidden) * moe.experts;
  return router + (moe.experts + moe.shared_experts) * expert_parameters();
}

double Transformer::norm_parameters() const {
  return normalization == Normalization::LayerNorm ? 2.0 * hidden : 1.0 * hidden;
}

double Transformer::layer_parameters(LayerKind kind) const {
  return attention_parameters() + feed_forward_parameters(kind) + 2 * norm_parameters();
}

double Transformer::layer_replicated_parameters(LayerKind kind) const {
  // Megatron: the norms, and the biases of the row-parallel projections (attention output,
  // feed-forward down), are whole on every tensor rank. MLA: its down-projections and their
  // norms (no biases). A MoE layer: the router, and the shared experts' down biases; its routed
  // experts are split over expert ranks, not tensor ranks (layer_parameters_per_rank).
  const double h = hidden;
  const double attention_part =
      mla.enabled() ? mla_replicated_parameters(*this) : (linear_bias ? h : 0.0);
  const double ffn = kind == LayerKind::Moe && is_moe()
                         ? h * moe.experts + (linear_bias ? h * moe.shared_experts : 0.0)
                         : (linear_bias ? h : 0.0);
  return 2 * norm_parameters() + attention_part + ffn;
}

double Transformer::layer_parameters_per_rank(int tensor, LayerKind kind, int expert) const {
  const double h = hidden, t = tensor;
  double attention_part = 0;
  if (mla.enabled()) {
    attention_part = mla_head_parameters(*this) / t;  // split by heads (the rest is replicated)
  } else {
    const double kv_per_rank = tensor > kv_heads ? head_dim() : kv_width() / t;
    // Column-parallel: Q, K, V, with their biases; row-parallel: the attention output (weights
    // split, bias whole).
    const bool column_bias = linear_bias || qkv_bias;  // Q, K and V biases split with their heads
    const double q_o = 2 * h * h / t + (column_bias ? h / t : 0);
    const double k_v = 2 * h * kv_per_rank + (column_bias ? 2 * kv_per_rank : 0);
    attention_part = q_o + k_v;
  }
  // A feed-forward of width f split by Megatron's rules: the first GEMM(s) column-parallel with
  // their biases, the down projection row-parallel (its bias replicated, counted there).
  const double ffn_matrices = feed_forward == FeedForward::SwiGlu ? 3 : 2;
  auto split_ffn = [&](double f) {
    return ffn_matrices * h * f / t + (linear_bias ? (ffn_matrices - 1) * f / t : 0);
  };
  double ffn = 0;
  if (kind == LayerKind::Moe && is_moe()) {
    // Shared experts as one dense feed-forward of shared x f_e; routed experts / e, each whole
    // on its rank (expert tensor parallelism 1), with its biases.
    ffn = split_ffn(static_cast<double>(moe.shared_experts) * moe.expert_ffn_hidden) +
          routed_expert_parameters() / expert;
  } else {
    ffn = split_ffn(ffn_hidden);
  }
  return attention_part + ffn + layer_replicated_parameters(kind);
}

double Transformer::token_embedding_parameters() const {
  return static_cast<double>(vocabulary) * hidden;
}

double Transformer::other_embedding_parameters() const {
  const double positions_table =
      positions == PositionEmbedding::Learned ? static_cast<double>(max_positions) * hidden : 0;
  return positions_table + static_cast<double>(token_types) * hidden;
}

double Transformer::output_parameters() const {
  return tied_embeddings ? 0 : static_cast<double>(vocabulary) * hidden;
}

double Transformer::parameters() const {
  // One final norm: GPT-2's ln_f, Llama's norm, BERT's embedding LayerNorm (the same count).
  const double stack =
      layers_of_kind(LayerKind::Dense, 0, layers) * layer_parameters(LayerKind::Dense) +
      layers_of_kind(LayerKind::Moe, 0, layers) * layer_parameters(LayerKind::Moe);
  return token_embedding_parameters() + other_embedding_parameters() + stack + norm_parameters() +
         output_parameters() + head_parameters;
}

double Transformer::attention_core_forward_flop(double sequences) const {
  const double s = sequence;
  // The scores Q K^T (2 s^2 per head and query/key width) and their product with V (2 s^2 per
  // head and value width): 4 s^2 h when both widths are h / a; MLA's queries and keys are
  // nope + rope wide, its values v_head_dim.
  if (mla.enabled())
    return 2 * sequences * s * s * heads *
           (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim);
  return 4 * sequences * s * s * hidden;
}

double Transformer::layer_forward_flop(double sequences, LayerKind kind) const {
  const double h = hidden, s = sequence;
  const double attention_macs = mla.enabled() ? mla_macs(*this) : 2 * h * h + 2 * h * kv_width();
  // A MoE layer: the router (h x experts) and the feed-forwards of the k routed experts and the
  // shared ones each token passes through; no capacity padding (model flop).
  const double feed_forward_macs =
      kind == LayerKind::Moe && is_moe()
          ? h * moe.experts + (moe.experts_per_token + moe.shared_experts) *
                                  ffn_macs(*this, moe.expert_ffn_hidden)
          : ffn_macs(*this, ffn_hidden);
  return 2 * sequences * s * (attention_macs + feed_forward_macs) +
         attention_core_forward_flop(sequences);
}

double Transformer::logits_forward_flop(double sequences) const {
  return 2 * sequences * sequence * static_cast<double>(hidden) * vocabulary;
}

double Transformer::layer_training_flop(double sequences, Recompute recompute,
                                        LayerKind kind) const {
  const double forward = layer_forward_flop(sequences, kind);
  switch (recompute) {
    case Recompute::None:
      return 3 * forward;
    case Recompute::Selective:
      return 3 * forward + attention_core_forward_flop(sequences);
    case Recompute::Full:
      return 4 * forward;
  }
  return 3 * forward;
}

double Transformer::logits_training_flop(double sequences) const {
  return 3 * logits_forward_flop(sequences);
}

double Transformer::model_flop(double sequences) const {
  const double stack = layers_of_kind(LayerKind::Dense, 0, layers) *
                           layer_training_flop(sequences, Recompute::None, LayerKind::Dense) +
                       layers_of_kind(LayerKind::Moe, 0, layers) *
                           layer_training_flop(sequences, Recompute::None, LayerKind::Moe);
  return stack + logits_training_flop(sequences);
}

double Transformer::layer_activation_bytes(double micro_batch, int tensor, bool sequence_parallel,
                                           Recompute recompute, LayerKind kind) const {
  const double e = element_bytes, t = tensor;
  const double sbh = static_cast<double>(sequence) * micro_batch * hidden;
  const double sb = static_cast<double>(sequence) * micro_batch;
  const double sp_split = sequence_parallel ? t : 1;
  if (recompute == Recompute::Full)  // only the layer's input
    return e * sbh / sp_split;
  // Kept whole on every tensor rank unless sequence parallelism splits them: the inputs of the
  // two norms, of the QKV projection and of the first feed-forward GEMM (e each; in a MoE layer
  // the router's and the shared experts' input), and the two dropout masks after the attention
  // and feed-forward blocks (1 byte each).
  double replicated = (4 * e + 2) * sbh;
  // Split by heads: Q, K, V and the output projection's input. K and V of grouped-query
  // attention are narrower; a rank holds at least one K/V head when t > kv_heads.
  double attention_split = 0;
  if (mla.enabled()) {
    // MLA [assumed, by analogy with Korthikanti's accounting]: Q and K of a (nope + rope) per
    // token (the shared rotary key counted per head, as the attention kernel reads it), V and
    // the output projection's input of a v each, split by heads; and, whole on every rank unless
    // sequence parallelism splits them (each rank projects its own shard down and gathers the
    // latent, as it gathers the norm's output for a column-parallel GEMM), the latents the
    // up-projections and latent norms need: the query latent before and after its norm (2
    // q_lora_rank), the key/value latent before and after its norm (2 kv_lora_rank) and the
    // rotary key (rope).
    const double qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim, v = mla.v_head_dim;
    attention_split = e * sb * heads * (2 * qk + 2 * v) / t;
    replicated += e * sb * (2.0 * mla.q_lora_rank + 2.0 * mla.kv_lora_rank + mla.qk_rope_head_dim);
  } else {
    const double kv_per_rank = tensor > kv_heads ? head_dim() : kv_width() / t;
    attention_split = e * sb * (2.0 * hidden / t + 2 * kv_per_rank);
  }
  // A feed-forward's inner activations per token: GELU its input and output, 2 e f; SwiGLU
  // [assumed]: gate, up, SiLU output and product, 4 e f.
  const double inner_per_width = (feed_forward == FeedForward::SwiGlu ? 4 : 2) * e;
  double ffn = 0;
  if (kind == LayerKind::Moe && is_moe()) {
    // A MoE layer [assumed; Korthikanti's accounting extended term by term]:
    //  - the router's softmax output, fp32 (its backward needs only that), s b E x 4 bytes;
    //  - the permuted expert inputs (the expert GEMMs' input) and the experts' outputs (the
    //    gate's gradient in the weighted unpermute needs them), k' s b h e each, with
    //    k' = k x the capacity factor (the padded buffers) or k when dropless;
    //  - the routed experts' inner activations, k' s b x inner(f_e);
    //  These are never split by tensor parallelism (each expert whole: expert tensor parallel 1);
    //  under sequence parallelism each tensor rank routes its own sequence shard, so they split
    //  by t; without it every tensor rank routes every token. With balanced routing a rank
    //  receives as many token-expert pairs as it sends, so expert parallelism does not change
    //  them.
    //  - the shared experts' inner activations, as a dense feed-forward of shared x f_e split by
    //    tensor parallelism.
    const double padding = moe.capacity_factor > 0 ? moe.capacity_factor : 1;
    const double pairs = sb * moe.experts_per_token * padding;  // k' s b
    replicated += 4 * sb * moe.experts + 2 * e * pairs * hidden +
                  pairs * inner_per_width * moe.expert_ffn_hidden;
    ffn = sb * (inner_per_width * moe.shared_experts * moe.expert_ffn_hidden) / t;
  } else {
    ffn = sb * (inner_per_width * ffn_hidden) / t;
  }
  // What the attention core keeps beyond Q, K, V and its output (the output projection's input,
  // counted in `attention_split`), per layer and rank, heads split over t:
  //  - math path (Korthikanti et al. 2022, arXiv 2205.05198, Section 4.1 and Table 2): the
  //    softmax output (e), its dropout mask (1) and the dropout output (e), (2e + 1) a s^2 b / t
  //    (5 a s^2 b / t at e = 2); none of it with selective recomputation, which recomputes it;
  //  - flash (Dao et al. 2022, arXiv 2205.14135, Section 3.1): no s x s matrix; the forward
  //    saves the softmax statistics for the backward to rebuild the probabilities block by
  //    block; FlashAttention-2 (Dao 2023, arXiv 2307.08691, Section 3.1.1) keeps only their
  //    log-sum-exp, one fp32 value per head and query row: 4 a s b / t bytes.
  //    Selective recomputation runs the attention core's forward again in backward, so its
  //    statistics are not kept either: flash stores what Korthikanti's selective stores.
  const double per_head_row = heads * sb / t;  // a s b / t
  double core = 0;
  if (recompute == Recompute::None)
    core = attention == AttentionKernel::Flash ? 4 * per_head_row
                                               : (2 * e + 1) * per_head_row * sequence;
  const double split = attention_split + ffn;  // Korthikanti's 24 s b h / t at GPT's shape
  return replicated / sp_split + split + core;
}

double Transformer::embedding_activation_bytes(double micro_batch, int tensor,
                                               bool sequence_parallel) const {
  // The embedding dropout's mask (1 byte per value); its output is layer 0's norm input.
  const double sbh = static_cast<double>(sequence) * micro_batch * hidden;
  return sbh / (sequence_parallel ? tensor : 1);
}

double Transformer::output_activation_bytes(double micro_batch, int tensor,
                                            bool sequence_parallel) const {
  // The final norm's input and the output projection's input (e each), and the logits kept for
  // the cross-entropy in fp32 (4 s b V, split over the vocabulary by tensor parallelism;
  // Korthikanti et al. 2022 Section 4.3).
  const double sb = static_cast<double>(sequence) * micro_batch;
  const double norm_and_projection = 2 * element_bytes * sb * hidden;
  return norm_and_projection / (sequence_parallel ? tensor : 1) +
         4 * sb * static_cast<double>(vocabulary) / tensor;
}

double Transformer::activation_bytes_per_sample() const {
  double stack = 0;
  for (LayerKind kind : {LayerKind::Dense, LayerKind::Moe})
    stack += layers_of_kind(kind, 0, layers) *
             layer_activation_bytes(1, 1, false, Recompute::None, kind);
  return stack + embedding_activation_bytes(1, 1, false) + output_activation_bytes(1, 1, false);
}

namespace {

namespace yu = yaml_util;

int whole_positive(const YAML::Node& node, const std::string& origin, const std::string& key,
                   bool allow_zero = false) {
  const double value = yu::positive(node, origin, key, allow_zero);
  if (value != std::floor(value) || value > 2e9)
    throw InputError(origin, key, allow_zero ? "a whole number >= 0" : "a whole number > 0",
                     "'" + node.Scalar() + "'");
  return static_cast<int>(value);
}

bool boolean(const YAML::Node& node, const std::string& origin, const std::string& key) {
  const std::string value = yu::text(node, origin, key);
  if (value == "true") return true;
  if (value == "false") return false;
  throw InputError(origin, key, "true or false", "'" + value + "'");
}

std::string word(const YAML::Node& node, const std::string& origin, const std::string& key,
                 const std::vector<std::string>& choices) {
  const std::string value = yu::text(node, origin, key);
  if (std::find(choices.begin(), choices.end(), value) == choices.end())
    throw InputError(origin, key, fmt::format("one of {}", fmt::join(choices, ", ")),
                     "'" + value + "'");
  return value;
}

MixtureOfExperts parse_moe(const YAML::Node& map, const std::string& origin, int layers) {
  const std::string p = "transformer.moe.";
  if (!map.IsMap())
    throw InputError(origin, "transformer.moe",
                     "a map of the mixture of experts (experts, experts_per_token, "
                     "expert_ffn_hidden, shared_experts, first_dense_layers, capacity_factor)");
  yu::reject_unknown_keys(map, transformer_keys_under("transformer.moe"), origin, p);
  for (const char* key : {"experts", "experts_per_token", "expert_ffn_hidden"})
    if (!map[key]) throw InputError(origin, p + key, "a whole number > 0 (required)");
  MixtureOfExperts m;
  m.experts = whole_positive(map["experts"], origin, p + "experts");
  m.experts_per_token = whole_positive(map["experts_per_token"], origin, p + "experts_per_token");
  if (m.experts_per_token > m.experts)
    throw InputError(origin, p + "experts_per_token",
                     fmt::format("at most the experts ({})", m.experts),
                     std::to_string(m.experts_per_token));
  m.expert_ffn_hidden = whole_positive(map["expert_ffn_hidden"], origin, p + "expert_ffn_hidden");
  if (map["shared_experts"])
    m.shared_experts = whole_positive(map["shared_experts"], origin, p + "shared_experts", true);
  if (map["first_dense_layers"]) {
    m.first_dense_layers =
        whole_positive(map["first_dense_layers"], origin, p + "first_dense_layers", true);
    if (m.first_dense_layers >= layers)
      throw InputError(origin, p + "first_dense_layers",
                       fmt::format("fewer than the layers ({})", layers),
                       std::to_string(m.first_dense_layers));
  }
  // 0: dropless; else the padded share (a factor below 1 drops tokens, as GShard's may).
  if (map["capacity_factor"])
    m.capacity_factor = yu::positive(map["capacity_factor"], origin, p + "capacity_factor", true);
  return m;
}

LatentAttention parse_mla(const YAML::Node& map, const std::string& origin) {
  const std::string p = "transformer.mla.";
  if (!map.IsMap())
    throw InputError(origin, "transformer.mla",
                     "a map of the latent attention (q_lora_rank, kv_lora_rank, "
                     "qk_nope_head_dim, qk_rope_head_dim, v_head_dim)");
  yu::reject_unknown_keys(map, transformer_keys_under("transformer.mla"), origin, p);
  for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "v_head_dim"})
    if (!map[key]) throw InputError(origin, p + key, "a whole number > 0 (required)");
  if (!map["qk_rope_head_dim"])
    throw InputError(origin, p + "qk_rope_head_dim", "a whole number >= 0 (required)");
  LatentAttention m;
  if (map["q_lora_rank"])
    m.q_lora_rank = whole_positive(map["q_lora_rank"], origin, p + "q_lora_rank", true);
  m.kv_lora_rank = whole_positive(map["kv_lora_rank"], origin, p + "kv_lora_rank");
  m.qk_nope_head_dim = whole_positive(map["qk_nope_head_dim"], origin, p + "qk_nope_head_dim");
  m.qk_rope_head_dim =
      whole_positive(map["qk_rope_head_dim"], origin, p + "qk_rope_head_dim", true);
  m.v_head_dim = whole_positive(map["v_head_dim"], origin, p + "v_head_dim");
  return m;
}

Transformer parse_shape(const YAML::Node& map, const std::string& origin) {
  const std::string p = "transformer.";
  if (!map.IsMap()) throw InputError(origin, "transformer", "a map of the transformer's shape");
  yu::reject_unknown_keys(map, transformer_keys_under("transformer"), origin, p);
  for (const char* key : {"layers", "hidden", "heads", "sequence", "vocabulary"})
    if (!map[key]) throw InputError(origin, p + key, "a whole number > 0 (required)");
  Transformer t;
  t.layers = whole_positive(map["layers"], origin, p + "layers");
  t.hidden = whole_positive(map["hidden"], origin, p + "hidden");
  t.heads = whole_positive(map["heads"], origin, p + "heads");
  t.sequence = whole_positive(map["sequence"], origin, p + "sequence");
  t.vocabulary = whole_positive(map["vocabulary"], origin, p + "vocabulary");
  if (t.hidden % t.heads != 0)
    throw InputError(origin, p + "heads", fmt::format("a divisor of hidden ({})", t.hidden),
                     std::to_string(t.heads));
  if (map["mla"]) {
    t.mla = parse_mla(map["mla"], origin);
    if (map["kv_heads"])
      throw InputError(origin, p + "kv_heads",
                       "no value with transformer.mla (its K and V are one per head, from the "
                       "latent)",
                       "a value");
  }
  t.kv_heads = map["kv_heads"] ? whole_positive(map["kv_heads"], origin, p + "kv_heads") : t.heads;
  if (t.heads % t.kv_heads != 0)
    throw InputError(origin, p + "kv_heads", fmt::format("a divisor of heads ({})", t.heads),
                     std::to_string(t.kv_heads));
  if (map["feed_forward"])
    t.feed_forward =
        word(map["feed_forward"], origin, p + "feed_forward", {"gelu", "swiglu"}) == "swiglu"
            ? FeedForward::SwiGlu
            : FeedForward::Gelu;
  if (map["moe"]) t.moe = parse_moe(map["moe"], origin, t.layers);
  if (map["ffn_hidden"])
    t.ffn_hidden = whole_positive(map["ffn_hidden"], origin, p + "ffn_hidden");
  else if (t.is_moe() && t.moe.first_dense_layers == 0)
    t.ffn_hidden = t.moe.expert_ffn_hidden;  // no dense layer uses it
  else if (t.feed_forward == FeedForward::Gelu)
    t.ffn_hidden = 4 * t.hidden;
  else
    throw InputError(origin, p + "ffn_hidden", "the SwiGLU inner width (required for swiglu)");
  if (map["tied_embeddings"])
    t.tied_embeddings = boolean(map["tied_embeddings"], origin, p + "tied_embeddings");
  if (map["linear_bias"]) t.linear_bias = boolean(map["linear_bias"], origin, p + "linear_bias");
  if (t.mla.enabled() && t.linear_bias)
    throw InputError(origin, p + "linear_bias",
                     "false with transformer.mla (its projections have no biases)",
                     map["linear_bias"] ? "true" : "true (the default)");
  if (map["normalization"])
    t.normalization = word(map["normalization"], origin, p + "normalization",
                           {"layernorm", "rmsnorm"}) == "rmsnorm"
                          ? Normalization::RmsNorm
                          : Normalization::LayerNorm;
  if (map["positions"])
    t.positions = word(map["positions"], origin, p + "positions", {"learned", "rotary"}) == "rotary"
                      ? PositionEmbedding::Rotary
                      : PositionEmbedding::Learned;
  if (t.positions == PositionEmbedding::Learned) {
    t.max_positions = map["max_positions"]
                          ? whole_positive(map["max_positions"], origin, p + "max_positions")
                          : t.sequence;
    if (t.max_positions < t.sequence)
      throw InputError(origin, p + "max_positions",
                       fmt::format("at least the sequence length ({})", t.sequence),
                       std::to_string(t.max_positions));
  } else if (map["max_positions"]) {
    throw InputError(origin, p + "max_positions", "no position table with rotary positions",
                     "a value");
  }
  if (map["attention"]) {
    const std::string kernel = yu::text(map["attention"], origin, p + "attention");
    if (kernel != "flash" && kernel != "math")
      throw InputError(origin, p + "attention", "flash or math", "'" + kernel + "'");
    t.attention = kernel == "flash" ? AttentionKernel::Flash : AttentionKernel::Math;
  }
  if (map["dropout"]) t.dropout = boolean(map["dropout"], origin, p + "dropout");
  if (map["token_types"])
    t.token_types = whole_positive(map["token_types"], origin, p + "token_types", true);
  if (map["head_parameters"])
    t.head_parameters = yu::positive(map["head_parameters"], origin, p + "head_parameters", true);
  if (map["published_parameters"]) {
    t.published_parameters =
        yu::positive(map["published_parameters"], origin, p + "published_parameters");
    if (!map["published_source"])
      throw InputError(origin, p + "published_source",
                       "where the published parameter count comes from (required with it)");
    t.published_source = yu::text(map["published_source"], origin, p + "published_source");
  }
  if (map["published_active_parameters"]) {
    const std::string key = p + "published_active_parameters";
    if (!t.is_moe())
      throw InputError(origin, key, "no value without transformer.moe (every weight is active)",
                       "a value");
    if (!map["published_parameters"])
      throw InputError(origin, key, "published_parameters (and its source) beside it",
                       "no published_parameters");
    t.published_active_parameters = yu::positive(map["published_active_parameters"], origin, key);
  }
  return t;
}

}  // namespace

const std::vector<WorkloadKey>& transformer_workload_keys() {
  static const std::vector<WorkloadKey> keys = {
      {"name", "the workload's name (required)"},
      {"description", "free text"},
      {"bytes_per_parameter", "bytes of a weight, a gradient and a stored activation (2: bf16)"},
      {"optimizer_bytes_per_parameter",
       "optimizer state per parameter (12: Adam's fp32 copy "
       "and moments)"},
      {"update_flop_per_parameter", "flop of the optimizer step per parameter"},
      {"sample_unit", "what one sample is (default sequence)"},
      {"transformer", "the shape (a map; parameters, flop and activations are derived)"},
      {"transformer.layers", "layers (required)"},
      {"transformer.hidden", "hidden size h (required)"},
      {"transformer.heads", "attention heads (required; divide h)"},
      {"transformer.kv_heads", "key/value heads, grouped-query attention (default: heads)"},
      {"transformer.ffn_hidden", "feed-forward width (default 4h for gelu; required for swiglu)"},
      {"transformer.feed_forward", "gelu or swiglu"},
      {"transformer.sequence", "tokens per sample (required)"},
      {"transformer.vocabulary", "vocabulary size (required)"},
      {"transformer.tied_embeddings", "true: the output projection is the token embedding"},
      {"transformer.linear_bias", "every linear layer has a bias (default true)"},
      {"transformer.normalization", "layernorm or rmsnorm"},
      {"transformer.positions", "learned or rotary"},
      {"transformer.max_positions", "rows of a learned position table (default: the sequence)"},
      {"transformer.token_types", "segment embeddings (BERT)"},
      {"transformer.head_parameters", "parameters of task heads outside the layers"},
      {"transformer.attention", "flash or math (default math): what the layer stores"},
      {"transformer.dropout", "true: count dropout's memory traffic (default false)"},
      {"transformer.moe", "a mixture of experts in place of the dense feed-forward (a map)"},
      {"transformer.moe.experts", "routed experts per MoE layer (required)"},
      {"transformer.moe.experts_per_token", "k of top-k routing (required)"},
      {"transformer.moe.expert_ffn_hidden", "each expert's feed-forward width (required)"},
      {"transformer.moe.shared_experts", "experts every token passes through (default 0)"},
      {"transformer.moe.first_dense_layers",
       "leading layers with the dense feed-forward "
       "(default 0)"},
      {"transformer.moe.capacity_factor",
       "an expert's tokens over its balanced share, padded "
       "(default 0: dropless)"},
      {"transformer.mla", "multi-head latent attention, DeepSeek-V2/V3 (a map)"},
      {"transformer.mla.q_lora_rank", "rank of Q's bottleneck (default 0: Q projected directly)"},
      {"transformer.mla.kv_lora_rank", "rank of the K/V latent (required)"},
      {"transformer.mla.qk_nope_head_dim", "per-head query/key width without rotary (required)"},
      {"transformer.mla.qk_rope_head_dim", "per-head rotary query/key width (required)"},
      {"transformer.mla.v_head_dim", "per-head value width (required)"},
      {"transformer.published_parameters", "the published parameter count, checked by a test"},
      {"transformer.published_active_parameters", "a MoE's published active count"},
      {"transformer.published_source", "where the published count comes from"},
  };
  return keys;
}

std::vector<std::string> transformer_keys_under(const std::string& map) {
  const std::string prefix = map.empty() ? "" : map + ".";
  std::vector<std::string> names;
  for (const WorkloadKey& key : transformer_workload_keys()) {
    const std::string name = key.name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    if (!rest.empty() && rest.find('.') == std::string::npos) names.push_back(rest);
  }
  return names;
}

void derive_workload_fields(Workload& w) {
  const Transformer& t = *w.transformer;
  w.parameters = t.parameters();
  w.flop_per_sample = t.model_flop(1);
  w.activation_bytes_per_sample = t.activation_bytes_per_sample();
  w.layers.clear();
  w.layers.push_back(
      {"embeddings", t.token_embedding_parameters() + t.other_embedding_parameters(), 0});
  for (int i = 0; i < t.layers; ++i)
    w.layers.push_back({fmt::format("layer.{}", i), t.layer_parameters(t.layer_kind(i)),
                        t.layer_training_flop(1, Recompute::None, t.layer_kind(i))});
  w.layers.push_back({"final norm + output + heads",
                      t.norm_parameters() + t.output_parameters() + t.head_parameters,
                      t.logits_training_flop(1)});
}

Workload parse_transformer_workload(const YAML::Node& root, const std::string& origin) {
  for (const char* derived :
       {"parameters", "flop_per_sample", "activation_bytes_per_sample", "layers"})
    if (root[derived])
      throw InputError(origin, derived, "no value: it is derived from the transformer's shape",
                       "a value");
  yu::reject_unknown_keys(root, transformer_keys_under(""), origin);
  Workload w;
  w.source = origin;
  if (!root["name"]) throw InputError(origin, "name", "the workload's name");
  w.name = yu::text(root["name"], origin, "name");
  if (root["description"]) w.description = yu::text(root["description"], origin, "description");
  if (root["bytes_per_parameter"])
    w.bytes_per_parameter =
        yu::positive(root["bytes_per_parameter"], origin, "bytes_per_parameter");
  if (root["optimizer_bytes_per_parameter"])
    w.optimizer_bytes_per_parameter = yu::positive(root["optimizer_bytes_per_parameter"], origin,
                                                   "optimizer_bytes_per_parameter", true);
  if (root["update_flop_per_parameter"])
    w.update_flop_per_parameter =
        yu::positive(root["update_flop_per_parameter"], origin, "update_flop_per_parameter", true);
  w.sample_unit = root["sample_unit"] ? yu::text(root["sample_unit"], origin, "sample_unit")
                                      : std::string("sequence");
  Transformer shape = parse_shape(root["transformer"], origin);
  shape.element_bytes = w.bytes_per_parameter;
  w.transformer = shape;
  derive_workload_fields(w);
  // Each size is in range on its own; the parameters and flop they multiply to must be too.
  if (!(w.parameters <= kMaxParameters))
    throw InputError(
        origin, "transformer",
        fmt::format("a shape of at most {:g} parameters (model/base/limits.hpp)", kMaxParameters),
        fmt::format("{:g}", w.parameters));
  if (!(w.flop_per_sample <= kMaxFlopPerSample))
    throw InputError(origin, "transformer",
                     fmt::format("a shape of at most {:g} flop a sample (model/base/limits.hpp)",
                                 kMaxFlopPerSample),
                     fmt::format("{:g}", w.flop_per_sample));
  return w;
}

}  // namespace tauplan::model
