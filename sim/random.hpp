// random.hpp: the simulator's seeded random streams (stragglers, failure times).
//
// splitmix64: a small, portable generator, so that a seed gives the same draws on every
// platform and standard library; stream_seed derives one independent stream per purpose and
// index from the job's seed. What it leaves out: anything cryptographic. No SimGrid here.
#pragma once

#include <cmath>

namespace tauplan::sim {

class Rng {
 public:
  explicit Rng(unsigned long long seed) : state_(seed) {}
  unsigned long long next() {
    unsigned long long z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }

 private:
  unsigned long long state_;
};

/// Seed of one random stream: the job's seed, what the stream is for, and which one.
inline unsigned long long stream_seed(unsigned long long seed, unsigned long long purpose,
                                      unsigned long long index) {
  Rng mixer(seed ^ (purpose * 0xD1B54A32D192ED03ULL) ^ (index * 0x8CB92BA72F3D8DD7ULL));
  mixer.next();
  return mixer.next();
}

}  // namespace tauplan::sim
