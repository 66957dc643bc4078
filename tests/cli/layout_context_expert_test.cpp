// layout_context_expert_test.cpp: context parallelism (ring attention, job key
// context_parallel) and expert parallelism (MoE all-to-alls, job key expert_parallel) end to end:
// `tauplan layout` prints their mesh dimensions, traffic and time; `tauplan predict` and
// `tauplan simulate` run the same Plan and agree with the closed form; impossible sizes are one
// line naming the key, exit 2.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

// GCC 12 reports -Wnull-dereference inside nlohmann's inlined getters (a false positive).
#pragma GCC diagnostic ignored "-Wnull-dereference"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

bool has(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

/// Llama 3 8B (sequence 8192, 8 K/V heads of 128) on 2 DGX H100 nodes: d2 t4 c2 with sequence
/// parallelism, 8 micro-batches of 1 sequence.
const std::string kLlamaContext =
    "workload: llama3-8b\nplatform: dgx-h100-16n-1to1\nworkers: 16\nbatch: 16\n"
    "tensor_parallel: 4\ncontext_parallel: 2\nsequence_parallel: true\nmicro_batches: 8\n"
    "zero_stage: 1\n";

/// Mixtral 8x7B on 8 DGX H100 nodes: 64 replicas, the 8 experts of each layer split over the 8
/// GPUs of a node, ZeRO 3, selective recomputation, 1 micro-batch of 1 sequence of 4096.
const std::string kMixtralExpert =
    "workload: mixtral-8x7b\nplatform: dgx-h100-16n-1to1\nworkers: 64\nbatch: 64\n"
    "expert_parallel: 8\nzero_stage: 3\nrecompute: selective\n";

/// A small mixture of experts the test platforms run in milliseconds: 4 layers, 4 SwiGLU experts
/// of which each token takes 2.
std::string tiny_moe() {
  return write_temp_file("tiny-moe.yaml",
                         "name: tiny-moe\ntransformer:\n  layers: 4\n  hidden: 256\n  heads: 4\n"
                         "  feed_forward: swiglu\n  ffn_hidden: 512\n  sequence: 256\n"
                         "  vocabulary: 1000\n  moe:\n    experts: 4\n    experts_per_token: 2\n"
                         "    expert_ffn_hidden: 256\n");
}

struct EngineRounds {
  double analytic = 0, simgrid = 0, closed_form = 0, analytic_comm = 0;
};

/// predict, simulate and layout of one job; every one must exit 0.
EngineRounds run_engines(const std::string& job) {
  EngineRounds rounds;
  const auto predicted = run_tauplan({"predict", job, "--json"});
  INFO(predicted.err);
  REQUIRE(predicted.exit_code == 0);
  const auto simulated = run_tauplan({"simulate", job, "--json"});
  INFO(simulated.err);
  REQUIRE(simulated.exit_code == 0);
  const auto laid_out = run_tauplan({"layout", job, "--json"});
  INFO(laid_out.err);
  REQUIRE(laid_out.exit_code == 0);
  const auto a = nlohmann::json::parse(predicted.out)["results"][0];
  const auto s = nlohmann::json::parse(simulated.out)["results"][0];
  CHECK(a["strategy"] == "mesh");
  CHECK(a["workers"] == 4);
  CHECK(a["engine"] == "analytic");
  CHECK(s["engine"] == "simgrid");
  rounds.analytic = a["round_s"].get<double>();
  rounds.analytic_comm = a["comm_s"].get<double>();
  rounds.simgrid = s["round_s"].get<double>();
  rounds.closed_form = nlohmann::json::parse(laid_out.out)["time"]["iteration_s"].get<double>();
  return rounds;
}

}  // namespace

TEST_CASE(
    "layout context: a context-parallel layout prints its mesh dimension, ring traffic and "
    "exposed time") {
  const auto f = write_temp_file("llama-c2.yaml", kLlamaContext + "recompute: selective\n");
  const auto r = run_tauplan({"layout", f});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.out, "layout d2 t4 c2 m8 zero1 selective sp of llama3-8b"));
  CHECK(has(r.out, " context 2 ("));
  CHECK(has(r.out, "  context:  "));
  CHECK(has(r.out, "K/V blocks of 4 MiB around the ring"));
  CHECK(has(r.out, "K/V ring exposed "));
  CHECK_FALSE(has(r.out, "  expert:   "));  // a dense model: no expert traffic line
  const auto j = run_tauplan({"layout", f, "--json"});
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  const auto& traffic = doc["traffic"];
  // Ring attention over c = 2: (c - 1) K/V blocks forward, 2 (c - 1) backward per layer and
  // micro-batch, and one more forward under selective recomputation (the attention core runs
  // again): 4 x 32 layers x 8 micro-batches. A block is K and V of the rank's 8192 / 2 tokens,
  // 8 K/V heads of 128 split over t = 4: 4096 x 2 x 256 values x 2 bytes = 4 MiB.
  CHECK(traffic["context_messages"].get<long long>() == 4 * 32 * 8);
  CHECK(traffic["context_message_bytes"].get<double>() == 4096.0 * 2 * 256 * 2);
  CHECK(traffic["context_bytes_per_rank"].get<double>() == 1024 * 4194304.0);
  CHECK(traffic["expert_alltoalls"].get<long long>() == 0);
  CHECK(doc["layout"] == "d2 t4 c2 m8 zero1 selective sp");
  // Without recomputation the attention core's forward runs once: 3 x 32 x 8.
  const auto g = write_temp_file("llama-c2-none.yaml", kLlamaContext);
  const auto n = run_tauplan({"layout", g, "--json"});
  INFO(n.err);
  REQUIRE(n.exit_code == 0);
  CHECK(nlohmann::json::parse(n.out)["traffic"]["context_messages"].get<long long>() == 3 * 32 * 8);
}

