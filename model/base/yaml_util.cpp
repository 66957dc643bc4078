// yaml_util.cpp: strict YAML reading (see yaml_util.hpp).
#include "model/base/yaml_util.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/units.hpp"

namespace tauplan::model::yaml_util {
namespace {

constexpr int kMaxYamlDepth = 128;  // values nested in lists and maps

std::string scalar_of(const YAML::Node& node) {
  if (!node.IsScalar()) return node.IsSequence() ? "a list" : node.IsMap() ? "a map" : "nothing";
  return "'" + node.Scalar() + "'";
}

std::string kind_of_key(const YAML::Node& key) {
  return key.IsSequence() ? "a list" : key.IsMap() ? "a map" : "nothing";
}

// Walks every value of the document: refuses keys that are not words, keys given twice in one
// map, and documents of more than kMaxYamlNodes values (counted with repeats through aliases).
void check_document(const YAML::Node& node, const std::string& origin, const std::string& path,
                    std::size_t& visited, int depth = 0) {
  // An alias inside its own anchor (a: &a [*a]) makes a loop: depth bounds the walk.
  if (depth > kMaxYamlDepth)
    throw InputError(origin, path.substr(0, 200) + "...",
                     fmt::format("values nested at most {} deep", kMaxYamlDepth),
                     "deeper (an alias inside its own anchor?)");
  if (++visited > kMaxYamlNodes)
    throw InputError(origin, path.empty() ? "(top level)" : path,
                     fmt::format("a document of at most {} values", kMaxYamlNodes),
                     "more (aliases expand to too many values)");
  if (node.IsSequence()) {
    std::size_t i = 0;
    for (const auto& item : node)
      check_document(item, origin, fmt::format("{}[{}]", path, i++), visited, depth + 1);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> lines;  // key -> line of its first occurrence
  for (const auto& entry : node) {
    const std::string key = key_text(entry.first, origin, path.empty() ? "" : path + ".");
    const int line = entry.first.Mark().line + 1;
    const auto [it, fresh] = lines.emplace(key, line);
    const std::string where = path.empty() ? key : path + "." + key;
    if (!fresh)
      throw InputError(origin, where, "a key given once",
                       fmt::format("twice (lines {} and {})", it->second, line));
    check_document(entry.second, origin, where, visited, depth + 1);
  }
}

}  // namespace

YAML::Node parse(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw InputError(origin, "line " + std::to_string(error.mark.line + 1), "valid YAML",
                     error.msg);
  }
  std::size_t visited = 0;
  check_document(root, origin, "", visited);
  return root;
}

std::string read_file(const std::string& path, const std::string& key) {
  if (path.size() > kMaxPathLength)
    throw InputError(path, key, fmt::format("a path of at most {} characters", kMaxPathLength),
                     fmt::format("{} characters", path.size()));
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw InputError(path, key, "a file", "a folder");
  std::ifstream in(path, std::ios::binary);
  if (path.empty() || !in)
    throw InputError(path, key, "a readable file", "no such file or not readable");
  std::string bytes;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > kMaxInputFileBytes)
      throw InputError(path, key, fmt::format("a file of at most {} MiB", kMaxInputFileBytes >> 20),
                       "a larger file");
  }
  if (in.bad()) throw InputError(path, key, "a readable file", "a read error");
  return bytes;
}

std::string key_text(const YAML::Node& key, const std::string& origin, const std::string& prefix) {
  if (!key.IsScalar())
    throw InputError(origin, prefix + "(key)", "keys that are words", kind_of_key(key));
  if (key.Scalar().size() > kMaxNameLength)
    throw InputError(origin, prefix + key.Scalar(),
                     fmt::format("a key of at most {} characters", kMaxNameLength),
                     fmt::format("{} characters", key.Scalar().size()));
  return key.Scalar();
}

double number(const YAML::Node& node, const std::string& origin, const std::string& key) {
  double value = 0;
  if (node.IsScalar() && parse_number(node.Scalar(), value)) return value;
  throw InputError(origin, key, "a number", scalar_of(node));
}

double positive(const YAML::Node& node, const std::string& origin, const std::string& key,
                bool allow_zero) {
  const double value = number(node, origin, key);
  if (value > 0 || (allow_zero && value == 0)) return value;
  throw InputError(origin, key, allow_zero ? "a number >= 0" : "a number > 0", scalar_of(node));
}

double in_range(const YAML::Node& node, const std::string& origin, const std::string& key,
                double lo, double hi, bool lo_exclusive) {
  const double value = number(node, origin, key);
  const bool above_lo = lo_exclusive ? value > lo : value >= lo;
  if (above_lo && value <= hi) return value;
  throw InputError(origin, key,
                   fmt::format("a number in {}{:g}, {:g}]", lo_exclusive ? "(" : "[", lo, hi),
                   scalar_of(node));
}

std::string text(const YAML::Node& node, const std::string& origin, const std::string& key,
                 std::size_t max_length) {
  if (!node.IsScalar()) throw InputError(origin, key, "a word", scalar_of(node));
  const std::size_t limit = max_length == 0 ? kMaxNameLength : max_length;
  if (node.Scalar().size() > limit)
    throw InputError(origin, key, fmt::format("at most {} characters", limit),
                     fmt::format("{} characters", node.Scalar().size()));
  return node.Scalar();
}

void reject_unknown_keys(const YAML::Node& map, const std::vector<std::string>& known,
                         const std::string& origin, const std::string& prefix) {
  for (const auto& entry : map) {
    const std::string key = key_text(entry.first, origin, prefix);
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto& k : known)
      list += (list.empty() ? "" : ", ") + k;
    throw InputError(origin, prefix + key, "one of the known keys (" + list + ")",
                     "an unknown key");
  }
}

}  // namespace tauplan::model::yaml_util
