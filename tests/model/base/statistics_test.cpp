// statistics_test.cpp: the one median (model/base/statistics.hpp).
#include "model/base/statistics.hpp"

#include <catch2/catch.hpp>

using tauplan::model::median;

TEST_CASE("median: the middle value, the mean of the two middle ones, 0 for none") {
  CHECK(median({}) == 0);
  CHECK(median({7}) == 7);
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({5, 5, 1, 9}) == 5);
  // Unsorted, with the two middle values far apart: their mean, not either one.
  CHECK(median({100, -2, 0, 40, 7, 1e6}) == 23.5);
}
