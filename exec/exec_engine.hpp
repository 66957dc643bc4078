// exec_engine.hpp: the real engine's factory (the Engine interface of model/ir/engine.hpp).
#pragma once

#include <memory>

#include "model/ir/engine.hpp"

namespace tauplan::exec {

std::unique_ptr<model::Engine> make_exec_engine();

}  // namespace tauplan::exec
