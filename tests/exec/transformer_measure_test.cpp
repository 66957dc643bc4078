// transformer_measure_test.cpp: the decoder block trained over layouts
// (exec/transformer_trainer.hpp). Shards put back together give the unsplit vector, and a
// rank's head slot holds its columns of the vocabulary-parallel head; tensor, pipeline, data
// (sync, through the Communicator) and mixed layouts give the unsplit block's loss and gradients
// on the same tokens; a few Adam steps in each layout end at the single worker's parameters; the
// loss falls in every layout; and what the block cannot do is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "exec/token_stream.hpp"
#include "exec/transformer_block.hpp"
#include "exec/transformer_measure.hpp"
#include "exec/transformer_reference.hpp"
#include "exec/transformer_trainer.hpp"
#include "model/base/error.hpp"
#include "model/inputs/workload.hpp"
#include "tests/exec/exec_support.hpp"

using namespace tauplan::exec;

namespace {

using tauplan::test::small_block;

TransformerTrainOptions layout(
    int data, int tensor, int pipeline, int micro_batches,
    tauplan::model::PipelineSchedule schedule = tauplan::model::PipelineSchedule::OneFOneB) {
  TransformerTrainOptions o;
  o.block = small_block();
  o.data = data;
  o.tensor = tensor;
  o.pipeline = pipeline;
  o.micro_batches = micro_batches;
  o.schedule = schedule;
  o.batch = 8;
  o.seed = 7;
  o.adam.learning_rate = 1e-2f;
  return o;
}

/// The initial parameters moved by U(-0.1, 0.1), so that every path carries a sizable gradient.
std::vector<float> perturbed(const BlockConfig& config) {
  std::vector<float> p = init_block_parameters(config, 3);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> noise(-0.1f, 0.1f);
  for (float& v : p)
    v += noise(rng);
  return p;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// The unsplit block's loss and gradient of step `step`'s global batch.
TransformerStepGradients unsplit(const TransformerTrainOptions& o,
                                 const std::vector<float>& parameters, long long step) {
  BlockConfig whole = o.block;
  whole.micro_batch = static_cast<int>(o.batch);
  CpuTransformerBlock block(whole);
  const std::vector<int> tokens = synthetic_tokens(whole, o.seed, static_cast<long>(step));
  TransformerStepGradients out;
  out.gradients.assign(block.parameter_count(), 0.0f);
  out.loss = static_cast<double>(
      block.loss_and_gradients(parameters.data(), tokens.data(), out.gradients.data()));
  return out;
}

std::string name_of(const TransformerTrainOptions& o) {
  return o.label() + (o.reduction == DataReduction::Communicator ? " (Communicator)" : "");
}

}  // namespace

TEST_CASE("tensor shards put back together give the unsplit parameters") {
  const BlockConfig config = small_block();
  const std::vector<float> full = perturbed(config);
  for (int tensor : {1, 2, 4}) {  // 4 > kv_heads: two ranks share each K/V head
    std::vector<float> rebuilt(full.size(), 0.0f);
    for (int rank = 0; rank < tensor; ++rank) {
      const BlockShard shard(config, 0, config.layers, rank, tensor);
      const std::vector<float> local = shard_parameters(full, config, rank, tensor);
      REQUIRE(local == shard.take(full));
      REQUIRE(local.size() == block_parameters(shard.config()).total);
      shard.add_to(local.data(), rebuilt.data());
    }
    INFO("tensor " << tensor);
    CHECK(rebuilt == full);
  }
  // Stages: each layer and the embeddings and head are owned once.
  std::vector<float> rebuilt(full.size(), 0.0f);
  const BlockShard first(config, 0, 2, 1, 2), last(config, 2, 1, 0, 2);
  for (const auto& [begin, layers] : {std::pair<int, int>{0, 2}, {2, 1}})
    for (int rank = 0; rank < 2; ++rank) {
      const BlockShard shard(config, begin, layers, rank, 2);
      shard.add_to(shard.take(full).data(), rebuilt.data());
    }
  CHECK(rebuilt == full);
  CHECK(first.config().layers == 2);
  CHECK(last.config().local_heads() == 2);
}

TEST_CASE("a rank's head slot holds exactly its columns of the vocabulary-parallel head") {
  const BlockConfig config = small_block();
  const std::vector<float> full = perturbed(config);
  const ParameterSlot whole = block_parameters(config).head;
  REQUIRE(whole.cols == config.vocabulary);
  for (int tensor : {1, 2, 4}) {
    const int columns = config.vocabulary / tensor;
    for (int rank = 0; rank < tensor; ++rank) {
      INFO("tensor " << tensor << ", rank " << rank);
      // The last stage (layer 2 of 3) and a whole-stack shard hold it; an earlier stage holds
      // the slot but does not own it.
      const BlockShard last(config, 2, 1, rank, tensor), earlier(config, 0, 2, rank, tensor);
      const ParameterSlot head = block_parameters(last.config()).head;
      REQUIRE(last.config().local_vocabulary() == columns);
      REQUIRE(head.rows == config.hidden);
      REQUIRE(head.cols == columns);
      // take: row r of the slot is row r of the unsplit head, columns [rank V/t, (rank+1) V/t).
      const std::vector<float> local = last.take(full);
      bool same = true;
      for (int r = 0; r < config.hidden; ++r)
        for (int c = 0; c < columns; ++c)
          same = same && local[head.offset + static_cast<std::size_t>(r * columns + c)] ==
                             full[whole.offset + static_cast<std::size_t>(r * config.vocabulary +
                                                                          rank * columns + c)];
      CHECK(same);
      // add_to: ones in the head slot alone land on exactly those columns, once.
      std::vector<float> ones(last.size(), 0.0f);
      std::fill(ones.begin() + static_cast<std::ptrdiff_t>(head.offset),
                ones.begin() + static_cast<std::ptrdiff_t>(head.offset + head.size()), 1.0f);
      std::vector<float> back(full.size(), 0.0f);
      last.add_to(ones.data(), back.data());
      std::vector<float> expected(full.size(), 0.0f);
      for (int r = 0; r < config.hidden; ++r)
        for (int c = 0; c < columns; ++c)
          expected[whole.offset +
                   static_cast<std::size_t>(r * config.vocabulary + rank * columns + c)] = 1.0f;
      CHECK(back == expected);
      std::vector<float> none(full.size(), 0.0f);
      std::vector<float> earlier_ones(earlier.size(), 0.0f);
      const ParameterSlot earlier_head = block_parameters(earlier.config()).head;
      std::fill(earlier_ones.begin() + static_cast<std::ptrdiff_t>(earlier_head.offset),
                earlier_ones.begin() +
                    static_cast<std::ptrdiff_t>(earlier_head.offset + earlier_head.size()),
                1.0f);
      earlier.add_to(earlier_ones.data(), none.data());
      CHECK(none == std::vector<float>(full.size(), 0.0f));
    }
  }
}

TEST_CASE("every layout gives the unsplit block's loss and gradients on the same tokens") {
  using tauplan::model::PipelineSchedule;
  // t = 2 and t = 4 split the head's 32 columns (16 and 8 a rank) as well as the layers.
  std::vector<TransformerTrainOptions> layouts = {
      layout(1, 2, 1, 1), layout(1, 4, 1, 1),
      layout(1, 1, 2, 2), layout(1, 1, 2, 4, PipelineSchedule::GPipe),
      layout(1, 1, 3, 2), layout(2, 1, 1, 1),
      layout(2, 2, 2, 2), layout(1, 4, 2, 2),
      layout(1, 1, 1, 4)};
  TransformerTrainOptions sync = layout(2, 1, 1, 1);
  sync.reduction = DataReduction::Communicator;
  layouts.push_back(sync);
  const std::vector<float> parameters = perturbed(small_block());
  for (const TransformerTrainOptions& o : layouts) {
    SECTION(name_of(o)) {
      const TransformerStepGradients expected = unsplit(o, parameters, 4);
      const TransformerStepGradients got = transformer_step_gradients_threads(o, parameters, 4);
      CHECK(std::fabs(got.loss - expected.loss) <= 1e-5 * expected.loss);
      CHECK(relative_error(to_double(got.gradients), to_double(expected.gradients)) < 1e-5);
    }
  }
}

TEST_CASE("sync through the Communicator gives the single worker's gradients") {
  const std::vector<float> parameters = perturbed(small_block());
  TransformerTrainOptions single = layout(1, 1, 1, 1), sync = layout(2, 1, 1, 1);
  sync.reduction = DataReduction::Communicator;
  const TransformerStepGradients one = transformer_step_gradients_threads(single, parameters, 2);
  const TransformerStepGradients two = transformer_step_gradients_threads(sync, parameters, 2);
  CHECK(std::fabs(two.loss - one.loss) <= 1e-5 * one.loss);
  CHECK(relative_error(to_double(two.gradients), to_double(one.gradients)) < 1e-5);
  // Another step's tokens give another gradient: the comparison can fail.
  const TransformerStepGradients other = transformer_step_gradients_threads(single, parameters, 3);
  CHECK(relative_error(to_double(other.gradients), to_double(one.gradients)) > 1e-2);
}

TEST_CASE("a few Adam steps in each layout end at the single worker's parameters") {
  TransformerTrainOptions single = layout(1, 1, 1, 1);
  single.steps = 4;
  const TransformerReport reference = train_transformer_threads(single);
  const std::vector<float> initial = init_block_parameters(single.block, single.seed);
  REQUIRE(relative_error(to_double(reference.final_parameters), to_double(initial)) > 1e-3);
  for (TransformerTrainOptions o : {layout(1, 2, 1, 1), layout(1, 1, 2, 2), layout(2, 1, 1, 1)}) {
    o.steps = single.steps;
    if (o.data > 1) o.reduction = DataReduction::Communicator;
    SECTION(name_of(o)) {
      const TransformerReport report = train_transformer_threads(o);
      CHECK(relative_error(to_double(report.final_parameters),
                           to_double(reference.final_parameters)) < 1e-4);
      for (std::size_t s = 0; s < report.loss.size(); ++s)
        CHECK(std::fabs(report.loss[s] - reference.loss[s]) <= 1e-4 * reference.loss[s]);
    }
  }
}

TEST_CASE("the loss falls in every layout") {
  TransformerTrainOptions sync = layout(2, 1, 1, 1);
  sync.reduction = DataReduction::Communicator;
  for (TransformerTrainOptions o :
       {layout(1, 1, 1, 1), sync, layout(1, 2, 1, 1), layout(1, 1, 2, 2)}) {
    o.steps = 60;
    SECTION(name_of(o)) {
      const TransformerReport report = train_transformer_threads(o);
      REQUIRE(report.loss.size() == 60);
      double last = 0;
      for (std::size_t s = 50; s < 60; ++s)
        last += report.loss[s] / 10;
      // From about log(vocabulary) at the start to well below it.
      INFO("first " << report.loss.front() << ", last ten " << last);
      CHECK(report.loss.front() > 0.9 * std::log(32.0));
      CHECK(last < 0.8 * report.loss.front());
      CHECK(report.ranks.size() == static_cast<std::size_t>(o.workers()));
      CHECK(report.step_median_s > 0);
    }
  }
}

TEST_CASE("layouts the block cannot take are refused naming the key") {
  auto refused = [](TransformerTrainOptions o, const std::string& key) {
    o.origins = "job.yaml";
    try {
      check_transformer_layout(o);
    } catch (const tauplan::InputError& e) {
      CHECK(e.key() == key);
      return;
    }
    FAIL("accepted " << o.label());
  };
  refused(layout(1, 3, 1, 1), "tensor_parallel");  // 4 heads
  refused(layout(1, 8, 1, 1), "tensor_parallel");  // more ranks than heads
  TransformerTrainOptions odd_vocabulary = layout(1, 4, 1, 1);
  odd_vocabulary.block.vocabulary = 30;  // 4 ranks divide the heads and ffn, not the vocabulary
  refused(odd_vocabulary, "tensor_parallel");
  odd_vocabulary.origins = "job.yaml";
  CHECK_THROWS_WITH(check_transformer_layout(odd_vocabulary),
                    Catch::Contains("job.yaml") && Catch::Contains("vocabulary 30") &&
                        Catch::Contains("tensor must divide vocabulary"));
  odd_vocabulary.tensor = 2;  // 15 columns each
  CHECK_NOTHROW(check_transformer_layout(odd_vocabulary));
  refused(layout(1, 1, 4, 1), "pipeline_parallel");  // 3 layers
  refused(layout(3, 1, 1, 1), "micro_batches");      // 8 sequences over 3 replicas
  refused(layout(1, 1, 1, 3), "micro_batches");
  CHECK_NOTHROW(check_transformer_layout(layout(2, 2, 3, 4)));
}

TEST_CASE("a transformer workload exec's block cannot follow is refused naming the key") {
  const std::string base =
      "name: block\nbytes_per_parameter: 4\nsample_unit: sequence\ntransformer:\n"
      "  layers: 2\n  hidden: 32\n  heads: 4\n  kv_heads: 2\n  ffn_hidden: 48\n"
      "  feed_forward: swiglu\n  normalization: rmsnorm\n  sequence: 12\n  vocabulary: 32\n";
  const auto workload = [&](const std::string& extra) {
    return tauplan::model::parse_workload_yaml(base + extra, "block.yaml");
  };
  const BlockConfig ok =
      transformer_block_config(workload("  tied_embeddings: false\n  linear_bias: false\n"));
  CHECK(ok.heads == 4);
  CHECK(ok.kv_heads == 2);
  CHECK(ok.ffn_hidden == 48);
  CHECK(ok.feed_forward == BlockFeedForward::SwiGlu);
  CHECK(ok.norm == BlockNorm::RmsNorm);
  for (const auto& [extra, key] : std::vector<std::pair<std::string, std::string>>{
           {"  tied_embeddings: true\n  linear_bias: false\n", "transformer.tied_embeddings"},
           {"  tied_embeddings: false\n  linear_bias: true\n", "transformer.linear_bias"},
           {"  tied_embeddings: false\n  linear_bias: false\n  positions: rotary\n",
            "transformer.positions"}}) {
    try {
      transformer_block_config(workload(extra));
      FAIL("accepted " << extra);
    } catch (const tauplan::InputError& e) {
      CHECK(e.file() == "block.yaml");
      CHECK(e.key() == key);
    }
  }
}
