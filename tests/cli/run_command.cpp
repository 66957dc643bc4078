// run_command.cpp: fork/exec of the tauplan binary with stdout and stderr captured to files.
#include "tests/cli/run_command.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tauplan::test {
namespace {

std::string temp_folder() {
  static const std::string folder = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tauplan-cli-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    return pattern;
  }();
  return folder;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::string write_temp_file(const std::string& name, const std::string& text) {
  const std::string path = temp_folder() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

namespace {

// In the child: redirect stdout and stderr, then replace the process by tauplan with `args`.
[[noreturn]] void exec_tauplan(const std::vector<std::string>& args, const std::string& out_path,
                               const std::string& err_path) {
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0) _exit(126);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  std::vector<char*> argv;
  std::string binary = TAUPLAN_BINARY;
  argv.push_back(binary.data());
  std::vector<std::string> copies = args;
  for (auto& a : copies)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(binary.c_str(), argv.data());
  _exit(127);
}

}  // namespace

int start_tauplan(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) exec_tauplan(args, "/dev/null", "/dev/null");
  return pid;
}

CommandResult run_tauplan(const std::vector<std::string>& args, const std::string& folder,
                          int timeout_s) {
  const std::string out_path = temp_folder() + "/stdout.txt";
  const std::string err_path = temp_folder() + "/stderr.txt";
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!folder.empty() && chdir(folder.c_str()) != 0) _exit(126);
    alarm(static_cast<unsigned>(timeout_s));  // a hang is a failure, never a stuck test
    exec_tauplan(args, out_path, err_path);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tauplan::test
