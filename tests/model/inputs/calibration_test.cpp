// calibration_test.cpp: least-squares lines and lower envelopes, the calibrated platform XML and
// its props reader.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/inputs/calibration.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;

static const double kCalibrationNaN = std::numeric_limits<double>::quiet_NaN();
static const double kInf = std::numeric_limits<double>::infinity();

namespace {

model::Calibration sample() {
  model::Calibration c;
  c.hosts = 3;
  c.workload = "fashion-mlp";
  c.flop_per_sample = 1408512;
  c.update_flop = 0;
  c.step_intercept_s = 2e-4;
  c.per_sample_s = 1e-5;
  c.r2_compute = 0.999;
  c.alpha_s = 4e-6;
  c.beta_Bps = 5e9;
  c.r2_comm = 0.98;
  c.calibrated_from = "unit test";
  c.date = "2026-01-01T00:00:00Z";
  return c;
}

// A platform whose workers carry `c`'s props (and the reducer), as the loader would give it.
model::Platform platform_with(const model::Calibration& c) {
  model::Platform p;
  p.source_file = "cal.xml";
  for (int h = 0; h < c.hosts; ++h) {
    const double s = c.slowdown(h);
    model::Host host;
    host.name = "h" + std::to_string(h);
    host.speed_flops = c.speed_flops() / s;
    auto text = [](double v) { return fmt::format("{:.17g}", v); };
    host.properties = {{"step_overhead_s", text(c.step_overhead_s() * s)},
                       {"emulated_slowdown", text(s)},
                       {"workload", c.workload},
                       {"flop_per_sample", text(c.flop_per_sample)},
                       {"update_flop", text(c.update_flop)},
                       {"step_intercept_s", text(c.step_intercept_s)},
                       {"per_sample_s", text(c.per_sample_s)},
                       {"r2_compute", text(c.r2_compute)},
                       {"alpha_s", text(c.alpha_s)},
                       {"beta_Bps", text(c.beta_Bps)},
                       {"r2_comm", text(c.r2_comm)},
                       {"calibrated_from", c.calibrated_from},
                       {"date", c.date}};
    p.hosts.push_back(host);
  }
  model::Host reducer;
  reducer.name = "reducer";
  reducer.role = model::HostRole::Server;
  reducer.speed_flops = c.speed_flops();
  p.hosts.push_back(reducer);
  return p;
}

}  // namespace

TEST_CASE("fit_line recovers an exact line, with R^2 = 1 and zero residuals") {
  const std::vector<double> b{8, 16, 32, 64, 128, 256};
  std::vector<double> t;
  for (double x : b)
    t.push_back(2.5e-4 + x * 1.25e-5);
  const model::LinearFit fit = model::fit_line(b, t);
  CHECK(fit.intercept == Approx(2.5e-4).epsilon(1e-12));
  CHECK(fit.slope == Approx(1.25e-5).epsilon(1e-12));
  CHECK(fit.r2 == 1.0);
  REQUIRE(fit.residuals.size() == b.size());
  for (double r : fit.residuals)
    CHECK(std::abs(r) < 1e-15);
}

TEST_CASE("fit_line on bytes spanning 4 orders of magnitude") {
  const std::vector<double> s{4e3, 4e4, 4e5, 4e6, 4e7};
  std::vector<double> t;
  for (double x : s)
    t.push_back(3e-6 + x / 8e9);
  const model::LinearFit fit = model::fit_line(s, t);
  CHECK(fit.intercept == Approx(3e-6).epsilon(1e-9));
  CHECK(1.0 / fit.slope == Approx(8e9).epsilon(1e-12));
  CHECK(fit.r2 == 1.0);
}

