// combine_test.cpp: weighted mean, Adasum and the thread communicator.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include <vector>

#include "exec/combine.hpp"
#include "exec/thread_communicator.hpp"

using namespace tauplan::exec;

TEST_CASE("Adasum of two orthogonal vectors is their sum", "[exec][combine]") {
  const std::vector<float> a = {1, 0, 2, 0};
  const std::vector<float> b = {0, 3, 0, -1};
  std::vector<float> out(4);
  adasum_pair(a.data(), b.data(), 4, out.data());
  CHECK(out == std::vector<float>{1, 3, 2, -1});
}

TEST_CASE("Adasum of two equal vectors is the vector", "[exec][combine]") {
  const std::vector<float> a = {0.5f, -2, 3, 4};
  std::vector<float> out(4);
  adasum_pair(a.data(), a.data(), 4, out.data());
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(out[i] == Approx(a[i]).epsilon(1e-7));
}

TEST_CASE("Adasum follows the paper's formula for general vectors", "[exec][combine]") {
  const std::vector<float> a = {1, 2};
  const std::vector<float> b = {3, -1};
  // a.b = 1, |a|^2 = 5, |b|^2 = 10: (1 - 1/10) a + (1 - 1/20) b
  std::vector<float> out(2);
  adasum_pair(a.data(), b.data(), 2, out.data());
  CHECK(out[0] == Approx(0.9 * 1 + 0.95 * 3));
  CHECK(out[1] == Approx(0.9 * 2 + 0.95 * -1));
  // A zero vector leaves the other one unchanged.
  const std::vector<float> zero = {0, 0};
  adasum_pair(a.data(), zero.data(), 2, out.data());
  CHECK(out == a);
}

TEST_CASE("Adasum over K vectors is a pairwise tree", "[exec][combine]") {
  // Four mutually orthogonal vectors: the tree sums them.
  std::vector<std::vector<float>> v = {{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, 4}};
  std::vector<const float*> in;
  for (auto& x : v)
    in.push_back(x.data());
  std::vector<float> out(4);
  combine_adasum(in, {1, 1, 1, 1}, 4, out.data());
  CHECK(out == std::vector<float>{1, 2, 3, 4});
  // Three equal vectors (odd K: the third is carried up): still the vector.
  std::vector<float> same = {1, -1, 2, 0};
  combine_adasum({same.data(), same.data(), same.data()}, {1, 1, 1}, 4, out.data());
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(out[i] == Approx(same[i]));
}

TEST_CASE("weighted mean weights each worker by its samples", "[exec][combine]") {
  const std::vector<float> a = {1, 2};
  const std::vector<float> b = {4, 8};
  std::vector<float> out(2);
  combine_mean({a.data(), b.data()}, {3, 1}, 2, out.data());
  CHECK(out[0] == Approx(0.75 * 1 + 0.25 * 4));
  CHECK(out[1] == Approx(0.75 * 2 + 0.25 * 8));
}

TEST_CASE("the thread communicator leaves the result in every buffer", "[exec][combine]") {
  ThreadCommunicator comm(3);
  CHECK(comm.workers() == 3);
  CHECK(comm.local_workers() == 3);
  std::vector<float> a = {1, 1}, b = {2, 2}, c = {6, 0};
  comm.combine({a.data(), b.data(), c.data()}, {1, 1, 1}, 2, CombineRule::Mean);
  CHECK(a == std::vector<float>{3, 1});
  CHECK(b == a);
  CHECK(c == a);
  CombineRule rule{};
  CHECK(parse_combine_rule("adasum", rule));
  CHECK(rule == CombineRule::Adasum);
  CHECK_FALSE(parse_combine_rule("sum", rule));
}

TEST_CASE("the thread communicator's chunked mean equals combine_mean bit for bit",
          "[exec][combine]") {
  // 5 workers, unequal weights, a length that spans several chunks and ends mid-chunk.
  const std::size_t n = 3 * 1024 + 17;
  std::vector<std::vector<float>> data(5, std::vector<float>(n));
  for (std::size_t k = 0; k < data.size(); ++k)
    for (std::size_t i = 0; i < n; ++i)
      data[k][i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i * (k + 1)) + 0.1));
  const std::vector<double> weights = {3, 1, 7, 2, 5};
  std::vector<const float*> inputs;
  for (const auto& d : data)
    inputs.push_back(d.data());
  std::vector<float> expected(n);
  combine_mean(inputs, weights, n, expected.data());

  std::vector<float*> buffers;
  for (auto& d : data)
    buffers.push_back(d.data());
  ThreadCommunicator comm(5);
  comm.combine(buffers, weights, n, CombineRule::Mean);
  for (const auto& d : data)
    CHECK(std::memcmp(d.data(), expected.data(), n * sizeof(float)) == 0);
}
