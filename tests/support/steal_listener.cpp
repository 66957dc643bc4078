// steal_listener.cpp: when a test case fails, says how much of the machine's CPU time the
// hypervisor took while it ran (steal, exec/cpu_steal.hpp). Linked into the binaries that hold
// the wall-clock (`timing`) tests: on a VM a timing failure under heavy steal is the host's, and
// the line lets whoever reads a CI log tell the two apart. It changes no result. Built as an
// object library (tests/CMakeLists.txt): a listener in a static library would be dropped by the
// linker, and Catch's reporter interfaces need the define below before catch.hpp, which the
// test binaries' precompiled header would otherwise have included first.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <iostream>

#include "exec/cpu_steal.hpp"

namespace {

class StealListener : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    Catch::TestEventListenerBase::testCaseStarting(info);
    meter_ = tauplan::exec::StealMeter();
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (stats.totals.assertions.failed > 0)
      std::cout << "steal during this failed test case: "
                << tauplan::exec::describe_steal(meter_.fraction())
                << " of the machine's CPU time (the hypervisor's; /proc/stat)" << std::endl;
    Catch::TestEventListenerBase::testCaseEnded(stats);
  }

 private:
  tauplan::exec::StealMeter meter_;
};

}  // namespace

CATCH_REGISTER_LISTENER(StealListener)
