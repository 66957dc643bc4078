// verb_help_keys.cpp: `tauplan help-keys`, the table of job keys (name, type, default, help).
#include <iostream>

#include <fmt/format.h>

#include "cli/verb.hpp"
#include "model/job.hpp"
#include "study/inputs.hpp"

namespace tauplan::cli {
namespace {
const char* type_word(model::KeyType type) {
  switch (type) {
    case model::KeyType::Integer:
      return "integer";
    case model::KeyType::Real:
      return "number";
    case model::KeyType::Seconds:
      return "seconds";
    case model::KeyType::Bytes:
      return "bytes";
    case model::KeyType::Boolean:
      return "bool";
    case model::KeyType::Text:
      return "word";
    case model::KeyType::Path:
      return "path";
    case model::KeyType::TextList:
      return "list";
  }
  return "?";
}
}  // namespace

void register_help_keys(CLI::App& app) {
  CLI::App* verb = app.add_subcommand("help-keys", "list every job key with its type and default");
  verb->callback([] {
    for (const auto& spec : study::all_job_keys()) {
      std::string line =
          fmt::format("{:<22} {:<8} {:<24} {}", spec.name, type_word(spec.type),
                      spec.default_value.empty() ? "-" : spec.default_value, spec.help);
      if (!spec.choices.empty()) line += fmt::format(" ({})", fmt::join(spec.choices, "|"));
      std::cout << line << "\n";
    }
  });
}

static const VerbRegistration kRegistration{100, register_help_keys};

}  // namespace tauplan::cli
