// grid.hpp: grids of job keys, `--set KEY=V1,V2,...` on the command line (sweep, validate).
//
// An axis is one job key with its values; a grid is the Cartesian product of its axes, the
// first axis varying slowest. What it leaves out: random or adaptive sampling of the grid.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/base/error.hpp"
#include "model/ir/job.hpp"

namespace tauplan::study {

/// One axis of a grid: `--set KEY=V1,V2,...` (values separated by ';' when any is a list).
struct Axis {
  std::string key;
  std::vector<std::string> values;
};

/// Parses one --set; the key must be one of `specs` ('-' read as '_'). InputError otherwise.
Axis parse_set(const std::string& text, const std::vector<model::KeySpec>& specs);
/// Parses every --set; a key given twice is an InputError.
std::vector<Axis> parse_sets(const std::vector<std::string>& sets,
                             const std::vector<model::KeySpec>& specs);

/// Every point of the grid (key -> value), the first axis varying slowest. One empty point
/// when there is no axis.
std::vector<std::vector<std::pair<std::string, std::string>>> grid_points(
    const std::vector<Axis>& axes);

/// When `error` is about the flag of a swept key (`command line: --batch: ...`, as the point's
/// values reach the job as flags), the same error said of the --set that gave the value
/// (`command line: --set batch=-1: ...`); else nothing.
std::optional<InputError> as_set_error(const InputError& error,
                                       const std::map<std::string, std::string>& overrides,
                                       const std::vector<Axis>& axes);

/// Runs `check` (loading or checking one point's job) so that a bad swept value is named as the
/// --set that gave it, not as a flag the user never typed.
template <class Check>
auto naming_sets(const std::map<std::string, std::string>& overrides, const std::vector<Axis>& axes,
                 Check&& check) -> decltype(check()) {
  try {
    return check();
  } catch (const InputError& error) {
    if (std::optional<InputError> renamed = as_set_error(error, overrides, axes)) throw *renamed;
    throw;
  }
}

/// The job of one point of a grid: `overrides` (the flags and the point's values) over the job
/// file, its errors as naming_sets says. InputError otherwise as model::load_job.
model::Job load_point_job(const std::string& job_file, const std::vector<model::KeySpec>& specs,
                          const std::map<std::string, std::string>& overrides,
                          const std::vector<Axis>& axes);

}  // namespace tauplan::study
