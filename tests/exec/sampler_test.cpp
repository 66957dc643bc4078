// sampler_test.cpp: the shared sample stream (slices, epochs, determinism).
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "exec/sampler.hpp"

using tauplan::exec::Sampler;

TEST_CASE("worker slices of a step are the single worker's batch", "[exec][sampler]") {
  Sampler whole(100, 12, 5), parts(100, 12, 5);
  for (long long step = 0; step < 20; ++step) {  // crosses two epoch boundaries
    std::vector<int> joined;
    for (long long offset : {0, 3, 6, 9}) {
      const std::vector<int> slice = parts.indices(step, offset, 3);
      joined.insert(joined.end(), slice.begin(), slice.end());
    }
    CHECK(joined == whole.indices(step, 0, 12));
  }
}

TEST_CASE("each epoch is a permutation and the seed decides it", "[exec][sampler]") {
  Sampler s(50, 10, 1);
  std::vector<int> epoch;
  for (long long step = 0; step < 5; ++step) {
    const std::vector<int> b = s.indices(step, 0, 10);
    epoch.insert(epoch.end(), b.begin(), b.end());
  }
  std::vector<int> sorted = epoch;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i)
    CHECK(sorted[static_cast<std::size_t>(i)] == i);
  Sampler same(50, 10, 1), other(50, 10, 2);
  CHECK(same.indices(0, 0, 10) == s.indices(0, 0, 10));
  CHECK(other.indices(0, 0, 10) != s.indices(0, 0, 10));
  CHECK(s.indices(5, 0, 10) != s.indices(0, 0, 10));  // the next epoch is reshuffled
}
