// token_target.cpp: token counts, their steps, and the token summary of a run (token_target.hpp).
#include "model/ir/token_target.hpp"

#include <cmath>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/units.hpp"

namespace tauplan::model {

double parse_tokens(const std::string& text, const std::string& file, const std::string& key) {
  const std::string expected = fmt::format(
      "tokens (a number > 0 and at most {:g}, plain or with one suffix K, M, G or B, T: 15T, "
      "2.5B, 3e11)",
      kMaxTokens);
  std::string body = text;
  body.erase(0, body.find_first_not_of(" \t"));
  body.erase(body.find_last_not_of(" \t") + 1);
  double scale = 1;
  if (!body.empty()) {
    switch (body.back()) {
      case 'K':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'G':
      case 'B':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
      default:
        break;
    }
    if (scale > 1) body.pop_back();
  }
  double value = 0;
  // parse_number reads no inf, nan or hex, and refuses anything after the number.
  if (body.empty() || !parse_number(body, value) || !(value > 0) || !(value * scale <= kMaxTokens))
    throw InputError(file, key, expected, "'" + text + "'");
  return value * scale;
}

std::vector<KeySpec> inventory_token_keys() {
  std::vector<KeySpec> keys(2);
  keys[0].name = "target.tokens";
  keys[0].help =
      "inventory (tauplan plan): target in tokens instead of a convergence model, as the job "
      "key tokens (15T, 2.5B, 3e11); no other target key beside it but accuracy and "
      "staleness_cost";
  keys[1].name = "target.dataset_tokens";
  keys[1].help =
      "inventory (tauplan plan): dataset size in tokens, with target.epochs (convergence: "
      "epochs), instead of target.dataset_samples: samples = dataset_tokens / sequence";
  for (KeySpec& key : keys)
    key.type = KeyType::Text;
  return keys;
}

int token_sequence(const Workload& workload, const std::string& file, const std::string& key) {
  if (workload.transformer && workload.transformer->sequence > 0)
    return workload.transformer->sequence;
  throw InputError(
      file, key,
      "a transformer workload (sample_unit sequence, with a sequence length) for a "
      "target in tokens",
      fmt::format("workload '{}' (sample_unit {})", workload.name, workload.sample_unit));
}

long long steps_for_tokens(double tokens, int sequence, double global_batch) {
  return static_cast<long long>(std::ceil(tokens / sequence / global_batch));
}

TokenConvergence::TokenConvergence(double tokens, int sequence, std::string origin, std::string key)
    : tokens_(tokens), sequence_(sequence), origin_(std::move(origin)), key_(std::move(key)) {}

double TokenConvergence::checked(double steps) const {
  if (steps > 0 && steps <= kMaxConvergenceSteps) return steps;
  throw InputError(
      origin_, key_,
      fmt::format("tokens / (sequence x batch) in (0, {:g}] steps", kMaxConvergenceSteps),
      fmt::format("{:g}", steps));
}

double TokenConvergence::serial_steps(double batch) const {
  return checked(tokens_ / sequence_ / batch);
}

double TokenConvergence::local_sgd_rounds(double batch, int workers, int tau) const {
  return checked(tokens_ / sequence_ / (batch * workers * tau));
}

double TokenConvergence::unequal_local_rounds(double batch, const std::vector<int>& steps) const {
  double total = 0;  // local steps of all workers in one round
  for (int h : steps)
    total += h;
  return checked(tokens_ / sequence_ / (batch * total));
}

std::string TokenConvergence::describe() const {
  return fmt::format("tokens: {:g} tokens of sequence {} (Na(b) = tokens / (sequence x b))",
                     tokens_, sequence_);
}

TokenSummary summarise_tokens(double tokens, long long steps, double total_s, int gpus) {
  TokenSummary s;
  s.tokens = tokens;
  s.steps = steps;
  s.tokens_per_s = total_s > 0 ? tokens / total_s : 0;
  s.days = total_s / 86400;
  s.gpu_hours = total_s * gpus / 3600;
  return s;
}

namespace {
std::string with_commas(long long n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

std::string si(double x) {
  if (x >= 1e12) return fmt::format("{:.3g}T", x / 1e12);
  if (x >= 1e9) return fmt::format("{:.3g}G", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.3g}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.3g}K", x / 1e3);
  return fmt::format("{:.3g}", x);
}
}  // namespace

std::string to_text(const TokenSummary& s) {
  return fmt::format("{} steps, {} tokens/s, {:.2f} d, {} GPU-h", with_commas(s.steps),
                     si(s.tokens_per_s), s.days, with_commas(std::llround(s.gpu_hours)));
}

nlohmann::json to_json(const TokenSummary& s) {
  return {{"target_tokens", s.tokens},
          {"steps", s.steps},
          {"tokens_per_s", s.tokens_per_s},
          {"days", s.days},
          {"gpu_hours", s.gpu_hours}};
}

}  // namespace tauplan::model
