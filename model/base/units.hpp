// units.hpp: the one parser of quantities with units (seconds, bytes, bandwidth, speed).
//
// Every reader uses it: job keys (`comm_s: 2ms`, `bucket_bytes: 25MiB`), inventories
// (`bandwidth: 25Gbps`), platform props (`gpu_memory_bytes`), the simulator's failure times,
// and the platform checker that reads SimGrid XML attributes before SimGrid does
// (`speed="100Tf"`, `bandwidth="25GBps"`, `latency="1us"`). One table of units serves them all,
// with SimGrid's spellings and meanings (case matters: B is a byte, b a bit; k is 1e3, Ki 1024;
// m alone is a minute). Two spellings:
//   - Spelling::SimGrid: exactly the units SimGrid 3.32 accepts in platform XML; a number
//     without a unit is refused unless it is 0 (SimGrid warns and guesses on those).
//   - Spelling::Tauplan: the same units, plus a few unambiguous aliases (KB, KBps, Kbps, min),
//     and a bare number in the base unit (s, B, B/s, flop/s). Sizes in bits (Mb) are refused
//     there: in YAML keys "Mb" has meant a megabyte before, so it is never read as a bit.
// Numbers are read with std::from_chars (no locale, no hex, no inf or nan). What it leaves out:
// ranges (each caller checks its own: a bandwidth > 0, a latency >= 0) and composite units.
#pragma once

#include <string>

namespace tauplan::model {

enum class Quantity {
  Seconds,    ///< base unit s
  Bytes,      ///< base unit B
  Bandwidth,  ///< base unit B/s
  Speed,      ///< base unit flop/s
};

enum class Spelling { Tauplan, SimGrid };

/// Parses `text` as a quantity; returns false (value untouched, `why` says what is wrong) when
/// it is not a finite number with a unit of that quantity.
bool try_parse_quantity(Quantity quantity, const std::string& text, Spelling spelling,
                        double& value, std::string* why = nullptr);

/// Same, throwing InputError(file, key, "<quantity> (a number with unit ...)", 'text').
double parse_quantity(Quantity quantity, const std::string& text, const std::string& file,
                      const std::string& key, Spelling spelling = Spelling::Tauplan);

/// What `parse_quantity` expects, for error messages: "seconds (a number, or with unit s, ms,
/// us, ...)".
std::string expected_quantity(Quantity quantity, Spelling spelling = Spelling::Tauplan);

/// A finite number without unit filling the whole text (blanks around it allowed), read as the
/// quantity parser reads numbers; false (value untouched) otherwise.
bool parse_number(const std::string& text, double& value);

/// Parses "5ms", "2us", "1.5s", "0.25" (Tauplan spelling) as seconds.
double parse_seconds(const std::string& text, const std::string& file, const std::string& key);
/// Parses "25MiB", "1.5GB", "4096" (Tauplan spelling) as bytes.
double parse_bytes(const std::string& text, const std::string& file, const std::string& key);
/// Parses "25Gbps", "10GBps", "800Mbps", "1.25e9" (Tauplan spelling) as bytes per second;
/// refuses a bandwidth <= 0.
double parse_bandwidth(const std::string& text, const std::string& file, const std::string& key);

}  // namespace tauplan::model
