// transformer.cpp: parameter, flop and activation counts of a transformer, and its YAML reader.
#include "model/transformer.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/workload.hpp"
#include "model/yaml_util.hpp"

namespace tauplan::model {

const char* to_string(FeedForward kind) {
  return kind == FeedForward::SwiGlu ? "swiglu" : "gelu";
}

double Transformer::kv_width() const {
  return static_cast<double>(kv_heads) * head_dim();
}

double Transformer::attention_parameters() const {
  const double h = hidden, kv = kv_width();
  // Q and O are h x h; K and V are h x (kv_heads head_dim).
  const double weights = 2 * h * h + 2 * h * kv;
  const double biases = linear_bias ? 2 * h + 2 * kv : qkv_bias ? h + 2 * kv : 0;
  return weights + biases;
}

double Transformer::feed_forward_parameters() const {
  const double h = hidden, f = ffn_hidden;
  if (feed_forward == FeedForward::SwiGlu)  // gate and up (h x f), down (f x h)
    return 3 * h * f + (linear_bias ? 2 * f + h : 0);
  return 2 * h * f + (linear_bias ? f + h : 0);
}

double Transformer::norm_parameters() const {
  return normalization == Normalization::LayerNorm ? 2.0 * hidden : 1.0 * hidden;
}

double Transformer::layer_parameters() const {
  return attention_parameters() + feed_forward_parameters() + 2 * norm_parameters();
}

double Transformer::layer_replicated_parameters() const {
  // Megatron: the norms, and the biases of the row-parallel projections (attention output,
  // feed-forward down), are whole on every tensor rank.
  return 2 * norm_parameters() + (linear_bias ? 2.0 * hidden : 0.0);
}

double Transformer::layer_parameters_per_rank(int tensor) const {
  const double h = hidden, f = ffn_hidden, t = tensor;
  const double kv_per_rank = tensor > kv_heads ? head_dim() : kv_width() / t;
  // Column-parallel: Q, K, V and the first feed-forward GEMM(s), with their biases; row-parallel:
  // the attention output and feed-forward down projections (weights split, biases whole).
  const bool column_bias = linear_bias || qkv_bias;  // Q, K and V biases split with their heads
  const double q_o = 2 * h * h / t + (column_bias ? h / t : 0);
  const double k_v = 2 * h * kv_per_rank + (column_bias ? 2 * kv_per_rank : 0);
  const double ffn_matrices = feed_forward == FeedForward::SwiGlu ? 3 : 2;
  const double ffn_column_biases = linear_bias ? (ffn_matrices - 1) * f / t : 0;
  const double ffn = ffn_matrices * h * f / t + ffn_column_biases;
  return q_o + k_v + ffn + layer_replicated_parameters();
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
  return token_embedding_parameters() + other_embedding_parameters() + layers * layer_parameters() +
         norm_parameters() + output_parameters() + head_parameters;
}

double Transformer::attention_core_forward_flop(double sequences) const {
  const double s = sequence;
  return 4 * sequences * s * s * hidden;
}

double Transformer::layer_forward_flop(double sequences) const {
  const double h = hidden, f = ffn_hidden, s = sequence;
  const double attention_macs = 2 * h * h + 2 * h * kv_width();
  const double ffn_macs = (feed_forward == FeedForward::SwiGlu ? 3 : 2) * h * f;
  return 2 * sequences * s * (attention_macs + ffn_macs) + attention_core_forward_flop(sequences);
}

double Transformer::logits_forward_flop(double sequences) const {
  return 2 * sequences * sequence * static_cast<double>(hidden) * vocabulary;
}

double Transformer::layer_training_flop(double sequences, Recompute recompute) const {
  const double forward = layer_forward_flop(sequences);
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
  return layers * layer_training_flop(sequences, Recompute::None) + logits_training_flop(sequences);
}

double Transformer::layer_activation_bytes(double micro_batch, int tensor, bool sequence_parallel,
                                           Recompute recompute) const {
  const double e = element_bytes, t = tensor;
  const double sbh = static_cast<double>(sequence) * micro_batch * hidden;
  const double sb = static_cast<double>(sequence) * micro_batch;
  if (recompute == Recompute::Full)  // only the layer's input
    return e * sbh / (sequence_parallel ? t : 1);
  // Kept whole on every tensor rank unless sequence parallelism splits them: the inputs of the
  // two norms, of the QKV projection and of the first feed-forward GEMM (e each), and the two
  // dropout masks after the attention and feed-forward blocks (1 byte each).
  const double replicated = (4 * e + 2) * sbh;
  // Split by heads or feed-forward columns: Q, K, V, the output projection's input, the
  // feed-forward inner activations (GELU: its input and output, 2 e f; SwiGLU [assumed]: gate,
  // up, SiLU output and product, 4 e f). K and V of grouped-query attention are narrower; a
  // rank holds at least one K/V head when t > kv_heads.
  const double kv_per_rank = tensor > kv_heads ? head_dim() : kv_width() / t;
  const double inner = (feed_forward == FeedForward::SwiGlu ? 4 : 2) * e * ffn_hidden;
  const double split = e * sb * (2.0 * hidden / t + 2 * kv_per_rank) + sb * inner / t;
  // What the attention core keeps beyond Q, K, V and its output (the output projection's input,
  // counted in `split`), per layer and rank, heads split over t:
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
  return replicated / (sequence_parallel ? t : 1) + split + core;
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
  return layers * layer_activation_bytes(1, 1, false, Recompute::None) +
         embedding_activation_bytes(1, 1, false) + output_activation_bytes(1, 1, false);
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

Transformer parse_shape(const YAML::Node& map, const std::string& origin) {
  const std::string p = "transformer.";
  if (!map.IsMap()) throw InputError(origin, "transformer", "a map of the transformer's shape");
  yu::reject_unknown_keys(
      map,
      {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "feed_forward", "sequence",
       "vocabulary", "tied_embeddings", "linear_bias", "normalization", "positions",
       "max_positions", "token_types", "head_parameters", "attention", "dropout",
       "published_parameters", "published_source"},
      origin, p);
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
  t.kv_heads = map["kv_heads"] ? whole_positive(map["kv_heads"], origin, p + "kv_heads") : t.heads;
  if (t.heads % t.kv_heads != 0)
    throw InputError(origin, p + "kv_heads", fmt::format("a divisor of heads ({})", t.heads),
                     std::to_string(t.kv_heads));
  if (map["feed_forward"])
    t.feed_forward =
        word(map["feed_forward"], origin, p + "feed_forward", {"gelu", "swiglu"}) == "swiglu"
            ? FeedForward::SwiGlu
            : FeedForward::Gelu;
  if (map["ffn_hidden"])
    t.ffn_hidden = whole_positive(map["ffn_hidden"], origin, p + "ffn_hidden");
  else if (t.feed_forward == FeedForward::Gelu)
    t.ffn_hidden = 4 * t.hidden;
  else
    throw InputError(origin, p + "ffn_hidden", "the SwiGLU inner width (required for swiglu)");
  if (map["tied_embeddings"])
    t.tied_embeddings = boolean(map["tied_embeddings"], origin, p + "tied_embeddings");
  if (map["linear_bias"]) t.linear_bias = boolean(map["linear_bias"], origin, p + "linear_bias");
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
  return t;
}

}  // namespace

void derive_workload_fields(Workload& w) {
  const Transformer& t = *w.transformer;
  w.parameters = t.parameters();
  w.flop_per_sample = t.model_flop(1);
  w.activation_bytes_per_sample = t.activation_bytes_per_sample();
  w.layers.clear();
  w.layers.push_back(
      {"embeddings", t.token_embedding_parameters() + t.other_embedding_parameters(), 0});
  for (int i = 0; i < t.layers; ++i)
    w.layers.push_back({fmt::format("layer.{}", i), t.layer_parameters(),
                        t.layer_training_flop(1, Recompute::None)});
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
  yu::reject_unknown_keys(
      root,
      {"name", "description", "bytes_per_parameter", "optimizer_bytes_per_parameter",
       "update_flop_per_parameter", "sample_unit", "transformer"},
      origin);
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
  return w;
}

}  // namespace tauplan::model
