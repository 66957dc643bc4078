// hf_config.cpp: a HuggingFace config.json as a transformer workload (hf_config.hpp).
#include "model/inputs/hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"

namespace tauplan::model {
namespace {

using json = nlohmann::json;

constexpr const char* kLlamaLike = "llama mistral qwen2 mixtral";
constexpr const char* kDense = "llama mistral qwen2";
constexpr const char* kDeepseek = "deepseek_v2 deepseek_v3";
constexpr const char* kRotary = "llama mistral qwen2 mixtral deepseek_v2 deepseek_v3";
constexpr const char* kTypes = "llama, mistral, qwen2, mixtral, deepseek_v2, deepseek_v3 or gpt2";

/// Fields of mixture-of-experts and multi-head latent attention configs (Mixtral, Qwen2-MoE,
/// DeepSeek-V2/V3): in a config of a model_type that does not read them, refused as such.
const std::vector<const char*>& moe_fields() {
  static const std::vector<const char*> fields = {"num_local_experts",
                                                  "num_experts_per_tok",
                                                  "num_experts",
                                                  "n_routed_experts",
                                                  "n_shared_experts",
                                                  "moe_intermediate_size",
                                                  "shared_expert_intermediate_size",
                                                  "first_k_dense_replace",
                                                  "moe_layer_freq",
                                                  "router_aux_loss_coef",
                                                  "output_router_logits",
                                                  "router_jitter_noise",
                                                  "decoder_sparse_step",
                                                  "n_group",
                                                  "topk_group",
                                                  "topk_method",
                                                  "routed_scaling_factor",
                                                  "q_lora_rank",
                                                  "kv_lora_rank",
                                                  "qk_rope_head_dim",
                                                  "qk_nope_head_dim",
                                                  "v_head_dim",
                                                  "num_nextn_predict_layers"};
  return fields;
}

/// Fields every model_type reads: its type, dtype, vocabulary and tied embeddings.
std::vector<HfConfigField> common_fields() {
  return {
      {"model_type", "all", "llama | mistral | qwen2 | mixtral | deepseek_v2 | deepseek_v3 | gpt2"},
      {"architectures", "all",
       "LlamaForCausalLM | MistralForCausalLM | Qwen2ForCausalLM | MixtralForCausalLM | "
       "DeepseekV2ForCausalLM | DeepseekV3ForCausalLM | GPT2LMHeadModel (when no model_type)"},
      {"torch_dtype", "all",
       "bfloat16|float16: 2 bytes/parameter + 12 optimizer; float32 or absent: 4 + 8"},
      {"vocab_size", "all", "transformer.vocabulary (required)"},
      {"tie_word_embeddings", "all", "transformer.tied_embeddings (default false; gpt2 true)"},
  };
}

/// Fields of the rotary decoders (llama-like and DeepSeek): shape, attention, ignored numerics.
std::vector<HfConfigField> rotary_fields() {
  return {
      {"num_hidden_layers", kRotary, "transformer.layers (required)"},
      {"hidden_size", kRotary, "transformer.hidden (required)"},
      {"num_attention_heads", kRotary, "transformer.heads (required)"},
      {"num_key_value_heads", kLlamaLike, "transformer.kv_heads (default: the heads)"},
      {"num_key_value_heads", kDeepseek,
       "must equal num_attention_heads (or be absent): MLA's K and V come from its latent"},
      {"intermediate_size", kDense, "transformer.ffn_hidden of SwiGLU (required)"},
      {"intermediate_size", "mixtral",
       "transformer.moe.expert_ffn_hidden: each expert's SwiGLU width; every layer MoE (required)"},
      {"intermediate_size", kDeepseek,
       "transformer.ffn_hidden: the SwiGLU of the first_k_dense_replace dense layers (required)"},
      {"hidden_act", kRotary, "silu (SwiGLU feed-forward); anything else refused"},
      {"max_position_embeddings", kRotary,
       "transformer.sequence: the sample is the full context (required)"},
      {"head_dim", kLlamaLike, "must be hidden_size / num_attention_heads (or null)"},
      {"attention_bias", kRotary, "must be false (biases on Q, K, V, O not modelled)"},
      {"mlp_bias", kDense, "must be false"},
      {"attention_dropout", kRotary, "> 0 sets transformer.dropout"},
      {"sliding_window", kLlamaLike,
       "null, or >= the sequence (or qwen2's use_sliding_window false): else refused "
       "(sliding-window attention not modelled)"},
      {"use_sliding_window", kDense, "qwen2: true with a window < the sequence refused"},
      {"max_window_layers", kDense, "ignored (qwen2's sliding-window layers)"},
      {"rms_norm_eps", kRotary, "ignored (RMSNorm is assumed for these model types)"},
      {"rope_theta", kRotary, "ignored (rotary positions: no parameters, no flop counted)"},
      {"rope_scaling", kRotary,
       "ignored (rotary frequencies, deepseek's YaRN: no parameters, no flop counted)"},
      {"pretraining_tp", kRotary, "ignored (numerics of the original run only)"},
  };
}

/// Mixtral's mixture-of-experts fields.
std::vector<HfConfigField> mixtral_fields() {
  return {
      // Mixtral (MixtralForCausalLM, Jiang et al. 2024, arXiv 2401.04088): top-k routing over
      // num_local_experts SwiGLU experts in every layer, no shared expert, no dense layer.
      {"num_local_experts", "mixtral", "transformer.moe.experts (required)"},
      {"num_experts_per_tok", "mixtral", "transformer.moe.experts_per_token, the k (required)"},
      {"router_aux_loss_coef", "mixtral",
       "ignored (the weight of the load-balancing loss: a loss term, no weights; its "
       "element-wise work is not counted)"},
      {"output_router_logits", "mixtral",
       "ignored (returns the router logits for that loss: no weights, no GEMM)"},
      {"router_jitter_noise", "mixtral",
       "ignored (multiplicative noise on the router input: element-wise, not counted)"},
  };
}

/// DeepSeek-V2/V3's DeepSeekMoE and multi-head latent attention fields.
std::vector<HfConfigField> deepseek_fields() {
  return {
      // DeepSeek-V2 (arXiv 2405.04434) and V3 (arXiv 2412.19437): DeepSeekMoE with shared
      // experts after first_k_dense_replace dense layers, multi-head latent attention.
      {"n_routed_experts", kDeepseek, "transformer.moe.experts (required)"},
      {"num_experts_per_tok", kDeepseek, "transformer.moe.experts_per_token, the k (required)"},
      {"moe_intermediate_size", kDeepseek,
       "transformer.moe.expert_ffn_hidden: each routed and shared expert's width (required)"},
      {"n_shared_experts", kDeepseek, "transformer.moe.shared_experts (null or absent: 0)"},
      {"first_k_dense_replace", kDeepseek,
       "transformer.moe.first_dense_layers (default 0; at most num_hidden_layers)"},
      {"moe_layer_freq", kDeepseek,
       "must be 1 (every layer after the dense ones MoE; interleaved MoE not modelled)"},
      {"q_lora_rank", kDeepseek, "transformer.mla.q_lora_rank (null: 0, Q projected directly)"},
      {"kv_lora_rank", kDeepseek, "transformer.mla.kv_lora_rank (required)"},
      {"qk_nope_head_dim", kDeepseek, "transformer.mla.qk_nope_head_dim (required)"},
      {"qk_rope_head_dim", kDeepseek, "transformer.mla.qk_rope_head_dim (required)"},
      {"v_head_dim", kDeepseek, "transformer.mla.v_head_dim (required)"},
      {"num_nextn_predict_layers", kDeepseek,
       "must be 0 or absent: the multi-token prediction module (V3 Section 2.2) is not "
       "modelled; set 0 to plan the main model"},
      {"quantization_config", kDeepseek,
       "ignored: the released checkpoint's storage format (fp8 blocks), not the training "
       "precision; bytes follow torch_dtype"},
      {"n_group", kDeepseek,
       "ignored (group-limited routing: which experts a token may pick, not how many; same "
       "flop, parameters and k copies per token dispatched)"},
      {"topk_group", kDeepseek, "ignored (group-limited routing, as n_group)"},
      {"topk_method", kDeepseek, "ignored (how the k experts are chosen, not how many)"},
      {"scoring_func", kDeepseek,
       "ignored (softmax or sigmoid of the router logits: element-wise, not counted)"},
      {"norm_topk_prob", kDeepseek, "ignored (normalises the k gate weights: element-wise)"},
      {"routed_scaling_factor", kDeepseek, "ignored (a scale on the gate weights: element-wise)"},
      {"aux_loss_alpha", kDeepseek,
       "ignored (the weight of the balance loss: a loss term, no parameters, not counted)"},
      {"seq_aux", kDeepseek, "ignored (sequence-wise balance loss on or off: as aux_loss_alpha)"},
      {"ep_size", kDeepseek,
       "ignored (the reference code's inference expert sharding; the job's mesh decides "
       "expert parallelism)"},
      {"auto_map", kDeepseek, "ignored (where the remote modelling code lives)"},
  };
}

/// Fields every model_type ignores: token ids, initialisation, versions.
std::vector<HfConfigField> ignored_fields() {
  return {
      {"pad_token_id", "all", "ignored"},          {"bos_token_id", "all", "ignored"},
      {"eos_token_id", "all", "ignored"},          {"initializer_range", "all", "ignored"},
      {"use_cache", "all", "ignored (inference)"}, {"transformers_version", "all", "ignored"},
      {"_name_or_path", "all", "ignored"},
  };
}

/// GPT-2's fields.
std::vector<HfConfigField> gpt2_fields() {
  return {
      {"n_layer", "gpt2", "transformer.layers (required)"},
      {"n_embd", "gpt2", "transformer.hidden (required)"},
      {"n_head", "gpt2", "transformer.heads (required)"},
      {"n_inner", "gpt2", "transformer.ffn_hidden of GELU (null or absent: 4 n_embd)"},
      {"n_positions", "gpt2", "transformer.max_positions and transformer.sequence (required)"},
      {"n_ctx", "gpt2", "ignored (older name of n_positions)"},
      {"activation_function", "gpt2", "gelu, gelu_new, gelu_fast, gelu_pytorch_tanh"},
      {"attn_pdrop", "gpt2", "> 0 sets transformer.dropout"},
      {"resid_pdrop", "gpt2", "> 0 sets transformer.dropout"},
      {"embd_pdrop", "gpt2", "> 0 sets transformer.dropout"},
      {"layer_norm_epsilon", "gpt2", "ignored"},
      {"scale_attn_weights", "gpt2", "ignored (a scale, no cost)"},
      {"scale_attn_by_inverse_layer_idx", "gpt2", "ignored"},
      {"reorder_and_upcast_attn", "gpt2", "ignored"},
      {"summary_activation", "gpt2", "ignored (the double-heads model's classifier)"},
      {"summary_first_dropout", "gpt2", "ignored"},
      {"summary_proj_to_labels", "gpt2", "ignored"},
      {"summary_type", "gpt2", "ignored"},
      {"summary_use_proj", "gpt2", "ignored"},
      {"task_specific_params", "gpt2", "ignored (generation settings)"},
  };
}

/// Fields read by no model_type, listed so that help-keys names them as refused.
std::vector<HfConfigField> refused_fields() {
  return {
      // Read by no model_type (listed so that help-keys names them): Qwen2-MoE's experts.
      {"num_experts", "none", "refused (qwen2_moe: its experts and shared-expert gate not read)"},
      {"shared_expert_intermediate_size", "none", "refused (qwen2_moe: not read yet)"},
      {"decoder_sparse_step", "none", "refused (qwen2_moe: not read yet)"},
  };
}

}  // namespace

const std::vector<HfConfigField>& hf_config_fields() {
  static const std::vector<HfConfigField> fields = [] {
    std::vector<HfConfigField> all;
    for (const auto& part : {common_fields(), rotary_fields(), mixtral_fields(), deepseek_fields(),
                             ignored_fields(), gpt2_fields(), refused_fields()})
      all.insert(all.end(), part.begin(), part.end());
    return all;
  }();
  return fields;
}

namespace {

bool has_type(const char* model_types, const std::string& type) {
  const std::string types = model_types;
  if (types == "all") return true;
  return (" " + types + " ").find(" " + type + " ") != std::string::npos;
}

std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 64) text = text.substr(0, 60) + "...";
  return text;
}

