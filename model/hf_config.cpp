// hf_config.cpp: a HuggingFace config.json as a transformer workload (hf_config.hpp).
#include "model/hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "model/limits.hpp"

namespace tauplan::model {
namespace {

using json = nlohmann::json;

constexpr const char* kLlamaLike = "llama mistral qwen2";
constexpr const char* kMoeMessage = "a dense model (mixture-of-experts / MLA not modelled yet)";

/// Fields of mixture-of-experts (Mixtral, Qwen2-MoE, DeepSeek-V2/V3) and multi-head latent
/// attention (DeepSeek's low-rank Q and KV) configs: refused, whatever the model_type.
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
                                                  "decoder_sparse_step",
                                                  "n_group",
                                                  "topk_group",
                                                  "topk_method",
                                                  "routed_scaling_factor",
                                                  "q_lora_rank",
                                                  "kv_lora_rank",
                                                  "qk_rope_head_dim",
                                                  "qk_nope_head_dim",
                                                  "v_head_dim"};
  return fields;
}

}  // namespace

const std::vector<HfConfigField>& hf_config_fields() {
  static const std::vector<HfConfigField> fields = [] {
    std::vector<HfConfigField> f = {
        {"model_type", "all", "llama | mistral | qwen2 | gpt2 (else architectures[0] decides)"},
        {"architectures", "all",
         "LlamaForCausalLM | MistralForCausalLM | Qwen2ForCausalLM | GPT2LMHeadModel"},
        {"torch_dtype", "all",
         "bfloat16|float16: 2 bytes/parameter + 12 optimizer; float32 or absent: 4 + 8"},
        {"vocab_size", "all", "transformer.vocabulary (required)"},
        {"tie_word_embeddings", "all", "transformer.tied_embeddings (default false; gpt2 true)"},
        {"num_hidden_layers", kLlamaLike, "transformer.layers (required)"},
        {"hidden_size", kLlamaLike, "transformer.hidden (required)"},
        {"num_attention_heads", kLlamaLike, "transformer.heads (required)"},
        {"num_key_value_heads", kLlamaLike, "transformer.kv_heads (default: the heads)"},
        {"intermediate_size", kLlamaLike, "transformer.ffn_hidden of SwiGLU (required)"},
        {"hidden_act", kLlamaLike, "silu (SwiGLU feed-forward); anything else refused"},
        {"max_position_embeddings", kLlamaLike,
         "transformer.sequence: the sample is the full context (required)"},
        {"head_dim", kLlamaLike, "must be hidden_size / num_attention_heads (or null)"},
        {"attention_bias", kLlamaLike, "must be false (biases on Q, K, V, O not modelled)"},
        {"mlp_bias", kLlamaLike, "must be false"},
        {"attention_dropout", kLlamaLike, "> 0 sets transformer.dropout"},
        {"sliding_window", kLlamaLike,
         "null, or >= the sequence (or qwen2's use_sliding_window false): else refused"},
        {"use_sliding_window", kLlamaLike, "qwen2: true with a window < the sequence refused"},
        {"max_window_layers", kLlamaLike, "ignored (qwen2's sliding-window layers)"},
        {"rms_norm_eps", kLlamaLike, "ignored (RMSNorm is assumed for these model types)"},
        {"rope_theta", kLlamaLike, "ignored (rotary positions: no parameters, no flop counted)"},
        {"rope_scaling", kLlamaLike, "ignored (rotary positions)"},
        {"pretraining_tp", kLlamaLike, "ignored (numerics of the original run only)"},
        {"pad_token_id", "all", "ignored"},
        {"bos_token_id", "all", "ignored"},
        {"eos_token_id", "all", "ignored"},
        {"initializer_range", "all", "ignored"},
        {"use_cache", "all", "ignored (inference)"},
        {"transformers_version", "all", "ignored"},
        {"_name_or_path", "all", "ignored"},
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
    for (const char* name : moe_fields())
      f.push_back({name, "all", "refused: mixture-of-experts / MLA not modelled yet"});
    return f;
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
      {"GPT2LMHeadModel", "gpt2"}};
  if (config.has("model_type")) {
    const std::string type = config.word("model_type");
    for (const char* moe : {"mixtral", "qwen2_moe", "deepseek_v2", "deepseek_v3"})
      if (type == moe) config.refuse("model_type", kMoeMessage, "'" + type + "'");
    for (const auto& entry : architectures)
      if (type == entry.second) return type;
    config.refuse("model_type",
                  "llama, mistral, qwen2 or gpt2 (tauplan help-keys lists the config.json fields)",
                  "'" + type + "'");
  }
  const json& list = root.at("architectures");
  if (!list.is_array() || list.empty() || !list[0].is_string())
    config.refuse("architectures", "a list of architecture names", shown(list));
  const std::string first = list[0].get<std::string>();
  for (const auto& entry : architectures)
    if (entry.first == first) return entry.second;
  config.refuse("architectures",
                "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM or GPT2LMHeadModel",
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

Transformer llama_like(const Config& c, const std::string& type) {
  Transformer t;
  t.layers = c.whole("num_hidden_layers", type);
  t.hidden = c.whole("hidden_size", type);
  t.heads = c.whole("num_attention_heads", type);
  t.kv_heads = c.whole_or("num_key_value_heads", t.heads);
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
  // Mixture-of-experts and MLA first: a Mixtral or DeepSeek config is refused for what it is.
  for (const char* key : moe_fields())
    if (root.contains(key)) config.refuse(key, kMoeMessage, shown(root.at(key)));
  const std::string type = model_type_of(root, config);
  for (const auto& item : root.items()) {
    const auto& fields = hf_config_fields();
    const bool known = std::any_of(fields.begin(), fields.end(), [&](const HfConfigField& f) {
      return item.key() == f.name && has_type(f.model_types, type);
    });
    if (!known)
      config.refuse(item.key(),
                    fmt::format("a {} config.json field tauplan reads or knows not to change the "
                                "cost (tauplan help-keys lists them)",
                                type),
                    "an unknown field");
  }
  Transformer t = type == "gpt2" ? gpt2(config) : llama_like(config, type);

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
  w.description = fmt::format(
      "HuggingFace config.json ({}): {} layers, d={}, {} heads / {} KV heads, {} {}, vocabulary "
      "{}, sequence {}",
      type, t.layers, t.hidden, t.heads, t.kv_heads, to_string(t.feed_forward), t.ffn_hidden,
      t.vocabulary, t.sequence);
  w.transformer = t;
  derive_workload_fields(w);
  return w;
}

}  // namespace tauplan::model
