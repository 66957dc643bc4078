// thread_communicator.cpp: shared-memory combine of K local buffers.
#include "exec/thread_communicator.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace tauplan::exec {

ThreadCommunicator::ThreadCommunicator(int workers) : InProcessCommunicator(workers) {
  assert(workers >= 1);
}

void ThreadCommunicator::combine(const std::vector<float*>& local_buffers,
                                 const std::vector<double>& local_weights, std::size_t n,
                                 CombineRule rule) {
  assert(static_cast<int>(local_buffers.size()) == workers());
  combine_buffers(local_buffers, local_weights, n, rule);
}

void ThreadCommunicator::combine_group([[maybe_unused]] const std::vector<int>& group,
                                       const std::vector<float*>& member_buffers,
                                       const std::vector<double>& member_weights, std::size_t n,
                                       CombineRule rule) {
  assert(member_buffers.size() == group.size());  // every worker lives in this process
  combine_buffers(member_buffers, member_weights, n, rule);
}

void ThreadCommunicator::combine_buffers(const std::vector<float*>& local_buffers,
                                         const std::vector<double>& local_weights, std::size_t n,
                                         CombineRule rule) {
  assert(local_weights.size() == local_buffers.size());
  if (local_buffers.empty()) return;
  if (local_buffers.size() == 1 && rule == CombineRule::Mean) return;  // the mean of one: itself
  if (rule == CombineRule::Mean) return mean_into_all(local_buffers, local_weights, n);
  std::vector<const float*> inputs(local_buffers.begin(), local_buffers.end());
  exec::combine(rule, inputs, local_weights, n, local_buffers.front());
  for (std::size_t k = 1; k < local_buffers.size(); ++k)
    std::memcpy(local_buffers[k], local_buffers.front(), n * sizeof(float));
}

void ThreadCommunicator::mean_into_all(const std::vector<float*>& buffers,
                                       const std::vector<double>& weights, std::size_t n) {
  // Chunk by chunk: combine_mean of the K inputs' chunk into an L1-resident float chunk, copied
  // into every buffer. Each element goes through combine_mean itself, so the result is
  // bit-identical to it (and to the MPI communicator); the memory traffic is K reads and K
  // writes of n floats.
  constexpr std::size_t kChunk = 1024;  // 4 KiB of floats (8 KiB of double accumulator)
  std::array<float, kChunk> mean{};
  std::vector<const float*> inputs(buffers.size());
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t len = std::min(kChunk, n - begin);
    for (std::size_t k = 0; k < buffers.size(); ++k)
      inputs[k] = buffers[k] + begin;
    combine_mean(inputs, weights, len, mean.data());
    for (float* buffer : buffers)
      std::memcpy(buffer + begin, mean.data(), len * sizeof(float));
  }
}

}  // namespace tauplan::exec
