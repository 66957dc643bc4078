// grid_test.cpp: grids of job keys (study/common/grid.hpp): --set parses into one axis (values in
// the order given, ';' separating values that are lists, '-' read as '_'), bad sets are one-line
// InputErrors naming the key, and a grid is the Cartesian product of its axes in mixed-radix
// order (the first axis varying slowest).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "model/base/error.hpp"
#include "study/common/grid.hpp"
#include "study/common/inputs.hpp"
#include "study/common/study_test_support.hpp"

using tauplan::study::Axis;

namespace {

const std::vector<tauplan::model::KeySpec>& keys() {
  static const std::vector<tauplan::model::KeySpec> specs = tauplan::study::all_job_keys();
  return specs;
}

Axis axis(const std::string& text) {
  return tauplan::study::parse_set(text, keys());
}

}  // namespace

TEST_CASE("grid: a --set is one axis, its values in the order given") {
  const Axis a = axis("batch=128,32,64");
  CHECK(a.key == "batch");
  CHECK(a.values == std::vector<std::string>{"128", "32", "64"});
  // Blanks around the key and the values are dropped; '-' in the key is read as '_'.
  const Axis b = axis(" tensor-parallel = 1 , 2 ");
  CHECK(b.key == "tensor_parallel");
  CHECK(b.values == std::vector<std::string>{"1", "2"});
  // ';' separates values when there is one, so that a value can be a list.
  const Axis c = axis("strategies=sync,local-sgd;single");
  CHECK(c.values == std::vector<std::string>{"sync,local-sgd", "single"});
  CHECK(axis("seed=7").values == std::vector<std::string>{"7"});
}

TEST_CASE("grid: a bad --set is one line naming the key") {
  const std::string origin = "command line --set";
  auto error = [](const std::string& text) {
    return tauplan::test::input_error([&] { axis(text); });
  };
  CHECK(error("batch") == origin + ": 'batch': expected KEY=V1,V2,... (a job key and its values)");
  CHECK(error("=1,2").rfind(origin + ": '=1,2': expected KEY=", 0) == 0);
  CHECK(error("wokers=1,2") ==
        origin + ": wokers: expected a job key (tauplan help-keys lists them), got an unknown key");
  CHECK(error("batch=32,,64") ==
        origin + ": batch: expected a list of values without empty items, got '32,,64'");
  CHECK(error("batch=") ==
        origin + ": batch: expected a list of values without empty items, got ''");
  // The same key in two --set (also spelt with '-') is refused.
  const std::string twice = tauplan::test::input_error([] {
    tauplan::study::parse_sets({"tensor_parallel=1", "tensor-parallel=2"}, keys());
  });
  CHECK(twice == origin + ": tensor_parallel: expected each key in one --set, got twice");
  const auto axes = tauplan::study::parse_sets({"workers=2,4", "batch=32"}, keys());
  REQUIRE(axes.size() == 2);
  CHECK(axes[0].key == "workers");
  CHECK(axes[1].key == "batch");
}

TEST_CASE("grid: the points are the product of the axes, the first varying slowest") {
  const std::vector<Axis> axes = {
      {"workers", {"2", "4", "8"}}, {"batch", {"32", "64"}}, {"tau", {"1", "5", "25", "100"}}};
  const auto points = tauplan::study::grid_points(axes);
  REQUIRE(points.size() == 3 * 2 * 4);
  std::set<std::vector<std::pair<std::string, std::string>>> distinct;
  for (size_t i = 0; i < points.size(); ++i) {
    CAPTURE(i);
    const auto& p = points[i];
    REQUIRE(p.size() == 3);
    // Mixed radix: i = (w x 2 + b) x 4 + t.
    CHECK(p[0] == std::make_pair(std::string("workers"), axes[0].values[i / 8]));
    CHECK(p[1] == std::make_pair(std::string("batch"), axes[1].values[(i / 4) % 2]));
    CHECK(p[2] == std::make_pair(std::string("tau"), axes[2].values[i % 4]));
    distinct.insert(p);
  }
  CHECK(distinct.size() == points.size());
  // No axis: one point with no key; an axis with one value does not multiply.
  const auto none = tauplan::study::grid_points({});
  REQUIRE(none.size() == 1);
  CHECK(none[0].empty());
  CHECK(tauplan::study::grid_points({{"seed", {"1"}}, {"tau", {"1", "2"}}}).size() == 2);
}
