// verb_published.cpp: `tauplan published [FILE | --runs FILE] [--out DIR] [--json]`, published
// training runs (Megatron-LM's papers; experiments/parallelism/h100.yaml: Llama 3 and
// Megatron-Core on H100) beside tauplan's closed-form prediction (study/published/published.hpp).
#include <iostream>

#include "cli/verb.hpp"
#include "study/published/published.hpp"

namespace tauplan::cli {
namespace {

void register_published(CLI::App& app) {
  auto request = std::make_shared<study::PublishedRequest>();
  auto json = std::make_shared<bool>(false);
  CLI::App* verb = app.add_subcommand(
      "published",
      "published training runs (Megatron-LM, Llama 3) beside our predictions, with errors");
  CLI::Option* runs =
      verb->add_option("--runs", request->runs,
                       "runs file [default: experiments/parallelism/megatron.yaml of the tree]")
          ->type_name("FILE");
  verb->add_option("file", request->runs,
                   "runs file, as --runs (e.g. experiments/parallelism/h100.yaml)")
      ->type_name("FILE")
      ->excludes(runs);
  verb->add_option("--out", request->out,
                   "write table.md, table.csv, published.json and profile.json (the fit) here")
      ->type_name("DIR");
  verb->add_flag("--json", *json, "print the JSON document instead of the table");
  verb->callback([request, json] {
    const study::PublishedOutcome outcome = study::run_published(*request);
    for (const auto& note : outcome.notes)
      std::cerr << "published: " << note << "\n";
    if (!outcome.written.empty()) std::cerr << "published: wrote " << outcome.written << "\n";
    std::cout << (*json ? outcome.document.dump(2) + "\n" : outcome.table);
    if (!*json) std::cerr << provenance_line(outcome.document.at("context"));
  });
}

const VerbRegistration kRegistration{55, register_published};

}  // namespace
}  // namespace tauplan::cli
