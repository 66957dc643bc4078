// study_test_support.hpp: what the study/ unit tests share: paths in the source tree, a scratch
// folder under the temporary folder (removed when the test ends), an environment variable set
// for one test, and the message of the InputError an action throws.
// SimGrid holds one platform per process and ctest runs each test case in a process of its own:
// a test case of study_tests loads at most one platform file (by its canonical path).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "model/base/error.hpp"

#ifndef TAUPLAN_SOURCE_DIR  // tests/CMakeLists.txt defines it for study_tests
#define TAUPLAN_SOURCE_DIR "."
#endif

namespace tauplan::test {

/// `relative` (e.g. "platforms/test-crossbar-4.xml") in the source tree.
inline std::string source_path(const std::string& relative) {
  return (std::filesystem::path(TAUPLAN_SOURCE_DIR) / relative).lexically_normal().string();
}

/// A fresh folder $TMPDIR/tauplan-study-NAME-PID, removed with everything in it at the end.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : root_(std::filesystem::temp_directory_path() /
              ("tauplan-study-" + name + "-" + std::to_string(::getpid()))) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    std::filesystem::create_directories(root_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  /// The path of `name` in the folder (nothing is created).
  std::string path(const std::string& name) const { return (root_ / name).string(); }
  /// Writes `text` to `name` (creating its folders) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = root_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }

 private:
  std::filesystem::path root_;
};

/// Sets (or with nullopt unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// The message of the InputError `action` throws; empty when it throws none.
inline std::string input_error(const std::function<void()>& action) {
  std::string message;
  try {
    action();
  } catch (const InputError& e) {
    message = e.what();
  }
  return message;
}

/// Whether `message` is one line that starts "FILE: KEY: expected".
inline bool names_file_and_key(const std::string& message, const std::string& file,
                               const std::string& key) {
  return message.find('\n') == std::string::npos &&
         message.rfind(file + ": " + key + ": expected", 0) == 0;
}

}  // namespace tauplan::test
