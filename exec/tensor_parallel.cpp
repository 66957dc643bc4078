// tensor_parallel.cpp: column- and row-split MLP layers with their tensor all-reduces.
#include "exec/tensor_parallel.hpp"

#include <Eigen/Core>
#include <chrono>
#include <stdexcept>
#include <string>

#include "exec/cpu_blas.hpp"

namespace tauplan::exec {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMatrix>;
using ConstMatMap = Eigen::Map<const RowMatrix>;
using RowVecMap = Eigen::Map<Eigen::Matrix<float, 1, Eigen::Dynamic>>;
using ConstRowVecMap = Eigen::Map<const Eigen::Matrix<float, 1, Eigen::Dynamic>>;

std::size_t cells(long long rows, long long cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

void timed_allreduce(const TensorGroup& group, float* data, std::size_t n) {
  if (group.members.size() < 2) return;
  const auto start = std::chrono::steady_clock::now();
  allreduce_sum(*group.peers, group.members, data, n, group.tag);
  if (group.comm_seconds)
    *group.comm_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (group.allreduces) ++*group.allreduces;
}

}  // namespace

TensorParallelStage::TensorParallelStage(MlpShape shape, int first_layer, int end_layer,
                                         int tensor_rank, int tensor_size)
    : shape_(std::move(shape)),
      first_(first_layer),
      end_(end_layer),
      rank_(tensor_rank),
      size_(tensor_size) {
  if (first_ < 0 || end_ > shape_.layers() || first_ >= end_ || size_ < 1 || rank_ < 0 ||
      rank_ >= size_)
    throw std::invalid_argument("tensor-parallel stage: bad layer range or rank");
  splits_ = model::mlp_layer_splits(first_, end_, size_);  // the rule the Plan costs
  std::size_t at = 0;
  for (int i = 0; i < end_ - first_; ++i) {
    LayerShard s;
    s.layer = first_ + i;
    s.split = splits_[static_cast<std::size_t>(i)];
    const int in = shape_.widths[static_cast<std::size_t>(s.layer)];
    const int out = shape_.widths[static_cast<std::size_t>(s.layer) + 1];
    s.rows = out, s.cols = in, s.bias = out;
    if (s.split == LayerSplit::Columns) {
      if (out % size_ != 0)
        throw std::invalid_argument("layer " + std::to_string(s.layer) + "'s " +
                                    std::to_string(out) + " outputs do not split over " +
                                    std::to_string(size_) + " tensor ranks");
      s.rows = s.bias = out / size_;
      s.row_begin = rank_ * s.rows;
    } else if (s.split == LayerSplit::Rows) {
      s.cols = in / size_;
      s.col_begin = rank_ * s.cols;
    }
    s.weight_at = at;
    at += cells(s.rows, s.cols);
    s.bias_at = at;
    at += static_cast<std::size_t>(s.bias);
    shards_.push_back(s);
  }
  params_.assign(at, 0.0f);
  grads_.assign(at, 0.0f);
}

int TensorParallelStage::input_width() const {
  return shape_.widths[static_cast<std::size_t>(first_)];
}

int TensorParallelStage::output_width() const {
  return shape_.widths[static_cast<std::size_t>(end_)];
}

void TensorParallelStage::load(const float* full) {
  for (const LayerShard& s : shards_) {
    const int in = shape_.widths[static_cast<std::size_t>(s.layer)];
    const float* w = full + weight_offset(shape_, s.layer);
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.cols; ++c)
        params_[s.weight_at + cells(r, s.cols) + static_cast<std::size_t>(c)] =
            w[cells(s.row_begin + r, in) + static_cast<std::size_t>(s.col_begin + c)];
    const float* b = full + bias_offset(shape_, s.layer) + s.row_begin;
    for (int i = 0; i < s.bias; ++i)
      params_[s.bias_at + static_cast<std::size_t>(i)] = b[i];
  }
}

void TensorParallelStage::add_shards_to(const std::vector<float>& local, float* full) const {
  for (const LayerShard& s : shards_) {
    const bool whole_weights = s.split == LayerSplit::Whole;
    const bool whole_bias = s.split != LayerSplit::Columns;
    const int in = shape_.widths[static_cast<std::size_t>(s.layer)];
    if (!whole_weights || rank_ == 0) {
      float* w = full + weight_offset(shape_, s.layer);
      for (int r = 0; r < s.rows; ++r)
        for (int c = 0; c < s.cols; ++c)
          w[cells(s.row_begin + r, in) + static_cast<std::size_t>(s.col_begin + c)] +=
              local[s.weight_at + cells(r, s.cols) + static_cast<std::size_t>(c)];
    }
    if (!whole_bias || rank_ == 0) {
      float* b = full + bias_offset(shape_, s.layer) + s.row_begin;
      for (int i = 0; i < s.bias; ++i)
        b[i] += local[s.bias_at + static_cast<std::size_t>(i)];
    }
  }
}

