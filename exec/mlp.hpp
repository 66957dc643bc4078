// mlp.hpp: a multi-layer perceptron over one flat parameter vector and one flat gradient.
//
// Layers are fully connected: hidden layers use ReLU, the last produces logits for a softmax
// cross-entropy loss averaged over the batch. Parameters live in ONE contiguous vector, layer
// after layer, W (out x in, row-major) then b (out); the gradient vector has the same layout, so
// a whole gradient or model is one buffer for a collective, exactly as on the GPU (exec/cuda/).
// A step is five matrix products (cpu_blas.hpp: OpenBLAS, or Eigen without it) with fused
// element-wise passes between them (mlp_kernels.hpp), in workspaces that grow to the largest
// batch seen and are then reused, so a step allocates nothing. Products run on the caller's
// thread alone unless set_compute_threads asks for more (parallelism comes from workers).
// Initialisation is He-uniform for W and zero for b from a seeded generator, identical on
// every platform. It is templated on the scalar so that tests can check gradients in double;
// training uses float. What it leaves out: other layers (convolutions, dropout, batch norm),
// momentum and weight decay (plain SGD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tauplan::exec {

/// Layer widths from input to output, e.g. {784, 256, 128, 10}.
struct MlpShape {
  std::vector<int> widths{784, 256, 128, 10};

  int inputs() const { return widths.front(); }
  int classes() const { return widths.back(); }
  int layers() const { return static_cast<int>(widths.size()) - 1; }
  /// Number of parameters (weights and biases of every layer).
  std::size_t parameters() const;
  /// Forward+backward flop per sample (2 per multiply-add, 3 GEMMs per layer but the first
  /// layer's input gradient is skipped), for comparison with workload files.
  double flop_per_sample() const;
  /// "784-256-128-10".
  std::string to_string() const;
};

/// Offsets of layer l's weights and biases in the flat vector.
std::size_t weight_offset(const MlpShape& shape, int layer);
std::size_t bias_offset(const MlpShape& shape, int layer);

/// Deterministic He-uniform initialisation of a flat parameter vector (float or double).
void init_parameters(const MlpShape& shape, std::uint64_t seed, float* params);
void init_parameters(const MlpShape& shape, std::uint64_t seed, double* params);

template <typename Scalar>
class BasicMlp {
 public:
  explicit BasicMlp(MlpShape shape);

  const MlpShape& shape() const { return shape_; }
  std::size_t parameter_count() const { return params_.size(); }
  Scalar* parameters() { return params_.data(); }
  const Scalar* parameters() const { return params_.data(); }
  Scalar* gradients() { return grads_.data(); }
  const Scalar* gradients() const { return grads_.data(); }

  void init(std::uint64_t seed);
  /// Forward and backward on `n` samples (x: n x inputs row-major, y: class indices). Writes the
  /// gradient of the mean loss into gradients() and returns the mean loss. `ready`, when given,
  /// is called as the backward pass goes, once per layer from the last, with the index from which
  /// the gradient is final (layer l's weight offset: its weights and bias and every later layer's),
  /// before the pass computes the gradient of that layer's input; it must not touch the
  /// gradient below that index.
  double forward_backward(const Scalar* x, const int* y, int n,
                          const std::function<void(std::size_t)>& ready = {});
  /// Mean loss without touching the gradient.
  double loss(const Scalar* x, const int* y, int n);
  /// Number of samples whose argmax logit equals the label (in chunks of `chunk` samples).
  long long correct(const Scalar* x, const int* y, long long n, int chunk = 1000);
  /// parameters -= lr * gradients.
  void sgd_step(Scalar lr);

 private:
  double forward(const Scalar* x, const int* y, int n, bool backward,
                 const std::function<void(std::size_t)>& ready = {});

  MlpShape shape_;
  std::vector<Scalar> params_;
  std::vector<Scalar> grads_;
  // Workspace, n x width row-major: each layer's output (hidden layers: after ReLU, which is
  // positive exactly where the pre-activation is, so it also serves as the backward mask; the
  // last layer: logits), and the gradient with respect to a layer's output and to its input.
  std::vector<std::vector<Scalar>> outputs_;
  std::vector<Scalar> delta_;
  std::vector<Scalar> delta_prev_;
};

using Mlp = BasicMlp<float>;

}  // namespace tauplan::exec
