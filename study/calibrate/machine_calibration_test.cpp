// machine_calibration_test.cpp: `tauplan calibrate` in this process
// (study/calibrate/machine_calibration.hpp) on a tiny request: with two batch sizes and two combine
// sizes each fitted line passes through its two points (residuals 0, R^2 1), the report's numbers
// are the fits' (per-sample cost the slope, beta the inverse slope of T over K S, speed the
// workload's flop over the per-sample cost); the platform written has the requested workers and the
// reducer and reads back the same calibration; --check reports it; bad options are one-line
// InputErrors naming the option.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "model/inputs/calibration.hpp"
#include "model/inputs/workload.hpp"
#include "sim/platform_loader.hpp"
#include "study/calibrate/machine_calibration.hpp"
#include "study/common/study_test_support.hpp"

using namespace tauplan;
using nlohmann::json;

namespace {  // the fits of a calibration against their points

/// Each point of `points` ({x_key, "seconds"}) lies on `fit`'s line, x scaled by `x_scale`.
void check_on_line(const json& fit, const json& points, const char* x_key, double x_scale) {
  const double a = fit.at("intercept").get<double>(), b = fit.at("slope").get<double>();
  REQUIRE(points.size() == 2);
  REQUIRE(fit.at("residuals").size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const double x = x_scale * points[i].at(x_key).get<double>();
    const double y = points[i].at("seconds").get<double>();
    CHECK(a + b * x == Approx(y).epsilon(1e-9));
    CHECK(std::fabs(fit.at("residuals")[i].get<double>()) <= 1e-9 * y);
  }
  CHECK(fit.at("r2").get<double>() == Approx(1).epsilon(1e-9));
}

}  // namespace

TEST_CASE("calibrate: two sizes each, the fits pass through the points, the file reads back") {
  const test::Scratch scratch("calibrate");
  study::CalibrateRequest r;
  r.out = scratch.path("calibration/this-machine.xml");  // its folder is made
  r.workers = 3;
  r.batches = {8, 128};
  r.floats = {2e4, 2e5};
  r.steps = 5;
  r.replicas = 2;
  const study::CalibrateOutcome out = study::run_calibrate(r);
  const json& doc = out.document;
  CHECK(doc.at("workers") == 3);
  CHECK(doc.at("out") == r.out);
  const json& steps = doc.at("steps");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].at("batch") == 8);
  CHECK(steps[1].at("batch") == 128);
  check_on_line(doc.at("compute"), steps, "batch", 1);
  const double slope = doc.at("compute").at("slope").get<double>();
  CHECK(doc.at("per_sample_s").get<double>() == slope);
  CHECK(doc.at("step_intercept_s").get<double>() ==
        std::max(0.0, doc.at("compute").at("intercept").get<double>()));
  const double flop = model::load_workload("fashion-mlp").flop_per_sample;
  CHECK(doc.at("flop_per_sample").get<double>() == flop);
  CHECK(doc.at("speed_flops").get<double>() == Approx(flop / slope));
  // The combine: T(K, S) = alpha + K S / beta, K the replicas, S = 4 bytes per float.
  const json& combines = doc.at("combines");
  REQUIRE(combines.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(combines[i].at("workers") == 2);
    CHECK(combines[i].at("bytes").get<double>() == 4 * r.floats[i]);
  }
  check_on_line(doc.at("comm"), combines, "bytes", 2);
  CHECK(doc.at("beta_Bps").get<double>() ==
        Approx(1 / doc.at("comm").at("slope").get<double>()).epsilon(1e-12));
  CHECK(out.text.find("wrote " + r.out + " (3 workers and the reducer)") != std::string::npos);

  const model::Platform platform = sim::load_platform(r.out);
  CHECK(platform.worker_hosts().size() == 3);
  CHECK(std::any_of(platform.hosts.begin(), platform.hosts.end(),
                    [](const model::Host& h) { return h.name == "reducer"; }));
  const model::Calibration back = model::read_calibration(platform);
  CHECK(back.hosts == 3);
  CHECK(back.per_sample_s == Approx(slope).epsilon(1e-6));

  study::CalibrateRequest check;
  check.check = r.out;
  const study::CalibrateOutcome checked = study::run_calibrate(check);
  CHECK(checked.document.at("file") == r.out);
  CHECK(checked.document.at("workers") == 3);
  CHECK(checked.document.at("step_overhead_s").get<double>() ==
        Approx(doc.at("step_overhead_s").get<double>()).epsilon(1e-6).margin(1e-12));
  CHECK(checked.text.rfind(r.out + ": 3 calibrated workers", 0) == 0);
}

TEST_CASE("calibrate: bad options are one-line InputErrors naming the option") {
  study::CalibrateRequest r;
  auto error = [&r] { return test::input_error([&r] { study::run_calibrate(r); }); };
  r.device = "cuda";
  CHECK(error() ==
        "command line: --device: expected cpu (calibration of cuda is not implemented yet), "
        "got cuda");
  r.device = "cpu";
  r.workers = 0;
  CHECK(error() == "command line: --workers: expected a whole number >= 1, got 0");
  r.workers = 8;
  r.steps = 4;
  CHECK(error() == "command line: --steps: expected a whole number >= 5, got 4");
  // --check of a platform that is not a calibration.
  study::CalibrateRequest check;
  check.check = test::source_path("platforms/test-crossbar-4.xml");
  const std::string not_calibration = test::input_error([&check] { study::run_calibrate(check); });
  CHECK(not_calibration.rfind(check.check + ": ", 0) == 0);
  CHECK(not_calibration.find("step_overhead_s: expected a calibration prop") != std::string::npos);
  CHECK(not_calibration.find('\n') == std::string::npos);
}
