// main.cpp: the tauplan executable. Dispatches verbs; turns bad input into one line and exit 2.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "model/ir/result.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tauplan: predict, simulate and measure distributed data-parallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tauplan ") + tauplan::model::tauplan_version() +
                                        " (" + tauplan::model::tauplan_git_commit() + ")");
  for (const auto& [order, registrar] : tauplan::cli::registered_verbs())
    registrar(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tauplan: error: command line: %s\n", e.what());
    return tauplan::kExitBadInput;
  } catch (const tauplan::InputError& e) {
    std::fprintf(stderr, "tauplan: error: %s\n", e.what());
    return tauplan::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tauplan: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
