// verb_plan.cpp: `tauplan plan INVENTORY.yaml [--json] [--out DIR] [--jobs N] [--recheck N]
// [--no-plot]`, capacity planning over an inventory of node types (study/plan/capacity_plan.hpp).
// Exit codes: 0 an answer was found; 2 bad inventory; 3 no configuration meets the deadline
// (the answer names the nearest) or none fits at all; 1 internal error.
#include <cstdlib>
#include <iostream>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/plan/capacity_plan.hpp"

namespace tauplan::cli {
namespace {

void register_plan(CLI::App& app) {
  auto args = std::make_shared<study::PlanRequest>();
  auto json = std::make_shared<bool>(false);
  CLI::App* verb = app.add_subcommand(
      "plan",
      "capacity planning: search an inventory of node types for the fastest, cheapest or "
      "cheapest-within-a-deadline configuration, with its Pareto frontier");
  verb->add_option("inventory", args->inventory, "inventory file (YAML)")
      ->required()
      ->type_name("INVENTORY.yaml");
  verb->add_flag("--json", *json, "print JSON instead of tables");
  verb->add_option("--out", args->out,
                   "folder for the CSV, the plot and the re-check candidates "
                   "(default: INVENTORY.plan)")
      ->type_name("DIR");
  CLI::Option* jobs =
      verb->add_option("--jobs", args->jobs, "simulations at once (default: the number of cores)")
          ->check(number_between(1, 1e6, "a whole number of simulations >= 1"));
  CLI::Option* recheck =
      verb->add_option(
              "--recheck", args->recheck,
              "candidates to re-check in simgrid (default: the inventory's recheck.top, 10)")
          ->check(number_between(0, 1e6, "a whole number of candidates >= 0"));
  verb->add_flag("--no-plot", args->no_plot, "do not run gnuplot");
  verb->add_option("--objective", args->objective,
                   "override the inventory's objective (min-time, min-cost, "
                   "min-cost-under-deadline)")
      ->type_name("WORD");
  verb->add_option("--deadline", args->deadline, "override the inventory's deadline (e.g. 8h)")
      ->type_name("DURATION");
  verb->add_option("--deadline-confidence", args->confidence,
                   "meet the deadline with this probability (e.g. 0.95) instead of in expectation")
      ->check(number_between(0.5, 0.999999, "a probability from 0.5 to 0.999999"));
  verb->callback([args, json, jobs, recheck] {
    // --jobs runs the re-check's simulations: with none asked for, it has nothing to run.
    if (jobs->count() > 0 && recheck->count() > 0 && args->recheck == 0)
      throw InputError("command line", "--jobs",
                       "no --jobs with --recheck 0 (nothing is simulated)",
                       std::to_string(args->jobs));
    const study::PlanOutcome outcome = study::run_plan(*args);
    // Where the files went: the table's last line (JSON: only the document on stdout, and
    // plan.json holds it).
    if (*json)
      std::cout << outcome.document.dump(2) << "\n";
    else
      // Where it came from on stdout too: stderr keeps one line for an exit 3.
      std::cout << outcome.text << provenance_line(outcome.document.at("context")) << "wrote "
                << outcome.written << "\n";
    std::cout.flush();
    if (!outcome.objective_met) {
      std::cerr << "tauplan plan: " << outcome.answer << "\n";
      std::exit(kExitIncompleteAnswer);
    }
  });
}

const VerbRegistration kRegistration{50, register_plan};

}  // namespace
}  // namespace tauplan::cli
