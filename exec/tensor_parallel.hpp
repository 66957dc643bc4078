// tensor_parallel.hpp: one tensor rank's share of a run of MLP layers, Megatron style.
//
// A stage holds layers [first, end) of an MLP (exec/mlp.hpp's shape and flat layout). With t
// tensor ranks, consecutive layers are paired: the first of a pair is split by columns (rank k
// holds output features [k o/t, (k+1) o/t) of W and b, so ReLU needs no communication), the second
// by rows (rank k holds the matching input columns of W; the bias is whole). The pair's output is
// the sum of the ranks' partial products, all-reduced in the tensor group, plus the bias: one
// all-reduce forward (Megatron's g) and, in backward, one all-reduce of the input gradient (its
// f) unless nothing before the pair needs it. A layer left without a partner (the output layer
// of 784-256-128-10) is replicated: every rank computes it whole, on the same data, to the same
// bits. With t = 1 every layer is whole. Gradients accumulate over micro-batches until
// zero_gradients(); the loss's scale (1 / the global batch) is the caller's. Kernels: the matrix
// products of the CPU replica (exec/cpu_blas.hpp: OpenBLAS where found, one thread per rank), so
// that a stage computes at the speed `tauplan calibrate` measures; bias, ReLU and the update are
// Eigen maps over row-major buffers. What it leaves out:
// splitting the output layer by classes (a vocabulary-parallel softmax), sequence parallelism,
// and overlapping the all-reduces with compute.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/mlp.hpp"
#include "exec/peer_group.hpp"
#include "model/ir/mlp_layout.hpp"

namespace tauplan::exec {

/// A tensor group: the ranks of one stage and replica that share its layers, in tensor-rank
/// order, and where to add the seconds spent in its all-reduces.
struct TensorGroup {
  PeerGroup* peers = nullptr;
  std::vector<int> members;
  int tag = 1;
  double* comm_seconds = nullptr;
  long long* allreduces = nullptr;
};

using LayerSplit = model::MlpLayerSplit;

class TensorParallelStage {
 public:
  /// Layers [first_layer, end_layer) of `shape` on tensor rank `tensor_rank` of `tensor_size`.
  /// Throws std::invalid_argument when a split layer's width is not divisible by the size.
  TensorParallelStage(MlpShape shape, int first_layer, int end_layer, int tensor_rank,
                      int tensor_size);

  const std::vector<LayerSplit>& splits() const { return splits_; }
  std::size_t parameter_count() const { return params_.size(); }
  float* parameters() { return params_.data(); }
  float* gradients() { return grads_.data(); }
  int input_width() const;
  int output_width() const;
  bool ends_network() const { return end_ == shape_.layers(); }

  /// Takes this rank's parts of an unsplit flat parameter vector.
  void load(const float* full_parameters);
  /// Adds this rank's parts into an unsplit flat vector: the split parts, and the whole ones
  /// (replicated layers, row-split biases) only from tensor rank 0, so that summing every
  /// rank's vector gives each value once.
  void add_gradients_to(float* full_gradients) const;
  void add_parameters_to(float* full_parameters) const;

  /// What backward needs of one micro-batch: each layer's input and pre-activation.
  struct Stash {
    std::vector<std::vector<float>> input;
    std::vector<std::vector<float>> pre_activation;
  };
  /// Forward of `n` rows of `input` (n x input_width(), the same on every tensor rank); the
  /// stage's output (n x output_width(): ReLU'd, or the logits when it ends the network) goes to
  /// `output`, the same bits on every tensor rank.
  void forward(const float* input, int n, Stash& stash, std::vector<float>& output,
               const TensorGroup& group) const;
  /// Backward of one micro-batch from the gradient of its output; adds to the gradients and,
  /// when `input_gradient` is given, writes the gradient of the stage's input (n x
  /// input_width(), the same on every tensor rank).
  void backward(const float* output_gradient, int n, const Stash& stash,
                std::vector<float>* input_gradient, const TensorGroup& group);
  void zero_gradients();
  void sgd_step(float learning_rate);

  /// Tensor all-reduces of one micro-batch: forward, and backward with or without the input
  /// gradient.
  int forward_allreduces() const;
  int backward_allreduces(bool input_gradient) const;

 private:
  struct LayerShard {
    int layer = 0;
    LayerSplit split = LayerSplit::Whole;
    int rows = 0;                            ///< output features held (W is rows x cols, row-major)
    int cols = 0;                            ///< input features held
    int bias = 0;                            ///< bias values held
    std::size_t weight_at = 0, bias_at = 0;  ///< offsets in params_ and grads_
    int row_begin = 0, col_begin = 0;        ///< where the shard sits in the whole W
  };

  /// add_gradients_to and add_parameters_to: `local` (grads_ or params_) into `full`.
  void add_shards_to(const std::vector<float>& local, float* full) const;

  MlpShape shape_;
  int first_, end_, rank_, size_;
  std::vector<LayerSplit> splits_;
  std::vector<LayerShard> shards_;
  std::vector<float> params_;
  std::vector<float> grads_;
};

}  // namespace tauplan::exec
