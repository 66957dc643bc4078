// yaml_util.hpp: strict reading of YAML files and scalars with errors that name file and key.
//
// Internal helper for the YAML readers of model/ (jobs, workloads, inventories, the GPU
// catalog). Every document goes through parse(), which refuses what yaml-cpp accepts silently:
// a key given twice in one map (yaml-cpp keeps both and readers would pick one), keys that are
// lists or maps, and documents of more than kMaxYamlNodes values (aliases can make a short file
// expand exponentially). read_file() refuses folders, over-long paths and files over
// kMaxInputFileBytes. What it leaves out: YAML tags and multi-document streams (only the first
// document is read, as yaml-cpp's Load does).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tauplan::model::yaml_util {

/// Parses YAML text; a syntax error becomes InputError(origin, "line N", "valid YAML"), a
/// duplicate key InputError(origin, "KEY", "a key given once", "twice (lines A and B)").
YAML::Node parse(const std::string& text, const std::string& origin);
/// Reads the whole file; a missing file, a folder or a file that is too large is an
/// InputError(path, key, ...).
std::string read_file(const std::string& path, const std::string& key);
/// The text of a map key; InputError(origin, prefix + "(key)", "a word") for a list or map key.
std::string key_text(const YAML::Node& key, const std::string& origin,
                     const std::string& prefix = "");
/// A finite number; InputError(origin, key, "a number") otherwise.
double number(const YAML::Node& node, const std::string& origin, const std::string& key);
/// A number > 0 (or >= 0 when `allow_zero`).
double positive(const YAML::Node& node, const std::string& origin, const std::string& key,
                bool allow_zero = false);
/// A number in [lo, hi] (lo excluded when `lo_exclusive`); the message states the range.
double in_range(const YAML::Node& node, const std::string& origin, const std::string& key,
                double lo, double hi, bool lo_exclusive = false);
/// A scalar of at most `max_length` characters (kMaxNameLength by default).
std::string text(const YAML::Node& node, const std::string& origin, const std::string& key,
                 std::size_t max_length = 0);
/// Throws InputError for any key of `map` not in `known` (listing the known keys).
void reject_unknown_keys(const YAML::Node& map, const std::vector<std::string>& known,
                         const std::string& origin, const std::string& prefix = "");

}  // namespace tauplan::model::yaml_util
