// files.cpp: see files.hpp.
#include "study/common/files.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "model/base/error.hpp"

namespace tauplan::study {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

namespace {

/// A path that cannot be written: said of the flag that named it (`command line: --out: ...,
/// got PATH (why)`), or of the path itself for a key that is not a flag.
InputError unwritable(const std::string& path, const std::string& key, const std::string& expected,
                      const std::string& why) {
  if (key.rfind("--", 0) == 0)
    return InputError("command line", key, expected, path + (why.empty() ? "" : " (" + why + ")"));
  return InputError(path, key, expected, why);
}

}  // namespace

void write_text(const std::string& path, const std::string& text, const std::string& key) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw unwritable(path, key, "a writable folder", "");
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + fmt::format(".tmp{}", getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

void make_folder(const std::string& path, const std::string& key) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw unwritable(path, key, "a folder that can be created", error.message());
}

void make_folder_for(const std::string& path, const std::string& key) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) make_folder(parent.string(), key);
}

std::string command_line_input(const std::string& key, const std::string& value) {
  namespace fs = std::filesystem;
  const bool file_key = key == "workload" || key == "platform" || key == "convergence_table";
  if ((!file_key && key != "data_dir") || value.empty() || !fs::path(value).is_relative())
    return value;
  std::error_code error;
  const bool found = file_key ? fs::is_regular_file(value, error) : fs::is_directory(value, error);
  if (!found) return value;
  const fs::path absolute = fs::absolute(value, error);
  return error ? value : absolute.lexically_normal().string();
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (!trim(line).empty()) last = line;
  return last;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace tauplan::study
