// system.cpp: fork/exec with a time limit, capabilities from /proc, setns, pids; see system.hpp.
#include "exec/testbed/system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tauplan::testbed {

namespace {

std::string join(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& a : argv)
    text += (text.empty() ? "" : " ") + a;
  return text;
}

std::string netns_path(const std::string& name) {
  return "/run/netns/" + name;
}

}  // namespace

CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) throw std::runtime_error("run_command: empty command");
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      close(fd);
    throw std::runtime_error("fork failed for " + join(argv));
  }
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    std::vector<char*> args;
    std::vector<std::string> copies = argv;
    for (std::string& a : copies)
      args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandOutput result;
  const double deadline = monotonic_s() + timeout_s;
  bool out_open = true;
  bool err_open = true;
  bool killed = false;
  char buffer[4096];
  while (out_open || err_open) {
    const double left = deadline - monotonic_s();
    if (left <= 0 && !killed) {
      kill(pid, SIGKILL);
      killed = true;
    }
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    const int wait_ms = killed ? 1000 : static_cast<int>(std::min(left, 1.0) * 1000) + 1;
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (killed) break;  // a grandchild holds the pipe open: stop reading
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(n));
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed)
    result.exit_code = 124;
  else if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

std::string run_checked(const std::vector<std::string>& argv, double timeout_s) {
  CommandOutput result = run_command(argv, timeout_s);
  if (result.exit_code != 0) {
    std::string err = result.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' '))
      err.pop_back();
    std::replace(err.begin(), err.end(), '\n', ' ');
    throw std::runtime_error("`" + join(argv) + "` failed (exit " +
                             std::to_string(result.exit_code) + "): " + err);
  }
  return result.out;
}

namespace {

/// The effective capabilities this process lacks of CAP_NET_ADMIN and CAP_SYS_ADMIN, as
/// "uid U without ..."; empty when it has both.
std::string missing_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  unsigned long long effective = 0;
  while (std::getline(status, line))
    if (line.compare(0, 7, "CapEff:") == 0) effective = std::stoull(line.substr(7), nullptr, 16);
  constexpr int kCapNetAdmin = 12;
  constexpr int kCapSysAdmin = 21;
  std::string missing;
  if (!(effective & (1ULL << kCapNetAdmin))) missing += "CAP_NET_ADMIN";
  if (!(effective & (1ULL << kCapSysAdmin)))
    missing += missing.empty() ? "CAP_SYS_ADMIN" : " and CAP_SYS_ADMIN";
  return missing.empty() ? "" : "uid " + std::to_string(geteuid()) + " without " + missing;
}

/// Why `ip -V` does not run; empty when it does.
std::string ip_problem() {
  CommandOutput ip;
  try {
    ip = run_command({"ip", "-V"}, 5);
  } catch (const std::exception& e) {
    return std::string("cannot run `ip`: ") + e.what();
  }
  return ip.exit_code != 0 ? "`ip -V` failed (install iproute2)" : "";
}

}  // namespace

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool can_manage_namespaces(std::string& why) {
  why = missing_capabilities();
  if (why.empty()) why = ip_problem();
  return why.empty();
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

TestbedBlocker testbed_blocker() {
  if (const std::string why = missing_capabilities(); !why.empty())
    return {"privileges",
            "the rights to create network namespaces (root: CAP_NET_ADMIN and CAP_SYS_ADMIN)", why};
  if (const std::string why = ip_problem(); !why.empty())
    return {"ip", "iproute2's `ip` on the PATH (Debian: apt install iproute2)", why};
  if (!on_path("mpirun"))
    return {"mpirun", "OpenMPI's `mpirun` on the PATH (Debian: apt install openmpi-bin)",
            "no mpirun in PATH"};
  return {};
}

std::vector<std::string> list_namespaces() {
  std::vector<std::string> names;
  DIR* dir = opendir("/run/netns");
  if (!dir) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<int> namespace_pids(const std::string& name) {
  std::vector<int> pids;
  CommandOutput result = run_command({"ip", "netns", "pids", name}, 10);
  if (result.exit_code != 0) return pids;
  std::istringstream in(result.out);
  int pid = 0;
  while (in >> pid)
    if (pid > 1 && pid != getpid()) pids.push_back(pid);
  return pids;
}

bool in_namespace(const std::string& name) {
  struct stat self_ns {};
  struct stat named {};
  if (stat("/proc/thread-self/ns/net", &self_ns) != 0) return false;
  if (stat(netns_path(name).c_str(), &named) != 0) return false;
  return self_ns.st_ino == named.st_ino && self_ns.st_dev == named.st_dev;
}

NamespaceGuard::NamespaceGuard(const std::string& name) {
  home_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home_fd_ < 0) throw std::runtime_error("cannot open this thread's network namespace");
  try {
    enter_namespace(name);
  } catch (...) {
    close(home_fd_);
    home_fd_ = -1;
    throw;
  }
}

NamespaceGuard::~NamespaceGuard() {
  if (home_fd_ >= 0) {
    setns(home_fd_, CLONE_NEWNET);
    close(home_fd_);
  }
}

void enter_namespace(const std::string& name) {
  const int fd = open(netns_path(name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open network namespace " + name + ": " + std::strerror(errno));
  const int rc = setns(fd, CLONE_NEWNET);
  const int saved = errno;
  close(fd);
  if (rc != 0)
    throw std::runtime_error("cannot enter network namespace " + name + ": " +
                             std::strerror(saved));
}

std::string process_command_line(int pid) {
  if (pid <= 0) return "";
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string text = bytes.str();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

bool process_matches(int pid, const std::string& marker) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat_text;
  std::getline(stat_file, stat_text);
  const std::size_t close_paren = stat_text.rfind(')');
  if (close_paren != std::string::npos && close_paren + 2 < stat_text.size() &&
      stat_text[close_paren + 2] == 'Z')
    return false;  // a zombie is gone for our purposes
  return process_command_line(pid).find(marker) != std::string::npos;
}

double process_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return -1;
  const std::size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  // Fields after the command: state(3) ... utime is field 14, stime 15 (1-based, man 5 proc).
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) utime = std::stoull(field);
    if (index == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void stop_process(int pid, double grace_s) {
  if (pid <= 1 || pid == getpid()) return;
  if (kill(pid, SIGTERM) != 0) return;
  const double deadline = monotonic_s() + grace_s;
  while (monotonic_s() < deadline) {
    // Reap it if it is our child; otherwise poll for it to vanish.
    waitpid(pid, nullptr, WNOHANG);
    if (kill(pid, 0) != 0) return;
    std::string state = process_command_line(pid);
    if (state.empty()) return;  // a zombie of another parent: its memory is gone
    timespec pause{0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, WNOHANG);
}

std::string self_executable() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw std::runtime_error("cannot resolve /proc/self/exe");
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace tauplan::testbed
