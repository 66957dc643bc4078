// grid.cpp: see grid.hpp.
#include "study/common/grid.hpp"

#include <algorithm>

#include "model/base/error.hpp"
#include "study/common/files.hpp"

namespace tauplan::study {

Axis parse_set(const std::string& text, const std::vector<model::KeySpec>& specs) {
  const std::string origin = "command line --set";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(origin, "'" + text + "'", "KEY=V1,V2,... (a job key and its values)");
  Axis axis;
  axis.key = trim(text.substr(0, eq));
  std::replace(axis.key.begin(), axis.key.end(), '-', '_');
  const bool known = std::any_of(specs.begin(), specs.end(),
                                 [&](const model::KeySpec& s) { return s.name == axis.key; });
  if (!known)
    throw InputError(origin, axis.key, "a job key (tauplan help-keys lists them)",
                     "an unknown key");
  const std::string list = text.substr(eq + 1);
  // Values are separated by ';' when there is one (so that a value can be a list "a,b").
  const char separator = list.find(';') != std::string::npos ? ';' : ',';
  size_t start = 0;
  for (;;) {
    const size_t end = list.find(separator, start);
    const std::string value =
        trim(list.substr(start, end == std::string::npos ? end : end - start));
    if (value.empty())
      throw InputError(origin, axis.key, "a list of values without empty items", "'" + list + "'");
    axis.values.push_back(command_line_input(axis.key, value));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return axis;
}

std::vector<Axis> parse_sets(const std::vector<std::string>& sets,
                             const std::vector<model::KeySpec>& specs) {
  std::vector<Axis> axes;
  for (const std::string& set : sets) {
    Axis axis = parse_set(set, specs);
    for (const Axis& other : axes)
      if (other.key == axis.key)
        throw InputError("command line --set", axis.key, "each key in one --set", "twice");
    axes.push_back(std::move(axis));
  }
  return axes;
}

std::vector<std::vector<std::pair<std::string, std::string>>> grid_points(
    const std::vector<Axis>& axes) {
  std::vector<std::vector<std::pair<std::string, std::string>>> points(1);
  for (const Axis& axis : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& p : points)
      for (const std::string& v : axis.values) {
        auto q = p;
        q.emplace_back(axis.key, v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

std::optional<InputError> as_set_error(const InputError& error,
                                       const std::map<std::string, std::string>& overrides,
                                       const std::vector<Axis>& axes) {
  if (error.file() != "command line") return std::nullopt;
  for (const Axis& axis : axes)
    if (error.key() == "--" + axis.key && overrides.count(axis.key) > 0)
      return error.given_as("command line", "--set " + axis.key + "=" + overrides.at(axis.key));
  return std::nullopt;
}

model::Job load_point_job(const std::string& job_file, const std::vector<model::KeySpec>& specs,
                          const std::map<std::string, std::string>& overrides,
                          const std::vector<Axis>& axes) {
  return naming_sets(overrides, axes, [&] { return model::load_job(job_file, specs, overrides); });
}

}  // namespace tauplan::study
