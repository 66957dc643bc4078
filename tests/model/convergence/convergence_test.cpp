// convergence_test.cpp: Na and Ma models, the identity Ma(b,K,1) = Na(K b), measured tables.
#include <catch2/catch.hpp>

#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"

using namespace tauplan;

TEST_CASE("critical-batch model: Na(b) = Smin (1 + Bcrit / b)") {
  const model::CriticalBatch m(2000, 512, 0.2);
  CHECK(m.serial_steps(512) == Approx(4000));
  CHECK(m.serial_steps(128) == Approx(2000 * 5));
  CHECK(m.serial_steps(1e9) == Approx(2000).epsilon(1e-5));
}

TEST_CASE("Ma(b,K,1) = Na(K b) for the critical-batch model, whatever the drift") {
  for (double drift : {0.0, 0.3, 1.0})
    for (double b : {16.0, 64.0, 1000.0})
      for (int k : {1, 2, 5, 8}) {
        const model::CriticalBatch m(1234, 777, drift);
        CHECK(m.local_sgd_rounds(b, k, 1) == Approx(m.serial_steps(k * b)).epsilon(1e-14));
      }
}

TEST_CASE("local steps: drift 0 makes a round worth tau steps, drift 1 worth one") {
  const model::CriticalBatch none(1000, 100, 0.0), full(1000, 100, 1.0);
  CHECK(none.local_sgd_rounds(10, 4, 8) == Approx(none.serial_steps(40) / 8));
  CHECK(full.local_sgd_rounds(10, 4, 8) == Approx(full.serial_steps(40)));
}

TEST_CASE("fixed counts") {
  const model::FixedCounts given(1000, 70), derived(1000);
  CHECK(given.serial_steps(3) == 1000);
  CHECK(given.local_sgd_rounds(3, 4, 10) == 70);
  CHECK(derived.local_sgd_rounds(3, 4, 7) == 143);  // ceil(1000 / 7)
}

TEST_CASE("measured table interpolates log-log and refuses to extrapolate") {
  const std::string csv =
      "batch,workers,tau,steps\n"
      "16,1,1,8000\n"
      "64,1,1,2000\n"
      "16,4,8,300\n"
      "64,4,8,120\n";
  const model::MeasuredTable t(csv, "runs.csv");
  CHECK(t.serial_steps(16) == Approx(8000));
  CHECK(t.serial_steps(32) == Approx(4000));  // geometric midpoint on a power law
  CHECK(t.local_sgd_rounds(32, 4, 8) == Approx(std::sqrt(300.0 * 120.0)));
  // tau = 1 with no rows of its own falls back on the identity Ma(b,K,1) = Na(K b)
  CHECK(t.local_sgd_rounds(8, 4, 1) == Approx(t.serial_steps(32)));
  CHECK_THROWS_WITH(t.serial_steps(8), Catch::Contains("runs.csv: Na(b)"));
  CHECK_THROWS_AS(t.local_sgd_rounds(16, 2, 8), InputError);
}

TEST_CASE("measured table rejects malformed CSV with the file and line") {
  CHECK_THROWS_WITH(model::MeasuredTable("b,k\n1,2\n", "x.csv"), Catch::Contains("x.csv: header"));
  CHECK_THROWS_WITH(model::MeasuredTable("batch,workers,tau,steps\n16,1,1,abc\n", "x.csv"),
                    Catch::Contains("x.csv: line 2 column steps"));
  CHECK_THROWS_WITH(model::MeasuredTable("batch,workers,tau,steps\n-16,1,1,5\n", "x.csv"),
                    Catch::Contains("x.csv: line 2"));
  CHECK_THROWS_AS(model::MeasuredTable("batch,workers,tau,steps\n", "x.csv"), InputError);
}