/// Reads one config: the fields as a JSON object, the file it came from.
class Config {
 public:
  Config(const json& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  bool has(const char* key) const {
    const auto it = root_.find(key);
    return it != root_.end() && !it->is_null();
  }
  const json& at(const char* key) const { return root_.at(key); }

  [[noreturn]] void refuse(const std::string& key, const std::string& expected,
                           const std::string& got = "") const {
    throw InputError(origin_, key, expected, got);
  }

  int whole(const char* key, const std::string& required_by = "") const {
    if (!has(key)) {
      refuse(key, "a whole number > 0 (required" +
                      (required_by.empty() ? std::string() : " for " + required_by) + ")");
    }
    const json& value = at(key);
    double number = -1;
    if (value.is_number()) number = value.get<double>();
    if (!value.is_number() || !std::isfinite(number) || number <= 0 ||
        number != std::floor(number) || number > 1e9)
      refuse(key, "a whole number > 0", shown(value));
    return static_cast<int>(number);
  }

  int whole_or(const char* key, int fallback) const { return has(key) ? whole(key) : fallback; }

  /// A whole number >= 0 (0 allowed, unlike whole); `fallback` when null or absent.
  int count(const char* key, int fallback) const {
    if (!has(key)) return fallback;
    const json& value = at(key);
    double number = -1;
    if (value.is_number()) number = value.get<double>();
    if (!value.is_number() || !std::isfinite(number) || number < 0 ||
        number != std::floor(number) || number > 1e9)
      refuse(key, "a whole number >= 0", shown(value));
    return static_cast<int>(number);
  }

  /// A finite number >= 0 when present (a known field whose value is not used).
  void non_negative(const char* key) const {
    if (!has(key)) return;
    const json& value = at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
      refuse(key, "a number >= 0", shown(value));
  }

  /// A JSON object when present (a known field whose contents are not used).
  void object(const char* key) const {
    if (has(key) && !at(key).is_object()) refuse(key, "a JSON object", shown(at(key)));
  }

  double fraction(const char* key) const {
    if (!has(key)) return 0;
    const json& value = at(key);
    if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1)
      refuse(key, "a probability in [0, 1]", shown(value));
    return value.get<double>();
  }

  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& value = at(key);
    if (!value.is_boolean()) refuse(key, "true or false", shown(value));
    return value.get<bool>();
  }

  std::string word(const char* key) const {
    const json& value = at(key);
    if (!value.is_string()) refuse(key, "a string", shown(value));
    return value.get<std::string>();
  }

  const std::string& origin() const { return origin_; }

 private:
  const json& root_;
  std::string origin_;
};

