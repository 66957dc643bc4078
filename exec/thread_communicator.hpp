// thread_communicator.hpp: K workers in one process combining through shared memory.
//
// All K buffers are local, so a combine is a reduction over K host buffers in worker order
// (combine.hpp), run by the calling thread, with the result written into every buffer. The
// weighted mean goes chunk by chunk (K reads and K writes of each element, the pattern of a
// central reducer: a parameter server whose "link" is the reducing core's memory bandwidth,
// which is how `tauplan calibrate` describes it); Adasum reduces whole vectors, then copies. The
// same goes for a subgroup's buffers (combine_group). The
// trainer calls it once all workers have finished their compute (it joins its worker threads
// first in concurrent mode), so no locking is needed here. What it leaves out: a network; the
// time it measures is a memory-bound reduction, the S of workers sharing one machine.
#pragma once

#include "exec/communicator.hpp"

namespace tauplan::exec {

class ThreadCommunicator final : public InProcessCommunicator {
 public:
  explicit ThreadCommunicator(int workers);

  std::string name() const override { return "threads"; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  /// A subgroup's buffers reduced the same way, in group order.
  void combine_group(const std::vector<int>& group, const std::vector<float*>& member_buffers,
                     const std::vector<double>& member_weights, std::size_t n,
                     CombineRule rule) override;

 private:
  void combine_buffers(const std::vector<float*>& local_buffers,
                       const std::vector<double>& local_weights, std::size_t n, CombineRule rule);
  void mean_into_all(const std::vector<float*>& buffers, const std::vector<double>& weights,
                     std::size_t n);
};

}  // namespace tauplan::exec
