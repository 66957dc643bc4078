// error.cpp: formatting of InputError messages (one line, no trailing period, long parts cut).
#include "model/base/error.hpp"

#include <algorithm>

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

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  // At most 3 edits away, 2 for a word of 4 letters or fewer (`help` is not `sweep`).
  size_t best_distance = word.size() <= 4 ? 3 : 4;
  for (const std::string& name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  return best;
}

InputError::InputError(const std::string& file, const std::string& key, const std::string& expected,
                       const std::string& got)
    : std::runtime_error(format_input_error(file, key, expected, got)),
      file_(file),
      key_(key),
      expected_(expected),
      got_(got) {}

InputError InputError::given_as(const std::string& file, const std::string& key) const {
  return InputError(file, key, expected_, got_);
}

}  // namespace tauplan
