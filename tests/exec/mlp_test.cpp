// mlp_test.cpp: the flat-vector MLP: layout, gradients against finite differences, SGD.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "exec/mlp.hpp"

using tauplan::exec::BasicMlp;
using tauplan::exec::MlpShape;

namespace {

MlpShape small_shape() {
  MlpShape s;
  s.widths = {6, 5, 4, 3};
  return s;
}

template <typename Scalar>
std::vector<Scalar> random_inputs(int n, int features, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Scalar> x(static_cast<std::size_t>(n * features));
  for (auto& v : x)
    v = static_cast<Scalar>(normal(rng));
  return x;
}

}  // namespace

TEST_CASE("MLP parameter layout matches the fashion-mlp workload", "[exec][mlp]") {
  MlpShape shape;  // default 784-256-128-10
  CHECK(shape.parameters() == 235146);
  CHECK(tauplan::exec::weight_offset(shape, 0) == 0);
  CHECK(tauplan::exec::bias_offset(shape, 0) == 784 * 256);
  CHECK(tauplan::exec::weight_offset(shape, 1) == 784 * 256 + 256);
  CHECK(tauplan::exec::bias_offset(shape, 2) == 235146 - 10);
  CHECK(shape.to_string() == "784-256-128-10");
}

TEST_CASE("MLP gradients match central finite differences (double)", "[exec][mlp]") {
  const MlpShape shape = small_shape();
  BasicMlp<double> mlp(shape);
  mlp.init(11);
  // Non-zero biases so that every parameter matters.
  for (int l = 0; l < shape.layers(); ++l) {
    double* b = mlp.parameters() + tauplan::exec::bias_offset(shape, l);
    for (int i = 0; i < shape.widths[static_cast<std::size_t>(l) + 1]; ++i)
      b[i] = 0.05 * (i + 1);
  }
  const int n = 7;
  const std::vector<double> x = random_inputs<double>(n, shape.inputs(), 5);
  const std::vector<int> y = {0, 1, 2, 0, 1, 2, 1};
  mlp.forward_backward(x.data(), y.data(), n);
  const std::vector<double> analytic(mlp.gradients(), mlp.gradients() + mlp.parameter_count());

  const double eps = 1e-6;
  double worst = 0;
  for (std::size_t i = 0; i < mlp.parameter_count(); ++i) {
    double* p = mlp.parameters() + i;
    const double saved = *p;
    *p = saved + eps;
    const double plus = mlp.loss(x.data(), y.data(), n);
    *p = saved - eps;
    const double minus = mlp.loss(x.data(), y.data(), n);
    *p = saved;
    const double numeric = (plus - minus) / (2 * eps);
    worst = std::max(worst, std::fabs(numeric - analytic[i]) / std::max(1.0, std::fabs(numeric)));
  }
  CHECK(worst < 1e-7);
}

TEST_CASE("float gradients agree with the double reference", "[exec][mlp]") {
  const MlpShape shape = small_shape();
  BasicMlp<double> ref(shape);
  BasicMlp<float> mlp(shape);
  ref.init(3);
  mlp.init(3);
  const int n = 9;
  const std::vector<double> xd = random_inputs<double>(n, shape.inputs(), 8);
  const std::vector<float> xf(xd.begin(), xd.end());
  const std::vector<int> y = {2, 1, 0, 0, 1, 2, 2, 1, 0};
  const double ld = ref.forward_backward(xd.data(), y.data(), n);
  const double lf = mlp.forward_backward(xf.data(), y.data(), n);
  CHECK(lf == Approx(ld).epsilon(1e-5));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.parameter_count(); ++i) {
    const double d = static_cast<double>(mlp.gradients()[i]) - ref.gradients()[i];
    num += d * d;
    den += ref.gradients()[i] * ref.gradients()[i];
  }
  CHECK(std::sqrt(num / den) < 1e-5);
}

TEST_CASE("the backward pass reports each layer's gradient final, last layer first",
          "[exec][mlp][overlap]") {
  // What the overlap stream relies on: at each report, the gradient from the reported index on
  // is already its final value, and reporting changes no number.
  const MlpShape shape = small_shape();
  BasicMlp<float> plain(shape), reporting(shape);
  plain.init(4);
  reporting.init(4);
  const int n = 7;
  const std::vector<float> x = random_inputs<float>(n, shape.inputs(), 9);
  const std::vector<int> y = {0, 1, 2, 2, 1, 0, 1};
  std::fill(reporting.gradients(), reporting.gradients() + reporting.parameter_count(), -7.0f);
  std::vector<std::size_t> reported;
  std::vector<std::vector<float>> suffixes;  // the gradient from the reported index, as reported
  const double lp = plain.forward_backward(x.data(), y.data(), n);
  const double lr = reporting.forward_backward(x.data(), y.data(), n, [&](std::size_t first) {
    reported.push_back(first);
    suffixes.emplace_back(reporting.gradients() + first,
                          reporting.gradients() + reporting.parameter_count());
  });
  CHECK(lr == lp);
  std::vector<std::size_t> expected;
  for (int l = shape.layers() - 1; l >= 0; --l)
    expected.push_back(tauplan::exec::weight_offset(shape, l));
  REQUIRE(reported == expected);
  CHECK(reported.back() == 0);
  for (std::size_t r = 0; r < reported.size(); ++r)
    CHECK(std::equal(suffixes[r].begin(), suffixes[r].end(), plain.gradients() + reported[r]));
  CHECK(std::equal(plain.gradients(), plain.gradients() + plain.parameter_count(),
                   reporting.gradients()));
}

TEST_CASE("initialisation is deterministic per seed", "[exec][mlp]") {
  const MlpShape shape = small_shape();
  BasicMlp<float> a(shape), b(shape), c(shape);
  a.init(42);
  b.init(42);
  c.init(43);
  const std::vector<float> pa(a.parameters(), a.parameters() + a.parameter_count());
  const std::vector<float> pb(b.parameters(), b.parameters() + b.parameter_count());
  const std::vector<float> pc(c.parameters(), c.parameters() + c.parameter_count());
  CHECK(pa == pb);
  CHECK(pa != pc);
}

TEST_CASE("an SGD step lowers the loss and accuracy counts argmax hits", "[exec][mlp]") {
  MlpShape shape;
  shape.widths = {6, 32, 3};
  BasicMlp<float> mlp(shape);
  mlp.init(1);
  const int n = 16;
  const std::vector<float> x = random_inputs<float>(n, shape.inputs(), 2);
  std::vector<int> y(n);
  for (int i = 0; i < n; ++i)
    y[static_cast<std::size_t>(i)] = i % 3;
  const double before = mlp.forward_backward(x.data(), y.data(), n);
  for (int s = 0; s < 500; ++s) {
    mlp.forward_backward(x.data(), y.data(), n);
    mlp.sgd_step(0.1f);
  }
  const double after = mlp.loss(x.data(), y.data(), n);
  CHECK(after < before);
  // Memorising 16 points: most must be right now; counting in chunks gives the same total.
  const long long hits = mlp.correct(x.data(), y.data(), n);
  CHECK(hits >= 12);
  CHECK(mlp.correct(x.data(), y.data(), n, 5) == hits);
}