TEST_CASE("fit_line on noisy data: least-squares values, R^2 5/6, residuals sum to 0") {
  // y = 1 + 2x with residuals +1, -1, -1, +1: the fit is exactly 1 + 2x.
  const model::LinearFit fit = model::fit_line({0, 1, 2, 3}, {2, 2, 4, 8});
  CHECK(fit.intercept == Approx(1.0));
  CHECK(fit.slope == Approx(2.0));
  // SS_res = 4, SS_tot = 4 + 4 + 0 + 16 = 24 (mean 4) -> R^2 = 5/6.
  CHECK(fit.r2 == Approx(5.0 / 6.0));
  CHECK(fit.residuals[0] + fit.residuals[1] + fit.residuals[2] + fit.residuals[3] ==
        Approx(0.0).margin(1e-12));
}

TEST_CASE("a relative fit recovers an exact line and weighs small values as much as large") {
  const std::vector<double> s{1e4, 1e5, 1e6, 1e7};
  std::vector<double> t;
  for (double x : s)
    t.push_back(2e-6 + x / 4e9);
  const model::LinearFit exact = model::fit_line(s, t, "test", true);
  CHECK(exact.intercept == Approx(2e-6).epsilon(1e-9));
  CHECK(1.0 / exact.slope == Approx(4e9).epsilon(1e-9));
  CHECK(exact.max_relative_residual < 1e-12);
  // 10% too slow at the largest size only: plain least squares drags the intercept below 0
  // (the failure of the first calibrations); the relative fit keeps the small sizes right.
  t.back() *= 1.1;
  const model::LinearFit plain = model::fit_line(s, t);
  const model::LinearFit relative = model::fit_line(s, t, "test", true);
  CHECK(plain.intercept < 0);
  CHECK(relative.intercept > 0);
  CHECK(std::abs(relative.residuals[0] / t[0]) < 0.05);
  CHECK_THROWS_AS(model::fit_line({1, 2}, {0, 1}, "test", true), InputError);
}

TEST_CASE("fit_line and fit_lower_envelope reject bad inputs") {
  using Fit = model::LinearFit (*)(const std::vector<double>&, const std::vector<double>&,
                                   const std::string&);
  const Fit least_squares = [](const std::vector<double>& x, const std::vector<double>& y,
                               const std::string& origin) { return model::fit_line(x, y, origin); };
  for (const Fit fit : {least_squares, &model::fit_lower_envelope}) {
    CHECK_THROWS_AS(fit({1}, {1}, "test"), InputError);
    CHECK_THROWS_AS(fit({1, 2}, {1}, "test"), InputError);
    CHECK_THROWS_AS(fit({2, 2, 2}, {1, 2, 3}, "test"), InputError);
    CHECK_THROWS_AS(fit({1, kCalibrationNaN}, {1, 2}, "test"), InputError);
    CHECK_THROWS_AS(fit({1, 2}, {1, kInf}, "test"), InputError);
  }
}

TEST_CASE("fit_lower_envelope: the quiet repeats' line, however many repeats stalled") {
  // Six sizes, three repeats each, on a route of 5e7 B/s and 0.4 ms: t = 4e-4 + S / 5e7. Stalls
  // of 3 to 12 ms (lost packets) hit one or two of the three repeats of five sizes, and all three
  // of the largest: least squares through the medians of the repeats reads the rate 6.4% low.
  const double alpha = 4e-4;
  const double beta = 5e7;
  const std::vector<double> sizes{1.6e6, 3.2e6, 4.8e6, 6.4e6, 8e6, 9.6e6};
  const std::vector<std::vector<double>> stalls{{0, 0, 3e-3},     {0, 5e-3, 0},
                                                {4e-3, 0, 6e-3},  {6e-3, 9e-3, 0},
                                                {8e-3, 11e-3, 0}, {10e-3, 12e-3, 6e-3}};
  std::vector<double> x;
  std::vector<double> t;
  std::vector<double> medians;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> repeats;
    for (double stall : stalls[i]) {
      x.push_back(sizes[i]);
      t.push_back(alpha + sizes[i] / beta + stall);
      repeats.push_back(t.back());
    }
    std::sort(repeats.begin(), repeats.end());
    medians.push_back(repeats[1]);
  }
  const model::LinearFit envelope = model::fit_lower_envelope(x, t, "test");
  // The quiet repeats of sizes 1 to 5 lie on one line: the envelope is that line (the largest
  // size, stalled every time, lies above it and is not needed).
  CHECK(1 / envelope.slope == Approx(beta).epsilon(1e-9));
  CHECK(envelope.intercept == Approx(alpha).epsilon(1e-6));
  for (double r : envelope.residuals)
    CHECK(r >= -1e-12);
  REQUIRE(envelope.residuals.size() == x.size());
  CHECK(envelope.r2 < 1);
  // Least squares through the medians, as the calibration fitted before: 0.9365 beta here.
  const model::LinearFit through_medians = model::fit_line(sizes, medians);
  CHECK(1 / through_medians.slope == Approx(0.9365 * beta).epsilon(1e-3));
}

