// verb_help_keys.cpp: `tauplan help-keys`, the table of job keys (name, type, default, help),
// then the keys of a transformer workload YAML and of a layered one, of an inventory, the props
// of a platform file and the keys of a cluster spec, then the config.json fields a HuggingFace
// config given as the workload may hold.
#include <iostream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/verb.hpp"
#include "model/inputs/cluster_spec_file.hpp"
#include "model/inputs/hf_config.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/transformer.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"
#include "model/ir/token_target.hpp"
#include "study/common/engines.hpp"
#include "study/common/inputs.hpp"
#include "study/plan/inventory.hpp"

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
  CLI::App* verb = app.add_subcommand(
      "help-keys",
      "list every key of a job, workload, inventory and platform file, with its meaning");
  verb->callback([] {
    std::vector<model::KeySpec> keys = study::all_job_keys();
    for (model::KeySpec& key : model::inventory_token_keys())
      keys.push_back(std::move(key));
    for (const auto& spec : keys) {
      std::string line =
          fmt::format("{:<22} {:<8} {:<24} {}", spec.name, type_word(spec.type),
                      spec.default_value.empty() ? "-" : spec.default_value, spec.help);
      if (!spec.choices.empty()) line += fmt::format(" ({})", fmt::join(spec.choices, "|"));
      // A key only some engines read: the other engines' verbs refuse its flag.
      if (!spec.read_by.empty()) line += " [read by " + study::verbs_of(spec.read_by, ", ") + "]";
      std::cout << line << "\n";
    }
    // A transformer workload YAML (model/inputs/transformer.hpp): every key the reader accepts.
    std::cout << "\nworkload YAML keys (a transformer workload file):\n";
    for (const auto& key : model::transformer_workload_keys())
      std::cout << fmt::format("{:<42} {}\n", key.name, key.meaning);
    std::cout << "\nworkload YAML keys (a workload file of layers or an MLP's widths):\n";
    for (const auto& key : model::layered_workload_keys())
      std::cout << fmt::format("{:<42} {}\n", key.name, key.meaning);
    // An inventory for `tauplan plan` (study/plan/inventory.hpp): every key the reader accepts.
    std::cout << "\ninventory keys (tauplan plan INVENTORY):\n";
    for (const auto& key : study::inventory_keys()) {
      const std::string section = key.section;
      std::cout << fmt::format("{:<42} {}\n", section.empty() ? key.name : section + "." + key.name,
                               key.meaning);
    }
    // Platform props (model/inputs/platform.hpp): what tauplan reads from a platform XML's <prop>s.
    std::cout << "\nplatform props (<prop id=... value=.../> in a platform XML):\n";
    for (const auto& prop : model::platform_properties())
      std::cout << fmt::format("{:<20} {:<14} {}\n", prop.name, prop.on, prop.meaning);
    // A cluster spec (.yaml as the platform; model/inputs/cluster_spec_file.hpp).
    std::cout << "\ncluster spec keys (a .yaml platform: generated into SimGrid XML):\n";
    for (const auto& key : model::cluster::spec_keys())
      std::cout << fmt::format("{:<42} {}\n", key.name, key.meaning);
    // A HuggingFace config.json given as the workload: the fields read, those known not to change
    // the cost (ignored) and those refused; any other field is refused
    // (model/inputs/hf_config.hpp).
    std::cout << "\nconfig.json fields (a HuggingFace config.json as --workload / workload):\n";
    for (const auto& field : model::hf_config_fields())
      std::cout << fmt::format("{:<32} {:<20} {}\n", field.name, field.model_types, field.meaning);
  });
}

static const VerbRegistration kRegistration{100, register_help_keys};

}  // namespace tauplan::cli
