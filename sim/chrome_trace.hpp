// chrome_trace.hpp: sim's name for the Chrome trace writer, which lives in model/chrome_trace.hpp
// so that exec/ writes measured traces through the same code (one layout for simulate and
// measure). What it leaves out: everything; it only forwards.
#pragma once

#include "model/chrome_trace.hpp"

namespace tauplan::sim {

using model::ChromeTrace;
using model::json_quote;

}  // namespace tauplan::sim