TEST_CASE("fit_lower_envelope: under every point, highest at the mean x (brute force)") {
  // Invariant: among every line through two points that stays under all of them, none is higher
  // at the mean x than the envelope; the envelope is under every point.
  std::vector<double> x;
  std::vector<double> y;
  unsigned state = 12345;
  for (int i = 0; i < 40; ++i) {
    state = state * 1103515245u + 12345u;
    x.push_back(static_cast<double>(i % 8));
    y.push_back(1 + 0.5 * (i % 8) + static_cast<double>((state >> 16) % 1000) / 250.0);
  }
  const model::LinearFit fit = model::fit_lower_envelope(x, y, "test");
  double mean_x = 0;
  for (double v : x)
    mean_x += v;
  mean_x /= static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    CHECK(y[i] - (fit.intercept + fit.slope * x[i]) >= -1e-12);
  const double at_mean = fit.intercept + fit.slope * mean_x;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (!(x[j] > x[i])) continue;
      const double slope = (y[j] - y[i]) / (x[j] - x[i]);
      const double intercept = y[i] - slope * x[i];
      bool under = true;
      for (std::size_t k = 0; k < x.size(); ++k)
        under = under && y[k] >= intercept + slope * x[k] - 1e-12;
      if (under) CHECK(intercept + slope * mean_x <= at_mean + 1e-12);
    }
  // A vertex at the mean x: points (0, 0), (1, -1), (2, 0); every slope in [-1, 1] supports the
  // hull there; the fit takes their mean, 0, through the vertex.
  const model::LinearFit vertex = model::fit_lower_envelope({0, 1, 2}, {0, -1, 0}, "test");
  CHECK(vertex.slope == Approx(0).margin(1e-15));
  CHECK(vertex.intercept == Approx(-1));
  // An exact line comes back exactly, with R^2 1.
  const model::LinearFit exact = model::fit_lower_envelope({1, 2, 3, 4}, {3, 5, 7, 9}, "test");
  CHECK(exact.slope == Approx(2));
  CHECK(exact.intercept == Approx(1));
  CHECK(exact.r2 == 1.0);
}

TEST_CASE("calibration_xml writes speeds, the reducer, links of 2 beta and the props") {
  model::Calibration c = sample();
  c.slowdowns = {2, 1, 1};
  const std::string xml = model::calibration_xml(c);
  CHECK(xml.find("<platform version=\"4.1\">") != std::string::npos);
  CHECK(xml.find("<host id=\"h2\" speed=\"140851200000f\">") != std::string::npos);
  CHECK(xml.find("<host id=\"h0\" speed=\"70425600000f\">") != std::string::npos);
  CHECK(xml.find("<host id=\"h3\"") == std::string::npos);
  CHECK(xml.find("<host id=\"reducer\"") != std::string::npos);
  CHECK(xml.find("<prop id=\"role\" value=\"server\"/>") != std::string::npos);
  CHECK(xml.find("<link id=\"reducer-link\" bandwidth=\"10000000000Bps\" "
                 "latency=\"1.9999999999999999e-06s\"") != std::string::npos);
  // h0 is twice as slow: twice the overhead.
  CHECK(xml.find("<prop id=\"step_overhead_s\" value=\"0.00040000000000000002\"/>") !=
        std::string::npos);
  CHECK(xml.find("<prop id=\"emulated_slowdown\" value=\"2\"/>") != std::string::npos);
  CHECK(xml.find("<prop id=\"r2_comm\" value=\"0.97999999999999998\"/>") != std::string::npos);
  CHECK(xml.find("<route src=\"h2\" dst=\"xbar\"><link_ctn id=\"h2-link\" direction=\"UP\"/>") !=
        std::string::npos);
}

