// thread_communicator.cpp: shared-memory combine of K local buffers.
#include "exec/thread_communicator.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace tauplan::exec {

ThreadCommunicator::ThreadCommunicator(int workers) : workers_(workers) {
  assert(workers >= 1);
}

void ThreadCommunicator::combine(const std::vector<float*>& local_buffers,
                                 const std::vector<double>& local_weights, std::size_t n,
                                 CombineRule rule) {
  assert(static_cast<int>(local_buffers.size()) == workers_);
  assert(local_weights.size() == local_buffers.size());
  if (workers_ == 1 && rule == CombineRule::Mean) return;  // the mean of one vector is itself
  if (rule == CombineRule::Mean) return mean_into_all(local_buffers, local_weights, n);
  std::vector<const float*> inputs(local_buffers.begin(), local_buffers.end());
  exec::combine(rule, inputs, local_weights, n, local_buffers.front());
  for (std::size_t k = 1; k < local_buffers.size(); ++k)
    std::memcpy(local_buffers[k], local_buffers.front(), n * sizeof(float));
}

void ThreadCommunicator::mean_into_all(const std::vector<float*>& buffers,
                                       const std::vector<double>& weights, std::size_t n) {
  // Chunk by chunk: accumulate the K inputs in a double buffer that stays in L1, then write the
  // rounded mean into every buffer. Each element sees the same arithmetic as combine_mean
  // (0 + s_0 x_0 + s_1 x_1 + ..., then one rounding to float), so the result is bit-identical
  // to it and to the MPI communicator; the memory traffic is K reads and K writes of n floats.
  double total = 0;
  for (double w : weights)
    total += w;
  assert(total > 0);
  std::vector<double> scale(weights.size());
  for (std::size_t k = 0; k < weights.size(); ++k)
    scale[k] = weights[k] / total;
  constexpr std::size_t kChunk = 1024;  // 8 KiB of doubles, 4 KiB of floats: stays in L1
  std::array<double, kChunk> acc{};
  std::array<float, kChunk> mean{};
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t len = std::min(kChunk, n - begin);
    std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(len), 0.0);
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      const double s = scale[k];
      const float* x = buffers[k] + begin;
      for (std::size_t i = 0; i < len; ++i)
        acc[i] += s * static_cast<double>(x[i]);
    }
    for (std::size_t i = 0; i < len; ++i)
      mean[i] = static_cast<float>(acc[i]);
    for (float* buffer : buffers)
      std::memcpy(buffer + begin, mean.data(), len * sizeof(float));
  }
}

}  // namespace tauplan::exec
