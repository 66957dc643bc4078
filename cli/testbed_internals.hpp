// testbed_internals.hpp: the hidden subcommands of `tauplan testbed` (testbed_internals.cpp).
#pragma once

#include <CLI/CLI.hpp>

namespace tauplan::cli {

/// Adds fabric, agent, rank, describe, compute-probe and message-probe to the testbed verb.
void add_testbed_internals(CLI::App& testbed);

}  // namespace tauplan::cli
