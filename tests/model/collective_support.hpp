// collective_support.hpp: a collective call for the tests of the collectives' analytic costs
// (tests/model/ir/collective_test.cpp) and of their lowerings
// (tests/sim/collective_lowering_test.cpp).
#pragma once

#include <utility>
#include <vector>

#include "model/ir/collective.hpp"

namespace tauplan::test {

/// A collective of `bytes` over `hosts` (platform host indices), with a parameter server's
/// `servers`.
inline model::CollectiveCall call(std::vector<int> hosts, double bytes,
                                  std::vector<int> servers = {}) {
  model::CollectiveCall c;
  c.hosts = std::move(hosts);
  c.bytes = bytes;
  c.servers = std::move(servers);
  return c;
}

}  // namespace tauplan::test
