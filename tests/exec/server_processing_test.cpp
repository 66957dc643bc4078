// server_processing_test.cpp: a server rank's processing record (exec/server_processing.hpp) and
// its `servers` object (exec/report.hpp's server_processing_json): totals, the median per call,
// the wall from the first arrival to the last end, the busy fraction and the cap on per-call
// entries. The MPI servers that fill it are checked by mpi_check.cpp and mpi_measure.sh.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include "exec/report.hpp"
#include "exec/server_processing.hpp"

using namespace tauplan::exec;
using ServerTimingClock = std::chrono::steady_clock;

namespace {

ServerTimingClock::time_point at(double seconds) {
  return ServerTimingClock::time_point(std::chrono::duration_cast<ServerTimingClock::duration>(
      std::chrono::duration<double>(seconds)));
}

}  // namespace

TEST_CASE("a server's processing: totals, per-call entries and the serving wall", "[exec]") {
  ServerProcessing p;
  CHECK(p.wall_s() == 0);
  p.end(at(5));  // before any arrival: no wall yet
  CHECK(p.wall_s() == 0);
  p.arrive(at(10));
  CHECK(p.add(0.25, 4, 800) == 0);
  p.end(at(11));
  p.arrive(at(12));  // only the first arrival starts the wall
  CHECK(p.add(0.5, 4, 800) == 1);
  p.end(at(13));
  CHECK(p.add(0.125, 2, 400) == 2);
  p.add_seconds(0, 0.25);  // e.g. an async reply prepared after its update
  p.end(at(12.5));         // an end before the latest does not shorten the wall
  CHECK(p.calls == 3);
  CHECK(p.messages == 10);
  CHECK(p.bytes == 2000);
  CHECK(p.processing_s == Approx(1.125));
  CHECK(p.call_processing_s == std::vector<double>{0.5, 0.5, 0.125});
  CHECK(p.call_messages == std::vector<long long>{4, 4, 2});
  CHECK(p.call_bytes == std::vector<long long>{800, 800, 400});
  CHECK(p.wall_s() == Approx(3.0));
}

TEST_CASE("a server's `servers` object: median, busy fraction, host only when known", "[exec]") {
  ServerProcessing p;
  p.server = 1;
  p.arrive(at(0));
  for (double s : {0.4, 0.1, 0.3, 0.2})
    p.add(s, 6, 3000);
  p.end(at(4));
  nlohmann::json j = server_processing_json(p);
  CHECK(j["server"] == 1);
  CHECK_FALSE(j.contains("host"));
  CHECK(j["calls"] == 4);
  CHECK(j["messages"] == 24);
  CHECK(j["bytes"] == 12000);
  CHECK(j["processing_s"].get<double>() == Approx(1.0));
  CHECK(j["processing_median_s"].get<double>() == Approx(0.25));  // even count: the mean of two
  CHECK(j["wall_s"].get<double>() == Approx(4.0));
  CHECK(j["busy_fraction"].get<double>() == Approx(0.25));
  CHECK(j["calls_recorded"] == 4);
  CHECK(j["call_processing_s"].get<std::vector<double>>() ==
        std::vector<double>{0.4, 0.1, 0.3, 0.2});
  CHECK(j["call_messages"].get<std::vector<long long>>() == std::vector<long long>(4, 6));
  CHECK(j["call_bytes"].get<std::vector<long long>>() == std::vector<long long>(4, 3000));
  p.add(0.9, 6, 3000);
  p.host = "ps0";
  j = server_processing_json(p);
  CHECK(j["host"] == "ps0");
  CHECK(j["processing_median_s"].get<double>() == Approx(0.3));  // odd count: the middle one
  // Nothing served: zeros, and no division by a zero wall.
  const nlohmann::json idle = server_processing_json(ServerProcessing{});
  CHECK(idle["calls"] == 0);
  CHECK(idle["processing_median_s"] == 0.0);
  CHECK(idle["wall_s"] == 0.0);
  CHECK(idle["busy_fraction"] == 0.0);
  CHECK(idle["call_processing_s"].empty());
}

TEST_CASE("a server's `servers` object keeps the first calls, its totals count all", "[exec]") {
  ServerProcessing p;
  p.arrive(at(0));
  const std::size_t calls = kServerCallsRecorded + 5;
  for (std::size_t i = 0; i < calls; ++i)
    p.add(i < kServerCallsRecorded ? 1e-6 : 1.0, 2, 40);
  p.end(at(10));
  const nlohmann::json j = server_processing_json(p);
  CHECK(j["calls"] == calls);
  CHECK(j["calls_recorded"] == kServerCallsRecorded);
  CHECK(j["call_processing_s"].size() == kServerCallsRecorded);
  CHECK(j["call_messages"].size() == kServerCallsRecorded);
  CHECK(j["call_bytes"].size() == kServerCallsRecorded);
  CHECK(j["call_processing_s"].back().get<double>() == 1e-6);  // the first calls, in order
  CHECK(j["processing_s"].get<double>() == Approx(5 + 1e-6 * kServerCallsRecorded));
  CHECK(j["processing_median_s"].get<double>() == 1e-6);  // over every call
  CHECK(j["bytes"] == 40 * static_cast<long long>(calls));
}
