// calibration.cpp: straight-line fits, the calibrated platform's XML and its reader.
//
// Fits use Eigen's column-pivoting Householder QR on the [1, x] design matrix (rows scaled by
// 1/y for a relative fit). The XML writer prints every number with 17 significant digits so that
// SimGrid reads back the same double. fit_lower_envelope walks the points' lower convex hull
// (Andrew's monotone chain) instead. What it leaves out: outlier rejection for least squares (its
// callers take medians of repeats or use the envelope).
#include "model/inputs/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "model/base/error.hpp"
#include "model/inputs/simgrid_xml.hpp"

namespace tauplan::model {

namespace {

std::string num(double v) {
  return simgrid_xml::number(v);
}

bool finite(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}

void check_r2(double r2, const std::string& key) {
  if (!(r2 >= 0 && r2 <= 1)) throw InputError("<calibration>", key, "a number in [0, 1]", num(r2));
}

void check_fit_input(const std::vector<double>& x, const std::vector<double>& y,
                     const std::string& origin) {
  if (x.size() != y.size())
    throw InputError(origin, "fit", "as many x as y values",
                     std::to_string(x.size()) + " and " + std::to_string(y.size()));
  if (x.size() < 2) throw InputError(origin, "fit", "at least 2 points", std::to_string(x.size()));
  if (!finite(x) || !finite(y)) throw InputError(origin, "fit", "finite values", "a NaN or inf");
}

}  // namespace

void describe_fit(const std::vector<double>& x, const std::vector<double>& y, LinearFit& fit) {
  fit.residuals.clear();
  fit.max_relative_residual = 0;
  double mean = 0;
  for (double v : y)
    mean += v;
  mean /= static_cast<double>(y.size());
  double ss_res = 0;
  double ss_tot = 0;
  double scale = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double r = y[i] - (fit.intercept + fit.slope * x[i]);
    fit.residuals.push_back(r);
    if (y[i] != 0)
      fit.max_relative_residual = std::max(fit.max_relative_residual, std::abs(r / y[i]));
    ss_res += r * r;
    ss_tot += (y[i] - mean) * (y[i] - mean);
    scale = std::max(scale, std::abs(y[i]));
  }
  // Relative tolerance: residuals of an exact line are rounding noise.
  const double tiny = 1e-24 * scale * scale * static_cast<double>(y.size());
  if (ss_res <= tiny)
    fit.r2 = 1.0;
  else
    fit.r2 = ss_tot > 0 ? std::max(0.0, 1.0 - ss_res / ss_tot) : 0.0;
}

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y,
                   const std::string& origin, bool relative) {
  check_fit_input(x, y, origin);
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  bool distinct = false;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (relative && y[k] == 0)
      throw InputError(origin, "fit", "non-zero y values for a relative fit", "0");
    const double w = relative ? 1.0 / std::abs(y[k]) : 1.0;
    a(i, 0) = w;
    a(i, 1) = w * x[k];
    b(i) = w * y[k];
    if (x[k] != x[0]) distinct = true;
  }
  if (!distinct) throw InputError(origin, "fit", "at least 2 distinct x values", "all equal");
  const Eigen::Vector2d coef = a.colPivHouseholderQr().solve(b);
  LinearFit fit;
  fit.intercept = coef(0);
  fit.slope = coef(1);
  describe_fit(x, y, fit);
  return fit;
}

