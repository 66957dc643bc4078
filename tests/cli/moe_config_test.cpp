// moe_config_test.cpp: mixture-of-experts HuggingFace config.json files (Mixtral, DeepSeek-V3;
// model/inputs/hf_config.hpp) through the CLI: predict plans Mixtral from its config, layout states
// the published parameter count, help-keys lists the new fields, and DeepSeek-V3's released file
// (multi-token prediction layer 1) is bad input in one line naming the field.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/inputs/transformer.hpp"
#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::read_text_file;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kModels = TAUPLAN_SOURCE_DIR "/experiments/models/";
const std::string kMixtralJob = kModels + "jobs/mixtral-8x7b.yaml";

/// The number before "B parameters)" in layout's first line, in parameters (-1 if absent).
double layout_parameters(const std::string& out) {
  const auto end = out.find("B parameters)");
  if (end == std::string::npos) return -1;
  const auto start = out.rfind('(', end);
  if (start == std::string::npos) return -1;
  return std::strtod(out.substr(start + 1, end - start - 1).c_str(), nullptr) * 1e9;
}

}  // namespace

TEST_CASE("config.json: predict plans Mixtral 8x7B from its config.json", "[hf_config]") {
  // The shipped job names the config beside it; --workload names it as a user would.
  for (const std::string& workload : {std::string(), kModels + "mixtral-8x7b/config.json"}) {
    std::vector<std::string> args = {"predict", kMixtralJob};
    if (!workload.empty()) args.insert(args.end(), {"--workload", workload});
    const auto r = run_tauplan(args);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("mesh") != std::string::npos);
    CHECK(r.err.find("workload=mixtral-8x7b") != std::string::npos);  // the provenance line
  }
  // layout prints the derived count: Mixtral 8x7B has 46.7B parameters (Mistral AI, "Mixtral of
  // experts", 2023-12-11; experiments/models/README.md).
  const auto r = run_tauplan({"layout", kMixtralJob});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const double parameters = layout_parameters(r.out);
  CHECK(std::abs(parameters - 46.7e9) / 46.7e9 <= 0.01);
  CHECK(r.out.find("expert 8") != std::string::npos);
}

TEST_CASE("config.json: DeepSeek-V3 as released (one MTP layer) is bad input naming the field",
          "[hf_config]") {
  // The shipped copy says num_nextn_predict_layers 0; the Hub's file says 1.
  std::string original = read_text_file(kModels + "deepseek-v3/config.json");
  const std::string shipped = "\"num_nextn_predict_layers\": 0,";
  const auto at = original.find(shipped);
  REQUIRE(at != std::string::npos);
  original.replace(at, shipped.size(), "\"num_nextn_predict_layers\": 1,");
  const std::string path = write_temp_file("config.json", original);
  expect_bad_input({"predict", kMixtralJob, "--workload", path},
                   path +
                       ": num_nextn_predict_layers: expected 0 (the multi-token prediction "
                       "module is not modelled yet: set it to 0 to plan the main model, 671B for "
                       "DeepSeek-V3), got 1");
  // A mixture-of-experts field in a dense model's config is refused as such.
  const std::string llama = write_temp_file(
      "llama.json", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
  "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
  "max_position_embeddings": 32, "num_local_experts": 8})");
  expect_bad_input({"predict", kMixtralJob, "--workload", llama},
                   llama +
                       ": num_local_experts: expected no mixture-of-experts / MLA field in a "
                       "llama config.json");
}

TEST_CASE("config.json: help-keys lists the mixture-of-experts and MLA fields", "[hf_config]") {
  const auto r = run_tauplan({"help-keys"});
  REQUIRE(r.exit_code == 0);
  for (const char* field : {"num_local_experts",
                            "num_experts_per_tok",
                            "router_aux_loss_coef",
                            "output_router_logits",
                            "router_jitter_noise",
                            "n_routed_experts",
                            "n_shared_experts",
                            "moe_intermediate_size",
                            "first_k_dense_replace",
                            "moe_layer_freq",
                            "q_lora_rank",
                            "kv_lora_rank",
                            "qk_nope_head_dim",
                            "qk_rope_head_dim",
                            "v_head_dim",
                            "num_nextn_predict_layers",
                            "quantization_config",
                            "n_group",
                            "topk_group",
                            "topk_method",
                            "scoring_func",
                            "norm_topk_prob",
                            "routed_scaling_factor",
                            "aux_loss_alpha",
                            "seq_aux",
                            "ep_size"})
    CHECK(r.out.find(std::string("\n") + field + " ") != std::string::npos);
}

TEST_CASE("help-keys lists every key of a transformer workload YAML, the reader's own list") {
  const auto r = run_tauplan({"help-keys"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("\nworkload YAML keys") != std::string::npos);
  for (const auto& key : tauplan::model::transformer_workload_keys())
    CHECK(r.out.find(std::string("\n") + key.name + " ") != std::string::npos);
  // The reader accepts exactly these: a key of the list under a map is known there, another
  // is refused naming it.
  CHECK(tauplan::model::transformer_keys_under("transformer.mla") ==
        std::vector<std::string>{"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                 "qk_rope_head_dim", "v_head_dim"});
  const std::string bad = write_temp_file(
      "moe-typo.yaml",
      "name: x\ntransformer: {layers: 2, hidden: 64, heads: 4, sequence: 16, vocabulary: 100,\n"
      "  moe: {experts: 4, experts_per_token: 2, expert_ffn_hidden: 64, top_k: 2}}\n");
  const auto refused = run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload", bad});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("transformer.moe.top_k") != std::string::npos);
}
