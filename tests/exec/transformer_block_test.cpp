// transformer_block_test.cpp: the decoder block. The double reference against central finite
// differences, the fp32 CPU block against the reference, the block in pieces against the whole,
// the synthetic token stream, training on it, and invalid shapes refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/token_stream.hpp"
#include "exec/transformer_block.hpp"
#include "exec/transformer_config.hpp"
#include "exec/transformer_reference.hpp"

using namespace tauplan::exec;

namespace {

BlockConfig swiglu_gqa(int vocabulary, int hidden, int ffn, int sequence, int batch) {
  BlockConfig c;
  c.vocabulary = vocabulary;
  c.hidden = hidden;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = ffn;
  c.layers = 2;
  c.sequence = sequence;
  c.micro_batch = batch;
  c.norm = BlockNorm::RmsNorm;
  c.feed_forward = BlockFeedForward::SwiGlu;
  return c;
}

BlockConfig layernorm_gelu_mha(int vocabulary, int hidden, int ffn, int sequence, int batch) {
  BlockConfig c = swiglu_gqa(vocabulary, hidden, ffn, sequence, batch);
  c.kv_heads = 4;
  c.norm = BlockNorm::LayerNorm;
  c.feed_forward = BlockFeedForward::Gelu;
  return c;
}

/// Rank 0 of 2 tensor ranks: 2 query heads sharing 1 K/V head, half the feed-forward columns,
/// the first half of the head's columns (its softmax taken alone: no TensorReduce).
BlockConfig tensor_shard(int vocabulary, int hidden, int ffn, int sequence, int batch) {
  BlockConfig c = swiglu_gqa(vocabulary, hidden, ffn, sequence, batch);
  c.tensor = 2;
  return c;
}

/// The three shapes under test, at a given size.
std::vector<std::pair<std::string, BlockConfig>> shapes(int vocabulary, int hidden, int ffn,
                                                        int sequence, int batch) {
  return {{"RMSNorm + SwiGLU + GQA (4 heads, 2 kv)",
           swiglu_gqa(vocabulary, hidden, ffn, sequence, batch)},
          {"LayerNorm + GELU + MHA (4 heads)",
           layernorm_gelu_mha(vocabulary, hidden, ffn, sequence, batch)},
          {"tensor shard 1 of 2 (2 heads, 1 kv)",
           tensor_shard(vocabulary, hidden, ffn, sequence, batch)}};
}

/// The initial parameters moved by U(-0.25, 0.25) each, so that gains and biases are not 1 and
/// 0, attention is far from uniform and every path of the block carries a sizable gradient.
std::vector<double> perturbed_parameters(const BlockConfig& config, uint64_t seed) {
  const std::vector<float> initial = init_block_parameters(config, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> noise(-0.25, 0.25);
  std::vector<double> out(initial.size());
  for (size_t e = 0; e < initial.size(); ++e)
    out[e] = static_cast<double>(initial[e]) + noise(rng);
  return out;
}

/// The parameters rounded to float, and back: what the fp32 block and the reference share.
std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}
std::vector<double> as_doubles(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("reference gradients match central finite differences") {
  for (const auto& [name, config] : shapes(24, 16, 32, 8, 2)) {
    SECTION(name) {
      const std::vector<double> parameters = perturbed_parameters(config, 11);
      const std::vector<int> tokens = synthetic_tokens(config, 5, 0);
      std::vector<double> analytic;
      reference_loss_and_gradients(config, parameters, tokens, &analytic);
      REQUIRE(analytic.size() == block_parameters(config).total);

      // About 300 coordinates, spread over every parameter tensor, each tensor also checked alone
      // so that a wrong small gradient (wq, a gain) is not hidden by the large ones (the head).
      const std::vector<ParameterSlot> slots = block_parameters(config).all();
      const size_t per_slot = 300 / slots.size() + 1;
      std::mt19937_64 rng(3);
      const double step = 1e-5;
      std::vector<double> all_analytic, all_numeric;
      double worst_slot_error = 0.0;
      std::string worst_slot;
      for (const ParameterSlot& slot : slots) {
        std::uniform_int_distribution<size_t> pick(0, slot.size() - 1);
        std::vector<double> slot_analytic, slot_numeric;
        for (size_t k = 0; k < per_slot; ++k) {
          const size_t e = slot.offset + pick(rng);
          std::vector<double> moved = parameters;
          moved[e] = parameters[e] + step;
          const double up = reference_loss_and_gradients(config, moved, tokens, nullptr);
          moved[e] = parameters[e] - step;
          const double down = reference_loss_and_gradients(config, moved, tokens, nullptr);
          slot_numeric.push_back((up - down) / (2.0 * step));
          slot_analytic.push_back(analytic[e]);
        }
        const double error = relative_error(slot_analytic, slot_numeric);
        if (error > worst_slot_error) {
          worst_slot_error = error;
          worst_slot = slot.name;
        }
        all_analytic.insert(all_analytic.end(), slot_analytic.begin(), slot_analytic.end());
        all_numeric.insert(all_numeric.end(), slot_numeric.begin(), slot_numeric.end());
      }
      const double error = relative_error(all_analytic, all_numeric);
      INFO(name << ": " << all_numeric.size() << " coordinates, relative error " << error
                << ", worst tensor " << worst_slot << " " << worst_slot_error);
      CHECK(error < 1e-6);
      CHECK(worst_slot_error < 1e-6);
    }
  }
}

TEST_CASE("fp32 CPU block matches the double reference") {
  for (const auto& [name, config] : shapes(48, 32, 64, 16, 2)) {
    SECTION(name) {
      CpuTransformerBlock block(config);
      const std::vector<int> tokens = synthetic_tokens(config, 9, 4);
      // At initialisation, and with every parameter moved (gains, biases, sharp attention).
      const std::vector<std::pair<std::string, std::vector<float>>> points = {
          {"initial", init_block_parameters(config, 21)},
          {"perturbed", to_float(perturbed_parameters(config, 21))}};
      for (const auto& [point, parameters] : points) {
        std::vector<double> reference_gradients;
        const double reference_loss = reference_loss_and_gradients(config, as_doubles(parameters),
                                                                   tokens, &reference_gradients);
        std::vector<float> gradients(block.parameter_count(), -1.0f);
        const float loss =
            block.loss_and_gradients(parameters.data(), tokens.data(), gradients.data());
        const double loss_error =
            std::abs(static_cast<double>(loss) - reference_loss) / reference_loss;
        const double gradient_error = relative_error(as_doubles(gradients), reference_gradients);
        INFO(name << ", " << point << ": loss " << loss << " vs " << reference_loss << " (relative "
                  << loss_error << "), gradient relative error " << gradient_error);
        CHECK(loss_error < 1e-5);
        CHECK(gradient_error < 1e-4);
        // The loss alone (no gradients) is the same forward pass.
        CHECK(block.loss_and_gradients(parameters.data(), tokens.data(), nullptr) == loss);
      }
    }
  }
}

TEST_CASE("the block run in pieces gives what the whole step gives") {
  const BlockConfig config = tensor_shard(48, 32, 64, 16, 2);
  CpuTransformerBlock whole(config), pieces(config);
  const std::vector<float> parameters = to_float(perturbed_parameters(config, 8));
  const std::vector<int> tokens = synthetic_tokens(config, 2, 1);
  std::vector<float> expected(whole.parameter_count());
  const float expected_loss =
      whole.loss_and_gradients(parameters.data(), tokens.data(), expected.data());

  // As two pipeline stages would: layer 0 on one, layer 1 and the head on the other, and each
  // layer as its two sublayers with the residual adds outside (where a tensor all-reduce goes).
  const size_t stream = static_cast<size_t>(config.tokens()) * static_cast<size_t>(config.hidden);
  std::vector<float> hidden(stream), sublayer(stream), gradient(stream), partial(stream);
  std::vector<float> gradients(pieces.parameter_count(), 0.0f);
  pieces.embed_forward(parameters.data(), tokens.data(), hidden.data());
  pieces.layer_forward(0, parameters.data(), hidden.data());
  pieces.attention_forward(1, parameters.data(), hidden.data(), sublayer.data());
  for (size_t e = 0; e < stream; ++e)
    hidden[e] += sublayer[e];
  pieces.feed_forward_forward(1, parameters.data(), hidden.data(), sublayer.data());
  for (size_t e = 0; e < stream; ++e)
    hidden[e] += sublayer[e];
  const float loss = pieces.head_loss_and_gradients(parameters.data(), tokens.data(), hidden.data(),
                                                    gradient.data(), gradients.data());
  pieces.feed_forward_backward(1, parameters.data(), gradient.data(), partial.data(),
                               gradients.data());
  for (size_t e = 0; e < stream; ++e)
    gradient[e] += partial[e];
  pieces.attention_backward(1, parameters.data(), gradient.data(), partial.data(),
                            gradients.data());
  for (size_t e = 0; e < stream; ++e)
    gradient[e] += partial[e];
  pieces.layer_backward(0, parameters.data(), gradient.data(), gradients.data());
  pieces.embed_backward(tokens.data(), gradient.data(), gradients.data());

  CHECK(loss == expected_loss);
  CHECK(relative_error(as_doubles(gradients), as_doubles(expected)) == 0.0);
}

TEST_CASE("synthetic token stream: deterministic, in range, its floor as sampled") {
  const BlockConfig config = swiglu_gqa(64, 32, 64, 32, 4);
  const std::vector<int> first = synthetic_tokens(config, 17, 3);
  CHECK(first.size() == static_cast<size_t>(config.micro_batch * (config.sequence + 1)));
  CHECK(first == synthetic_tokens(config, 17, 3));
  CHECK(first != synthetic_tokens(config, 17, 4));
  CHECK(first != synthetic_tokens(config, 18, 3));
  CHECK(std::all_of(first.begin(), first.end(),
                    [&](int t) { return t >= 0 && t < config.vocabulary; }));

  // The mean of -log P(next | current) over many sampled steps is the floor, within sampling
  // noise (about 0.003 standard error here; the bound is ten times that).
  const TokenTransitions table = synthetic_transitions(config.vocabulary, 17);
  double total = 0.0;
  long samples = 0, impossible = 0;  // transitions the table does not list
  for (long step = 0; step < 200; ++step) {
    const std::vector<int> tokens = synthetic_tokens(config, 17, step);
    for (int row = 0; row < config.micro_batch; ++row)
      for (int i = 0; i < config.sequence; ++i) {
        const int current = tokens[static_cast<size_t>(row * (config.sequence + 1) + i)];
        const int next = tokens[static_cast<size_t>(row * (config.sequence + 1) + i + 1)];
        const auto& successors = table.successors[static_cast<size_t>(current)];
        double p = 0.0;
        for (size_t k = 0; k < successors.size(); ++k)
          if (successors[k] == next) p = table.probabilities[static_cast<size_t>(current)][k];
        if (p > 0.0) {
          total -= std::log(p);
          ++samples;
        } else {
          ++impossible;
        }
      }
  }
  CHECK(impossible == 0);
  REQUIRE(samples > 0);
  const double floor = synthetic_entropy_floor(config, 17);
  INFO("floor " << floor << ", sampled " << total / static_cast<double>(samples));
  CHECK(std::abs(total / static_cast<double>(samples) - floor) < 0.03);
  CHECK(floor < 0.5 * std::log(static_cast<double>(config.vocabulary)));
}

TEST_CASE("fp32 block trains on the synthetic stream well below log(V)") {
  const BlockConfig config = swiglu_gqa(64, 64, 128, 32, 4);
  const uint64_t stream_seed = 2024;
  CpuTransformerBlock block(config);
  std::vector<float> parameters = init_block_parameters(config, 1);
  std::vector<float> gradients(block.parameter_count());
  AdamSettings adam;
  adam.learning_rate = 3e-3f;
  AdamState state;

  // Loss on batches never trained on (steps far beyond the training steps).
  auto held_out_loss = [&]() {
    double total = 0.0;
    for (long step = 0; step < 4; ++step) {
      const std::vector<int> tokens = synthetic_tokens(config, stream_seed, 1000000 + step);
      total +=
          static_cast<double>(block.loss_and_gradients(parameters.data(), tokens.data(), nullptr));
    }
    return total / 4.0;
  };

  const double uniform = std::log(static_cast<double>(config.vocabulary));
  const double floor = synthetic_entropy_floor(config, stream_seed);
  // A model that knows only how often each token occurs at each position, not what follows
  // what: the entropy of the per-position marginals. The bound below must be beneath it, so
  // that passing needs the transitions to be learned.
  double marginal_entropy = 0.0;
  for (const std::vector<double>& marginal : synthetic_position_marginals(config, stream_seed))
    for (double p : marginal)
      if (p > 0.0) marginal_entropy -= p * std::log(p);
  marginal_entropy /= config.sequence;
  // Halfway (in nats) from knowing nothing to knowing the chain exactly.
  const double bound = 0.5 * (uniform + floor);
  REQUIRE(bound < marginal_entropy);

  const double initial = held_out_loss();
  const auto start = std::chrono::steady_clock::now();
  const int steps = 200;
  float last_train_loss = 0.0f;
  for (long step = 0; step < steps; ++step) {
    const std::vector<int> tokens = synthetic_tokens(config, stream_seed, step);
    last_train_loss = block.loss_and_gradients(parameters.data(), tokens.data(), gradients.data());
    adam_step(adam, state, parameters.data(), gradients.data(), parameters.size());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double final_loss = held_out_loss();
  INFO("log(V) " << uniform << ", floor " << floor << ", marginal entropy " << marginal_entropy
                 << ", bound " << bound << "; held-out loss " << initial << " -> " << final_loss
                 << " (last training batch " << last_train_loss << ") in " << steps << " steps, "
                 << seconds << " s");
  // Initial logits are nearly zero (head weights 0.02), so the untrained loss is near log(V).
  CHECK(std::abs(initial - uniform) < 0.1);
  CHECK(final_loss < bound);
  CHECK(final_loss > floor - 0.1);  // below the floor would mean a wrong loss or a leak
}

TEST_CASE("invalid block shapes are refused") {
  BlockConfig heads_not_dividing_hidden = swiglu_gqa(32, 30, 64, 8, 2);  // 4 heads, hidden 30
  BlockConfig kv_not_dividing_heads = swiglu_gqa(32, 32, 64, 8, 2);
  kv_not_dividing_heads.kv_heads = 3;
  BlockConfig tensor_not_dividing_heads = swiglu_gqa(32, 32, 64, 8, 2);
  tensor_not_dividing_heads.tensor = 3;
  BlockConfig tensor_not_dividing_vocabulary = swiglu_gqa(30, 32, 64, 8, 2);
  tensor_not_dividing_vocabulary.tensor = 4;  // divides the 4 heads and 64 columns, not 30
  CHECK(tensor_not_dividing_vocabulary.problem() == "tensor must divide vocabulary");
  for (const BlockConfig& bad : {heads_not_dividing_hidden, kv_not_dividing_heads,
                                 tensor_not_dividing_heads, tensor_not_dividing_vocabulary}) {
    const std::string problem = bad.problem();
    REQUIRE_FALSE(problem.empty());
    INFO(problem);
    CHECK_THROWS_WITH(CpuTransformerBlock(bad), Catch::Contains(problem));
    CHECK_THROWS_AS(init_block_parameters(bad, 1), std::invalid_argument);
    const std::vector<int> tokens(static_cast<size_t>(bad.micro_batch * (bad.sequence + 1)), 0);
    CHECK_THROWS_AS(reference_loss_and_gradients(bad, std::vector<double>(10), tokens, nullptr),
                    std::invalid_argument);
  }
  // A token outside the vocabulary is refused too.
  const BlockConfig good = swiglu_gqa(32, 32, 64, 8, 2);
  CpuTransformerBlock block(good);
  const std::vector<float> parameters = init_block_parameters(good, 1);
  std::vector<int> tokens = synthetic_tokens(good, 1, 0);
  tokens[3] = good.vocabulary;
  CHECK_THROWS_AS(block.loss_and_gradients(parameters.data(), tokens.data(), nullptr),
                  std::invalid_argument);
}
