// transformer.hpp: a transformer workload described by its shape, and the counts that follow.
//
// A Transformer is layers, hidden size, heads (and key/value heads for grouped-query
// attention), feed-forward size and kind (GELU 4h as GPT and BERT, SwiGLU as Llama), sequence
// length, vocabulary, embeddings tied or not, biases, normalisation and positions. From it:
//  - parameters per layer and in all (checked against the published counts in the catalog);
//  - flop per sequence, forward and for training with or without recomputation (Narayanan et
//    al. 2021, arXiv 2104.04473, Appendix and eq. 3, generalised to grouped-query attention and
//    SwiGLU: 2 flop per multiply-add of every weight GEMM, 4 s^2 h for the attention scores and
//    their product with V, 2 s h V for the logits; backward = 2 x forward);
//  - activation bytes per layer (Korthikanti et al. 2022, arXiv 2205.05198, Table 2 and
//    Section 4.1, with e bytes per stored value and 1 per dropout mask: 34 s b h + 5 a s^2 b at
//    e = 2), split by tensor parallelism, sequence parallelism and recomputation; with a flash
//    attention kernel (Dao et al. 2022, arXiv 2205.14135, Section 3.1; FlashAttention-2, Dao
//    2023, arXiv 2307.08691, Section 3.1.1) the 5 a s^2 b scores are never stored and the
//    softmax log-sum-exp (4 a s b bytes, fp32) is instead.
// Workload YAML describes one in a `transformer:` map (parse_transformer_workload; the
// attention kernel is its key `attention: flash|math`, default math), and the Workload's
// parameters, flop per sample, activation bytes and per-layer list are derived from it.
// Mixture-of-experts layers (MixtureOfExperts: a router, routed experts of which each token takes
// k, shared experts, leading dense layers) and multi-head latent attention (LatentAttention) enter
// every count per layer kind (LayerKind); their activation bytes extend Korthikanti's
// accounting term by term, as transformer.cpp states beside each.
// What it leaves out: encoder-decoder models, the flop of element-wise work
// (softmax, norms, activations: memory-bound, a few percent), the flop a flash kernel spends
// recomputing the scores in backward (the compute model's, model/compute/), and activation
// differences of grouped-query attention and SwiGLU beyond their tensor widths (marked where
// assumed).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "model/compute/layer_ops.hpp"  // Recompute, AttentionKernel

