// yaml_util.cpp: strict YAML scalar reading.
#include "model/yaml_util.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "model/error.hpp"

namespace tauplan::model::yaml_util {

YAML::Node parse(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw InputError(origin, "line " + std::to_string(error.mark.line + 1), "valid YAML",
                     error.msg);
  }
}

std::string read_file(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, key, "a readable file", "no such file or not readable");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

namespace {
std::string scalar_of(const YAML::Node& node) {
  if (!node.IsScalar()) return node.IsSequence() ? "a list" : node.IsMap() ? "a map" : "nothing";
  return "'" + node.Scalar() + "'";
}
}  // namespace

double number(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    try {
      size_t used = 0;
      const double value = std::stod(s, &used);
      if (used == s.size() && std::isfinite(value)) return value;
    } catch (const std::exception&) {
    }
  }
  throw InputError(origin, key, "a number", scalar_of(node));
}

double positive(const YAML::Node& node, const std::string& origin, const std::string& key,
                bool allow_zero) {
  const double value = number(node, origin, key);
  if (value > 0 || (allow_zero && value == 0)) return value;
  throw InputError(origin, key, allow_zero ? "a number >= 0" : "a number > 0", scalar_of(node));
}

std::string text(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (node.IsScalar()) return node.Scalar();
  throw InputError(origin, key, "a word", scalar_of(node));
}

void reject_unknown_keys(const YAML::Node& map, const std::vector<std::string>& known,
                         const std::string& origin, const std::string& prefix) {
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto& k : known)
      list += (list.empty() ? "" : ", ") + k;
    throw InputError(origin, prefix + key, "one of the known keys (" + list + ")",
                     "an unknown key");
  }
}

}  // namespace tauplan::model::yaml_util