LinearFit fit_lower_envelope(const std::vector<double>& x, const std::vector<double>& y,
                             const std::string& origin) {
  check_fit_input(x, y, origin);
  // The lowest y at each distinct x, in increasing x: only those can lie on the lower hull.
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < x.size(); ++i)
    points.emplace_back(x[i], y[i]);
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> lowest;
  for (const auto& p : points)
    if (lowest.empty() || p.first != lowest.back().first) lowest.push_back(p);
  if (lowest.size() < 2)
    throw InputError(origin, "fit", "at least 2 distinct x values", "all equal");
  // Lower hull: drop a vertex while it is not strictly below the chord of its neighbours.
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : lowest) {
    while (hull.size() >= 2) {
      const auto& a = hull[hull.size() - 2];
      const auto& b = hull.back();
      const double cross =
          (b.first - a.first) * (p.second - a.second) - (b.second - a.second) * (p.first - a.first);
      if (cross > 0) break;
      hull.pop_back();
    }
    hull.push_back(p);
  }
  double mean_x = 0;
  for (double v : x)
    mean_x += v;
  mean_x /= static_cast<double>(x.size());
  auto slope_of = [&hull](std::size_t edge) {
    return (hull[edge + 1].second - hull[edge].second) / (hull[edge + 1].first - hull[edge].first);
  };
  // The edge [hull[e], hull[e + 1]] that spans the mean; a vertex at the mean takes the mean slope
  // of its two edges (every slope between them supports the hull there).
  std::size_t edge = 0;
  while (edge + 2 < hull.size() && hull[edge + 1].first < mean_x)
    ++edge;
  LinearFit fit;
  fit.slope = slope_of(edge);
  if (hull[edge + 1].first == mean_x && edge + 2 < hull.size())
    fit.slope = 0.5 * (fit.slope + slope_of(edge + 1));
  const auto& anchor = hull[edge + 1].first == mean_x ? hull[edge + 1] : hull[edge];
  fit.intercept = anchor.second - fit.slope * anchor.first;
  describe_fit(x, y, fit);
  return fit;
}

double Calibration::step_overhead_s() const {
  return std::max(0.0, step_intercept_s - update_flop / speed_flops() - pass_overhead_s);
}

double Calibration::slowdown(int host) const {
  return slowdowns.empty() ? 1.0 : slowdowns.at(static_cast<std::size_t>(host));
}

LinkParameters ring_allreduce_link(int group, double latency_s, double bandwidth_Bps) {
  const std::string origin = "<calibration>";
  if (group < 2)
    throw InputError(origin, "peer_group", "a group of 2 or more ranks", std::to_string(group));
  if (!(latency_s >= 0 && std::isfinite(latency_s)))
    throw InputError(origin, "peer_latency_s", "a number of seconds >= 0", num(latency_s));
  if (!(bandwidth_Bps > 0 && std::isfinite(bandwidth_Bps)))
    throw InputError(origin, "peer_bandwidth_Bps", "a positive number of bytes/s",
                     num(bandwidth_Bps));
  const double steps = 2.0 * (group - 1);
  return {bandwidth_Bps * steps / group, latency_s / steps / 2};
}