namespace tauplan::model {

struct Workload;

enum class FeedForward { Gelu, SwiGlu };
/// A layer's feed-forward: dense (ffn_hidden wide) or a mixture of experts.
enum class LayerKind { Dense, Moe };
const char* to_string(LayerKind kind);

/// A mixture-of-experts feed-forward (Shazeer et al. 2017, arXiv 1701.06538; Mixtral, Jiang et
/// al. 2024, arXiv 2401.04088; DeepSeek-V3, arXiv 2412.19437): `experts` routed experts, each a
/// feed-forward of `expert_ffn_hidden` of the model's kind (SwiGLU or GELU), of which each token
/// passes through the `experts_per_token` a linear router (h x experts, no bias) picks, plus
/// `shared_experts` every token passes through; the first `first_dense_layers` layers keep the
/// dense feed-forward (ffn_hidden). Workload key `transformer.moe`.
struct MixtureOfExperts {
  int experts = 0;             ///< routed experts per MoE layer; 0: a dense model
  int experts_per_token = 0;   ///< k of top-k routing
  int expert_ffn_hidden = 0;   ///< each routed and shared expert's inner width
  int shared_experts = 0;      ///< experts every token passes through (DeepSeek-V3: 1)
  int first_dense_layers = 0;  ///< leading layers with the dense feed-forward (ffn_hidden)
  /// Tokens an expert takes, as a multiple of its balanced share (tokens k / experts); the
  /// expert GEMMs and the all-to-alls carry that many (padded); 0: dropless, exactly k per token.
  double capacity_factor = 0;
};

/// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, Section 2.1; DeepSeek-V3): Q
/// through a rank-q_lora_rank bottleneck (0: projected directly), K and V through a shared
/// rank-kv_lora_rank latent, each head's query and key of qk_nope_head_dim + qk_rope_head_dim
/// and value of v_head_dim. Used when kv_lora_rank > 0. Workload key `transformer.mla`.
struct LatentAttention {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};
enum class Normalization { LayerNorm, RmsNorm };
enum class PositionEmbedding { Learned, Rotary };
const char* to_string(FeedForward kind);

struct Transformer {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    ///< key/value heads (grouped-query attention); == heads for multi-head
  int ffn_hidden = 0;  ///< feed-forward inner width (4 h for GPT/BERT, 11008 for Llama-2 7B)
  FeedForward feed_forward = FeedForward::Gelu;
  int sequence = 0;  ///< tokens per sample
  int vocabulary = 0;
  bool tied_embeddings = true;  ///< the output projection is the token embedding
  bool linear_bias = true;      ///< every linear layer has a bias (GPT-2, BERT; not Llama)
  /// Only the Q, K and V projections have biases (Qwen2); ignored when linear_bias is set. Set
  /// by a Qwen2 config.json (model/inputs/hf_config.hpp); no workload YAML key.
  bool qkv_bias = false;
  Normalization normalization = Normalization::LayerNorm;
  PositionEmbedding positions = PositionEmbedding::Learned;
  int max_positions = 0;  ///< rows of a learned position table
  int token_types = 0;    ///< BERT's segment embeddings
  /// Parameters of task heads outside the layer stack (BERT's pooler, masked-LM transform and
  /// next-sentence classifier), held by the last pipeline stage and not split.
  double head_parameters = 0;
  /// Bytes of one stored activation value (2 for fp16/bf16 training, 4 for fp32): the
  /// workload's bytes_per_parameter.
  double element_bytes = 2;
  /// How attention is computed, which decides what the layer stores for backward. Math:
  /// Korthikanti's accounting, the s x s scores, softmax output and dropout mask stored
  /// (5 a s^2 b bytes per layer at e = 2). Flash: a fused kernel (FlashAttention, Dao et al.
  /// 2022, arXiv 2205.14135) that stores no s x s matrix, only the softmax log-sum-exp
  /// statistics (a s b fp32 values) beside the attention output. Workload key `attention`.
  AttentionKernel attention = AttentionKernel::Math;
  /// Trains with dropout on the attention probabilities and the blocks' outputs, as Megatron-LM's
  /// GPT runs of 2021-22 did (its --attention-dropout and --hidden-dropout default 0.1): the
  /// compute model then counts dropout's memory traffic (model/compute/layer_ops.hpp). Workload
  /// key `dropout: true|false`, default false (the models of today train without it). The
  /// activation bytes count the dropout masks either way (Korthikanti's accounting).
  bool dropout = false;
  MixtureOfExperts moe;             ///< experts == 0: every layer dense
  LatentAttention mla;              ///< kv_lora_rank == 0: multi-head or grouped-query attention
  double published_parameters = 0;  ///< 0 when none is published
  /// A MoE model's published active parameters per token; 0 when none is published.
  double published_active_parameters = 0;
  std::string published_source;

  int head_dim() const { return hidden / heads; }
  bool is_moe() const { return moe.experts > 0; }
  /// Dense for layers below moe.first_dense_layers (and every layer of a dense model), else Moe.
  LayerKind layer_kind(int layer) const;
  /// How many of layers [first, first + count) are of `kind`.
  int layers_of_kind(LayerKind kind, int first, int count) const;
  /// Parameters of one routed or shared expert (0 for a dense model).
  double expert_parameters() const;
  /// Parameters of one MoE layer's routed experts, all of them (0 for a dense model).
  double routed_expert_parameters() const;
  /// Parameters a token passes through: every weight but the routed experts a token skips.
  double active_parameters() const;
  /// Values one all-to-all of a MoE layer moves for `tokens` tokens: tokens x k x h, x the
  /// capacity factor when one is set (the padded buffers).
  double moe_dispatch_values(double tokens) const;
  /// K and V values one token adds to attention, the payload a context-parallel ring passes:
  /// 2 kv_heads head_dim, or with MLA heads (qk_nope + qk_rope + v head dims).
  double kv_values_per_token() const;
  /// Width of the K and V projections: kv_heads x head_dim.
  double kv_width() const;

  /// Parameters of one layer: attention, feed-forward and two norms.
  double attention_parameters() const;
  /// The feed-forward of a layer of `kind`: dense, or a MoE layer's router, routed and shared
  /// experts.
  double feed_forward_parameters(LayerKind kind = LayerKind::Dense) const;
  double norm_parameters() const;  ///< one norm: 2h (LayerNorm) or h (RMSNorm)
  double layer_parameters(LayerKind kind = LayerKind::Dense) const;
  /// Parameters of one layer that tensor parallelism does not split (norms, the biases of the
  /// row-parallel output projections; MLA's down-projections and their norms; a MoE layer's
  /// router): each tensor rank holds them whole.
  double layer_replicated_parameters(LayerKind kind = LayerKind::Dense) const;
  /// Parameters of one layer held by one of `tensor` tensor-parallel ranks: the split weights
  /// and column biases / t (K and V whole heads when t > kv_heads), plus the replicated ones.
  /// A MoE layer's routed experts are split over `expert` ranks, each expert whole (expert
  /// tensor parallelism 1); its router is replicated, its shared experts split as a dense one.
  double layer_parameters_per_rank(int tensor, LayerKind kind = LayerKind::Dense,
                                   int expert = 1) const;
  /// Token embedding (V h); positions and token types (replicated under tensor parallelism).
  double token_embedding_parameters() const;
  double other_embedding_parameters() const;
  /// Output projection V h when untied, else 0.
  double output_parameters() const;
  /// Everything: embeddings, layers, the final norm, the output projection, the heads.
  double parameters() const;