/// The model_type, from `model_type` or else the first of `architectures`.
std::string model_type_of(const json& root, const Config& config) {
  static const std::vector<std::pair<std::string, std::string>> architectures = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"MixtralForCausalLM", "mixtral"},
      {"DeepseekV2ForCausalLM", "deepseek_v2"},
      {"DeepseekV3ForCausalLM", "deepseek_v3"},
      {"GPT2LMHeadModel", "gpt2"}};
  if (config.has("model_type")) {
    const std::string type = config.word("model_type");
    for (const auto& entry : architectures)
      if (type == entry.second) return type;
    config.refuse("model_type",
                  std::string(kTypes) + " (tauplan help-keys lists the config.json fields)",
                  "'" + type + "'");
  }
  const json& list = root.at("architectures");
  if (!list.is_array() || list.empty() || !list[0].is_string())
    config.refuse("architectures", "a list of architecture names", shown(list));
  const std::string first = list[0].get<std::string>();
  for (const auto& entry : architectures)
    if (entry.first == first) return entry.second;
  config.refuse("architectures",
                "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM, "
                "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM or GPT2LMHeadModel",
                "'" + first + "'");
}

/// The workload's name: the folder of a file named config.json, else the file's stem.
std::string name_of(const std::string& origin) {
  const std::filesystem::path path(origin);
  std::string name = path.filename() == "config.json" && path.has_parent_path()
                         ? path.parent_path().filename().string()
                         : path.stem().string();
  if (name.empty() || name == "." || name == "..") name = "config";
  return name;
}

