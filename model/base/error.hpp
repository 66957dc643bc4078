// error.hpp: the error types a user sees: bad input, and a measurement that came out unusable.
//
// An InputError names the file, the key and what was expected, so that the CLI can print
// it as one line and exit with code 2. A MeasurementError says which measurement the machine
// spoiled and why (exit code 5): neither the input nor the code is wrong, and measuring again
// may succeed. Internal invariants use assert, never these types.
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tauplan {

/// Bad input from a user: a file, a key in it, what was expected and (optionally) what was found.
/// what() is "FILE: KEY: expected EXPECTED, got GOT" (parts that are empty are left out).
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& key, const std::string& expected,
             const std::string& got = "");
  /// `where`: {file, key} as Job::origin_of gives it ({"command line", "--key"} for a flag).
  InputError(const std::pair<std::string, std::string>& where, const std::string& expected,
             const std::string& got = "")
      : InputError(where.first, where.second, expected, got) {}

  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  /// The same error, said of where the value really came from (a sweep's `--set batch=...`
  /// hands its values to the job as flags: the error names the --set, not a --batch).
  InputError given_as(const std::string& file, const std::string& key) const;

 private:
  std::string file_;
  std::string key_;
  std::string expected_;
  std::string got_;
};

/// A measurement whose numbers cannot describe the machine (a message faster than the route's
/// own transfers, a fit with no meaning), typically taken while the machine was busy or its
/// hypervisor took the CPUs: what() names the measurement, what came out and what was expected.
class MeasurementError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where the keys of one job were given: its file, or a flag on the command line. An error about
/// a key names the flag when a flag gave it ({"command line", "--key"}), else {file, key}: the
/// one rule behind Job::origin_of and every options struct that names keys in its errors.
struct KeyOrigins {
  KeyOrigins() = default;
  KeyOrigins(std::string file_name, std::set<std::string> flagged_keys = {})  // NOLINT: a file
      : file(std::move(file_name)), flagged(std::move(flagged_keys)) {}
  KeyOrigins(const char* file_name) : KeyOrigins(std::string(file_name)) {}  // NOLINT: a file

  std::pair<std::string, std::string> of(const std::string& key) const {
    if (flagged.count(key) > 0) return {"command line", "--" + key};
    return {file, key};
  }

  std::string file = "<job>";     ///< the job file (or "<command line>" when there is none)
  std::set<std::string> flagged;  ///< keys a flag gave
};

/// The name of `names` a mistyped `word` most likely meant (the fewest edits away, at most 3, 2
/// for a word of 4 letters or fewer), or "" when none is that close: the "did you mean" of an
/// error.
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

/// Exit code for bad input, documented in the README and used by every verb.
constexpr int kExitBadInput = 2;
/// Exit code for an answer that is not the one asked for: `plan` found no configuration that
/// meets the deadline (it names the nearest), some `sweep` points failed (they are listed), or a
/// `measure` stopped at max_steps before its target accuracy (its rows say so).
constexpr int kExitIncompleteAnswer = 3;
/// Exit code of a distributed run that lost a process: an MPI rank died, was stopped by the
/// launcher because another one died, or waited longer than mpi_timeout_s for the others.
constexpr int kExitRankFailure = 4;
/// Exit code of a measurement that came out unusable (MeasurementError): measure again.
constexpr int kExitMeasurementFailed = 5;

}  // namespace tauplan