TEST_CASE("the step overhead is the intercept less the workload's update") {
  model::Calibration c = sample();
  c.update_flop = 0.5 * 2e-4 * c.speed_flops();  // the update takes half the intercept
  CHECK(c.step_overhead_s() == Approx(1e-4));
  c.update_flop = 10 * c.update_flop;  // more than the intercept: clamped at 0
  CHECK(c.step_overhead_s() == 0);
}

TEST_CASE("a host's step_overhead_s prop is the overhead of every step on that host") {
  model::Calibration c = sample();
  c.slowdowns = {3, 1, 1};
  const model::Platform p = platform_with(c);
  model::StrategyOptions o = test::options(3, 30, 1, "ps");
  o.step_overhead_s = 7;  // the job's value: a host prop wins
  CHECK(model::step_overhead_on(o, p, 0) == Approx(6e-4));
  CHECK(model::step_overhead_on(o, p, 1) == Approx(2e-4));
  CHECK(model::step_overhead_on(o, p, 3) == 7);  // the reducer has no prop: the job's
  model::Platform broken = p;
  broken.hosts[1].properties["step_overhead_s"] = "soon";
  CHECK_THROWS_WITH(model::step_overhead_on(o, broken, 1),
                    "cal.xml: h1: step_overhead_s: expected a number of seconds >= 0, got 'soon'");
}

TEST_CASE("calibration_xml escapes text props") {
  model::Calibration c = sample();
  c.calibrated_from = "a \"b\" <c> & d";
  const std::string xml = model::calibration_xml(c);
  CHECK(xml.find("value=\"a &quot;b&quot; &lt;c&gt; &amp; d\"") != std::string::npos);
}

TEST_CASE("calibration_xml rejects contradictory fields") {
  model::Calibration c = sample();
  c.per_sample_s = -1;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.r2_comm = 1.5;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.beta_Bps = 0;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.step_intercept_s = -1e-3;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.slowdowns = {1, 0.5, 1};
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.slowdowns = {1, 1};
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c = sample();
  c.hosts = 0;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
}

TEST_CASE("read_calibration reads the props back") {
  const model::Calibration c = model::read_calibration(platform_with(sample()));
  CHECK(c.hosts == 3);
  CHECK(c.step_overhead_s() == 2e-4);
  CHECK(c.per_sample_s == 1e-5);
  CHECK(c.beta_Bps == 5e9);
  CHECK(c.slowdowns == std::vector<double>{1, 1, 1});
  CHECK(c.r2_compute == 0.999);
  CHECK(c.r2_comm == 0.98);
  CHECK(c.calibrated_from == "unit test");
}