namespace {

/// calibration_xml's checks of the fields (see its declaration).
void check_fields(const Calibration& c) {
  const std::string origin = "<calibration>";
  if (c.hosts < 1)
    throw InputError(origin, "hosts", "a whole number >= 1", std::to_string(c.hosts));
  if (c.workload.empty()) throw InputError(origin, "workload", "a workload name", "nothing");
  if (!(c.per_sample_s > 0 && std::isfinite(c.per_sample_s)))
    throw InputError(origin, "per_sample_s", "a positive number", num(c.per_sample_s));
  if (!(c.flop_per_sample > 0 && std::isfinite(c.speed_flops())))
    throw InputError(origin, "flop_per_sample", "a positive number", num(c.flop_per_sample));
  if (!(c.update_flop >= 0 && std::isfinite(c.update_flop)))
    throw InputError(origin, "update_flop", "a number >= 0", num(c.update_flop));
  if (!(c.step_intercept_s >= 0 && std::isfinite(c.step_intercept_s)))
    throw InputError(origin, "step_intercept_s", "a number >= 0", num(c.step_intercept_s));
  if (!(c.alpha_s >= 0 && std::isfinite(c.alpha_s)))
    throw InputError(origin, "alpha_s", "a number >= 0", num(c.alpha_s));
  if (!(c.beta_Bps > 0 && std::isfinite(c.beta_Bps)))
    throw InputError(origin, "beta_Bps", "a positive number", num(c.beta_Bps));
  check_r2(c.r2_compute, "r2_compute");
  check_r2(c.r2_comm, "r2_comm");
  if (!c.slowdowns.empty() && static_cast<int>(c.slowdowns.size()) != c.hosts)
    throw InputError(origin, "slowdowns", "one per worker host (" + std::to_string(c.hosts) + ")",
                     std::to_string(c.slowdowns.size()));
  for (double s : c.slowdowns)
    if (!(s >= 1 && std::isfinite(s)))
      throw InputError(origin, "slowdowns", "factors >= 1", num(s));
  if (!(c.server_flop_per_message >= 0 && std::isfinite(c.server_flop_per_message)))
    throw InputError(origin, "server_flop_per_message", "a number >= 0",
                     num(c.server_flop_per_message));
  if (!(c.server_flop_per_byte >= 0 && std::isfinite(c.server_flop_per_byte)))
    throw InputError(origin, "server_flop_per_byte", "a number >= 0", num(c.server_flop_per_byte));
  if (!(c.pass_overhead_s >= 0 && c.pass_overhead_s <= c.step_intercept_s))
    throw InputError(origin, "pass_overhead_s", "a number of seconds in [0, step_intercept_s]",
                     num(c.pass_overhead_s));
  if (c.peer_group != 0 && c.peer_group < 2)
    throw InputError(origin, "peer_group", "0 (none) or a group of 2 or more ranks",
                     std::to_string(c.peer_group));
}

}  // namespace

