// child_process.hpp: runs tauplan itself in child processes, several at once, and shows
// progress; shared by `sweep` and `plan` (header-only: cli/ compiles only verb_*.cpp files).
//
// SimGrid holds one engine and one platform per process, so every simulated point runs in its
// own process: fork, then exec of /proc/self/exe with stdout and stderr redirected to files.
// Children die with their parent (PR_SET_PDEATHSIG), so an interrupted sweep leaves no orphan
// simulations; the MPI launcher's variables (OMPI_*, PMIX_*, PMI_*) are not passed on, so a
// child never mistakes itself for an MPI rank. What it leaves out: Windows and macOS (Linux
// only, as the rest of tauplan), and retries of a child that crashed.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace tauplan::study::child {

/// The running executable (/proc/self/exe resolved), so that children are this very binary.
inline std::string self_executable() {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buffer.data(), static_cast<size_t>(n));
}

struct Task {
  std::vector<std::string> args;  ///< argv[1..] (argv[0] is the executable)
  std::string out_path;           ///< stdout goes here
  std::string err_path;           ///< stderr goes here
};

/// Exit status as a shell reports it: the exit code, or 128 + the signal.
inline int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

namespace detail {

inline std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("OMPI_", 0) == 0 || entry.rfind("PMIX_", 0) == 0 || entry.rfind("PMI_", 0) == 0)
      continue;
    env.push_back(entry);
  }
  return env;
}

inline pid_t spawn(const std::string& executable, const Task& task,
                   const std::vector<std::string>& env) {
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls are made (the parent may have MPI's threads).
  std::vector<std::string> argv_strings;
  argv_strings.push_back(executable);
  argv_strings.insert(argv_strings.end(), task.args.begin(), task.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  std::vector<char*> envp;
  for (auto& e : env_strings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);  // the parent died before prctl
    const int out = open(task.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(task.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    close(out);
    close(err);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execve(executable.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace detail

/// Runs `tasks` with at most `jobs` children at once; `on_done(index, exit_status)` is called
/// in this thread as each child ends, in completion order.
inline void run_all(const std::vector<Task>& tasks, int jobs,
                    const std::function<void(size_t, int)>& on_done) {
  const std::string executable = self_executable();
  const std::vector<std::string> env = detail::child_environment();
  std::map<pid_t, size_t> running;
  size_t next = 0;
  if (jobs < 1) jobs = 1;
  while (next < tasks.size() || !running.empty()) {
    while (next < tasks.size() && static_cast<int>(running.size()) < jobs) {
      running[detail::spawn(executable, tasks[next], env)] = next;
      ++next;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const size_t index = it->second;
    running.erase(it);
    on_done(index, exit_status(status));
  }
}

/// A progress bar with the ETA on stderr: redrawn in place on a terminal, one line every few
/// seconds otherwise (logs, CI).
class Progress {
 public:
  Progress(std::string what, size_t total, size_t already_done, bool enabled)
      : what_(std::move(what)),
        total_(total),
        resumed_(already_done),
        enabled_(enabled),
        tty_(isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}

  void advance(size_t n = 1) {
    done_ += n;
    draw(false);
  }
  void finish() {
    draw(true);
    if (enabled_ && tty_) std::fputc('\n', stderr);
  }

 private:
  static std::string clock(double seconds) {
    const auto s = std::llround(seconds);
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
  }

  void draw(bool final) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    if (!final && ((tty_ && since_last < 0.1) || (!tty_ && since_last < 5.0))) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const size_t finished = resumed_ + done_;
    const size_t to_do = total_ - resumed_;
    const double fraction =
        total_ == 0 ? 1.0 : static_cast<double>(finished) / static_cast<double>(total_);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
    std::string eta = "--:--";
    if (done_ > 0 && done_ <= to_do)
      eta = clock(elapsed / static_cast<double>(done_) * static_cast<double>(to_do - done_));
    const std::string line =
        fmt::format("{} [{}] {}/{} {:3.0f}%{} elapsed {} ETA {}", what_, bar, finished, total_,
                    100 * fraction, resumed_ > 0 ? fmt::format(" ({} resumed)", resumed_) : "",
                    clock(elapsed), final ? clock(0) : eta);
    std::fprintf(stderr, tty_ ? "\r%s\x1b[K" : "%s\n", line.c_str());
    std::fflush(stderr);
  }

  std::string what_;
  size_t total_;
  size_t resumed_;
  size_t done_ = 0;
  bool enabled_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace tauplan::study::child
