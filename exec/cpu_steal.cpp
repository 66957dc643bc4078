// cpu_steal.cpp: see cpu_steal.hpp.
#include "exec/cpu_steal.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace tauplan::exec {

CpuTimes parse_proc_stat(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already inside user and nice, so only the first eight add up to the total.
    double values[8];
    for (double& v : values)
      if (!(fields >> v) || v < 0) return {};
    CpuTimes t;
    for (double v : values)
      t.total += v;
    t.steal = values[7];
    t.valid = true;
    return t;
  }
  return {};
}

CpuTimes read_cpu_times() {
  std::ifstream file("/proc/stat");
  if (!file) return {};
  std::ostringstream text;
  text << file.rdbuf();
  return parse_proc_stat(text.str());
}

double steal_fraction(const CpuTimes& before, const CpuTimes& after) {
  if (!before.valid || !after.valid) return -1;
  const double total = after.total - before.total;
  const double steal = after.steal - before.steal;
  if (!(total > 0) || steal < 0) return -1;
  return steal > total ? 1.0 : steal / total;
}

std::string describe_steal(double fraction) {
  return fraction < 0 ? std::string("unknown") : fmt::format("{:.1f}%", 100 * fraction);
}

}  // namespace tauplan::exec