std::string calibration_xml(const Calibration& c) {
  check_fields(c);
  // The links of a layout's ranks: what makes a ring all-reduce of the group take the fit.
  const LinkParameters worker_link =
      c.peer_group >= 2 ? ring_allreduce_link(c.peer_group, c.peer_latency_s, c.peer_bandwidth_Bps)
                        : LinkParameters{2 * c.beta_Bps, 0};

  namespace sx = simgrid_xml;
  const double link_bandwidth = 2 * c.beta_Bps;
  sx::Platform xml;
  xml.comment =
      " Calibrated by `tauplan calibrate` (" + sx::escape(c.calibrated_from) + ") on " +
      sx::escape(c.date) + ".\n " + std::to_string(c.hosts) + " worker hosts h0..h" +
      std::to_string(c.hosts - 1) +
      " and the combining core `reducer` (role server), each on a private\n"
      " SPLITDUPLEX link into router xbar.\n"
      " Step fit C(b) = " +
      num(c.step_intercept_s) + " s + b x " + num(c.per_sample_s) + " s (R^2 " + num(c.r2_compute) +
      ") for " + sx::escape(c.workload) +
      ";\n"
      " speed = " +
      num(c.flop_per_sample) +
      " flop/sample / per-sample cost; step_overhead_s = intercept - update flop / speed\n"
      " - pass_overhead_s (a pass's own fixed cost, when measured; charged on every pass).\n"
      " Network fit alpha = " +
      num(c.alpha_s) + " s, beta = " + num(c.beta_Bps) + " B/s (R^2 " + num(c.r2_comm) +
      "), of what calibrated_from names: the threads\n"
      " combine T(K, S) = alpha + K S / beta, or one-way messages alpha/2 + S/(2 beta). Links\n"
      " have bandwidth 2 beta and the reducer's link latency alpha/2, so `collective: ps` with\n"
      " `servers: 1` costs T(K, S), and one worker's push or pull alpha/2 + S/(2 beta).\n"
      " A worker with emulated_slowdown s runs at speed / s with s x the step overhead.\n";
  if (c.peer_group >= 2)
    xml.comment +=
        " A layout's all-reduce over groups of " + std::to_string(c.peer_group) +
        " ranks, measured as they run it, fits " + num(c.peer_latency_s) + " s + bytes / " +
        num(c.peer_bandwidth_Bps) + " B/s: the worker links (not the reducer's) have\n bandwidth " +
        num(worker_link.bandwidth_Bps) + " B/s and latency " + num(worker_link.latency_s) +
        " s, so that a ring all-reduce of the group takes that time.\n";
  if (c.server_flop_per_message > 0 || c.server_flop_per_byte > 0)
    xml.comment += " The reducer serves as a parameter server: " + num(c.server_flop_per_message) +
                   " flop per message handled, " + num(c.server_flop_per_byte) +
                   " flop per byte of update, at its speed.\n";
  sx::Zone& world = xml.root;
  world.id = "world";
  world.routing = "Floyd";
  for (int h = 0; h < c.hosts; ++h) {
    const double s = c.slowdown(h);
    world.hosts.push_back({"h" + std::to_string(h),
                           c.speed_flops() / s,
                           {{"node", "this-machine"},
                            {"role", "worker"},
                            {"emulated_slowdown", num(s)},
                            {"step_overhead_s", num(c.step_overhead_s() * s)},
                            {"workload", c.workload},
                            {"flop_per_sample", num(c.flop_per_sample)},
                            {"update_flop", num(c.update_flop)},
                            {"step_intercept_s", num(c.step_intercept_s)},
                            {"per_sample_s", num(c.per_sample_s)},
                            {"r2_compute", num(c.r2_compute)},
                            {"alpha_s", num(c.alpha_s)},
                            {"beta_Bps", num(c.beta_Bps)},
                            {"r2_comm", num(c.r2_comm)},
                            {"calibrated_from", c.calibrated_from},
                            {"date", c.date}}});
    if (c.pass_overhead_s > 0)  // charged on every pass, as step_overhead_s on every step
      world.hosts.back().props.push_back({"pass_overhead_s", num(c.pass_overhead_s * s)});
    if (c.peer_group >= 2)
      for (auto [key, value] : {std::pair{"peer_group", std::to_string(c.peer_group)},
                                std::pair{"peer_latency_s", num(c.peer_latency_s)},
                                std::pair{"peer_bandwidth_Bps", num(c.peer_bandwidth_Bps)}})
        world.hosts.back().props.push_back({key, value});
  }
  world.hosts.push_back(
      {"reducer", c.speed_flops(), {{"node", "this-machine"}, {"role", "server"}}});
  if (c.server_flop_per_message > 0 || c.server_flop_per_byte > 0) {
    world.hosts.back().props.push_back({"server_flop_per_message", num(c.server_flop_per_message)});
    world.hosts.back().props.push_back({"server_flop_per_byte", num(c.server_flop_per_byte)});
  }
  world.routers.push_back("xbar");
  for (int h = 0; h < c.hosts; ++h)
    world.links.push_back({"h" + std::to_string(h) + "-link", worker_link.bandwidth_Bps,
                           worker_link.latency_s, "SPLITDUPLEX"});
  world.links.push_back({"reducer-link", link_bandwidth, c.alpha_s / 2, "SPLITDUPLEX"});
  for (int h = 0; h < c.hosts; ++h)
    world.routes.push_back(
        {"h" + std::to_string(h), "xbar", {{"h" + std::to_string(h) + "-link", "UP"}}});
  world.routes.push_back({"reducer", "xbar", {{"reducer-link", "UP"}}});
  return sx::to_xml(xml);
}

namespace {

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

}  // namespace

