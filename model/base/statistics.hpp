// statistics.hpp: the order statistics that measurements are summarised with.
//
// One median for every probe, calibration and report (exec's timers, the testbed's network
// calibration): the middle value of an odd count, the mean of the two middle values of an even
// one. What it leaves out: weights, and NaN (a list holding one has no defined median here).
#pragma once

#include <vector>

namespace tauplan::model {

/// Median of a list (0 for an empty one).
double median(std::vector<double> values);

}  // namespace tauplan::model
