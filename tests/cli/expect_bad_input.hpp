// expect_bad_input.hpp: the CLI tests' check of the bad-input contract: `tauplan ARGS` exits 2
// with one line on stderr that contains `fragment`, and prints nothing on stdout.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/cli/run_command.hpp"

namespace tauplan::test {

inline void expect_bad_input(const std::vector<std::string>& args, const std::string& fragment) {
  const CommandResult r = run_tauplan(args);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(fragment) != std::string::npos);
  CHECK(r.out.empty());
}

}  // namespace tauplan::test
