// machine_memory.cpp: see machine_memory.hpp.
#include "model/base/machine_memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace tauplan::model {

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string name;
    double kibibytes = -1;
    std::string unit;
    if (fields >> name >> kibibytes >> unit && name == "MemAvailable:" && unit == "kB" &&
        kibibytes >= 0)
      return kibibytes * 1024.0;
  }
  return -1;
}

}  // namespace tauplan::model