/// The fields a Llama-style decoder (Llama, Mistral, Qwen2, Mixtral, DeepSeek) reads alike: the
/// feed-forward width, vocabulary, context, SwiGLU (hidden_act silu), RMSNorm, rotary positions,
/// untied embeddings unless tie_word_embeddings, no linear biases.
void read_swiglu_decoder(const Config& c, const std::string& type, Transformer& t) {
  t.ffn_hidden = c.whole("intermediate_size", type);
  t.vocabulary = c.whole("vocab_size", type);
  t.sequence = c.whole("max_position_embeddings", type);
  if (c.has("hidden_act") && c.word("hidden_act") != "silu")
    c.refuse("hidden_act", "silu (a SwiGLU feed-forward)", "'" + c.word("hidden_act") + "'");
  t.feed_forward = FeedForward::SwiGlu;
  t.normalization = Normalization::RmsNorm;
  t.positions = PositionEmbedding::Rotary;
  t.tied_embeddings = c.flag("tie_word_embeddings", false);
  t.linear_bias = false;
}

Transformer llama_like(const Config& c, const std::string& type) {
  Transformer t;
  t.layers = c.whole("num_hidden_layers", type);
  t.hidden = c.whole("hidden_size", type);
  t.heads = c.whole("num_attention_heads", type);
  t.kv_heads = c.whole_or("num_key_value_heads", t.heads);
  read_swiglu_decoder(c, type, t);
  t.qkv_bias = type == "qwen2";  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
  if (c.flag("attention_bias", false))
    c.refuse("attention_bias", "false (biases on Q, K, V and O not modelled yet)", "true");
  if (c.flag("mlp_bias", false))
    c.refuse("mlp_bias", "false (feed-forward biases not modelled yet)", "true");
  if (t.hidden % t.heads != 0)
    c.refuse("num_attention_heads", fmt::format("a divisor of hidden_size ({})", t.hidden),
             std::to_string(t.heads));
  if (c.has("head_dim") && c.whole("head_dim") != t.hidden / t.heads)
    c.refuse("head_dim",
             fmt::format("hidden_size / num_attention_heads = {} (another head width is not "
                         "modelled yet)",
                         t.hidden / t.heads),
             std::to_string(c.whole("head_dim")));
  if (t.heads % t.kv_heads != 0)
    c.refuse("num_key_value_heads", fmt::format("a divisor of num_attention_heads ({})", t.heads),
             std::to_string(t.kv_heads));
  // Sliding-window attention changes the attention cost once the sequence is longer than the
  // window: refused then (not modelled), accepted when it never applies.
  const bool window_used = type == "qwen2" ? c.flag("use_sliding_window", false) : true;
  if (c.has("use_sliding_window") && type != "qwen2") c.flag("use_sliding_window", false);
  if (window_used && c.has("sliding_window") && c.whole("sliding_window") < t.sequence)
    c.refuse("sliding_window",
             fmt::format("null or at least the sequence ({}): sliding-window attention is not "
                         "modelled yet",
                         t.sequence),
             std::to_string(c.whole("sliding_window")));
  if (c.has("max_window_layers")) c.whole_or("max_window_layers", 0);
  t.dropout = c.fraction("attention_dropout") > 0;
  return t;
}