TEST_CASE(
    "layout expert: Mixtral 8x7B with expert_parallel 8 prints its experts' all-to-alls "
    "and gradients") {
  const auto f = write_temp_file("mixtral-e8.yaml", kMixtralExpert);
  const auto r = run_tauplan({"layout", f});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.out, "layout d64 e8 zero3 selective of mixtral-8x7b (46.7B parameters)"));
  CHECK(has(r.out, " expert 8 (inside a node)"));
  CHECK(has(r.out, "  expert:   128 all-to-alls of 64 MiB per rank"));
  CHECK(has(r.out, ", all-to-alls "));
  CHECK_FALSE(has(r.out, "  context:  "));
  const auto j = run_tauplan({"layout", f, "--json"});
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  const auto& traffic = doc["traffic"];
  // 4 all-to-alls per MoE layer (dispatch and combine, forward and backward) x 32 layers; each
  // carries the rank's 4096 tokens x top-2 copies x 4096 values x 2 bytes = 64 MiB, of which the
  // 7 other expert ranks get 7/8.
  CHECK(traffic["expert_alltoalls"].get<long long>() == 4 * 32);
  CHECK(traffic["expert_alltoall_bytes"].get<double>() == 4096.0 * 2 * 4096 * 2);
  CHECK(traffic["expert_bytes_per_rank"].get<double>() == Approx(128 * 64.0 * (1 << 20) * 7 / 8));
  // Each rank holds 1 of the 8 experts of each of the 32 layers (3 x 4096 x 14336 each); its
  // gradients are reduced over the t c d / e = 8 ranks holding the same expert.
  CHECK(traffic["expert_data_parameters"].get<double>() == 32.0 * 3 * 4096 * 14336);
  CHECK(traffic["expert_data_bytes_per_rank"].get<double>() > 0);
  CHECK(traffic["context_messages"].get<long long>() == 0);
  // The experts split 8 ways leave a rank 1/8 of the expert weights: 1.6B dense + 5.6B expert.
  const double parameters = doc["memory"]["stages"][0]["parameters"].get<double>();
  CHECK(parameters == Approx(46702792704.0 - 32.0 * 7 * 3 * 4096 * 14336));
}

TEST_CASE(
    "layout context/expert cli: predict and simulate run a context-parallel layout, the "
    "same Plan as the closed form") {
  const std::string job = "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR
                          "/platforms/test-crossbar-4.xml\nstrategies: [mesh]\nworkers: 4\n"
                          "batch: 8\niterations: 3\n";
  const auto c2 = run_engines(write_temp_file("gpt2-c2.yaml", job + "context_parallel: 2\n"));
  // Engines without contention on this crossbar: SimGrid within a few percent of the analytic
  // engine, and both at the closed form of `tauplan layout` (model/ir/layout_cost.hpp).
  CHECK(c2.simgrid == Approx(c2.analytic).epsilon(0.03));
  CHECK(c2.analytic == Approx(c2.closed_form).epsilon(0.01));
  // The ring is lowered into the Plan: the same 4 GPUs as data parallelism alone send more.
  const auto c1 = run_engines(write_temp_file("gpt2-c1.yaml", job));
  CHECK(c1.simgrid == Approx(c1.analytic).epsilon(0.03));
  CHECK(c2.analytic_comm > c1.analytic_comm);
  CHECK(c2.analytic != Approx(c1.analytic).epsilon(0.01));
}

TEST_CASE(
    "layout context/expert cli: predict and simulate run an expert-parallel MoE, the same "
    "Plan as the closed form") {
  const std::string job = "workload: " + tiny_moe() +
                          "\nplatform: " TAUPLAN_SOURCE_DIR
                          "/platforms/test-crossbar-4.xml\nstrategies: [mesh]\nworkers: 4\n"
                          "batch: 8\niterations: 3\n";
  const auto e4 = run_engines(write_temp_file("moe-e4.yaml", job + "expert_parallel: 4\n"));
  CHECK(e4.simgrid == Approx(e4.analytic).epsilon(0.03));
  CHECK(e4.analytic == Approx(e4.closed_form).epsilon(0.01));
  // e = 1: no all-to-alls, every rank reduces the gradients of all 4 experts; a different Plan.
  const auto e1 = run_engines(write_temp_file("moe-e1.yaml", job));
  CHECK(e1.simgrid == Approx(e1.analytic).epsilon(0.03));
  CHECK(e1.analytic == Approx(e1.closed_form).epsilon(0.01));
  CHECK(e4.analytic != Approx(e1.analytic).epsilon(0.01));
  // The tensor-parallel MoE layout with sequence parallelism runs too.
  const auto t2 = write_temp_file("moe-t2.yaml", job +
                                                     "tensor_parallel: 2\nexpert_parallel: 2\n"
                                                     "sequence_parallel: true\n");
  const auto p = run_tauplan({"predict", t2});
  INFO(p.err);
  CHECK(p.exit_code == 0);
}