TEST_CASE("read_calibration: missing or contradictory props are one-line InputErrors") {
  auto expect = [](const model::Platform& p, const std::string& fragment) {
    try {
      model::read_calibration(p);
      FAIL("no error for " << fragment);
    } catch (const InputError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find(fragment) != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  };
  model::Platform p = platform_with(sample());
  p.hosts[1].properties.erase("step_overhead_s");
  expect(p, "cal.xml: h1: step_overhead_s: expected a calibration prop");
  p = platform_with(sample());
  p.hosts[0].properties["step_overhead_s"] = "fast";
  expect(p, "h0: step_overhead_s: expected a number of seconds >= 0, got 'fast'");
  p = platform_with(sample());
  p.hosts[0].properties["step_overhead_s"] = "-0.1";
  expect(p, "step_overhead_s");
  p = platform_with(sample());
  p.hosts[2].properties["r2_compute"] = "1.2";
  expect(p, "h2: r2_compute: expected a number in [0, 1]");
  p = platform_with(sample());
  p.hosts[0].speed_flops = -5;
  expect(p, "h0: speed: expected a positive flop/s");
  p = platform_with(sample());
  p.hosts[2].properties["r2_comm"] = "0.5";
  expect(p, "h2: calibration props: expected the same values on every worker");
  p = platform_with(sample());
  p.hosts[1].speed_flops *= 1.5;  // a speed the fit does not give
  expect(p, "h1: speed: expected flop_per_sample / per_sample_s / emulated_slowdown");
  p = platform_with(sample());
  p.hosts[2].properties["step_overhead_s"] = "0.5";
  expect(p,
         "h2: step_overhead_s: expected (step_intercept_s - update_flop / speed - "
         "pass_overhead_s)");
  p = platform_with(sample());
  p.hosts[0].properties["emulated_slowdown"] = "0.5";
  expect(p, "h0: emulated_slowdown: expected a factor >= 1");
  p = platform_with(sample());
  p.hosts.pop_back();
  expect(p, "cal.xml: reducer: expected a server host named reducer");
  p = platform_with(sample());
  p.hosts.clear();
  expect(p, "expected at least one calibrated worker");
}

TEST_CASE("a calibration's server work is written on the reducer and read back") {
  model::Calibration c = sample();
  const std::string without = model::calibration_xml(c);
  CHECK(without.find("server_flop_per_message") == std::string::npos);
  c.server_flop_per_message = 2.5e5;
  c.server_flop_per_byte = 1.25;
  const std::string with = model::calibration_xml(c);
  CHECK(with.find("<prop id=\"server_flop_per_message\" value=\"250000\"/>") != std::string::npos);
  CHECK(with.find("<prop id=\"server_flop_per_byte\" value=\"1.25\"/>") != std::string::npos);
  model::Platform p = platform_with(sample());
  p.hosts.back().properties = {{"server_flop_per_message", "250000"},
                               {"server_flop_per_byte", "1.25"}};
  const model::Calibration back = model::read_calibration(p);
  CHECK(back.server_flop_per_message == 2.5e5);
  CHECK(back.server_flop_per_byte == 1.25);
  const nlohmann::json j = model::calibration_json(back);
  CHECK(model::calibration_from_json(j).server_flop_per_byte == 1.25);
  CHECK(model::read_calibration(platform_with(sample())).server_flop_per_message == 0);
  p.hosts.back().properties["server_flop_per_byte"] = "-1";
  try {
    model::read_calibration(p);
    FAIL("accepted a negative server_flop_per_byte");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("cal.xml: reducer: server_flop_per_byte: expected a number "
                                     "of flop >= 0, got '-1'") != std::string::npos);
  }
  c.server_flop_per_byte = kCalibrationNaN;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
}

TEST_CASE("ring_allreduce_link: the link on which a ring of the group takes the fit") {
  // 2 (g - 1) steps, each a route of two links (latency 2 l) moving bytes / g through the link.
  for (int g : {2, 3, 8}) {
    const double lat = 2e-5, bw = 3e9, bytes = 1e6;
    const model::LinkParameters link = model::ring_allreduce_link(g, lat, bw);
    const double ring = 2.0 * (g - 1) * (2 * link.latency_s + bytes / g / link.bandwidth_Bps);
    CHECK(ring == Approx(lat + bytes / bw).epsilon(1e-12));
  }
  CHECK_THROWS_AS(model::ring_allreduce_link(1, 1e-5, 1e9), InputError);
  CHECK_THROWS_AS(model::ring_allreduce_link(2, -1e-5, 1e9), InputError);
  CHECK_THROWS_AS(model::ring_allreduce_link(2, 1e-5, 0), InputError);
}

