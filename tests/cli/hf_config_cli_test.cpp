// hf_config_cli_test.cpp: a HuggingFace config.json as --workload: refused in one line, exit 2,
// when it holds what its model type does not have or tauplan does not model
// (model/inputs/hf_config.hpp), listed by help-keys.
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

TEST_CASE(
    "config.json: experts in a dense model's config, or an unknown model, is bad input "
    "naming the field") {
  const std::string moe =
      write_temp_file("llama-experts.json",
                      R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
  "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
  "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8,
  "num_experts_per_tok": 2})");
  expect_bad_input({"predict", "--platform", "test-crossbar-4", "--workload", moe},
                   moe +
                       ": num_experts_per_tok: expected no mixture-of-experts / MLA field in a "
                       "llama config.json");
  const std::string t5 =
      write_temp_file("t5.json", R"({"architectures": ["T5ForConditionalGeneration"]})");
  expect_bad_input({"predict", "--platform", "test-crossbar-4", "--workload", t5},
                   t5 + ": architectures: expected LlamaForCausalLM");
  const std::string broken = write_temp_file("broken.json", "{\"model_type\": \"llama\",\n");
  expect_bad_input({"predict", "--platform", "test-crossbar-4", "--workload", broken},
                   broken + ": line 2: expected valid JSON");
}

TEST_CASE("config.json: help-keys lists the fields read and refused") {
  const auto r = run_tauplan({"help-keys"});
  REQUIRE(r.exit_code == 0);
  for (const char* field :
       {"num_hidden_layers", "num_key_value_heads", "intermediate_size", "max_position_embeddings",
        "tie_word_embeddings", "n_inner", "torch_dtype", "num_local_experts", "kv_lora_rank"})
    CHECK(r.out.find(std::string("\n") + field + " ") != std::string::npos);
}
