// main.cpp: the tauplan executable. Dispatches verbs; turns bad input into one line and exit 2.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "model/ir/result.hpp"

namespace {

/// The deepest verb parsed (`testbed status`: status), and its words into `name`.
const CLI::App* deepest_verb(const CLI::App& app, std::string* name = nullptr) {
  const CLI::App* verb = &app;
  while (!verb->get_subcommands().empty()) {
    verb = verb->get_subcommands().front();
    if (name) *name += (name->empty() ? "" : " ") + verb->get_name();
  }
  return verb;
}

/// For a flag the verb does not have (`predict --wrokers 3`): its one line names the flag and the
/// verb's flag it most likely meant, as an unknown key in a job file does. The verb is the
/// deepest one parsed (`testbed status`); the flag one of the arguments it left over. "" when
/// none is such a flag.
std::string unknown_flag_message(const CLI::App& app) {
  std::string name;
  const CLI::App* verb = deepest_verb(app, &name);
  if (verb == &app) return "";
  std::vector<std::string> flags;
  for (const CLI::Option* option : verb->get_options())
    for (const std::string& long_name : option->get_lnames())
      flags.push_back("--" + long_name);
  for (const std::string& arg : verb->remaining()) {
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string best = tauplan::nearest_name(flag, flags);
    return tauplan::InputError("command line", flag,
                               "a flag of " + name +
                                   (best.empty() ? " (tauplan " + name + " --help)"
                                                 : " (did you mean '" + best + "'?)"),
                               "an unknown flag")
        .what();
  }
  return "";
}

/// For a flag given twice (`--workers 2 --workers 3`): one line naming it and both values, as
/// every other refusal reads. Only the flag CLI11's `error` names, and only one that takes a
/// single value (flags meant to repeat, --set and --cfg, keep CLI11's own line for their other
/// mismatches). "" when that is not the case.
std::string repeated_flag_message(const CLI::App& app, const CLI::ArgumentMismatch& error) {
  const CLI::App* verb = deepest_verb(app);
  const std::string what = error.what();
  for (const CLI::Option* option : verb->get_options()) {
    if (option->count() < 2 || option->get_items_expected_max() != 1 ||
        option->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw ||
        what.rfind(option->get_name() + ":", 0) != 0)
      continue;
    const std::string flag = option->get_name();
    std::string values;
    for (const std::string& value : option->results())
      values += (values.empty() ? "'" : ", '") + value + "'";
    return tauplan::InputError("command line", flag, "one " + flag + " (given once)",
                               std::to_string(option->count()) + " of them: " + values)
        .what();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tauplan: predict, simulate and measure distributed data-parallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tauplan ") + tauplan::model::tauplan_version() +
                                        " (" + tauplan::model::tauplan_git_commit() + ")");
  for (const auto& [order, registrar] : tauplan::cli::registered_verbs())
    registrar(app);
  // An unknown verb (`tauplan frobnicate`) is named, with the verb it most likely meant.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> verbs;
    for (const CLI::App* verb : app.get_subcommands({}))
      verbs.push_back(verb->get_name());
    if (std::find(verbs.begin(), verbs.end(), argv[1]) == verbs.end()) {
      const std::string best = tauplan::nearest_name(argv[1], verbs);
      std::fprintf(stderr, "tauplan: error: %s\n",
                   tauplan::InputError("command line", argv[1],
                                       "a verb (" +
                                           (best.empty() ? std::string("tauplan --help lists them")
                                                         : "did you mean '" + best + "'?") +
                                           ")",
                                       "an unknown verb")
                       .what());
      return tauplan::kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string message = unknown_flag_message(app);
    if (!message.empty())
      std::fprintf(stderr, "tauplan: error: %s\n", message.c_str());
    else
      std::fprintf(stderr, "tauplan: error: command line: %s\n", e.what());
    return tauplan::kExitBadInput;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string message = repeated_flag_message(app, e);
    std::fprintf(
        stderr, "tauplan: error: %s\n",
        message.empty() ? (std::string("command line: ") + e.what()).c_str() : message.c_str());
    return tauplan::kExitBadInput;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tauplan: error: command line: %s\n", e.what());
    return tauplan::kExitBadInput;
  } catch (const tauplan::InputError& e) {
    std::fprintf(stderr, "tauplan: error: %s\n", e.what());
    return tauplan::kExitBadInput;
  } catch (const tauplan::MeasurementError& e) {
    std::fprintf(stderr, "tauplan: measurement failed: %s\n", e.what());
    return tauplan::kExitMeasurementFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tauplan: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
