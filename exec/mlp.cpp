// mlp.cpp: forward, backward and SGD of the flat-vector MLP with Eigen maps.
#include "exec/mlp.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <random>
#include <utility>

namespace tauplan::exec {

std::size_t MlpShape::parameters() const {
  std::size_t total = 0;
  for (int l = 0; l < layers(); ++l) {
    const auto in = static_cast<std::size_t>(widths[static_cast<std::size_t>(l)]);
    const auto out = static_cast<std::size_t>(widths[static_cast<std::size_t>(l) + 1]);
    total += out * in + out;
  }
  return total;
}

double MlpShape::flop_per_sample() const {
  double flop = 0;
  for (int l = 0; l < layers(); ++l) {
    const double in = widths[static_cast<std::size_t>(l)];
    const double out = widths[static_cast<std::size_t>(l) + 1];
    flop += (l == 0 ? 4.0 : 6.0) * in * out;  // forward, weight gradient, input gradient
  }
  return flop;
}

std::string MlpShape::to_string() const {
  std::string text;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (i) text += '-';
    text += std::to_string(widths[i]);
  }
  return text;
}

std::size_t weight_offset(const MlpShape& shape, int layer) {
  std::size_t offset = 0;
  for (int l = 0; l < layer; ++l) {
    const auto in = static_cast<std::size_t>(shape.widths[static_cast<std::size_t>(l)]);
    const auto out = static_cast<std::size_t>(shape.widths[static_cast<std::size_t>(l) + 1]);
    offset += out * in + out;
  }
  return offset;
}

std::size_t bias_offset(const MlpShape& shape, int layer) {
  const auto in = static_cast<std::size_t>(shape.widths[static_cast<std::size_t>(layer)]);
  const auto out = static_cast<std::size_t>(shape.widths[static_cast<std::size_t>(layer) + 1]);
  return weight_offset(shape, layer) + out * in;
}