/// Mixtral: a Mistral whose every feed-forward is num_local_experts SwiGLU experts of
/// intermediate_size, num_experts_per_tok of them per token (MixtralSparseMoeBlock: a router
/// h x experts without bias, experts w1/w3/w2 without biases), no shared expert, dropless.
Transformer mixtral(const Config& c) {
  Transformer t = llama_like(c, "mixtral");
  t.moe.experts = c.whole("num_local_experts", "mixtral");
  t.moe.experts_per_token = c.whole("num_experts_per_tok", "mixtral");
  t.moe.expert_ffn_hidden = t.ffn_hidden;  // every layer MoE: ffn_hidden is used by none
  t.moe.shared_experts = 0;
  t.moe.first_dense_layers = 0;
  t.moe.capacity_factor = 0;  // dropless (Jiang et al. 2024 state no capacity; HF drops none)
  if (t.moe.experts_per_token > t.moe.experts)
    c.refuse("num_experts_per_tok", fmt::format("at most num_local_experts ({})", t.moe.experts),
             std::to_string(t.moe.experts_per_token));
  // Training-loss terms and router noise: no weights, no GEMM (see hf_config_fields).
  c.non_negative("router_aux_loss_coef");
  c.non_negative("router_jitter_noise");
  c.flag("output_router_logits", false);
  return t;
}

