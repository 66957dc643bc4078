// error.cpp: formatting of InputError messages (one line, no trailing period, long parts cut).
#include "model/base/error.hpp"

namespace tauplan {
namespace {

// A part longer than this is cut, so that a 100,000-character name gives a readable line.
constexpr std::size_t kMaxPartLength = 512;

std::string cut(const std::string& part) {
  if (part.size() <= kMaxPartLength) return part;
  return part.substr(0, kMaxPartLength - 64) + "... (" + std::to_string(part.size()) +
         " characters)";
}

std::string format_input_error(const std::string& file, const std::string& key,
                               const std::string& expected, const std::string& got) {
  std::string message = file.empty() ? std::string("<input>") : cut(file);
  if (!key.empty()) message += ": " + cut(key);
  if (!expected.empty()) message += ": expected " + expected;
  if (!got.empty()) message += ", got " + cut(got);
  // Keep the message on one line whatever the inputs hold.
  // Keep control characters (a NUL or an escape in a file name) out of the terminal too.
  for (char& c : message)
    if (c == '\n' || c == '\r')
      c = ' ';
    else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
      c = '?';
  return message;
}

}  // namespace

InputError::InputError(const std::string& file, const std::string& key, const std::string& expected,
                       const std::string& got)
    : std::runtime_error(format_input_error(file, key, expected, got)), file_(file), key_(key) {}

}  // namespace tauplan
