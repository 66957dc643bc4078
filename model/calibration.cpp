// calibration.cpp: least-squares lines, the calibrated platform's XML and its reader.
//
// Fits use Eigen's column-pivoting Householder QR on the [1, x] design matrix. The XML writer
// prints every number with 17 significant digits so that SimGrid reads back the same double.
// What it leaves out: weighted fits and outlier rejection (medians of repeats are taken by the
// caller).
#include "model/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "model/error.hpp"

namespace tauplan::model {

namespace {

std::string num(double v) {
  return fmt::format("{:.17g}", v);
}

// `text` safe inside an XML attribute or comment.
std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

bool finite(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}

void check_r2(double r2, const std::string& key) {
  if (!(r2 >= 0 && r2 <= 1)) throw InputError("<calibration>", key, "a number in [0, 1]", num(r2));
}

// Parses the whole of `text` as a finite double.
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}

}  // namespace

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y,
                   const std::string& origin) {
  if (x.size() != y.size())
    throw InputError(origin, "fit", "as many x as y values",
                     std::to_string(x.size()) + " and " + std::to_string(y.size()));
  if (x.size() < 2) throw InputError(origin, "fit", "at least 2 points", std::to_string(x.size()));
  if (!finite(x) || !finite(y)) throw InputError(origin, "fit", "finite values", "a NaN or inf");
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  bool distinct = false;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    a(i, 0) = 1.0;
    a(i, 1) = x[k];
    b(i) = y[k];
    if (x[k] != x[0]) distinct = true;
  }
  if (!distinct) throw InputError(origin, "fit", "at least 2 distinct x values", "all equal");
  const Eigen::Vector2d coef = a.colPivHouseholderQr().solve(b);
  LinearFit fit;
  fit.intercept = coef(0);
  fit.slope = coef(1);
  const double mean = b.mean();
  double ss_res = 0;
  double ss_tot = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double r = b(i) - (fit.intercept + fit.slope * a(i, 1));
    fit.residuals.push_back(r);
    ss_res += r * r;
    ss_tot += (b(i) - mean) * (b(i) - mean);
  }
  // Relative tolerance: residuals of an exact line are rounding noise.
  const double scale = b.cwiseAbs().maxCoeff();
  const double tiny = 1e-24 * scale * scale * static_cast<double>(n);
  if (ss_res <= tiny)
    fit.r2 = 1.0;
  else
    fit.r2 = ss_tot > 0 ? std::max(0.0, 1.0 - ss_res / ss_tot) : 0.0;
  return fit;
}

