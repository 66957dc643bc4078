// error.hpp: the one error type for bad user input.
//
// An InputError names the file, the key and what was expected, so that the CLI can print
// it as one line and exit with code 2. Internal invariants use assert, never this type.
#pragma once

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

 private:
  std::string file_;
  std::string key_;
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

}  // namespace tauplan
