// units.cpp: the unit table and the one quantity parser (see units.hpp).
#include "model/base/units.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <vector>

#include "model/base/error.hpp"

namespace tauplan::model {
namespace {

struct Unit {
  std::string name;
  double factor;  ///< to the base unit
  bool simgrid;   ///< SimGrid 3.32 accepts this spelling in platform XML
  bool tauplan;   ///< accepted in YAML keys (sizes in bits are not: see units.hpp)
};

// `base` with the decimal prefixes k M G T P E Z Y (SimGrid writes k lowercase) and the binary
// prefixes Ki Mi Gi Ti Pi Ei Zi Yi, each `scale` x its power (SimGrid's set for sizes and
// bandwidths).
void add_prefixed(std::vector<Unit>& units, const std::string& base, double scale, bool tauplan) {
  static const char* decimal[] = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
  static const char* binary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
  double d = scale;
  double b = scale;
  units.push_back({base, scale, true, tauplan});
  for (int i = 0; i < 8; ++i) {
    d *= 1e3;
    b *= 1024;
    units.push_back({decimal[i] + base, d, true, tauplan});
    units.push_back({binary[i] + base, b, true, tauplan});
  }
}

const std::vector<Unit>& units_of(Quantity quantity) {
  static const std::vector<Unit> seconds = {
      {"s", 1, true, true},      {"ms", 1e-3, true, true},  {"us", 1e-6, true, true},
      {"ns", 1e-9, true, true},  {"ps", 1e-12, true, true}, {"m", 60, true, true},
      {"min", 60, false, true},  {"h", 3600, true, true},   {"d", 86400, true, true},
      {"w", 604800, true, true},
  };
  static const std::vector<Unit> bytes = [] {
    std::vector<Unit> u;
    add_prefixed(u, "B", 1, true);
    add_prefixed(u, "b", 0.125, false);  // bits: SimGrid only
    u.push_back({"KB", 1e3, false, true});
    return u;
  }();
  static const std::vector<Unit> bandwidth = [] {
    std::vector<Unit> u;
    add_prefixed(u, "Bps", 1, true);
    add_prefixed(u, "bps", 0.125, true);
    u.push_back({"KBps", 1e3, false, true});
    u.push_back({"Kbps", 125, false, true});
    return u;
  }();
  static const std::vector<Unit> speed = {
      {"f", 1, true, true},
      {"kf", 1e3, true, true},
      {"Mf", 1e6, true, true},
      {"Gf", 1e9, true, true},
      {"Tf", 1e12, true, true},
      {"Pf", 1e15, true, true},
      {"Ef", 1e18, true, true},
      {"Zf", 1e21, true, true},
      {"Yf", 1e24, true, true},
      {"flops", 1, true, true},
      {"kiloflops", 1e3, true, true},
      {"megaflops", 1e6, true, true},
      {"gigaflops", 1e9, true, true},
      {"teraflops", 1e12, true, true},
      {"petaflops", 1e15, true, true},
      {"exaflops", 1e18, true, true},
      {"zettaflops", 1e21, true, true},
      {"yottaflops", 1e24, true, true},
  };
  switch (quantity) {
    case Quantity::Seconds:
      return seconds;
    case Quantity::Bytes:
      return bytes;
    case Quantity::Bandwidth:
      return bandwidth;
    case Quantity::Speed:
      return speed;
  }
  return seconds;
}

const char* quantity_name(Quantity quantity) {
  switch (quantity) {
    case Quantity::Seconds:
      return "seconds";
    case Quantity::Bytes:
      return "bytes";
    case Quantity::Bandwidth:
      return "a bandwidth";
    case Quantity::Speed:
      return "a speed";
  }
  return "a quantity";
}

// A few units to show in messages (the table is longer).
const char* example_units(Quantity quantity, Spelling spelling) {
  switch (quantity) {
    case Quantity::Seconds:
      return "s, ms, us, ns, min, h";
    case Quantity::Bytes:
      return "B, kB, MB, GB, KiB, MiB, GiB";
    case Quantity::Bandwidth:
      return spelling == Spelling::SimGrid ? "Bps, kBps, MBps, GBps, Mbps, Gbps"
                                           : "Bps, MBps, GBps, Mbps, Gbps";
    case Quantity::Speed:
      return "f, kf, Mf, Gf, Tf, Pf";
  }
  return "";
}

bool blank(char c) {
  return c == ' ' || c == '\t';
}

}  // namespace

std::string expected_quantity(Quantity quantity, Spelling spelling) {
  if (spelling == Spelling::SimGrid)
    return std::string(quantity_name(quantity)) +
           " (a number with a unit: " + example_units(quantity, spelling) + ")";
  return std::string(quantity_name(quantity)) +
         " (a number, or with a unit: " + example_units(quantity, spelling) + ")";
}

namespace {

// Reads the number at the start of `text` (blanks around it allowed) into `number` and what
// follows it, trimmed, into `unit`. False when there is no finite number.
bool read_number(const std::string& text, double& number, std::string& unit, std::string* why) {
  auto fail = [why](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && blank(text[begin]))
    ++begin;
  while (end > begin && blank(text[end - 1]))
    --end;
  if (begin == end) return fail("nothing");
  // from_chars takes no leading '+'; allow one (SimGrid's strtod does).
  const bool plus = text[begin] == '+';
  const char* first = text.data() + begin + (plus ? 1 : 0);
  const char* last = text.data() + end;
  if (plus && first < last && *first == '-') return fail("not a number");
  const auto [stop, error] = std::from_chars(first, last, number, std::chars_format::general);
  if (error == std::errc::result_out_of_range) return fail("a number out of range");
  if (error != std::errc() || stop == first) return fail("not a number");
  if (!std::isfinite(number)) return fail("not a finite number");
  const char* unit_begin = stop;
  while (unit_begin < last && blank(*unit_begin))
    ++unit_begin;
  unit.assign(unit_begin, last);
  return true;
}

}  // namespace

bool try_parse_quantity(Quantity quantity, const std::string& text, Spelling spelling,
                        double& value, std::string* why) {
  double number = 0;
  std::string unit;
  if (!read_number(text, number, unit, why)) return false;
  auto fail = [why](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (unit.empty()) {
    if (spelling == Spelling::SimGrid && number != 0) return fail("a number without a unit");
    value = number;
    return true;
  }
  for (const Unit& u : units_of(quantity)) {
    if (unit != u.name) continue;
    if (spelling == Spelling::SimGrid ? !u.simgrid : !u.tauplan)
      return fail("a unit not accepted here ('" + unit + "')");
    const double scaled = number * u.factor;
    if (!std::isfinite(scaled)) return fail("a number out of range");
    value = scaled;
    return true;
  }
  return fail("an unknown unit ('" + unit + "')");
}

bool parse_number(const std::string& text, double& value) {
  double number = 0;
  std::string unit;
  if (!read_number(text, number, unit, nullptr) || !unit.empty()) return false;
  value = number;
  return true;
}

double parse_quantity(Quantity quantity, const std::string& text, const std::string& file,
                      const std::string& key, Spelling spelling) {
  double value = 0;
  if (try_parse_quantity(quantity, text, spelling, value)) return value;
  throw InputError(file, key, expected_quantity(quantity, spelling), "'" + text + "'");
}

double parse_seconds(const std::string& text, const std::string& file, const std::string& key) {
  return parse_quantity(Quantity::Seconds, text, file, key);
}

double parse_bytes(const std::string& text, const std::string& file, const std::string& key) {
  return parse_quantity(Quantity::Bytes, text, file, key);
}

double parse_bandwidth(const std::string& text, const std::string& file, const std::string& key) {
  const double value = parse_quantity(Quantity::Bandwidth, text, file, key);
  if (!(value > 0)) throw InputError(file, key, "a bandwidth > 0", "'" + text + "'");
  return value;
}

}  // namespace tauplan::model