  /// Forward flop of one layer on `sequences` sequences (weight GEMMs + attention scores).
  /// A MoE layer counts the router, k routed experts (no capacity padding) and the shared ones.
  double layer_forward_flop(double sequences, LayerKind kind = LayerKind::Dense) const;
  /// Forward flop of the scores Q K^T and their product with V (4 s^2 h per sequence; with
  /// MLA 2 s^2 a (qk_nope + qk_rope) + 2 s^2 a v_head_dim).
  double attention_core_forward_flop(double sequences) const;
  /// Forward flop of the logits (2 s h V per sequence).
  double logits_forward_flop(double sequences) const;
  /// Training flop (forward + backward) of one layer, with the forward run again as the
  /// recomputation asks (full: the whole forward; selective: the attention core's).
  double layer_training_flop(double sequences, Recompute recompute,
                             LayerKind kind = LayerKind::Dense) const;
  /// Training flop of the logits (never recomputed).
  double logits_training_flop(double sequences) const;
  /// Model flop of a training step on `sequences` (no recomputation: 3 x forward), the
  /// numerator of model-flops utilisation.
  double model_flop(double sequences) const;

  /// Activation bytes one layer keeps for backward, for a micro-batch of `micro_batch`
  /// sequences on one of `tensor` tensor-parallel ranks (Korthikanti Table 2 generalised; with
  /// `attention` flash, no s x s term and 4 a s b / t bytes of log-sum-exp without recompute).
  /// A MoE layer adds the router's probabilities, the permuted token copies, the experts'
  /// outputs and inner activations (split by sequence parallelism only) and the shared
  /// experts' (split by t); MLA uses its head widths and keeps its latents (transformer.cpp).
  double layer_activation_bytes(double micro_batch, int tensor, bool sequence_parallel,
                                Recompute recompute, LayerKind kind = LayerKind::Dense) const;
  /// Bytes the embedding stage keeps (embedding output and its dropout mask) per micro-batch.
  double embedding_activation_bytes(double micro_batch, int tensor, bool sequence_parallel) const;
  /// Bytes the output stage keeps (final norm input and the logits) per micro-batch.
  double output_activation_bytes(double micro_batch, int tensor, bool sequence_parallel) const;
  /// Activation bytes of one whole sample, unsplit, no recomputation (Workload's field).
  double activation_bytes_per_sample() const;
};

/// Reads a workload whose YAML has a `transformer:` map (its keys: layers, hidden, heads,
/// kv_heads, ffn_hidden, feed_forward gelu|swiglu, sequence, vocabulary, tied_embeddings,
/// linear_bias, normalization layernorm|rmsnorm, positions learned|rotary, max_positions,
/// token_types, head_parameters, attention flash|math (default math), dropout true|false
/// (default false), moe (a map: experts, experts_per_token, expert_ffn_hidden, shared_experts,
/// first_dense_layers, capacity_factor), mla (a map: q_lora_rank, kv_lora_rank,
/// qk_nope_head_dim, qk_rope_head_dim, v_head_dim), published_parameters,
/// published_active_parameters (MoE only), published_source): name, description, bytes and
/// optimizer bytes per parameter, update flop and sample unit as any workload; parameters,
/// flop per sample, activation bytes and layers derived (giving them too is an error).
/// InputError naming the file and key on any problem.
Workload parse_transformer_workload(const YAML::Node& root, const std::string& origin);

/// One key of a transformer workload YAML, for `tauplan help-keys` and the reader's check of
/// unknown keys (the one list of them): its dotted name ("transformer.moe.experts") and meaning.
struct WorkloadKey {
  const char* name;
  const char* meaning;
};
const std::vector<WorkloadKey>& transformer_workload_keys();
/// The keys of the map `map` ("", "transformer", "transformer.moe", "transformer.mla") in
/// transformer_workload_keys(): the names one level below it.
std::vector<std::string> transformer_keys_under(const std::string& map);

/// Fills a workload's derived fields from its transformer (used by the reader and by code that
/// builds a workload from a shape, as the published-configuration comparison does).
void derive_workload_fields(Workload& workload);

}  // namespace tauplan::model
