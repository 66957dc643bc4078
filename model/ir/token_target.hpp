// token_target.hpp: a training target stated in tokens (`tokens: 15T`, or `epochs` over
// `dataset_tokens`) for a transformer workload, and what it means in steps, time and GPU-hours.
//
// A transformer workload's sample is one sequence of s tokens (Transformer::sequence), so a
// target of T tokens is T / s samples, and at a global batch of b sequences it takes
// ceil(T / (s b)) optimizer steps: the last step is a whole step (rounds_from_steps rounds the
// step count up, as it does for every convergence model). Local SGD, async PS and mesh read
// the same count through the ConvergenceModel interface: Na(b) = T / (s b) and
// Ma(b, K, tau) = T / (s b K tau). A workload without a sequence (sample_unit image, an MLP)
// has no tokens: its token target is refused, naming the file and the key.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/convergence/convergence.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"

namespace tauplan::model {

/// Parses a token count: a plain number ("300000000000", "3e11") or a number with one suffix
/// K (1e3), M (1e6), G or B (1e9), T (1e12) ("15T", "2.5B", "300G"); decimal, never 1024.
/// Refuses anything else (a negative, zero, NaN, inf, another suffix, junk) or a count above
/// kMaxTokens: InputError(file, key, "tokens (...)", 'text').
double parse_tokens(const std::string& text, const std::string& file, const std::string& key);

/// The inventory's token target keys (target.tokens, target.dataset_tokens), for help-keys:
/// they are read by study/plan/inventory.cpp, not by the job loader.
std::vector<KeySpec> inventory_token_keys();

/// The largest token count accepted (1e18: a million times Llama 3's 15T).
inline constexpr double kMaxTokens = 1e18;

/// The sequence length of a workload that has tokens; InputError(file, key, "a transformer
/// workload ...") for one that does not (the workload's name and sample_unit are quoted).
int token_sequence(const Workload& workload, const std::string& file, const std::string& key);

/// ceil(tokens / (sequence x global_batch)): optimizer steps to train on `tokens` tokens.
long long steps_for_tokens(double tokens, int sequence, double global_batch);

/// A target in tokens as a convergence model: Na(b) = tokens / (s b), Ma = Na(b K tau).
class TokenConvergence : public ConvergenceModel {
 public:
  TokenConvergence(double tokens, int sequence, std::string origin, std::string key = "tokens");
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  double unequal_local_rounds(double batch, const std::vector<int>& steps) const override;
  std::string describe() const override;
  double tokens() const { return tokens_; }
  int sequence() const { return sequence_; }

 private:
  double checked(double steps) const;
  double tokens_;
  int sequence_;
  std::string origin_;
  std::string key_;
};

/// What a token target comes to for one run: steps (as the engine counted them), tokens per
/// second (target tokens / total time), days and GPU-hours (total time x GPUs / 3600).
struct TokenSummary {
  double tokens = 0;
  long long steps = 0;
  double tokens_per_s = 0;
  double days = 0;
  double gpu_hours = 0;
};
TokenSummary summarise_tokens(double tokens, long long steps, double total_s, int gpus);
/// "3,576,279 steps, 1.23M tokens/s, 141.2 d, 6,505,207 GPU-h"
std::string to_text(const TokenSummary& summary);
/// {"target_tokens", "steps", "tokens_per_s", "days", "gpu_hours"}
nlohmann::json to_json(const TokenSummary& summary);

}  // namespace tauplan::model
