// verb_reproduce.cpp: `tauplan reproduce [sparknet|hetseq] [--out DIR] [--fresh] [--reduced]`,
// SparkNet's and HetSeq's curves with tauplan's own engines (study/reproduce/reproduce.hpp).
#include <iostream>

#include "cli/verb.hpp"
#include "study/reproduce/reproduce.hpp"

namespace tauplan::cli {
namespace {

void register_reproduce(CLI::App& app) {
  auto args = std::make_shared<study::ReproduceRequest>();
  CLI::App* verb = app.add_subcommand(
      "reproduce", "reproduce SparkNet's and HetSeq's speedup curves (measured + simulated)");
  verb->add_option("experiment", args->name, "sparknet or hetseq (default: both)")
      ->type_name("NAME");
  verb->add_option("--out", args->out, "results folder [default: results/reproduce]")
      ->type_name("DIR");
  verb->add_flag("--fresh", args->fresh, "measure again instead of reusing the cached counts");
  verb->add_flag(
      "--reduced", args->reduced,
      "a reduced grid (K 1,2,4; tau 1,5,25; AlexNet K=3; 1-2 nodes): seconds, for tests");
  verb->add_option("--jobs", args->jobs, "measurements and simulations run at once [default: 2]")
      ->type_name("N");
  verb->add_option("--experiments", args->experiments,
                   "folder holding sparknet/ and hetseq/ job files [default: the source tree's "
                   "experiments/, or $TAUPLAN_EXPERIMENTS_DIR]")
      ->type_name("DIR");
  verb->callback([args] {
    std::vector<std::string> notes;
    study::run_reproduce(*args, std::cout, notes);
    for (const auto& n : notes)
      std::cout << "note: " << n << "\n";
  });
}

const VerbRegistration kRegistration{60, register_reproduce};

}  // namespace
}  // namespace tauplan::cli
