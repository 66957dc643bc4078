// hf_config_test.cpp: HuggingFace config.json files as workloads (model/hf_config.hpp): the
// shipped configs of experiments/models/ give the published parameter counts, and bad configs
// are refused in one line naming the file and the field.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hf_config.hpp"
#include "model/workload.hpp"

using namespace tauplan;

namespace {

const std::string kModels = TAUPLAN_SOURCE_DIR "/experiments/models/";

/// The one-line message parse_hf_config gives for `text` ("" when it accepts it).
std::string error_of(const std::string& text) {
  try {
    (void)model::parse_hf_config(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// A Llama-like config with `extra` fields added (",\n  \"key\": value" each).
std::string llama(const std::string& extra = "", const std::string& type = "llama") {
  return "{\n  \"model_type\": \"" + type +
         "\",\n  \"num_hidden_layers\": 2,\n  \"hidden_size\": 64,\n"
         "  \"num_attention_heads\": 4,\n  \"num_key_value_heads\": 2,\n"
         "  \"intermediate_size\": 128,\n  \"vocab_size\": 100,\n"
         "  \"max_position_embeddings\": 32" +
         extra + "\n}\n";
}

}  // namespace

TEST_CASE("the shipped config.json files give the published parameter counts within 1%") {
  struct Case {
    const char* folder;
    double published;
    const char* source;
  };
  // Sources: experiments/models/README.md.
  for (const Case& c : {Case{"llama3-8b", 8.03e9, "meta-llama/Meta-Llama-3-8B model card: 8.03B"},
                        Case{"qwen2-7b", 7.62e9, "Qwen2 technical report / Qwen/Qwen2-7B: 7.62B"},
                        Case{"gpt2", 124e6, "openai-community/gpt2 model card: 124M"}}) {
    const model::Workload w = model::load_workload(kModels + c.folder + "/config.json");
    REQUIRE(w.transformer);
    const double error = (w.parameters - c.published) / c.published;
    INFO(c.folder << ": derived " << w.parameters << ", published " << c.published << " ("
                  << c.source << ")");
    WARN(fmt::format("{}: {:.0f} parameters, {:+.2f}% against {:g} ({})", c.folder, w.parameters,
                     100 * error, c.published, c.source));
    CHECK(std::abs(error) <= 0.01);
    CHECK(w.name == c.folder);
    CHECK(w.sample_unit == "sequence");
  }
}

TEST_CASE("a config.json maps its fields onto the transformer") {
  const model::Workload llama = model::load_workload(kModels + "llama3-8b/config.json");
  const model::Transformer& t = *llama.transformer;
  CHECK(t.layers == 32);
  CHECK(t.hidden == 4096);
  CHECK(t.heads == 32);
  CHECK(t.kv_heads == 8);
  CHECK(t.ffn_hidden == 14336);
  CHECK(t.vocabulary == 128256);
  CHECK(t.sequence == 8192);  // max_position_embeddings: the sample is the whole context
  CHECK(t.feed_forward == model::FeedForward::SwiGlu);
  CHECK(t.normalization == model::Normalization::RmsNorm);
  CHECK(t.positions == model::PositionEmbedding::Rotary);
  CHECK_FALSE(t.tied_embeddings);
  CHECK_FALSE(t.linear_bias);
  CHECK_FALSE(t.qkv_bias);
  CHECK_FALSE(t.dropout);
  CHECK(llama.bytes_per_parameter == 2);  // torch_dtype bfloat16: mixed-precision Adam
  CHECK(llama.optimizer_bytes_per_parameter == 12);
  // Exactly the catalog's count for the same shape: 32 x 218,112,000 + 2 x 128256 x 4096 + 4096.
  CHECK(llama.parameters == 8030261248.0);

  // Qwen2: biases on Q, K and V only (h + 2 kv per layer: 3584 + 2 x 512).
  const model::Workload qwen = model::load_workload(kModels + "qwen2-7b/config.json");
  CHECK(qwen.transformer->qkv_bias);
  CHECK(qwen.transformer->attention_parameters() ==
        2.0 * 3584 * 3584 + 2.0 * 3584 * 512 + 3584 + 2 * 512);
  CHECK(qwen.parameters == 7615616512.0);
  CHECK(qwen.transformer->sequence == 131072);

  // GPT-2: n_inner absent = 4 n_embd, learned positions, tied, biases, dropout 0.1, fp32.
  const model::Workload gpt2 = model::load_workload(kModels + "gpt2/config.json");
  const model::Transformer& g = *gpt2.transformer;
  CHECK(g.ffn_hidden == 4 * 768);
  CHECK(g.max_positions == 1024);
  CHECK(g.sequence == 1024);
  CHECK(g.tied_embeddings);
  CHECK(g.linear_bias);
  CHECK(g.dropout);
  CHECK(g.normalization == model::Normalization::LayerNorm);
  CHECK(g.positions == model::PositionEmbedding::Learned);
  CHECK(gpt2.bytes_per_parameter == 4);  // no torch_dtype: fp32 Adam
  CHECK(gpt2.optimizer_bytes_per_parameter == 8);
  // The catalog's gpt2-small has the same shape: the same count.
  CHECK(gpt2.parameters == model::load_workload("gpt2-small").parameters);
  CHECK(gpt2.flop_per_sample == model::load_workload("gpt2-small").flop_per_sample);
}

TEST_CASE("a config.json: architectures stands in for model_type, and the defaults") {
  std::string text = llama();
  text.replace(text.find("\"model_type\": \"llama\""), 21,
               "\"architectures\": [\"MistralForCausalLM\"]");
  const auto w = model::parse_hf_config(text, "m.json");
  REQUIRE(w);
  CHECK(w->name == "m");
  CHECK(w->transformer->kv_heads == 2);
  CHECK(w->bytes_per_parameter == 4);
  // num_key_value_heads absent: multi-head attention.
  std::string mha = llama();
  mha.replace(mha.find("  \"num_key_value_heads\": 2,\n"), 28, "");
  CHECK(model::parse_hf_config(mha, "m.json")->transformer->kv_heads == 4);
  // A sliding window no shorter than the sequence never applies; Qwen2's only when used.
  CHECK(error_of(llama(",\n  \"sliding_window\": 32", "mistral")).empty());
  CHECK(error_of(llama(",\n  \"sliding_window\": 16, \"use_sliding_window\": false", "qwen2"))
            .empty());
  // JSON that is not a HuggingFace config is left to the workload YAML reader.
  CHECK_FALSE(model::parse_hf_config("{\"name\": \"x\"}", "x.json"));
}

TEST_CASE("bad config.json files are refused in one line naming the file and the field") {
  struct Case {
    std::string text;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {llama("", "bert"), "bad.json: model_type: expected llama, mistral, qwen2 or gpt2"},
      {"{\"architectures\": [\"T5ForConditionalGeneration\"]}",
       "bad.json: architectures: expected LlamaForCausalLM"},
      {"{\"model_type\": \"llama\", \"hidden_size\": 64}",
       "bad.json: num_hidden_layers: expected a whole number > 0 (required for llama)"},
      {"{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4}",
       "bad.json: vocab_size: expected a whole number > 0 (required for gpt2)"},
      {llama(",\n  \"num_local_experts\": 8,\n  \"num_experts_per_tok\": 2", "mixtral"),
       "bad.json: num_local_experts: expected a dense model (mixture-of-experts / MLA not "
       "modelled yet), got 8"},
      {llama(",\n  \"n_routed_experts\": 256"),
       "bad.json: n_routed_experts: expected a dense model (mixture-of-experts / MLA not modelled "
       "yet)"},
      {llama(",\n  \"kv_lora_rank\": 512"),
       "bad.json: kv_lora_rank: expected a dense model (mixture-of-experts / MLA not modelled "
       "yet)"},
      {llama("", "deepseek_v3"),
       "bad.json: model_type: expected a dense model (mixture-of-experts / MLA not modelled yet)"},
      {llama(",\n  \"hidden_sise\": 64"),
       "bad.json: hidden_sise: expected a llama config.json "
       "field tauplan reads or knows not to change the cost"},
      {llama(",\n  \"n_positions\": 64"), "bad.json: n_positions: expected a llama config.json"},
      {llama(",\n  \"hidden_act\": \"gelu\""),
       "bad.json: hidden_act: expected silu (a SwiGLU feed-forward), got 'gelu'"},
      {llama(",\n  \"attention_bias\": true"), "bad.json: attention_bias: expected false"},
      {llama(",\n  \"head_dim\": 32"), "bad.json: head_dim: expected hidden_size / "},
      {llama(",\n  \"sliding_window\": 16", "mistral"),
       "bad.json: sliding_window: expected null or at least the sequence (32)"},
      {llama(",\n  \"torch_dtype\": \"float8_e4m3fn\""),
       "bad.json: torch_dtype: expected bfloat16, float16 or float32, got 'float8_e4m3fn'"},
      {llama(",\n  \"tie_word_embeddings\": \"yes\""),
       "bad.json: tie_word_embeddings: expected true or false, got \"yes\""},
      {"{\"model_type\": \"llama\", \"num_hidden_layers\": \"32\"}",
       "bad.json: num_hidden_layers: expected a whole number > 0, got \"32\""},
      {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2.5}",
       "bad.json: num_hidden_layers: expected a whole number > 0, got 2.5"},
      {"{\"model_type\": \"llama\", \"num_hidden_layers\": -2}",
       "bad.json: num_hidden_layers: expected a whole number > 0, got -2"},
      {"{\"model_type\": 7}", "bad.json: model_type: expected a string, got 7"},
      {"{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 64,,\n}",
       "bad.json: line 3: expected valid JSON"},
      {"{\n  \"model_type\": \"llama\"\n", "bad.json: line 3: expected valid JSON"},
      {"{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 5, \"n_positions\": "
       "8, \"vocab_size\": 10}",
       "bad.json: n_head: expected a divisor of n_embd (64), got 5"},
      {"{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4, \"n_positions\": "
       "8, \"vocab_size\": 10, \"activation_function\": \"relu\"}",
       "bad.json: activation_function: expected gelu"},
      {"{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4, \"n_positions\": "
       "8, \"vocab_size\": 10, \"attn_pdrop\": 2}",
       "bad.json: attn_pdrop: expected a probability in [0, 1], got 2"},
      {llama(",\n  \"num_key_value_heads\": 3")
           .replace(llama().find("  \"num_key_value_heads\": 2,\n"), 28, ""),
       "bad.json: num_key_value_heads: expected a divisor of num_attention_heads (4), got 3"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string message = error_of(c.text);
    INFO(message);
    CHECK(message.find(c.fragment) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("load_workload reads a .json file as a config.json, naming the file in errors") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tauplan_hf_config_test_bad.json").string();
  {
    std::ofstream out(path);
    out << llama(",\n  \"num_local_experts\": 8", "mixtral");
  }
  std::string message;
  try {
    (void)model::load_workload(path);
  } catch (const InputError& e) {
    message = e.what();
  }
  std::remove(path.c_str());
  CHECK(message == path +
                       ": num_local_experts: expected a dense model (mixture-of-experts / MLA not "
                       "modelled yet), got 8");
}
