// cpu_steal_test.cpp: the steal share read from /proc/stat's cpu line (exec/cpu_steal.hpp).
#include <catch2/catch.hpp>

#include "exec/cpu_steal.hpp"

using namespace tauplan::exec;

namespace {

// Two samples of a 2-CPU guest's /proc/stat, 1 s apart at 100 jiffies/s: 200 jiffies in all,
// of which 30 stolen (user +100, system +20, idle +50, steal +30).
const char* kBefore =
    "cpu  1000 5 300 9000 40 0 10 200 0 0\n"
    "cpu0 500 2 150 4500 20 0 5 100 0 0\n"
    "cpu1 500 3 150 4500 20 0 5 100 0 0\n"
    "intr 12345\n";
const char* kAfter =
    "cpu  1100 5 320 9050 40 0 10 230 7 0\n"
    "cpu0 550 2 160 4525 20 0 5 115 0 0\n";

}  // namespace

TEST_CASE("cpu steal: the aggregate line's steal over its first eight fields") {
  const CpuTimes before = parse_proc_stat(kBefore);
  REQUIRE(before.valid);
  CHECK(before.steal == 200);
  CHECK(before.total == 1000 + 5 + 300 + 9000 + 40 + 0 + 10 + 200);  // guest fields left out
  const CpuTimes after = parse_proc_stat(kAfter);
  REQUIRE(after.valid);
  CHECK(steal_fraction(before, after) == Approx(30.0 / 200.0));
  CHECK(describe_steal(steal_fraction(before, after)) == "15.0%");
}

TEST_CASE("cpu steal: unknown rather than a wrong number") {
  CHECK_FALSE(parse_proc_stat("").valid);
  CHECK_FALSE(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\n").valid);   // no aggregate line
  CHECK_FALSE(parse_proc_stat("cpu  1 2 3 4 5 6 7\n").valid);     // a kernel before steal
  CHECK_FALSE(parse_proc_stat("cpu  1 2 3 -4 5 6 7 8\n").valid);  // not a count
  const CpuTimes before = parse_proc_stat(kBefore);
  CHECK(steal_fraction(before, before) == -1);                   // no time counted
  CHECK(steal_fraction(before, CpuTimes{}) == -1);               // unreadable
  CHECK(steal_fraction(parse_proc_stat(kAfter), before) == -1);  // counters went backwards
  CHECK(describe_steal(-1) == "unknown");
}

TEST_CASE("cpu steal: this machine's reading is a share, where /proc/stat is there") {
  if (!read_cpu_times().valid) return;  // not Linux: nothing to read
  const StealMeter meter;
  volatile double sink = 0;
  for (int i = 0; i < 20000000; ++i)
    sink = sink + 1.0 / (i + 1);  // long enough for the jiffies to move
  const double f = meter.fraction();
  CHECK(f >= 0);
  CHECK(f <= 1);
}
