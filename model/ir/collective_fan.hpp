// collective_fan.hpp: fan-in and fan-out phases shared by the server and tree algorithms.
//
// A fan-in is n flows of the same size into one host, all started together; a fan-out the
// reverse. Analytic cost: the longest route latency plus the larger of (a) one flow over the
// narrowest route and (b) the flows that share the destination's last link (or the source's
// first link for a fan-out) through that link: "bounded by the server's link". Leaves out:
// sharing anywhere else on the routes (the simulator sees it) and latency-weighted fairness.
#pragma once

#include <vector>

#include "model/inputs/platform.hpp"

namespace tauplan::model {

/// Each of `sources` sends `bytes` to `destination`.
double fan_in_time_s(const std::vector<int>& sources, int destination, double bytes,
                     const Platform& platform);
/// `source` sends `bytes` to each of `destinations`.
double fan_out_time_s(int source, const std::vector<int>& destinations, double bytes,
                      const Platform& platform);

}  // namespace tauplan::model
