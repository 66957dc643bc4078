// fuzz_workload_yaml.cpp: libFuzzer target for workload files (model/inputs/workload.hpp). Besides
// "InputError or nothing", it checks what a loaded workload promises: every size finite and
// within model/base/limits.hpp, so that memory and gradient sizes derived from it are finite too.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/inputs/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tauplan::model::Workload w = tauplan::model::parse_workload_yaml(text, "fuzz.yaml");
    if (!(w.parameters > 0 && w.parameters <= tauplan::model::kMaxParameters)) std::abort();
    if (!(w.flop_per_sample > 0 && w.flop_per_sample <= tauplan::model::kMaxFlopPerSample))
      std::abort();
    if (!std::isfinite(w.memory_bytes(1e9)) || !std::isfinite(w.gradient_bytes())) std::abort();
  } catch (const tauplan::InputError&) {
  }
  return 0;
}
