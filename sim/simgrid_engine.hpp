// simgrid_engine.hpp: the SimGrid engine's factory (the Engine interface of model/ir/engine.hpp).
// The job's platform must be the one sim::load_platform loaded in this process.
// This header does not include SimGrid.
#pragma once

#include <memory>

#include "model/ir/engine.hpp"

namespace tauplan::sim {

std::unique_ptr<model::Engine> make_simgrid_engine();

}  // namespace tauplan::sim
