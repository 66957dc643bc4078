// thread_communicator.cpp: shared-memory combine of K local buffers.
#include "exec/thread_communicator.hpp"

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
  std::vector<const float*> inputs(local_buffers.begin(), local_buffers.end());
  exec::combine(rule, inputs, local_weights, n, local_buffers.front());
  for (std::size_t k = 1; k < local_buffers.size(); ++k)
    std::memcpy(local_buffers[k], local_buffers.front(), n * sizeof(float));
}

}  // namespace tauplan::exec