Calibration read_calibration(const Platform& platform) {
  const std::string& file = platform.source_file;
  Calibration c;
  c.hosts = 0;
  bool first = true;
  for (const Host& host : platform.hosts) {
    if (host.role != HostRole::Worker) continue;
    const std::string where = host.name + ": ";
    auto text = [&](const std::string& key) -> std::string {
      const auto it = host.properties.find(key);
      if (it == host.properties.end() || it->second.empty())
        throw InputError(file, where + key, "a calibration prop (run tauplan calibrate)",
                         "nothing");
      return it->second;
    };
    auto number = [&](const std::string& key, double lo, double hi, const std::string& expected) {
      const std::string t = text(key);
      double v = 0;
      if (!parse_prop_number(t, v) || v < lo || v > hi)
        throw InputError(file, where + key, expected, "'" + t + "'");
      return v;
    };
    if (!(host.speed_flops > 0) || !std::isfinite(host.speed_flops))
      throw InputError(file, where + "speed", "a positive flop/s", num(host.speed_flops));
    Calibration h;
    const double overhead = number("step_overhead_s", 0, HUGE_VAL, "a number of seconds >= 0");
    const double slowdown = number("emulated_slowdown", 1, HUGE_VAL, "a factor >= 1");
    h.workload = text("workload");
    h.flop_per_sample = number("flop_per_sample", 1e-300, HUGE_VAL, "a positive number");
    h.update_flop = number("update_flop", 0, HUGE_VAL, "a number >= 0");
    h.step_intercept_s = number("step_intercept_s", 0, HUGE_VAL, "a number of seconds >= 0");
    h.per_sample_s = number("per_sample_s", 1e-300, HUGE_VAL, "a positive number of seconds");
    h.r2_compute = number("r2_compute", 0, 1, "a number in [0, 1]");
    h.alpha_s = number("alpha_s", 0, HUGE_VAL, "a number of seconds >= 0");
    h.beta_Bps = number("beta_Bps", 1e-300, HUGE_VAL, "a positive number of bytes/s");
    h.r2_comm = number("r2_comm", 0, 1, "a number in [0, 1]");
    h.calibrated_from = text("calibrated_from");
    h.date = text("date");
    if (host.properties.count("pass_overhead_s"))  // measured: x the slowdown, as the step's
      h.pass_overhead_s = number("pass_overhead_s", 0, h.step_intercept_s * slowdown,
                                 "seconds in [0, step_intercept_s x emulated_slowdown]") /
                          slowdown;
    if (host.properties.count("peer_group")) {  // a layout's all-reduce, when measured
      const double group = number("peer_group", 2, 1 << 20, "a whole number of ranks >= 2");
      if (group != std::floor(group))
        throw InputError(file, where + "peer_group", "a whole number of ranks >= 2",
                         "'" + text("peer_group") + "'");
      h.peer_group = static_cast<int>(group);
      h.peer_latency_s = number("peer_latency_s", 0, HUGE_VAL, "a number of seconds >= 0");
      h.peer_bandwidth_Bps =
          number("peer_bandwidth_Bps", 1e-300, HUGE_VAL, "a positive number of bytes/s");
    }
    // What the file says twice must agree.
    if (!close(host.speed_flops * slowdown, h.speed_flops()))
      throw InputError(file, where + "speed",
                       "flop_per_sample / per_sample_s / emulated_slowdown = " +
                           num(h.speed_flops() / slowdown) + " flop/s",
                       num(host.speed_flops));
    if (!close(overhead, h.step_overhead_s() * slowdown) &&
        std::abs(overhead - h.step_overhead_s() * slowdown) > 1e-15)
      throw InputError(
          file, where + "step_overhead_s",
          "(step_intercept_s - update_flop / speed - pass_overhead_s) x emulated_slowdown = " +
              num(h.step_overhead_s() * slowdown),
          num(overhead));
    if (first) {
      c = h;
      c.hosts = 0;
      first = false;
    } else if (h.workload != c.workload || h.flop_per_sample != c.flop_per_sample ||
               h.update_flop != c.update_flop || h.step_intercept_s != c.step_intercept_s ||
               h.per_sample_s != c.per_sample_s || h.r2_compute != c.r2_compute ||
               h.alpha_s != c.alpha_s || h.beta_Bps != c.beta_Bps || h.r2_comm != c.r2_comm ||
               !close(h.pass_overhead_s, c.pass_overhead_s) || h.peer_group != c.peer_group ||
               h.peer_latency_s != c.peer_latency_s ||
               h.peer_bandwidth_Bps != c.peer_bandwidth_Bps ||
               h.calibrated_from != c.calibrated_from || h.date != c.date) {
      throw InputError(file, where + "calibration props", "the same values on every worker",
                       "values that differ from the first worker's");
    }
    c.slowdowns.push_back(slowdown);
    ++c.hosts;
  }
  if (c.hosts == 0) throw InputError(file, "hosts", "at least one calibrated worker", "none");
  const Host* reducer = nullptr;
  for (const Host& host : platform.hosts)
    if (host.name == "reducer" && host.role == HostRole::Server) reducer = &host;
  if (!reducer)
    throw InputError(file, "reducer", "a server host named reducer (the combining core)", "none");
  // The reducer's own work (absent: none), as model/ir/server_work.hpp reads it.
  for (auto [key, field] : {std::pair{"server_flop_per_message", &c.server_flop_per_message},
                            std::pair{"server_flop_per_byte", &c.server_flop_per_byte}}) {
    const auto it = reducer->properties.find(key);
    if (it == reducer->properties.end()) continue;
    if (!parse_prop_number(it->second, *field) || !(*field >= 0) || !std::isfinite(*field))
      throw InputError(file, std::string("reducer: ") + key, "a number of flop >= 0",
                       "'" + it->second + "'");
  }
  return c;
}

