// verb_layout.cpp: `tauplan layout JOB.yaml [--fit] [--json]`, one layout of a transformer job in
// closed form: memory per worker per stage, traffic and step time (study/layout/layout_report.hpp).
#include <iostream>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/layout/layout_report.hpp"

namespace tauplan::cli {
namespace {

void register_layout(CLI::App& app) {
  auto args = std::make_shared<JobArgs>();
  auto fit = std::make_shared<bool>(false);
  auto count = std::make_shared<int>(8);
  CLI::App* verb = app.add_subcommand(
      "layout", "a transformer job's layout (tensor, pipeline, data, ZeRO): memory and step time");
  add_job_options(*verb, *args);
  verb->add_flag("--fit", *fit, "list the smallest layouts of the job's workers that fit");
  CLI::Option* count_option =
      verb->add_option("--count", *count, "how many layouts --fit lists [default: 8]")
          ->type_name("N");
  verb->callback([args, fit, count, count_option] {
    if (count_option->count() > 0 && !*fit)
      throw InputError("command line", "--count", "--count with --fit (it sizes --fit's list)",
                       std::to_string(*count));
    if (*count < 1)
      throw InputError("command line", "--count", "a whole number of layouts >= 1",
                       std::to_string(*count));
    study::LayoutRequest request;
    request.job_file = args->job_file;
    request.overrides = args->overrides();
    request.fit = *fit;
    request.count = *count;
    const study::LayoutOutcome outcome = study::run_layout(request);
    std::cout << (args->json ? outcome.document.dump(2) + "\n" : outcome.text);
    if (!args->json) std::cerr << provenance_line(outcome.document.at("context"));
  });
}

const VerbRegistration kRegistration{15, register_layout};

}  // namespace
}  // namespace tauplan::cli
