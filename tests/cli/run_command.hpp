// run_command.hpp: runs the tauplan executable in a child process and captures what it says.
#pragma once

#include <string>
#include <vector>

namespace tauplan::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs TAUPLAN_BINARY with `args` (no shell), in `folder` when not empty, with a time limit.
CommandResult run_tauplan(const std::vector<std::string>& args, const std::string& folder = "",
                          int timeout_s = 120);
/// Starts TAUPLAN_BINARY with `args` in the background, its output discarded; returns the pid
/// (for tests that interrupt a run).
int start_tauplan(const std::vector<std::string>& args);
/// Writes `text` to a fresh file in a per-test temporary folder and returns its path.
std::string write_temp_file(const std::string& name, const std::string& text);
/// The whole of a file ("" when it cannot be read).
std::string read_text_file(const std::string& path);

}  // namespace tauplan::test
