// layout_test.cpp: layouts from job keys, their Mesh-TF rules, and every impossible layout
// refused with one line naming the job key (acceptance item 6 of issue 13).
#include <catch2/catch.hpp>

#include <string>

#include "model/base/error.hpp"
#include "model/ir/job.hpp"
#include "model/ir/layout.hpp"

using namespace tauplan;

namespace {

model::Job parse_layout_job(const std::string& yaml) {
  return model::parse_job_yaml(yaml, "job.yaml", "", model::model_job_keys());
}

/// The one-line error check_layout gives for a job, or "" when the layout is accepted.
std::string layout_error(const std::string& yaml) {
  try {
    const model::Job job = parse_layout_job(yaml);
    const model::Layout layout = model::layout_from_job(job);
    model::check_layout(layout, model::load_workload(job.text("workload")),
                        static_cast<double>(job.integer("batch")),
                        static_cast<int>(job.integer("workers")), job.file);
  } catch (const InputError& e) {
    const std::string message = e.what();
    CHECK(message.find('\n') == std::string::npos);
    return message;
  }
  return "";
}

}  // namespace

TEST_CASE("a layout comes from the job keys, data parallel is workers / (t p)") {
  const model::Job job = parse_layout_job(
      "workload: gpt3-175b\nworkers: 64\nbatch: 512\ntensor_parallel: 8\npipeline_parallel: 4\n"
      "micro_batches: 32\npipeline_schedule: gpipe\nzero_stage: 1\nrecompute: selective\n"
      "sequence_parallel: true\n");
  const model::Layout layout = model::layout_from_job(job);
  CHECK(layout.data == 2);
  CHECK(layout.tensor == 8);
  CHECK(layout.pipeline == 4);
  CHECK(layout.micro_batches == 32);
  CHECK(layout.schedule == model::PipelineSchedule::GPipe);
  CHECK(layout.zero_stage == 1);
  CHECK(layout.recompute == model::Recompute::Selective);
  CHECK(layout.sequence_parallel);
  CHECK(layout.workers() == 64);
  CHECK(layout.micro_batch(512) == 8);
  CHECK(layout.label() == "d2 t8 p4 m32 gpipe zero1 selective sp");
  CHECK(model::layout_key_set(job) == "tensor_parallel");
  CHECK(layout_error("workload: gpt3-175b\nworkers: 64\nbatch: 512\ntensor_parallel: 8\n"
                     "pipeline_parallel: 4\nmicro_batches: 32\n") == "");
  // The mesh and its Mesh-TF rules.
  const auto mesh = layout.mesh();
  REQUIRE(mesh.size() == 3);
  CHECK(mesh[0].name == "data");
  CHECK(mesh[1].size == 8);
  CHECK(mesh[2].key == "pipeline_parallel");
  bool layers_on_pipeline = false;
  for (const auto& rule : layout.rules())
    layers_on_pipeline = layers_on_pipeline ||
                         (rule.workload_dimension == "layers" && rule.mesh_dimension == "pipeline");
  CHECK(layers_on_pipeline);
}

TEST_CASE("a job without layout keys asks for none, and the engines refuse one they ignore") {
  const model::Job plain = parse_layout_job("workers: 4\n");
  CHECK(model::layout_key_set(plain).empty());
  CHECK(model::layout_from_job(plain).label() == "d4");
  CHECK_NOTHROW(model::strategy_options(plain));
  CHECK_THROWS_WITH(
      model::strategy_options(parse_layout_job("workers: 4\ntensor_parallel: 2\n")),
      Catch::Contains(
          "job.yaml: tensor_parallel: expected its default unless `strategies` include mesh"));
  CHECK_THROWS_WITH(model::strategy_options(parse_layout_job("workers: 4\nrecompute: full\n")),
                    Catch::Contains("job.yaml: recompute: expected its default"));
  // Strategy mesh reads them: its options carry the layout.
  const model::StrategyOptions mesh = model::strategy_options(parse_layout_job(
      "workers: 8\nstrategies: [mesh]\ntensor_parallel: 2\npipeline_parallel: 2\n"));
  CHECK(mesh.layout.label() ==
        model::layout_from_job(parse_layout_job("workers: 8\ntensor_parallel: 2\n"
                                                "pipeline_parallel: 2\n"))
            .label());
  CHECK(mesh.layout.tensor == 2);
  CHECK(mesh.layout.data == 2);
  // A key set to its default is no layout.
  CHECK(model::layout_key_set(parse_layout_job("workers: 4\ntensor_parallel: 1\nzero_stage: 0\n"))
            .empty());
}