/// DeepSeek-V2 and V3 (modeling_deepseek.py of the Hub repositories): first_k_dense_replace
/// dense SwiGLU layers of intermediate_size, then DeepSeekMoE layers (a router h x
/// n_routed_experts, num_experts_per_tok routed experts and n_shared_experts shared ones, each
/// a SwiGLU of moe_intermediate_size), multi-head latent attention in every layer. No token is
/// dropped (V3 Section 2.1.2; V2's device-level dropping is not modelled: dropless).
Transformer deepseek(const Config& c, const std::string& type) {
  Transformer t;
  t.layers = c.whole("num_hidden_layers", type);
  t.hidden = c.whole("hidden_size", type);
  t.heads = c.whole("num_attention_heads", type);
  // MLA has no key/value heads of its own: K and V of every head come up from the shared latent
  // (DeepseekV3Attention never reads num_key_value_heads); the released configs repeat the heads.
  t.kv_heads = t.heads;
  if (c.has("num_key_value_heads") && c.whole("num_key_value_heads") != t.heads)
    c.refuse("num_key_value_heads",
             fmt::format("num_attention_heads ({}) or absent (multi-head latent attention has no "
                         "grouped key/value heads)",
                         t.heads),
             std::to_string(c.whole("num_key_value_heads")));
  read_swiglu_decoder(c, type, t);
  if (c.flag("attention_bias", false))
    c.refuse("attention_bias", "false (biases on the attention projections not modelled yet)",
             "true");
  t.dropout = c.fraction("attention_dropout") > 0;

  t.moe.experts = c.whole("n_routed_experts", type);
  t.moe.experts_per_token = c.whole("num_experts_per_tok", type);
  t.moe.expert_ffn_hidden = c.whole("moe_intermediate_size", type);
  t.moe.shared_experts = c.count("n_shared_experts", 0);
  t.moe.first_dense_layers = c.count("first_k_dense_replace", 0);
  t.moe.capacity_factor = 0;
  if (t.moe.experts_per_token > t.moe.experts)
    c.refuse("num_experts_per_tok", fmt::format("at most n_routed_experts ({})", t.moe.experts),
             std::to_string(t.moe.experts_per_token));
  if (t.moe.first_dense_layers > t.layers)
    c.refuse("first_k_dense_replace", fmt::format("at most num_hidden_layers ({})", t.layers),
             std::to_string(t.moe.first_dense_layers));
  if (c.has("moe_layer_freq") && c.whole("moe_layer_freq") != 1)
    c.refuse("moe_layer_freq",
             "1 (every layer after first_k_dense_replace a MoE layer; MoE in every n-th layer is "
             "not modelled yet)",
             std::to_string(c.whole("moe_layer_freq")));

  t.mla.q_lora_rank = c.count("q_lora_rank", 0);  // null (V2-Lite): Q projected directly
  t.mla.kv_lora_rank = c.whole("kv_lora_rank", type);
  t.mla.qk_nope_head_dim = c.whole("qk_nope_head_dim", type);
  t.mla.qk_rope_head_dim = c.whole("qk_rope_head_dim", type);
  t.mla.v_head_dim = c.whole("v_head_dim", type);

  // Multi-token prediction (DeepSeek-V3, arXiv 2412.19437, Section 2.2): an extra layer, a
  // projection and the shared head per predicted token, in training only. Not modelled: refused
  // rather than left out of the counts.
  if (c.count("num_nextn_predict_layers", 0) > 0)
    c.refuse("num_nextn_predict_layers",
             "0 (the multi-token prediction module is not modelled yet: set it to 0 to plan the "
             "main model, 671B for DeepSeek-V3)",
             std::to_string(c.count("num_nextn_predict_layers", 0)));
  // Known and ignored (hf_config_fields says why for each); checked for their type only.
  for (const char* key : {"n_group", "topk_group", "ep_size"})
    c.whole_or(key, 1);
  for (const char* key : {"routed_scaling_factor", "aux_loss_alpha"})
    c.non_negative(key);
  for (const char* key : {"norm_topk_prob", "seq_aux"})
    c.flag(key, false);
  for (const char* key : {"scoring_func", "topk_method"})
    if (c.has(key)) c.word(key);
  for (const char* key : {"quantization_config", "auto_map"})
    c.object(key);
  return t;
}