std::string calibration_xml(const Calibration& c) {
  const std::string origin = "<calibration>";
  if (c.hosts < 1)
    throw InputError(origin, "hosts", "a whole number >= 1", std::to_string(c.hosts));
  if (!(c.per_sample_s > 0 && std::isfinite(c.per_sample_s)))
    throw InputError(origin, "per_sample_s", "a positive number", num(c.per_sample_s));
  if (!(c.flop_per_sample > 0 && std::isfinite(c.speed_flops())))
    throw InputError(origin, "flop_per_sample", "a positive number", num(c.flop_per_sample));
  if (!(c.step_overhead_s >= 0 && std::isfinite(c.step_overhead_s)))
    throw InputError(origin, "step_overhead_s", "a number >= 0", num(c.step_overhead_s));
  if (!(c.alpha_s >= 0 && std::isfinite(c.alpha_s)))
    throw InputError(origin, "alpha_s", "a number >= 0", num(c.alpha_s));
  if (!(c.beta_Bps > 0 && std::isfinite(c.beta_Bps)))
    throw InputError(origin, "beta_Bps", "a positive number", num(c.beta_Bps));
  check_r2(c.r2_compute, "r2_compute");
  check_r2(c.r2_comm, "r2_comm");

  std::ostringstream o;
  o << "<?xml version='1.0'?>\n"
    << "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    << "<!--\n"
    << " Calibrated by `tauplan calibrate` (" << xml_escape(c.calibrated_from) << ") on "
    << xml_escape(c.date) << ".\n"
    << " " << c.hosts << " worker hosts h0..h" << c.hosts - 1
    << " on one node, each with a private SPLITDUPLEX link into router xbar.\n"
    << " Compute fit C(b) = " << num(c.step_overhead_s) << " s + b x " << num(c.per_sample_s)
    << " s (R^2 " << num(c.r2_compute) << "); speed = " << num(c.flop_per_sample)
    << " flop/sample / per-sample cost.\n"
    << " Combine fit T(S) = " << num(c.alpha_s) << " s + S / " << num(c.beta_Bps) << " B/s (R^2 "
    << num(c.r2_comm) << "); links have latency alpha/2 and bandwidth beta,\n"
    << " so every route hi -> hj (2 links: hi-link UP, hj-link DOWN) has latency alpha, bandwidth "
       "beta.\n"
    << "-->\n"
    << "<platform version=\"4.1\">\n"
    << "  <zone id=\"world\" routing=\"Floyd\">\n";
  for (int h = 0; h < c.hosts; ++h) {
    o << "    <host id=\"h" << h << "\" speed=\"" << num(c.speed_flops()) << "f\">\n"
      << "      <prop id=\"node\" value=\"this-machine\"/>\n"
      << "      <prop id=\"role\" value=\"worker\"/>\n"
      << "      <prop id=\"step_overhead_s\" value=\"" << num(c.step_overhead_s) << "\"/>\n"
      << "      <prop id=\"r2_compute\" value=\"" << num(c.r2_compute) << "\"/>\n"
      << "      <prop id=\"r2_comm\" value=\"" << num(c.r2_comm) << "\"/>\n"
      << "      <prop id=\"calibrated_from\" value=\"" << xml_escape(c.calibrated_from) << "\"/>\n"
      << "      <prop id=\"date\" value=\"" << xml_escape(c.date) << "\"/>\n"
      << "    </host>\n";
  }
  o << "    <router id=\"xbar\"/>\n";
  for (int h = 0; h < c.hosts; ++h)
    o << "    <link id=\"h" << h << "-link\" bandwidth=\"" << num(c.beta_Bps) << "Bps\" latency=\""
      << num(c.alpha_s / 2) << "s\" sharing_policy=\"SPLITDUPLEX\"/>\n";
  for (int h = 0; h < c.hosts; ++h)
    o << "    <route src=\"h" << h << "\" dst=\"xbar\"><link_ctn id=\"h" << h
      << "-link\" direction=\"UP\"/></route>\n";
  o << "  </zone>\n</platform>\n";
  return o.str();
}

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
      if (!parse_number(t, v) || v < lo || v > hi)
        throw InputError(file, where + key, expected, "'" + t + "'");
      return v;
    };
    if (!(host.speed_flops > 0) || !std::isfinite(host.speed_flops))
      throw InputError(file, where + "speed", "a positive flop/s", num(host.speed_flops));
    Calibration h;
    h.step_overhead_s = number("step_overhead_s", 0, HUGE_VAL, "a number of seconds >= 0");
    h.r2_compute = number("r2_compute", 0, 1, "a number in [0, 1]");
    h.r2_comm = number("r2_comm", 0, 1, "a number in [0, 1]");
    h.calibrated_from = text("calibrated_from");
    h.date = text("date");
    if (first) {
      c = h;
      c.hosts = 0;
      first = false;
    } else if (h.step_overhead_s != c.step_overhead_s || h.r2_compute != c.r2_compute ||
               h.r2_comm != c.r2_comm || h.calibrated_from != c.calibrated_from ||
               h.date != c.date) {
      throw InputError(file, where + "calibration props", "the same values on every worker",
                       "values that differ from the first worker's");
    }
    ++c.hosts;
  }
  if (c.hosts == 0) throw InputError(file, "hosts", "at least one calibrated worker", "none");
  return c;
}

}  // namespace tauplan::model
