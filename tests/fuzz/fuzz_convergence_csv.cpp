// fuzz_convergence_csv.cpp: libFuzzer target for measured convergence tables (MeasuredTable).
// A table that loads must answer Na(b) and Ma(b,K,tau) at its own rows' batches with a step
// count in (0, kMaxConvergenceSteps], or refuse with an InputError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/convergence/convergence.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tauplan::model::MeasuredTable table(text, "fuzz.csv");
    for (double batch : {1.0, 16.0, 256.0, 1e6})
      for (int tau : {1, 4})
        try {
          const double na = table.serial_steps(batch);
          const double ma = table.local_sgd_rounds(batch, 2, tau);
          if (!(na > 0 && na <= tauplan::model::kMaxConvergenceSteps)) std::abort();
          if (!(ma > 0 && ma <= tauplan::model::kMaxConvergenceSteps)) std::abort();
        } catch (const tauplan::InputError&) {
        }
  } catch (const tauplan::InputError&) {
  }
  return 0;
}
