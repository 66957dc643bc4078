// token_stream.hpp: a synthetic token stream with structure a decoder block can learn, for the
// training checks of the transformer blocks (CPU and CUDA) without a corpus.
//
// A first-order Markov chain over the vocabulary, fixed by the seed: every token has 2 or 3
// distinct successors (probabilities 0.7/0.3 or 0.6/0.3/0.1) and no others. Each row of a
// micro-batch starts at a uniformly drawn token and follows the chain for sequence more tokens;
// the rows of step `step` are a function of (seed, step, row) alone, so any step can be
// regenerated anywhere. The best possible mean next-token loss is the chain's conditional
// entropy averaged over the positions of a row, about 0.6 to 0.9 nats whatever the vocabulary
// (synthetic_entropy_floor computes it exactly), against log(vocabulary) for a model that has
// learned nothing. What it leaves out: longer-range structure (nothing here needs attention
// beyond the previous token), natural-language statistics. Header-only, standard library only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/transformer_config.hpp"

namespace tauplan::exec {

namespace token_stream_detail {

inline uint64_t splitmix64(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1).
inline double uniform(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

/// Uniform in [0, bound).
inline int below(uint64_t& state, int bound) {
  return static_cast<int>(splitmix64(state) % static_cast<uint64_t>(bound));
}

}  // namespace token_stream_detail

/// The chain of the stream: successors[t] and their probabilities (summing to 1).
struct TokenTransitions {
  std::vector<std::vector<int>> successors;
  std::vector<std::vector<double>> probabilities;
};

/// The fixed transition table of a vocabulary and seed.
inline TokenTransitions synthetic_transitions(int vocabulary, uint64_t seed) {
  using namespace token_stream_detail;
  TokenTransitions table;
  table.successors.resize(static_cast<size_t>(vocabulary));
  table.probabilities.resize(static_cast<size_t>(vocabulary));
  uint64_t state = seed ^ 0x5EED0F7AB1E5ULL;
  for (size_t t = 0; t < table.successors.size(); ++t) {
    const bool three = vocabulary >= 3 && splitmix64(state) % 2 == 1;
    std::vector<int>& next = table.successors[t];
    while (next.size() < (three ? 3u : 2u)) {  // distinct successors (vocabulary >= 2)
      const int candidate = below(state, vocabulary);
      bool seen = false;
      for (int s : next)
        seen = seen || s == candidate;
      if (!seen) next.push_back(candidate);
    }
    table.probabilities[t] =
        three ? std::vector<double>{0.6, 0.3, 0.1} : std::vector<double>{0.7, 0.3};
  }
  return table;
}

/// Step `step`'s micro-batch: micro_batch rows of sequence + 1 tokens in [0, vocabulary).
inline std::vector<int> synthetic_tokens(const BlockConfig& config, uint64_t seed, long step) {
  using namespace token_stream_detail;
  const TokenTransitions table = synthetic_transitions(config.vocabulary, seed);
  std::vector<int> tokens;
  tokens.reserve(static_cast<size_t>(config.micro_batch) *
                 static_cast<size_t>(config.sequence + 1));
  for (int row = 0; row < config.micro_batch; ++row) {
    uint64_t state = seed;
    state ^= splitmix64(state) + static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ULL;
    state ^= splitmix64(state) + static_cast<uint64_t>(row) * 0x8CB92BA72F3D8DD7ULL;
    int token = below(state, config.vocabulary);
    tokens.push_back(token);
    for (int i = 0; i < config.sequence; ++i) {
      const std::vector<double>& p = table.probabilities[static_cast<size_t>(token)];
      const std::vector<int>& next = table.successors[static_cast<size_t>(token)];
      double draw = uniform(state);
      size_t pick = 0;
      while (pick + 1 < p.size() && draw >= p[pick])
        draw -= p[pick++];
      token = next[pick];
      tokens.push_back(token);
    }
  }
  return tokens;
}

/// Per-position distributions of the stream: out[i][t] = P(token i of a row is t), i in
/// [0, sequence); row position 0 is uniform, and each next position follows the chain.
inline std::vector<std::vector<double>> synthetic_position_marginals(const BlockConfig& config,
                                                                     uint64_t seed) {
  const TokenTransitions table = synthetic_transitions(config.vocabulary, seed);
  const size_t v = static_cast<size_t>(config.vocabulary);
  std::vector<std::vector<double>> marginals;
  std::vector<double> current(v, 1.0 / static_cast<double>(v));
  for (int i = 0; i < config.sequence; ++i) {
    marginals.push_back(current);
    std::vector<double> next(v, 0.0);
    for (size_t t = 0; t < v; ++t)
      for (size_t k = 0; k < table.successors[t].size(); ++k)
        next[static_cast<size_t>(table.successors[t][k])] += current[t] * table.probabilities[t][k];
    current = next;
  }
  return marginals;
}

/// The expected mean loss (nats per token) of the best possible predictor on this stream: the
/// entropy of the next token given the current one, averaged over the sequence positions of a
/// row with each position's own token distribution. Training losses cannot go below it except
/// by sampling noise.
inline double synthetic_entropy_floor(const BlockConfig& config, uint64_t seed) {
  const TokenTransitions table = synthetic_transitions(config.vocabulary, seed);
  std::vector<double> entropy(table.probabilities.size(), 0.0);
  for (size_t t = 0; t < entropy.size(); ++t)
    for (double p : table.probabilities[t])
      entropy[t] -= p * std::log(p);
  double total = 0.0;
  for (const std::vector<double>& marginal : synthetic_position_marginals(config, seed))
    for (size_t t = 0; t < marginal.size(); ++t)
      total += marginal[t] * entropy[t];
  return total / static_cast<double>(config.sequence);
}

}  // namespace tauplan::exec