Transformer gpt2(const Config& c) {
  Transformer t;
  t.layers = c.whole("n_layer", "gpt2");
  t.hidden = c.whole("n_embd", "gpt2");
  t.heads = c.whole("n_head", "gpt2");
  t.kv_heads = t.heads;
  t.ffn_hidden = c.whole_or("n_inner", 4 * t.hidden);
  t.vocabulary = c.whole("vocab_size", "gpt2");
  t.max_positions = c.whole("n_positions", "gpt2");
  t.sequence = t.max_positions;
  if (c.has("n_ctx")) c.whole("n_ctx");
  if (c.has("activation_function")) {
    const std::string act = c.word("activation_function");
    if (act != "gelu" && act != "gelu_new" && act != "gelu_fast" && act != "gelu_pytorch_tanh")
      c.refuse("activation_function", "gelu, gelu_new, gelu_fast or gelu_pytorch_tanh",
               "'" + act + "'");
  }
  t.feed_forward = FeedForward::Gelu;
  t.normalization = Normalization::LayerNorm;
  t.positions = PositionEmbedding::Learned;
  t.linear_bias = true;
  t.tied_embeddings = c.flag("tie_word_embeddings", true);
  if (t.hidden % t.heads != 0)
    c.refuse("n_head", fmt::format("a divisor of n_embd ({})", t.hidden), std::to_string(t.heads));
  double dropout = 0;
  for (const char* key : {"attn_pdrop", "resid_pdrop", "embd_pdrop"})
    dropout = std::max(dropout, c.fraction(key));
  t.dropout = dropout > 0;
  return t;
}

}  // namespace