TEST_CASE("a calibration's layout all-reduce: worker links, props and JSON") {
  model::Calibration c = sample();
  c.peer_group = 2;
  c.peer_latency_s = 4e-5;
  c.peer_bandwidth_Bps = 2e9;
  const std::string xml = model::calibration_xml(c);
  // Group 2: bandwidth x 1, latency / 4; the reducer's link keeps 2 beta and alpha / 2.
  CHECK(
      xml.find(
          "<link id=\"h0-link\" bandwidth=\"2000000000Bps\" latency=\"1.0000000000000001e-05s\"") !=
      std::string::npos);
  CHECK(xml.find("<link id=\"reducer-link\" bandwidth=\"10000000000Bps\"") != std::string::npos);
  CHECK(xml.find("<prop id=\"peer_group\" value=\"2\"/>") != std::string::npos);
  const model::Calibration back = model::calibration_from_json(model::calibration_json(c));
  CHECK(back.peer_group == 2);
  CHECK(back.peer_latency_s == 4e-5);
  CHECK(back.peer_bandwidth_Bps == 2e9);
  // Absent keys (a calibration written before): none measured.
  nlohmann::json old = model::calibration_json(sample());
  old.erase("peer_group");
  old.erase("peer_latency_s");
  old.erase("peer_bandwidth_Bps");
  CHECK(model::calibration_from_json(old).peer_group == 0);
  c.peer_group = 1;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
  c.peer_group = 2;
  c.peer_bandwidth_Bps = 0;
  CHECK_THROWS_AS(model::calibration_xml(c), InputError);
}

TEST_CASE("read_calibration: a layout all-reduce's props are checked") {
  model::Platform p = platform_with(sample());
  for (model::Host& h : p.hosts)
    if (h.role == model::HostRole::Worker)
      h.properties.insert(
          {{"peer_group", "2"}, {"peer_latency_s", "4e-05"}, {"peer_bandwidth_Bps", "2e9"}});
  CHECK(model::read_calibration(p).peer_group == 2);
  p.hosts[1].properties["peer_group"] = "2.5";
  CHECK_THROWS_WITH(model::read_calibration(p), Catch::Contains("h1: peer_group"));
  p.hosts[1].properties["peer_group"] = "4";
  CHECK_THROWS_WITH(model::read_calibration(p), Catch::Contains("the same values on every worker"));
  p.hosts[1].properties["peer_group"] = "2";
  p.hosts[1].properties.erase("peer_latency_s");
  CHECK_THROWS_WITH(model::read_calibration(p), Catch::Contains("h1: peer_latency_s"));
}

TEST_CASE("a calibration's pass overhead: out of the step's, on every worker, read back") {
  model::Calibration c = sample();  // intercept 200 us, no update flop
  c.pass_overhead_s = 5e-5;
  c.slowdowns = {2, 1, 1};
  CHECK(c.step_overhead_s() == Approx(1.5e-4).epsilon(1e-12));
  const std::string xml = model::calibration_xml(c);
  CHECK(xml.find("<prop id=\"pass_overhead_s\" value=\"0.0001\"/>") != std::string::npos);  // x2
  CHECK(xml.find("<prop id=\"pass_overhead_s\" value=\"5.0000000000000002e-05\"/>") !=
        std::string::npos);
  model::Platform p = platform_with(c);
  for (model::Host& h : p.hosts)
    if (h.role == model::HostRole::Worker)
      h.properties["pass_overhead_s"] =
          fmt::format("{:.17g}", c.pass_overhead_s * c.slowdown(std::stoi(h.name.substr(1))));
  CHECK(model::read_calibration(p).pass_overhead_s == Approx(5e-5).epsilon(1e-12));
  CHECK(model::calibration_from_json(model::calibration_json(c)).pass_overhead_s == 5e-5);
  // Workers that disagree, or a pass dearer than the whole intercept, are refused on reading.
  model::Platform differing = p;
  differing.hosts[2].properties["pass_overhead_s"] = "6e-05";
  differing.hosts[2].properties["step_overhead_s"] = "0.00014";
  CHECK_THROWS_WITH(model::read_calibration(differing),
                    Catch::Contains("h2: calibration props: expected the same values"));
  model::Platform dear = p;
  dear.hosts[1].properties["pass_overhead_s"] = "0.001";
  CHECK_THROWS_WITH(model::read_calibration(dear), Catch::Contains("h1: pass_overhead_s"));
  c.pass_overhead_s = 3e-4;  // more than the intercept
  CHECK_THROWS_WITH(model::calibration_xml(c), Catch::Contains("pass_overhead_s"));
}
