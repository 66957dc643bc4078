// cpu_affinity.cpp: OneCpu by sched_setaffinity (Linux). What it models and leaves out:
// study/common/cpu_affinity.hpp.
#include "study/common/cpu_affinity.hpp"

namespace tauplan::study {

#ifdef __linux__
OneCpu::OneCpu() {
  CPU_ZERO(&before_);
  if (sched_getaffinity(0, sizeof(before_), &before_) != 0) return;
  for (int candidate = 0; candidate < CPU_SETSIZE; ++candidate) {
    if (!CPU_ISSET(candidate, &before_)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(candidate, &one);
    if (sched_setaffinity(0, sizeof(one), &one) == 0) cpu_ = candidate;
    return;
  }
}

OneCpu::~OneCpu() {
  if (cpu_ >= 0) sched_setaffinity(0, sizeof(before_), &before_);
}
#else
OneCpu::OneCpu() = default;
OneCpu::~OneCpu() = default;
#endif

}  // namespace tauplan::study
