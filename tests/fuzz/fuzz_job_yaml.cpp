// fuzz_job_yaml.cpp: libFuzzer target for job files: the strict YAML reader, the key table
// (model's and the simulator's keys are checked the same way; model's are linked here), and the
// conversion of a loaded job to strategy options and a convergence model. An InputError is the
// expected answer to bad input; any other exception, crash, leak or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/base/error.hpp"
#include "model/ir/job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::vector<tauplan::model::KeySpec> keys = tauplan::model::model_job_keys();
  try {
    const tauplan::model::Job job = tauplan::model::parse_job_yaml(text, "fuzz.yaml", "", keys);
    const auto options = tauplan::model::strategy_options(job);
    const auto convergence = tauplan::model::convergence_model(job);
    (void)convergence->serial_steps(static_cast<double>(options.batch));
    (void)convergence->local_sgd_rounds(static_cast<double>(options.batch), options.workers,
                                        options.tau);
  } catch (const tauplan::InputError&) {
  }
  return 0;
}
