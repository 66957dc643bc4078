// mlp.cpp: forward, backward and SGD of the flat-vector MLP: matrix products from cpu_blas,
// the passes between them from mlp_kernels.
#include "exec/mlp.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <random>
#include <utility>

#include "exec/cpu_blas.hpp"
#include "exec/mlp_kernels.hpp"

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
  params_.assign(shape_.parameters(), Scalar(0));
  grads_.assign(shape_.parameters(), Scalar(0));
  outputs_.resize(static_cast<std::size_t>(shape_.layers()));
}

template <typename Scalar>
void BasicMlp<Scalar>::init(std::uint64_t seed) {
  init_parameters(shape_, seed, params_.data());
  std::fill(grads_.begin(), grads_.end(), Scalar(0));
}

template <typename Scalar>
double BasicMlp<Scalar>::forward(const Scalar* x, const int* y, int n, bool backward,
                                 const std::function<void(std::size_t)>& ready) {
  assert(n > 0);
  const int layers = shape_.layers();
  const Scalar* input = x;
  for (int l = 0; l < layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const int in_w = shape_.widths[li];
    const int out_w = shape_.widths[li + 1];
    // z = input * W^T + b: the bias rows first, then the product accumulates onto them.
    outputs_[li].resize(cells(n, out_w));
    Scalar* z = outputs_[li].data();
    kernels::fill_rows(z, params_.data() + bias_offset(shape_, l), n, out_w);
    gemm(false, true, n, out_w, in_w, Scalar(1), input, in_w,
         params_.data() + weight_offset(shape_, l), in_w, Scalar(1), z, out_w);
    if (l + 1 < layers) kernels::relu_in_place(z, cells(n, out_w));
    input = z;
  }

  // Softmax cross-entropy on the logits; when backward, d(mean loss)/d(logits) and the last
  // layer's bias gradient in the same pass.
  const int classes = shape_.classes();
  if (!backward)
    return kernels::softmax_cross_entropy(outputs_.back().data(), y, n, classes, nullptr, nullptr);
  delta_.resize(cells(n, classes));
  const double loss =
      kernels::softmax_cross_entropy(outputs_.back().data(), y, n, classes, delta_.data(),
                                     grads_.data() + bias_offset(shape_, layers - 1));

  for (int l = layers - 1; l >= 0; --l) {
    const auto li = static_cast<std::size_t>(l);
    const int in_w = shape_.widths[li];
    const int out_w = shape_.widths[li + 1];
    const Scalar* in_data = l == 0 ? x : outputs_[li - 1].data();
    // dW = dz^T * input (out x in); db was written by the pass that produced dz.
    gemm(true, false, out_w, in_w, n, Scalar(1), delta_.data(), out_w, in_data, in_w, Scalar(0),
         grads_.data() + weight_offset(shape_, l), in_w);
    if (ready) ready(weight_offset(shape_, l));  // layer l and the later ones are final
    if (l > 0) {
      // d input = dz * W, masked by the ReLU that produced the input, and its bias gradient.
      delta_prev_.resize(cells(n, in_w));
      gemm(false, false, n, in_w, out_w, Scalar(1), delta_.data(), out_w,
           params_.data() + weight_offset(shape_, l), in_w, Scalar(0), delta_prev_.data(), in_w);
      kernels::relu_backward(delta_prev_.data(), outputs_[li - 1].data(), n, in_w,
                             grads_.data() + bias_offset(shape_, l - 1));
      std::swap(delta_, delta_prev_);
    }
  }
  return loss;
}

template <typename Scalar>
double BasicMlp<Scalar>::forward_backward(const Scalar* x, const int* y, int n,
                                          const std::function<void(std::size_t)>& ready) {
  return forward(x, y, n, true, ready);
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
    for (int i = 0; i < count; ++i) {
      const Scalar* logits = outputs_.back().data() + cells(i, classes);
      const auto best = std::max_element(logits, logits + classes) - logits;
      if (static_cast<int>(best) == y[offset + static_cast<std::size_t>(i)]) ++hits;
    }
  }
  return hits;
}

template <typename Scalar>
void BasicMlp<Scalar>::sgd_step(Scalar lr) {
  kernels::sgd_update(params_.data(), grads_.data(), lr, params_.size());
}

template class BasicMlp<float>;
template class BasicMlp<double>;

}  // namespace tauplan::exec