TEST_CASE(
    "layout context/expert cli: impossible context and expert sizes are one line naming "
    "the key") {
  const std::string gpt2 =
      "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml\n";
  const std::string gpt2_12 =
      "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR "/platforms/h200-nvlink-ib.xml\n";
  const std::string mixtral = "workload: mixtral-8x7b\nplatform: dgx-h100-16n-1to1\n";

  const auto c0 = write_temp_file("c0.yaml", gpt2 + "workers: 4\nbatch: 8\ncontext_parallel: 0\n");
  expect_bad_input({"layout", c0},
                   c0 + ": context_parallel: expected a whole number >= 1, got '0'");

  // 1024 tokens do not split into 2 x 3 equal chunks (load-balanced causal split).
  const auto c3 =
      write_temp_file("c3.yaml", gpt2_12 + "workers: 12\nbatch: 12\ncontext_parallel: 3\n");
  expect_bad_input({"layout", c3},
                   c3 + ": context_parallel: expected a size whose 2 x context_parallel chunks "
                        "split the sequence of 1024 tokens of gpt2-small evenly");

  const auto w3 = write_temp_file("w3.yaml", gpt2 + "workers: 4\nbatch: 8\ncontext_parallel: 3\n");
  expect_bad_input({"layout", w3},
                   w3 + ": workers: expected a multiple of tensor_parallel x pipeline_parallel x "
                        "context_parallel (1 x 1 x 3 = 3)");

  const auto dc = write_temp_file(
      "dc.yaml", gpt2 + "workers: 4\nbatch: 8\ncontext_parallel: 2\ndata_parallel: 4\n");
  expect_bad_input({"layout", dc},
                   dc +
                       ": data_parallel: expected data_parallel x tensor_parallel x "
                       "pipeline_parallel x context_parallel = workers (4), got 4 x 1 x 1 x 2 = 8");

  const auto dense = write_temp_file("dense.yaml", gpt2 +
                                                       "workers: 4\nbatch: 8\n"
                                                       "expert_parallel: 2\n");
  expect_bad_input({"layout", dense}, dense +
                                          ": expert_parallel: expected 1 for gpt2-small, a "
                                          "model without experts");

  const auto e3 = write_temp_file("e3.yaml", mixtral +
                                                 "workers: 64\nbatch: 64\nzero_stage: 3\n"
                                                 "expert_parallel: 3\n");
  expect_bad_input({"layout", e3}, e3 + ": expert_parallel: expected a divisor of the 8 routed "
                                        "experts of mixtral-8x7b, got 3");

  // 8 experts over 4 ranks of data: expert groups are carved out of t c d.
  const auto e8 = write_temp_file("e8.yaml", mixtral +
                                                 "workers: 4\nbatch: 4\nzero_stage: 3\n"
                                                 "expert_parallel: 8\n");
  expect_bad_input({"layout", e8}, e8 + ": expert_parallel: expected a divisor of tensor_parallel "
                                        "x context_parallel x data_parallel (1 x 1 x 4)");

  const auto sp = write_temp_file("sp.yaml", mixtral +
                                                 "workers: 64\nbatch: 64\nzero_stage: 3\n"
                                                 "tensor_parallel: 2\nexpert_parallel: 8\n");
  expect_bad_input({"layout", sp}, sp + ": sequence_parallel: expected true for mixtral-8x7b, a "
                                        "mixture of experts with tensor_parallel 2");

  // The engines check the same keys.
  const auto moe = write_temp_file("moe-e3.yaml", "workload: " + tiny_moe() +
                                                      "\nplatform: " TAUPLAN_SOURCE_DIR
                                                      "/platforms/test-crossbar-4.xml\n"
                                                      "strategies: [mesh]\nworkers: 4\nbatch: 8\n"
                                                      "expert_parallel: 3\n");
  expect_bad_input({"simulate", moe},
                   ": expert_parallel: expected a divisor of the 4 routed "
                   "experts of tiny-moe, got 3");
  const auto p0 = write_temp_file("p0.yaml", gpt2 +
                                                 "strategies: [mesh]\nworkers: 4\nbatch: 8\n"
                                                 "context_parallel: 0\n");
  expect_bad_input({"predict", p0}, p0 + ": context_parallel: expected a whole number >= 1");
}
