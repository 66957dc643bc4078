// hf_config.hpp: a HuggingFace `config.json` read as a transformer workload.
//
// load_workload (model/inputs/workload.hpp) hands a file whose name ends in .json and whose
// top-level object has `model_type` (or `architectures`) to parse_hf_config, which maps the
// config's fields onto a Transformer (model/inputs/transformer.hpp) and derives the workload from
// it as a workload YAML's `transformer:` map would be:
//  - Llama, Mistral, Qwen2 (model_type llama | mistral | qwen2): num_hidden_layers,
//    hidden_size, num_attention_heads, num_key_value_heads (default: the heads),
//    intermediate_size, vocab_size, tie_word_embeddings (default false); SwiGLU feed-forward
//    (hidden_act must be silu), RMSNorm, rotary positions, no biases but Qwen2's Q, K and V
//    biases (its attention code has bias=True on q/k/v_proj and False on o_proj);
//  - Mixtral (mixtral; Jiang et al. 2024, arXiv 2401.04088): the Llama fields, and every layer's
//    feed-forward a mixture of num_local_experts SwiGLU experts of intermediate_size, top
//    num_experts_per_tok (Transformer::moe; no shared expert, no dense layer, dropless);
//    router_aux_loss_coef, output_router_logits and router_jitter_noise are training-loss and
//    routing-noise settings with no weights and no GEMM: known, ignored;
//  - DeepSeek-V2 and V3 (deepseek_v2 | deepseek_v3; arXiv 2405.04434, 2412.19437): the first
//    first_k_dense_replace layers dense SwiGLU of intermediate_size, the others DeepSeekMoE
//    (n_routed_experts of moe_intermediate_size, top num_experts_per_tok, n_shared_experts
//    always on; moe_layer_freq must be 1), multi-head latent attention in every layer
//    (Transformer::mla: q_lora_rank, null meaning 0, kv_lora_rank, qk_nope_head_dim,
//    qk_rope_head_dim, v_head_dim; num_key_value_heads must equal the heads, as the released
//    configs have it). The routing fields (n_group, topk_group, topk_method, scoring_func,
//    norm_topk_prob, routed_scaling_factor), the balance-loss ones (aux_loss_alpha, seq_aux),
//    ep_size and rope_scaling choose which experts or scale values, not how many GEMMs: known,
//    ignored. num_nextn_predict_layers > 0 (V3's multi-token prediction module, Section 2.2) is
//    refused: not modelled; 0 plans the main model. quantization_config (V3's released weights
//    are fp8 blocks) describes the stored checkpoint, not the training run: ignored, the bytes
//    follow torch_dtype as for every config (V3's own FP8 mixed-precision training, Section 3.3,
//    is not what tauplan models);
//  - GPT-2 (model_type gpt2): n_layer, n_embd, n_head, n_inner (null: 4 n_embd), n_positions
//    (the learned position table), vocab_size; GELU, LayerNorm, every linear with a bias,
//    embeddings tied (tie_word_embeddings, default true).
// The sequence of one sample is the longest context the config allows (max_position_embeddings,
// GPT-2's n_positions): a config does not say what length a run trains at, and this is what it
// can serve. To train at another length, write the shape as a workload YAML (its
// `transformer.sequence`). Bytes: torch_dtype bfloat16 or float16 is mixed-precision Adam (2
// bytes per weight and gradient, 12 of optimizer state: fp32 master weights and two moments,
// as the catalog's llama3-70b.yaml); float32 or no torch_dtype is fp32 Adam (4 and 8, as
// gpt2-small.yaml). Dropout (attention_dropout, GPT-2's attn_pdrop / resid_pdrop / embd_pdrop
// > 0) sets the transformer's dropout.
// Strict as the YAML readers: a field that is neither read nor known not to change the cost
// (rope_theta, rms_norm_eps, token ids, ...: hf_config_fields lists both kinds, and `tauplan
// help-keys` prints them) is refused naming it, as are mixture-of-experts and MLA fields in a
// config of a dense model_type, Qwen2-MoE (model_type qwen2_moe: not read yet), an unknown
// model_type, a missing required field, a value of the wrong type and a JSON syntax error:
// each an InputError, one line naming the file and the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/inputs/workload.hpp"

namespace tauplan::model {

/// The workload of a config.json's text, or nullopt when the text is a JSON object without
/// `model_type` and `architectures` (then it is not a HuggingFace config). InputError on a JSON
/// syntax error and on any field it cannot map (see above). `origin` names the file.
std::optional<Workload> parse_hf_config(const std::string& text, const std::string& origin);

/// One config.json field tauplan reads or knowingly ignores, for `tauplan help-keys`.
struct HfConfigField {
  const char* name;
  /// The model_types that read or ignore it ("llama mistral qwen2 mixtral", "gpt2", ...),
  /// "all", or "none" for a field listed only to say it is refused.
  const char* model_types;
  const char* meaning;  ///< what it maps to, or why it is ignored
};
const std::vector<HfConfigField>& hf_config_fields();

}  // namespace tauplan::model
