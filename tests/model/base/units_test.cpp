// units_test.cpp: the one unit parser: SimGrid's units and meanings, the Tauplan aliases, and
// what each spelling refuses.
#include <catch2/catch.hpp>

#include "model/base/error.hpp"
#include "model/base/units.hpp"

using namespace tauplan;
using model::Quantity;
using model::Spelling;

namespace {
double parse(Quantity q, const std::string& text, Spelling spelling = Spelling::Tauplan) {
  double value = -1;
  REQUIRE(model::try_parse_quantity(q, text, spelling, value));
  return value;
}
bool refused(Quantity q, const std::string& text, Spelling spelling = Spelling::Tauplan) {
  double value = -1;
  return !model::try_parse_quantity(q, text, spelling, value) && value == -1;
}
}  // namespace

TEST_CASE("units: SimGrid's spellings, decimal and binary prefixes, bits and bytes") {
  CHECK(parse(Quantity::Speed, "100Tf", Spelling::SimGrid) == 100e12);
  CHECK(parse(Quantity::Speed, "2184Gf", Spelling::SimGrid) == 2184e9);
  CHECK(parse(Quantity::Speed, "3 teraflops", Spelling::SimGrid) == 3e12);
  CHECK(parse(Quantity::Bandwidth, "25GBps", Spelling::SimGrid) == 25e9);
  CHECK(parse(Quantity::Bandwidth, "10Gbps", Spelling::SimGrid) == 1.25e9);
  CHECK(parse(Quantity::Bandwidth, "1KiBps", Spelling::SimGrid) == 1024);
  CHECK(parse(Quantity::Bandwidth, "1kBps", Spelling::SimGrid) == 1000);
  CHECK(parse(Quantity::Bytes, "4 KiB") == 4096);
  CHECK(parse(Quantity::Bytes, "1GB") == 1e9);
  CHECK(parse(Quantity::Bytes, "1GiB") == 1073741824.0);
  CHECK(parse(Quantity::Bytes, "8Mb", Spelling::SimGrid) == 1e6);  // bits, SimGrid only
  CHECK(parse(Quantity::Seconds, "250us") == Approx(250e-6));
  CHECK(parse(Quantity::Seconds, "2m", Spelling::SimGrid) == 120);  // SimGrid: m is a minute
  CHECK(parse(Quantity::Seconds, "1.5h") == 5400);
  CHECK(parse(Quantity::Seconds, "1d", Spelling::SimGrid) == 86400);
  CHECK(parse(Quantity::Seconds, "+5ms", Spelling::SimGrid) == Approx(5e-3));
}

TEST_CASE("units: Tauplan aliases and bare numbers") {
  CHECK(parse(Quantity::Bytes, "3KB") == 3000);
  CHECK(parse(Quantity::Bandwidth, "2KBps") == 2000);
  CHECK(parse(Quantity::Bandwidth, "8Kbps") == 1000);
  CHECK(parse(Quantity::Seconds, "2min") == 120);
  CHECK(parse(Quantity::Seconds, "0.25") == 0.25);
  CHECK(parse(Quantity::Bandwidth, "1.25e9") == 1.25e9);
  // SimGrid refuses the aliases, and bare numbers other than 0.
  CHECK(refused(Quantity::Bytes, "3KB", Spelling::SimGrid));
  CHECK(refused(Quantity::Seconds, "2min", Spelling::SimGrid));
  CHECK(refused(Quantity::Bandwidth, "1000", Spelling::SimGrid));
  CHECK(parse(Quantity::Seconds, "0", Spelling::SimGrid) == 0);
}

TEST_CASE("units: what is refused") {
  CHECK(refused(Quantity::Bytes, "25Mb"));   // a bit size is never read as a byte size in YAML
  CHECK(refused(Quantity::Bytes, "25mib"));  // case matters
  CHECK(refused(Quantity::Bytes, "3s"));
  CHECK(refused(Quantity::Seconds, "3GB"));
  CHECK(refused(Quantity::Speed, "1TB", Spelling::SimGrid));
  CHECK(refused(Quantity::Seconds, ""));
  CHECK(refused(Quantity::Seconds, "   "));
  CHECK(refused(Quantity::Seconds, "inf"));
  CHECK(refused(Quantity::Seconds, "nan"));
  CHECK(refused(Quantity::Seconds, "0x10"));
  CHECK(refused(Quantity::Seconds, "1e400"));
  CHECK(refused(Quantity::Bandwidth, "1e300Ebps"));  // finite number, infinite product
  CHECK(refused(Quantity::Seconds, "+-1"));
  CHECK(refused(Quantity::Seconds, "1 2"));
  CHECK(refused(Quantity::Seconds, std::string(100000, '9')));
  std::string why;
  double value = 0;
  CHECK_FALSE(
      model::try_parse_quantity(Quantity::Speed, "5 furlongs", Spelling::SimGrid, value, &why));
  CHECK(why == "an unknown unit ('furlongs')");
}

TEST_CASE("units: errors name the file and the key, parse_bandwidth refuses 0") {
  CHECK_THROWS_WITH(model::parse_bytes("3s", "job.yaml", "bucket_bytes"),
                    Catch::StartsWith("job.yaml: bucket_bytes: expected bytes"));
  CHECK_THROWS_WITH(model::parse_bandwidth("0Gbps", "inv.yaml", "bandwidth"),
                    "inv.yaml: bandwidth: expected a bandwidth > 0, got '0Gbps'");
  double value = -1;
  CHECK(model::parse_number(" 12.5 ", value));
  CHECK(value == 12.5);
  CHECK_FALSE(model::parse_number("12.5s", value));
  CHECK_FALSE(model::parse_number("", value));
}
