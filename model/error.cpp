// error.cpp: formatting of InputError messages (one line, no trailing period).
#include "model/error.hpp"

namespace tauplan {
namespace {

std::string format_input_error(const std::string& file, const std::string& key,
                               const std::string& expected, const std::string& got) {
  std::string message = file.empty() ? std::string("<input>") : file;
  if (!key.empty()) message += ": " + key;
  if (!expected.empty()) message += ": expected " + expected;
  if (!got.empty()) message += ", got " + got;
  // Keep the message on one line whatever the inputs hold.
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  return message;
}

}  // namespace

InputError::InputError(const std::string& file, const std::string& key, const std::string& expected,
                       const std::string& got)
    : std::runtime_error(format_input_error(file, key, expected, got)), file_(file), key_(key) {}

}  // namespace tauplan
