// cpu_affinity_test.cpp: OneCpu pins the thread to one CPU of its mask, a child process started
// meanwhile inherits that one CPU, and the guard's end gives back the whole mask (Linux only).
#include "study/common/cpu_affinity.hpp"

#ifdef __linux__
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <catch2/catch.hpp>

namespace {

int cpus_allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  return CPU_COUNT(&set);
}

// What a forked child sees: its number of allowed CPUs (at most 200), as its exit status.
int child_cpus_allowed() {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    _exit(sched_getaffinity(0, sizeof(set), &set) == 0 ? std::min(CPU_COUNT(&set), 200) : 255);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("cpu affinity: one CPU while the guard lives, for children too, the mask after") {
  const int before = cpus_allowed();
  {
    const tauplan::study::OneCpu pinned;
    REQUIRE(pinned.cpu() >= 0);
    CHECK(cpus_allowed() == 1);
    CHECK(child_cpus_allowed() == 1);
    cpu_set_t set;
    CPU_ZERO(&set);
    REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
    CHECK(CPU_ISSET(pinned.cpu(), &set));
  }
  CHECK(cpus_allowed() == before);
  CHECK(child_cpus_allowed() == std::min(before, 200));
}
#endif  // __linux__