nlohmann::json calibration_json(const Calibration& c) {
  return {{"workers", c.hosts},
          {"workload", c.workload},
          {"flop_per_sample", c.flop_per_sample},
          {"update_flop", c.update_flop},
          {"step_intercept_s", c.step_intercept_s},
          {"step_overhead_s", c.step_overhead_s()},
          {"pass_overhead_s", c.pass_overhead_s},
          {"per_sample_s", c.per_sample_s},
          {"alpha_s", c.alpha_s},
          {"beta_Bps", c.beta_Bps},
          {"slowdowns", c.slowdowns},
          {"r2_compute", c.r2_compute},
          {"r2_comm", c.r2_comm},
          {"server_flop_per_message", c.server_flop_per_message},
          {"server_flop_per_byte", c.server_flop_per_byte},
          {"peer_group", c.peer_group},
          {"peer_latency_s", c.peer_latency_s},
          {"peer_bandwidth_Bps", c.peer_bandwidth_Bps},
          {"calibrated_from", c.calibrated_from},
          {"date", c.date}};
}

Calibration calibration_from_json(const nlohmann::json& j) {
  Calibration c;
  c.hosts = j.at("workers").get<int>();
  c.workload = j.at("workload").get<std::string>();
  c.flop_per_sample = j.at("flop_per_sample").get<double>();
  c.update_flop = j.at("update_flop").get<double>();
  c.step_intercept_s = j.at("step_intercept_s").get<double>();
  c.per_sample_s = j.at("per_sample_s").get<double>();
  c.alpha_s = j.at("alpha_s").get<double>();
  c.beta_Bps = j.at("beta_Bps").get<double>();
  c.slowdowns = j.at("slowdowns").get<std::vector<double>>();
  c.r2_compute = j.at("r2_compute").get<double>();
  c.r2_comm = j.at("r2_comm").get<double>();
  c.server_flop_per_message = j.at("server_flop_per_message").get<double>();
  c.server_flop_per_byte = j.at("server_flop_per_byte").get<double>();
  c.pass_overhead_s = j.value("pass_overhead_s", 0.0);  // absent: not measured
  if (j.contains("peer_group")) {  // absent: written before a layout's all-reduce was measured
    c.peer_group = j.at("peer_group").get<int>();
    c.peer_latency_s = j.at("peer_latency_s").get<double>();
    c.peer_bandwidth_Bps = j.at("peer_bandwidth_Bps").get<double>();
  }
  c.calibrated_from = j.at("calibrated_from").get<std::string>();
  c.date = j.at("date").get<std::string>();
  return c;
}

}  // namespace tauplan::model