namespace {

template <typename Scalar>
void init_parameters_impl(const MlpShape& shape, std::uint64_t seed, Scalar* params) {
  std::mt19937_64 rng(seed);
  for (int l = 0; l < shape.layers(); ++l) {
    const int in = shape.widths[static_cast<std::size_t>(l)];
    const int out = shape.widths[static_cast<std::size_t>(l) + 1];
    const double limit = std::sqrt(6.0 / in);  // He-uniform for ReLU
    Scalar* w = params + weight_offset(shape, l);
    for (long long i = 0; i < static_cast<long long>(in) * out; ++i) {
      // 53 random bits to [0, 1): the same value on every platform (std distributions differ).
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      w[i] = static_cast<Scalar>((2.0 * u - 1.0) * limit);
    }
    Scalar* b = params + bias_offset(shape, l);
    std::fill(b, b + out, Scalar(0));
  }
}

template <typename Scalar>
using RowMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename Scalar>
using MatMap = Eigen::Map<RowMatrix<Scalar>>;
template <typename Scalar>
using ConstMatMap = Eigen::Map<const RowMatrix<Scalar>>;
template <typename Scalar>
using RowVecMap = Eigen::Map<Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>;
template <typename Scalar>
using ConstRowVecMap = Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>;

std::size_t cells(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

}  // namespace

void init_parameters(const MlpShape& shape, std::uint64_t seed, float* params) {
  init_parameters_impl(shape, seed, params);
}
void init_parameters(const MlpShape& shape, std::uint64_t seed, double* params) {
  init_parameters_impl(shape, seed, params);
}

template <typename Scalar>
BasicMlp<Scalar>::BasicMlp(MlpShape shape) : shape_(std::move(shape)) {
  assert(shape_.widths.size() >= 2);
  Eigen::setNbThreads(1);
  params_.assign(shape_.parameters(), Scalar(0));
  grads_.assign(shape_.parameters(), Scalar(0));
  z_.resize(static_cast<std::size_t>(shape_.layers()));
  a_.resize(static_cast<std::size_t>(shape_.layers()));
}

template <typename Scalar>
void BasicMlp<Scalar>::init(std::uint64_t seed) {
  init_parameters(shape_, seed, params_.data());
  std::fill(grads_.begin(), grads_.end(), Scalar(0));
}

template <typename Scalar>
double BasicMlp<Scalar>::forward(const Scalar* x, const int* y, int n, bool backward) {
  assert(n > 0);
  const int layers = shape_.layers();
  const Scalar* input = x;
  for (int l = 0; l < layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const int in_w = shape_.widths[li];
    const int out_w = shape_.widths[li + 1];
    ConstMatMap<Scalar> a_in(input, n, in_w);
    ConstMatMap<Scalar> w(params_.data() + weight_offset(shape_, l), out_w, in_w);
    ConstRowVecMap<Scalar> b(params_.data() + bias_offset(shape_, l), out_w);
    z_[li].resize(cells(n, out_w));
    MatMap<Scalar> z(z_[li].data(), n, out_w);
    z.noalias() = a_in * w.transpose();
    z.rowwise() += b;
    if (l + 1 < layers) {
      a_[li].resize(cells(n, out_w));
      MatMap<Scalar> a_out(a_[li].data(), n, out_w);
      a_out = z.cwiseMax(Scalar(0));
      input = a_[li].data();
    }
  }

  // Softmax cross-entropy on the logits, with d(mean loss)/d(logits) when backward.
  const int classes = shape_.classes();
  MatMap<Scalar> logits(z_.back().data(), n, classes);
  if (backward) delta_.resize(cells(n, classes));
  double loss = 0;
  const Scalar inv_n = Scalar(1) / static_cast<Scalar>(n);
  for (int i = 0; i < n; ++i) {
    const int label = y[i];
    assert(label >= 0 && label < classes);
    const Scalar m = logits.row(i).maxCoeff();
    double sum = 0;
    for (int c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(logits(i, c) - m));
    loss += std::log(sum) - static_cast<double>(logits(i, label) - m);
    if (backward) {
      Scalar* d = delta_.data() + cells(i, classes);
      for (int c = 0; c < classes; ++c)
        d[c] = static_cast<Scalar>(std::exp(static_cast<double>(logits(i, c) - m)) / sum) * inv_n;
      d[label] -= inv_n;
    }
  }
  if (!backward) return loss / n;

  for (int l = layers - 1; l >= 0; --l) {
    const auto li = static_cast<std::size_t>(l);
    const int in_w = shape_.widths[li];
    const int out_w = shape_.widths[li + 1];
    const Scalar* in_data = l == 0 ? x : a_[li - 1].data();
    ConstMatMap<Scalar> a_in(in_data, n, in_w);
    MatMap<Scalar> dz(delta_.data(), n, out_w);
    MatMap<Scalar> dw(grads_.data() + weight_offset(shape_, l), out_w, in_w);
    RowVecMap<Scalar> db(grads_.data() + bias_offset(shape_, l), out_w);
    dw.noalias() = dz.transpose() * a_in;
    db = dz.colwise().sum();
    if (l > 0) {
      ConstMatMap<Scalar> w(params_.data() + weight_offset(shape_, l), out_w, in_w);
      delta_prev_.resize(cells(n, in_w));
      MatMap<Scalar> da(delta_prev_.data(), n, in_w);
      da.noalias() = dz * w;
      ConstMatMap<Scalar> z_prev(z_[li - 1].data(), n, in_w);
      da = (z_prev.array() > Scalar(0)).select(da, Scalar(0));
      std::swap(delta_, delta_prev_);
    }
  }
  return loss / n;
}

template <typename Scalar>
double BasicMlp<Scalar>::forward_backward(const Scalar* x, const int* y, int n) {
  return forward(x, y, n, true);
}

template <typename Scalar>
double BasicMlp<Scalar>::loss(const Scalar* x, const int* y, int n) {
  return forward(x, y, n, false);
}

template <typename Scalar>
long long BasicMlp<Scalar>::correct(const Scalar* x, const int* y, long long n, int chunk) {
  long long hits = 0;
  const int classes = shape_.classes();
  const auto stride = static_cast<std::size_t>(shape_.inputs());
  for (long long start = 0; start < n; start += chunk) {
    const int count = static_cast<int>(std::min<long long>(chunk, n - start));
    const auto offset = static_cast<std::size_t>(start);
    forward(x + offset * stride, y + offset, count, false);
    MatMap<Scalar> logits(z_.back().data(), count, classes);
    for (int i = 0; i < count; ++i) {
      Eigen::Index best = 0;
      logits.row(i).maxCoeff(&best);
      if (static_cast<int>(best) == y[offset + static_cast<std::size_t>(i)]) ++hits;
    }
  }
  return hits;
}

template <typename Scalar>
void BasicMlp<Scalar>::sgd_step(Scalar lr) {
  const auto n = static_cast<Eigen::Index>(params_.size());
  Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, 1>> p(params_.data(), n);
  Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>> g(grads_.data(), n);
  p -= lr * g;
}

template class BasicMlp<float>;
template class BasicMlp<double>;

}  // namespace tauplan::exec