TEST_CASE("mesh sizes whose product differs from the workers are refused") {
  CHECK_THAT(layout_error("workload: gpt3-175b\nworkers: 64\nbatch: 512\ntensor_parallel: 8\n"
                          "pipeline_parallel: 4\ndata_parallel: 4\n"),
             Catch::StartsWith("job.yaml: data_parallel: expected data_parallel x "
                               "tensor_parallel x pipeline_parallel = workers (64), got 4 x 8 x 4 "
                               "= 128"));
  CHECK_THAT(layout_error("workload: gpt3-175b\nworkers: 12\nbatch: 512\ntensor_parallel: 8\n"),
             Catch::StartsWith("job.yaml: workers: expected a multiple of tensor_parallel x "
                               "pipeline_parallel (8 x 1 = 8)"));
}

TEST_CASE("a dimension split more ways than it has elements is refused") {
  // 16 heads split 32 ways
  CHECK_THAT(layout_error("workload: bert-large\nworkers: 32\nbatch: 64\ntensor_parallel: 32\n"),
             Catch::StartsWith("job.yaml: tensor_parallel: expected at most the 16 heads of "
                               "bert-large"));
  // 32 sequences split over 64 replicas
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 64\nbatch: 32\n"),
             Catch::StartsWith("job.yaml: batch: expected at least data_parallel (64) sequences"));
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 64\nbatch: 96\n"),
             Catch::StartsWith("job.yaml: batch: expected a multiple of data_parallel (64)"));
}

TEST_CASE("heads not divisible by the tensor size are refused") {
  CHECK_THAT(layout_error("workload: gpt2-xl\nworkers: 2\nbatch: 8\ntensor_parallel: 2\n"),
             Catch::StartsWith("job.yaml: tensor_parallel: expected a divisor of the 25 heads of "
                               "gpt2-xl"));
  // Llama-2 70B: 64 heads, 8 key/value heads; t = 16 holds whole K/V heads twice.
  CHECK(layout_error("workload: llama2-70b\nworkers: 16\nbatch: 16\ntensor_parallel: 16\n") == "");
}

TEST_CASE("more stages than layers are refused") {
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 16\nbatch: 16\npipeline_parallel: 16\n"),
             Catch::StartsWith("job.yaml: pipeline_parallel: expected at most the 12 layers of "
                               "gpt2-small"));
  CHECK(layout_error("workload: gpt2-small\nworkers: 12\nbatch: 12\npipeline_parallel: 12\n") ==
        "");
}

TEST_CASE("micro-batches that do not divide a replica's batch are refused") {
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 8\nbatch: 64\npipeline_parallel: 4\n"
                          "micro_batches: 3\n"),
             Catch::StartsWith("job.yaml: micro_batches: expected a divisor of the 32 sequences "
                               "each data-parallel replica takes (batch 64 / data_parallel 2), "
                               "got 3"));
}

TEST_CASE("interleaving needs stages, 1F1B and equal chunks") {
  const std::string base = "workload: gpt3-175b\nworkers: 8\nbatch: 64\npipeline_parallel: 8\n";
  CHECK(layout_error(base + "micro_batches: 64\nvirtual_stages: 3\n") == "");
  CHECK_THAT(layout_error(base + "micro_batches: 64\nvirtual_stages: 5\n"),
             Catch::StartsWith("job.yaml: virtual_stages: expected a number that splits the 96 "
                               "layers"));
  CHECK_THAT(layout_error(base + "micro_batches: 4\nvirtual_stages: 2\n"),
             Catch::StartsWith("job.yaml: micro_batches: expected a multiple of "
                               "pipeline_parallel (8)"));
  CHECK_THAT(
      layout_error(base + "micro_batches: 64\nvirtual_stages: 2\npipeline_schedule: gpipe\n"),
      Catch::StartsWith("job.yaml: pipeline_schedule: expected 1f1b"));
  CHECK_THAT(layout_error("workload: gpt3-175b\nworkers: 1\nbatch: 4\nvirtual_stages: 2\n"),
             Catch::StartsWith("job.yaml: virtual_stages: expected 1 without pipeline stages"));
}

TEST_CASE("interleaving with Llama 3's balanced chunks: the first and last one layer short") {
  // Llama 3 405B: 126 layers, 16 stages x 8 chunks of one layer, the first chunk holding only the
  // embedding and the last only the output (Dubey et al. 2024, Section 3.3.2).
  const std::string llama =
      "workload: llama3-405b\nworkers: 128\nbatch: 32\ntensor_parallel: 8\n"
      "pipeline_parallel: 16\nmicro_batches: 32\n";
  CHECK(layout_error(llama + "virtual_stages: 8\n") == "");
  CHECK(layout_error(llama + "virtual_stages: 4\n") == "");  // 64 chunks of 2, two of 1
  // 48 chunks: 126 layers are neither 48 equal chunks nor 48 chunks with two one short.
  CHECK_THAT(layout_error(llama + "virtual_stages: 3\n"),
             Catch::StartsWith("job.yaml: virtual_stages: expected a number that splits the 126 "
                               "layers of llama3-405b into pipeline_parallel x virtual_stages "
                               "equal chunks (or such chunks with the first and the last one "
                               "layer short)"));
}