std::optional<Workload> parse_hf_config(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    const std::size_t byte = std::min<std::size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n');
    std::string what = e.what();
    const auto colon = what.find(": ", what.find("parse error"));
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw InputError(origin, fmt::format("line {}", line), "valid JSON", what);
  }
  if (!root.is_object() || (!root.contains("model_type") && !root.contains("architectures")))
    return std::nullopt;
  const Config config(root, origin);
  const std::string type = model_type_of(root, config);
  for (const auto& item : root.items()) {
    const auto& fields = hf_config_fields();
    const bool known = std::any_of(fields.begin(), fields.end(), [&](const HfConfigField& f) {
      return item.key() == f.name && has_type(f.model_types, type);
    });
    if (known) continue;
    const auto& moe = moe_fields();
    if (std::find(moe.begin(), moe.end(), item.key()) != moe.end())
      config.refuse(item.key(),
                    fmt::format("no mixture-of-experts / MLA field in a {} config.json (model_type "
                                "mixtral, deepseek_v2 and deepseek_v3 read theirs; tauplan "
                                "help-keys lists them)",
                                type),
                    shown(item.value()));
    config.refuse(item.key(),
                  fmt::format("a {} config.json field tauplan reads or knows not to change the "
                              "cost (tauplan help-keys lists them)",
                              type),
                  "an unknown field");
  }
  Transformer t;
  if (type == "gpt2")
    t = gpt2(config);
  else if (type == "mixtral")
    t = mixtral(config);
  else if (type == "deepseek_v2" || type == "deepseek_v3")
    t = deepseek(config, type);
  else
    t = llama_like(config, type);

  Workload w;
  w.source = origin;
  w.name = name_of(origin);
  w.sample_unit = "sequence";
  if (config.has("torch_dtype")) {
    const std::string dtype = config.word("torch_dtype");
    if (dtype == "bfloat16" || dtype == "float16") {
      w.bytes_per_parameter = 2;
      w.optimizer_bytes_per_parameter = 12;
    } else if (dtype == "float32") {
      w.bytes_per_parameter = 4;
      w.optimizer_bytes_per_parameter = 8;
    } else {
      config.refuse("torch_dtype", "bfloat16, float16 or float32", "'" + dtype + "'");
    }
  } else {
    w.bytes_per_parameter = 4;
    w.optimizer_bytes_per_parameter = 8;
  }
  t.element_bytes = w.bytes_per_parameter;
  if (t.parameters() > kMaxParameters)
    config.refuse("hidden_size", fmt::format("a model of at most {:g} parameters", kMaxParameters),
                  fmt::format("{:g}", t.parameters()));
  if (t.model_flop(1) > kMaxFlopPerSample)
    config.refuse(type == "gpt2" ? "n_positions" : "max_position_embeddings",
                  fmt::format("at most {:g} flop per sequence", kMaxFlopPerSample),
                  fmt::format("{:g}", t.model_flop(1)));
  std::string shape = fmt::format("{} layers, d={}, {} heads / {} KV heads", t.layers, t.hidden,
                                  t.heads, t.kv_heads);
  if (t.mla.enabled())
    shape = fmt::format("{} layers, d={}, {} heads, MLA (q rank {}, kv rank {}, qk {}+{}, v {})",
                        t.layers, t.hidden, t.heads, t.mla.q_lora_rank, t.mla.kv_lora_rank,
                        t.mla.qk_nope_head_dim, t.mla.qk_rope_head_dim, t.mla.v_head_dim);
  std::string ffn = fmt::format("{} {}", to_string(t.feed_forward), t.ffn_hidden);
  if (t.is_moe()) {
    ffn =
        fmt::format("{} experts ({} shared) of {} {}, top-{}", t.moe.experts, t.moe.shared_experts,
                    to_string(t.feed_forward), t.moe.expert_ffn_hidden, t.moe.experts_per_token);
    if (t.moe.first_dense_layers > 0)
      ffn += fmt::format(" after {} dense layers of {}", t.moe.first_dense_layers, t.ffn_hidden);
  }
  w.description = fmt::format("HuggingFace config.json ({}): {}, {}, vocabulary {}, sequence {}",
                              type, shape, ffn, t.vocabulary, t.sequence);
  w.transformer = t;
  derive_workload_fields(w);
  return w;
}

}  // namespace tauplan::model
