// sampler.cpp: seeded epoch permutations (own Fisher-Yates, identical on every platform).
#include "exec/sampler.hpp"

#include <cassert>
#include <numeric>
#include <random>
#include <utility>

namespace tauplan::exec {

Sampler::Sampler(long long dataset_size, long long step_samples, std::uint64_t seed)
    : size_(dataset_size), step_samples_(step_samples), seed_(seed) {
  assert(size_ > 0 && step_samples_ > 0 && step_samples_ <= size_);
}

const std::vector<int>& Sampler::epoch(long long e) {
  for (int i = 0; i < 2; ++i)
    if (cached_epoch_[i] == e) return cached_[i];
  // Replace the older slot.
  const int slot = cached_epoch_[0] <= cached_epoch_[1] ? 0 : 1;
  std::vector<int>& perm = cached_[slot];
  perm.resize(static_cast<std::size_t>(size_));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(e) + 1);
  for (long long i = size_ - 1; i > 0; --i) {
    // Uniform in [0, i] by rejection, so the result does not depend on the library.
    const auto bound = static_cast<std::uint64_t>(i) + 1;
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t r = rng();
    while (r >= limit)
      r = rng();
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(r % bound)]);
  }
  cached_epoch_[slot] = e;
  return perm;
}

std::vector<int> Sampler::indices(long long step, long long offset, long long count) {
  assert(offset >= 0 && offset + count <= step_samples_);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(count));
  long long position = step * step_samples_ + offset;
  for (long long i = 0; i < count; ++i, ++position) {
    const long long e = position / size_;
    out.push_back(epoch(e)[static_cast<std::size_t>(position % size_)]);
  }
  return out;
}

}  // namespace tauplan::exec