TEST_CASE("a layout needs a transformer workload, and bad key values are refused by the loader") {
  CHECK_THAT(layout_error("workload: fashion-mlp\nworkers: 2\nbatch: 8\ntensor_parallel: 2\n"),
             Catch::StartsWith("job.yaml: workload: expected a transformer workload"));
  CHECK_THROWS_WITH(parse_layout_job("zero_stage: 4\n"), Catch::Contains("job.yaml: zero_stage"));
  CHECK_THROWS_WITH(parse_layout_job("tensor_parallel: 0\n"),
                    Catch::Contains("job.yaml: tensor_parallel"));
  CHECK_THROWS_WITH(parse_layout_job("recompute: some\n"), Catch::Contains("job.yaml: recompute"));
  CHECK_THROWS_WITH(parse_layout_job("pipeline_schedule: zb\n"),
                    Catch::Contains("job.yaml: pipeline_schedule"));
}

TEST_CASE("stages hold layers / p each, the first ones one more") {
  CHECK(model::stage_layers(96, 8) == std::vector<int>(8, 12));
  CHECK(model::stage_layers(10, 4) == std::vector<int>{3, 3, 2, 2});
  CHECK(model::stage_layers(5, 1) == std::vector<int>{5});
}

TEST_CASE("context and expert sizes the model cannot take are refused, naming the key") {
  // 2 x 3 chunks do not split 1024 tokens.
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 3\nbatch: 3\ncontext_parallel: 3\n"),
             Catch::StartsWith("job.yaml: context_parallel: expected a size whose 2 x "
                               "context_parallel chunks split the sequence of 1024 tokens"));
  CHECK(layout_error("workload: gpt2-small\nworkers: 8\nbatch: 4\ncontext_parallel: 2\n") == "");
  // data x tensor x pipeline x context must be the workers.
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 8\nbatch: 8\ncontext_parallel: 4\n"
                          "data_parallel: 4\n"),
             Catch::StartsWith("job.yaml: data_parallel: expected data_parallel x tensor_parallel "
                               "x pipeline_parallel x context_parallel = workers (8), got 4 x 1 x "
                               "1 x 4 = 16"));
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 6\nbatch: 8\ncontext_parallel: 4\n"),
             Catch::StartsWith("job.yaml: workers: expected a multiple of tensor_parallel x "
                               "pipeline_parallel x context_parallel (1 x 1 x 4 = 4)"));
  // Experts on a dense model.
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 4\nbatch: 8\nexpert_parallel: 2\n"),
             Catch::StartsWith("job.yaml: expert_parallel: expected 1 for gpt2-small, a model "
                               "without experts"));
  CHECK_THAT(layout_error("workload: gpt2-small\nworkers: 4\nbatch: 8\ncontext_parallel: 0\n"),
             Catch::Contains("context_parallel"));
}

TEST_CASE("a mixture of experts: expert sizes divide the experts and t c d, t > 1 needs sp") {
  // Mixtral 8x7B: 8 experts.
  CHECK(layout_error("workload: mixtral-8x7b\nworkers: 8\nbatch: 8\nexpert_parallel: 8\n") == "");
  CHECK_THAT(layout_error("workload: mixtral-8x7b\nworkers: 12\nbatch: 12\nexpert_parallel: 3\n"),
             Catch::StartsWith("job.yaml: expert_parallel: expected a divisor of the 8 routed "
                               "experts of mixtral-8x7b"));
  CHECK_THAT(layout_error("workload: mixtral-8x7b\nworkers: 4\nbatch: 8\nexpert_parallel: 8\n"),
             Catch::StartsWith("job.yaml: expert_parallel: expected a divisor of tensor_parallel "
                               "x context_parallel x data_parallel (1 x 1 x 4)"));
  // Experts carved out of tensor ranks too (MoE parallel folding): t 2 x d 2 = 4 ranks.
  CHECK(layout_error("workload: mixtral-8x7b\nworkers: 4\nbatch: 8\ntensor_parallel: 2\n"
                     "sequence_parallel: true\nexpert_parallel: 4\n") == "");
  CHECK_THAT(layout_error("workload: mixtral-8x7b\nworkers: 4\nbatch: 8\ntensor_parallel: 2\n"),
             Catch::StartsWith("job.yaml: sequence_parallel: expected true for mixtral-8x7b, a "
                               "mixture of experts with tensor_parallel 2"));
}
