// yaml_util.hpp: strict reading of YAML scalars with errors that name file and key.
//
// Internal helper for the YAML readers of model/ (jobs, workloads, the GPU catalog).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tauplan::model::yaml_util {

/// Parses YAML text; a syntax error becomes InputError(origin, "line N", "valid YAML").
YAML::Node parse(const std::string& text, const std::string& origin);
/// Reads the whole file; a missing file is InputError(path, key, "a readable file").
std::string read_file(const std::string& path, const std::string& key);
/// A finite number; InputError(origin, key, "a number") otherwise.
double number(const YAML::Node& node, const std::string& origin, const std::string& key);
/// A number > 0 (or >= 0 when `allow_zero`).
double positive(const YAML::Node& node, const std::string& origin, const std::string& key,
                bool allow_zero = false);
std::string text(const YAML::Node& node, const std::string& origin, const std::string& key);
/// Throws InputError for any key of `map` not in `known` (listing the known keys).
void reject_unknown_keys(const YAML::Node& map, const std::vector<std::string>& known,
                         const std::string& origin, const std::string& prefix = "");

}  // namespace tauplan::model::yaml_util
