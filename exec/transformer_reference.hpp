// transformer_reference.hpp: the decoder block stack of transformer_config.hpp in double, with
// its gradients by hand-written backpropagation: the yardstick the fp32 CPU block
// (transformer_block.hpp) and the CUDA block are checked against.
//
// Straightforward loops over every token, head and column, no library: it is built on the GPU
// machine too (linked by the CUDA check) and must be exact rather than fast. Its own gradients
// are checked against central finite differences (tests/exec/transformer_block_test.cpp). GELU is
// the tanh approximation (GPT-2's). What it leaves out: speed, mixed precision, dropout, the
// all-reduces of a tensor-parallel shard (a shard is computed as a block with fewer heads and
// feed-forward columns and V / tensor head columns whose softmax is taken alone, as tensor rank
// 0's: a target outside its columns adds no target logit, as transformer_block.hpp's block does
// without a TensorReduce).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/transformer_config.hpp"

namespace tauplan::exec {

/// Deterministic initial parameters (fixed seed): embeddings N(0, 0.02), matrices N(0, 0.02)
/// (output projections wo and w2 scaled by 1/sqrt(2*layers) as GPT-2 does), norm gains 1,
/// biases 0. Same values on every machine: splitmix64 and Box-Muller, drawn slot after slot in
/// the order of block_parameters(config). Throws std::invalid_argument for an invalid config.
std::vector<float> init_block_parameters(const BlockConfig& config, uint64_t seed);

/// Mean next-token cross-entropy of `tokens` (micro_batch rows of sequence+1 tokens: inputs
/// are tokens[r][0..s-1], targets tokens[r][1..s]) and, when `gradients` is not null, its
/// gradient with respect to every parameter (resized to block_parameters(config).total).
/// Everything in double. Throws std::invalid_argument for an invalid config, a parameter vector
/// of the wrong size, or tokens of the wrong count or outside [0, vocabulary).
double reference_loss_and_gradients(const BlockConfig& config,
                                    const std::vector<double>& parameters,
                                    const std::vector<int>& tokens, std::vector<double>* gradients);

/// Relative error ||a - b|| / ||b|| (2-norm over the whole vector), for gradient checks; ||a - b||
/// when b is zero. Throws std::invalid_argument when the sizes differ.
double relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tauplan::exec
