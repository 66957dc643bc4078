// convergence.cpp: fixed counts, the critical-batch model and measured tables.
#include "model/convergence/convergence.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/units.hpp"

namespace tauplan::model {

namespace {

// A model's answer, checked: (0, kMaxConvergenceSteps] (a larger count would overflow the round
// count and the total time). `key` names what the user can change.
double checked_steps(double steps, const std::string& origin, const std::string& key,
                     const std::string& what) {
  if (steps > 0 && steps <= kMaxConvergenceSteps) return steps;
  throw InputError(origin, key,
                   fmt::format("a model that gives {} in (0, {:g}]", what, kMaxConvergenceSteps),
                   fmt::format("{:g}", steps));
}

}  // namespace

FixedCounts::FixedCounts(double iterations, double rounds, std::string origin)
    : iterations_(iterations), rounds_(rounds), origin_(std::move(origin)) {}

double FixedCounts::serial_steps(double /*batch*/) const {
  return checked_steps(iterations_, origin_, "iterations", "Na(b)");
}

double FixedCounts::local_sgd_rounds(double /*batch*/, int /*workers*/, int tau) const {
  if (rounds_ > 0) return checked_steps(rounds_, origin_, "rounds", "Ma");
  return checked_steps(std::ceil(iterations_ / tau), origin_, "iterations", "Ma");
}

std::string FixedCounts::describe() const {
  if (rounds_ > 0) return fmt::format("fixed iterations={:g} rounds={:g}", iterations_, rounds_);
  return fmt::format("fixed iterations={:g} rounds=ceil(iterations/tau)", iterations_);
}

CriticalBatch::CriticalBatch(double min_steps, double critical_batch, double drift,
                             std::string origin)
    : min_steps_(min_steps),
      critical_batch_(critical_batch),
      drift_(drift),
      origin_(std::move(origin)) {}

double CriticalBatch::serial_steps(double batch) const {
  return checked_steps(min_steps_ * (1.0 + critical_batch_ / batch), origin_,
                       "min_steps, critical_batch", "Na(b) = Smin (1 + Bcrit / b)");
}

double CriticalBatch::local_sgd_rounds(double batch, int workers, int tau) const {
  const double tau_effective = tau / (1.0 + drift_ * (tau - 1));
  return checked_steps(serial_steps(batch * workers) / tau_effective, origin_,
                       "min_steps, critical_batch, drift", "Ma(b,K,tau)");
}

std::string CriticalBatch::describe() const {
  return fmt::format("critical-batch Na(b)=Smin(1+Bcrit/b) Smin={:g} Bcrit={:g} drift={:g}",
                     min_steps_, critical_batch_, drift_);
}

namespace {
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream stream(line);
  std::string cell;
  while (std::getline(stream, cell, ',')) {
    const auto first = cell.find_first_not_of(" \t\r");
    const auto last = cell.find_last_not_of(" \t\r");
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return cells;
}

double parse_cell(const std::string& cell, const std::string& origin, int line_number,
                  const char* column) {
  double value = 0;
  if (parse_number(cell, value)) return value;
  throw InputError(origin, fmt::format("line {} column {}", line_number, column), "a number",
                   "'" + cell + "'");
}
}  // namespace

MeasuredTable::MeasuredTable(const std::string& csv_text, const std::string& origin)
    : origin_(origin) {
  std::stringstream stream(csv_text);
  std::string line;
  int line_number = 0;
  bool header_seen = false;
  while (std::getline(stream, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const auto cells = split_csv_line(line);
    if (!header_seen) {
      if (cells != std::vector<std::string>{"batch", "workers", "tau", "steps"})
        throw InputError(origin, "header", "the columns batch,workers,tau,steps", "'" + line + "'");
      header_seen = true;
      continue;
    }
    if (cells.size() != 4)
      throw InputError(origin, fmt::format("line {}", line_number), "4 columns",
                       std::to_string(cells.size()));
    const double batch = parse_cell(cells[0], origin, line_number, "batch");
    const double workers = parse_cell(cells[1], origin, line_number, "workers");
    const double tau = parse_cell(cells[2], origin, line_number, "tau");
    const double steps = parse_cell(cells[3], origin, line_number, "steps");
    // Batch in (0, 1e12], whole workers and tau in [1, 1e6], steps in (0, 1e15].
    auto check = [&](const char* column, const std::string& cell, double value, double lo,
                     double hi, bool whole) {
      const bool fits = (whole ? value >= lo : value > lo) && value <= hi;
      if (fits && (!whole || value == std::floor(value))) return;
      throw InputError(origin, fmt::format("line {} column {}", line_number, column),
                       fmt::format("{} in {}{:g}, {:g}]", whole ? "a whole number" : "a number",
                                   whole ? "[" : "(", lo, hi),
                       "'" + cell + "'");
    };
    check("batch", cells[0], batch, 0, kMaxCriticalBatch, false);
    check("workers", cells[1], workers, 1, 1e6, true);
    check("tau", cells[2], tau, 1, 1e6, true);
    check("steps", cells[3], steps, 0, kMaxConvergenceSteps, false);
    curves_[{static_cast<int>(workers), static_cast<int>(tau)}].emplace_back(batch, steps);
  }
  if (!header_seen || curves_.empty())
    throw InputError(origin, "rows", "at least one measured row after the header");
  for (auto& [key, curve] : curves_) {
    std::sort(curve.begin(), curve.end());
    for (size_t i = 1; i < curve.size(); ++i)
      if (curve[i].first == curve[i - 1].first)
        throw InputError(
            origin, fmt::format("batch {:g}", curve[i].first),
            fmt::format("one row per (batch, workers={}, tau={})", key.first, key.second),
            "a duplicate");
  }
}

double MeasuredTable::interpolate(const Curve& curve, double batch, const std::string& what) const {
  const double lo = curve.front().first, hi = curve.back().first;
  if (batch < lo * (1 - 1e-12) || batch > hi * (1 + 1e-12))
    throw InputError(origin_, what,
                     fmt::format("a batch inside the measured range [{:g}, {:g}]", lo, hi),
                     fmt::format("{:g}", batch));
  if (curve.size() == 1) return curve.front().second;
  auto upper = std::lower_bound(curve.begin(), curve.end(), std::make_pair(batch, 0.0));
  if (upper == curve.end()) upper = std::prev(curve.end());
  if (upper == curve.begin()) upper = std::next(curve.begin());
  const auto lower = std::prev(upper);
  const double t = (std::log(batch) - std::log(lower->first)) /
                   (std::log(upper->first) - std::log(lower->first));
  return std::exp(std::log(lower->second) +
                  t * (std::log(upper->second) - std::log(lower->second)));
}

double MeasuredTable::serial_steps(double batch) const {
  const auto it = curves_.find({1, 1});
  if (it == curves_.end())
    throw InputError(origin_, "rows", "rows with workers=1, tau=1 (serial Na(b))");
  return interpolate(it->second, batch, "Na(b)");
}

double MeasuredTable::local_sgd_rounds(double batch, int workers, int tau) const {
  const auto it = curves_.find({workers, tau});
  if (it != curves_.end())
    return interpolate(it->second, batch, fmt::format("Ma(b,K={},tau={})", workers, tau));
  if (tau == 1) return serial_steps(batch * workers);
  throw InputError(origin_, fmt::format("Ma(b,K={},tau={})", workers, tau),
                   "measured rows for this K and tau");
}

std::string MeasuredTable::describe() const {
  return "measured table " + origin_;
}

}  // namespace tauplan::model
