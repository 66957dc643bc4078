// notice.hpp: one-line notes on stderr for what tauplan does not do silently.
//
// A key the chosen model ignores, a memory check skipped for a host without GPU props, a
// simulation that extrapolates rounds: each is said once per process, on stderr, as
// "tauplan: note: MESSAGE", so that stdout stays data and logs stay short. What it leaves out:
// warnings that stop the run (those are InputErrors) and progress (sim/progress.hpp).
#pragma once

#include <functional>
#include <string>

namespace tauplan::model {

/// Prints "tauplan: note: <message>" on stderr, unless a notice of the same `topic` was
/// already printed by this process (topic empty: the message itself is the topic).
void notice_once(const std::string& message, const std::string& topic = "");

/// Replaces where notices go (tests); nullptr restores stderr. Also forgets the topics seen.
void set_notice_sink(std::function<void(const std::string&)> sink);

}  // namespace tauplan::model