void TensorParallelStage::add_gradients_to(float* full) const {
  add_shards_to(grads_, full);
}

void TensorParallelStage::add_parameters_to(float* full) const {
  add_shards_to(params_, full);
}

void TensorParallelStage::forward(const float* input, int n, Stash& stash,
                                  std::vector<float>& output, const TensorGroup& group) const {
  const std::size_t count = shards_.size();
  stash.input.resize(count);
  stash.pre_activation.resize(count);
  const float* x = input;
  for (std::size_t i = 0; i < count; ++i) {
    const LayerShard& s = shards_[i];
    stash.input[i].assign(x, x + cells(n, s.cols));
    ConstRowVecMap b(params_.data() + s.bias_at, s.bias);
    std::vector<float>& z_data = stash.pre_activation[i];
    z_data.resize(cells(n, s.rows));
    MatMap z(z_data.data(), n, s.rows);
    // z = in w^T: the CPU replica's product (exec/cpu_blas.hpp), so that a stage's GEMMs run
    // at the speed the calibration measures.
    gemm(false, true, n, s.rows, s.cols, 1.0f, stash.input[i].data(), s.cols,
         params_.data() + s.weight_at, s.cols, 0.0f, z_data.data(), s.rows);
    if (s.split == LayerSplit::Rows) timed_allreduce(group, z_data.data(), z_data.size());
    z.rowwise() += b;
    const bool last = s.layer == shape_.layers() - 1;
    output.resize(z_data.size());
    MatMap out(output.data(), n, s.rows);
    if (last)
      out = z;
    else
      out = z.cwiseMax(0.0f);
    x = output.data();  // the next layer copies it into its stash first
  }
}

void TensorParallelStage::backward(const float* output_gradient, int n, const Stash& stash,
                                   std::vector<float>* input_gradient, const TensorGroup& group) {
  const auto& last_shard = shards_.back();
  std::vector<float> g(output_gradient, output_gradient + cells(n, last_shard.rows));
  std::vector<float> dx;
  for (std::size_t k = shards_.size(); k-- > 0;) {
    const LayerShard& s = shards_[k];
    MatMap dz(g.data(), n, s.rows);
    if (s.layer != shape_.layers() - 1) {
      ConstMatMap z(stash.pre_activation[k].data(), n, s.rows);
      dz = (z.array() > 0.0f).select(dz, 0.0f);
    }
    RowVecMap db(grads_.data() + s.bias_at, s.bias);
    gemm(true, false, s.rows, s.cols, n, 1.0f, g.data(), s.rows, stash.input[k].data(), s.cols,
         1.0f, grads_.data() + s.weight_at, s.cols);  // dW += dz^T in
    db += dz.colwise().sum();
    if (k == 0 && input_gradient == nullptr) break;
    dx.resize(cells(n, s.cols));
    gemm(false, false, n, s.cols, s.rows, 1.0f, g.data(), s.rows, params_.data() + s.weight_at,
         s.cols, 0.0f, dx.data(), s.cols);  // dx = dz W
    if (s.split == LayerSplit::Columns) timed_allreduce(group, dx.data(), dx.size());
    std::swap(g, dx);
  }
  if (input_gradient) *input_gradient = g;
}

void TensorParallelStage::zero_gradients() {
  std::fill(grads_.begin(), grads_.end(), 0.0f);
}

void TensorParallelStage::sgd_step(float learning_rate) {
  const auto n = static_cast<Eigen::Index>(params_.size());
  Eigen::Map<Eigen::VectorXf> p(params_.data(), n);
  Eigen::Map<const Eigen::VectorXf> d(grads_.data(), n);
  p -= learning_rate * d;
}

int TensorParallelStage::forward_allreduces() const {
  if (size_ < 2) return 0;
  int count = 0;
  for (const LayerShard& s : shards_)
    count += s.split == LayerSplit::Rows ? 1 : 0;
  return count;
}

int TensorParallelStage::backward_allreduces(bool input_gradient) const {
  if (size_ < 2) return 0;
  int count = 0;
  for (std::size_t k = 0; k < shards_.size(); ++k)
    if (shards_[k].split == LayerSplit::Columns && (k > 0 || input_gradient)) ++count;
  return count;
}

}  // namespace tauplan::exec
