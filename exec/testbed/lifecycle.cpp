// lifecycle.cpp: up, down, status and leftovers of a testbed; see lifecycle.hpp.
#include "exec/testbed/lifecycle.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "exec/testbed/system.hpp"
#include "model/base/error.hpp"
#include "model/ir/result.hpp"

namespace tauplan::testbed {

namespace {

std::atomic<int> g_interrupt_signal{0};

extern "C" void note_interrupt(int signal_number) {
  g_interrupt_signal.store(signal_number);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP for the life of the object.
class InterruptWatch {
 public:
  InterruptWatch() {
    g_interrupt_signal.store(0);
    struct sigaction action {};
    action.sa_handler = note_interrupt;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; ++i)
      sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~InterruptWatch() {
    for (int i = 0; i < 3; ++i)
      sigaction(kSignals[i], &previous_[i], nullptr);
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
  void check() const {
    const int signal_number = g_interrupt_signal.load();
    if (signal_number != 0) throw Interrupted(signal_number);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[3]{};
};

std::string fabric_marker(const std::string& prefix) {
  return "testbed fabric --prefix " + prefix + " ";
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::vector<int> fabric_processes(const std::string& prefix) {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (!proc) return pids;
  const std::string marker = fabric_marker(prefix);
  while (const dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (*name < '1' || *name > '9') continue;
    const int pid = std::atoi(name);
    if (pid == getpid()) continue;
    if (process_matches(pid, marker)) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

std::vector<std::string> root_interfaces(const std::string& prefix) {
  std::vector<std::string> names;
  DIR* dir = opendir("/sys/class/net");
  if (!dir) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (starts_with(name, prefix)) names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

/// Writes `value` into /proc/sys/`key` as seen from namespace `netns`.
void write_sysctl(const std::string& netns, const std::string& key, const std::string& value) {
  NamespaceGuard in(netns);
  std::ofstream out("/proc/sys/" + key);
  out << value << "\n";
  out.flush();
  if (!out) throw std::runtime_error("cannot set " + key + " = " + value + " in " + netns);
}

std::string read_sysctl(const std::string& netns, const std::string& key) {
  NamespaceGuard in(netns);
  std::ifstream in_file("/proc/sys/" + key);
  std::string value;
  std::getline(in_file, value);
  return value;
}

void write_state(const State& state) {
  const std::string path = state_path(state.spec.prefix);
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp);
    out << to_json(state).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path);
}

void make_state_dir() {
  const std::string dir = state_dir();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
}

/// Starts `executable testbed fabric --prefix P --ready-fd N` detached (own session, output to
/// the fabric log) and returns its pid; `ready_read` gets the read end of its ready pipe.
int spawn_fabric(const Spec& spec, const UpOptions& options, int& ready_read) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const std::string log = fabric_log_path(spec.prefix);
  std::vector<std::string> args = {"tauplan",
                                   "testbed",
                                   "fabric",
                                   "--prefix",
                                   spec.prefix,
                                   "--ready-fd",
                                   "3",
                                   "--ttl",
                                   std::to_string(options.fabric.ttl_s),
                                   "--realtime-priority",
                                   std::to_string(options.fabric.realtime_priority),
                                   "--early",
                                   std::to_string(options.fabric.early_s)};
  const pid_t pid = fork();
  if (pid < 0) {
    close(ready[0]);
    close(ready[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    setsid();
    const int null_fd = open("/dev/null", O_RDONLY);
    const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null_fd < 0 || log_fd < 0) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    dup2(ready[1], 3);  // dup2 clears close-on-exec on the copy
    const long max_fd = std::min(sysconf(_SC_OPEN_MAX), 65536L);
    for (long fd = 4; fd < max_fd; ++fd)
      close(static_cast<int>(fd));
    // The fabric is not the test's or the shell's: back to default signal dispositions.
    for (int s : {SIGINT, SIGTERM, SIGHUP})
      signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(options.executable.c_str(), argv.data());
    _exit(127);
  }
  close(ready[1]);
  ready_read = ready[0];
  return pid;
}

/// Waits for the fabric's ready line (at most `timeout_s`); throws with what it said otherwise.
void await_fabric(int ready_read, int pid, const std::string& prefix, double timeout_s,
                  const InterruptWatch& watch) {
  std::string said;
  const double deadline = monotonic_s() + timeout_s;
  char buffer[512];
  for (;;) {
    watch.check();
    const double left = deadline - monotonic_s();
    if (left <= 0) break;
    pollfd fd{ready_read, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::min(left, 0.2) * 1000) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(ready_read, buffer, sizeof buffer);
    if (n <= 0) break;
    said.append(buffer, static_cast<std::size_t>(n));
    if (said.find('\n') != std::string::npos) break;
  }
  close(ready_read);
  while (!said.empty() && said.back() == '\n')
    said.pop_back();
  if (said == "ready") return;
  throw std::runtime_error("the fabric (pid " + std::to_string(pid) + ") did not start" +
                           (said.empty() ? std::string(" within the time limit") : ": " + said) +
                           "; see " + fabric_log_path(prefix));
}

void build(const Spec& spec, const UpOptions& options, State& state, const InterruptWatch& watch) {
  const std::string ctl = spec.control_netns();
  const std::string bridge = spec.bridge_interface();
  run_checked({"ip", "netns", "add", ctl});
  run_checked({"ip", "-n", ctl, "link", "set", "lo", "up"});
  run_checked({"ip", "-n", ctl, "link", "add", bridge, "type", "bridge"});
  run_checked({"ip", "-n", ctl, "addr", "add", spec.control_mgmt_address() + "/24", "dev", bridge});
  run_checked({"ip", "-n", ctl, "link", "set", bridge, "up"});
  write_sysctl(ctl, "net/ipv6/conf/all/disable_ipv6", "1");
  write_sysctl(ctl, "net/ipv4/ip_forward", "0");  // the default; said, not assumed
  watch.check();
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    const SpecHost& host = spec.hosts[i];
    const std::string& ns = host.netns;
    const std::string emu = spec.emulated_interface();
    const std::string mgmt = spec.mgmt_interface();
    const std::string port = spec.prefix + "m" + std::to_string(i);
    run_checked({"ip", "netns", "add", ns});
    run_checked({"ip", "-n", ns, "link", "set", "lo", "up"});
    write_sysctl(ns, "net/ipv6/conf/all/disable_ipv6", "1");
    write_sysctl(ns, "net/ipv6/conf/default/disable_ipv6", "1");
    write_sysctl(ns, "net/ipv4/ip_forward", "0");
    if (!options.tcp_congestion_control.empty())
      write_sysctl(ns, "net/ipv4/tcp_congestion_control", options.tcp_congestion_control);
    run_checked({"ip", "-n", ns, "tuntap", "add", "dev", emu, "mode", "tun"});
    run_checked({"ip", "-n", ns, "link", "set", emu, "mtu", std::to_string(spec.mtu), "up"});
    run_checked({"ip", "-n", ns, "addr", "add", host.address + "/24", "dev", emu});
    run_checked(
        {"ip", "-n", ctl, "link", "add", port, "type", "veth", "peer", "name", mgmt, "netns", ns});
    run_checked({"ip", "-n", ctl, "link", "set", port, "master", bridge, "up"});
    run_checked({"ip", "-n", ns, "addr", "add", host.mgmt_address + "/24", "dev", mgmt});
    run_checked({"ip", "-n", ns, "link", "set", mgmt, "up"});
    watch.check();
  }
  state.tcp_congestion_control =
      read_sysctl(spec.hosts.front().netns, "net/ipv4/tcp_congestion_control");

  int ready_read = -1;
  state.fabric_pid = spawn_fabric(spec, options, ready_read);
  write_state(state);  // from here on `down` finds the fabric by its pid too
  await_fabric(ready_read, state.fabric_pid, spec.prefix, 10.0, watch);
  watch.check();
}

}  // namespace

std::string state_dir() {
  const char* dir = std::getenv("TAUPLAN_TESTBED_STATE_DIR");
  return dir && *dir ? dir : "/run/tauplan";
}

std::string state_path(const std::string& prefix) {
  return state_dir() + "/" + prefix + "testbed.json";
}

std::string host_tmp_dir(const std::string& netns) {
  return state_dir() + "/" + netns + "-tmp";
}

std::string fabric_log_path(const std::string& prefix) {
  return state_dir() + "/" + prefix + "fabric.log";
}

std::string fabric_stats_path(const std::string& prefix) {
  return state_dir() + "/" + prefix + "fabric-stats.json";
}

nlohmann::json to_json(const State& state) {
  return {{"phase", state.phase},
          {"owner_pid", state.owner_pid},
          {"fabric_pid", state.fabric_pid},
          {"created", state.created},
          {"version", state.version},
          {"commit", state.commit},
          {"ttl_s", state.ttl_s},
          {"tcp_congestion_control", state.tcp_congestion_control},
          {"state_file", state_path(state.spec.prefix)},
          {"spec", to_json(state.spec)}};
}

std::optional<State> read_state(const std::string& prefix) {
  const std::string path = state_path(prefix);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    State state;
    state.phase = j.at("phase").get<std::string>();
    state.owner_pid = j.at("owner_pid").get<int>();
    state.fabric_pid = j.at("fabric_pid").get<int>();
    state.created = j.at("created").get<std::string>();
    state.version = j.at("version").get<std::string>();
    state.commit = j.at("commit").get<std::string>();
    state.ttl_s = j.at("ttl_s").get<double>();
    state.tcp_congestion_control = j.at("tcp_congestion_control").get<std::string>();
    state.spec = spec_from_json(j.at("spec"));
    if (state.spec.prefix != prefix) throw std::runtime_error("prefix differs");
    return state;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + " is not a testbed state (" + e.what() + ")");
  }
}

bool Leftovers::empty() const {
  return !state_file && namespaces.empty() && root_interfaces.empty() && fabric_pids.empty() &&
         processes.empty();
}

std::string Leftovers::describe() const {
  std::vector<std::string> parts;
  if (state_file) parts.push_back("a state file");
  if (!namespaces.empty()) {
    std::string text = std::to_string(namespaces.size()) + " namespace(s) (";
    for (std::size_t i = 0; i < namespaces.size(); ++i)
      text += (i ? " " : "") + namespaces[i];
    parts.push_back(text + ")");
  }
  if (!root_interfaces.empty()) {
    std::string text = std::to_string(root_interfaces.size()) + " root interface(s) (";
    for (std::size_t i = 0; i < root_interfaces.size(); ++i)
      text += (i ? " " : "") + root_interfaces[i];
    parts.push_back(text + ")");
  }
  if (!fabric_pids.empty())
    parts.push_back(std::to_string(fabric_pids.size()) + " fabric process(es)");
  if (!processes.empty())
    parts.push_back(std::to_string(processes.size()) + " process(es) inside the namespaces");
  if (parts.empty()) return "nothing";
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

Leftovers find_leftovers(const std::string& prefix) {
  Leftovers found;
  struct stat st {};
  found.state_file = stat(state_path(prefix).c_str(), &st) == 0;
  for (const std::string& name : list_namespaces())
    if (starts_with(name, prefix)) found.namespaces.push_back(name);
  found.root_interfaces = root_interfaces(prefix);
  found.fabric_pids = fabric_processes(prefix);
  for (const std::string& name : found.namespaces)
    for (int pid : namespace_pids(name))
      found.processes.push_back(pid);
  return found;
}

Leftovers remove_testbed(const std::string& prefix) {
  const Leftovers found = find_leftovers(prefix);
  // 1. The fabric first: its TUN descriptors hold the namespaces alive.
  for (int pid : found.fabric_pids)
    stop_process(pid, 2.0);
  try {
    if (auto state = read_state(prefix))
      if (state->fabric_pid > 0 && process_matches(state->fabric_pid, fabric_marker(prefix)))
        stop_process(state->fabric_pid, 2.0);
  } catch (const std::exception&) {
    // an unreadable state file is removed below
  }
  // 2. Whatever runs inside the namespaces (ranks, daemons, measurement tools).
  for (int pass = 0; pass < 3; ++pass) {
    bool any = false;
    for (const std::string& name : found.namespaces)
      for (int pid : namespace_pids(name)) {
        any = true;
        stop_process(pid, pass == 0 ? 1.0 : 0.2);
      }
    if (!any) break;
  }
  // 3. The namespaces (their interfaces go with them), then root-namespace leftovers.
  for (const std::string& name : found.namespaces) {
    run_command({"ip", "netns", "del", name}, 10);
    std::error_code ignored;
    std::filesystem::remove_all(host_tmp_dir(name), ignored);
  }
  for (const std::string& name : root_interfaces(prefix))
    run_command({"ip", "link", "del", name}, 10);
  for (const std::string& path : {state_path(prefix), state_path(prefix) + ".tmp",
                                  fabric_stats_path(prefix), fabric_stats_path(prefix) + ".tmp"})
    std::remove(path.c_str());
  return found;
}

void remove_prefix_files(const std::string& prefix) {
  for (const std::string& path :
       {fabric_log_path(prefix), state_dir() + "/" + prefix + "testbed.lock"})
    std::remove(path.c_str());
}

State bring_up(const Spec& spec, const UpOptions& options) {
  make_state_dir();
  PrefixLock lock(spec.prefix);
  const std::string path = state_path(spec.prefix);
  std::optional<State> existing;
  try {
    existing = read_state(spec.prefix);
  } catch (const std::exception&) {
    existing.reset();  // unreadable: a leftover, removed below
  }
  if (existing) {
    const Status status = testbed_status(spec.prefix);
    if (status.health == "up")
      throw InputError(
          path, "testbed",
          "no testbed up with prefix " + spec.prefix + " (run `tauplan testbed down` first)",
          "one of " + existing->spec.platform_file + " is up");
  }
  const Leftovers leftovers = find_leftovers(spec.prefix);
  if (!leftovers.empty()) {
    std::fprintf(stderr, "tauplan: testbed: removing leftovers of an earlier testbed: %s\n",
                 leftovers.describe().c_str());
    remove_testbed(spec.prefix);
    const Leftovers still = find_leftovers(spec.prefix);
    if (!still.empty())
      throw std::runtime_error("cannot remove leftovers of prefix " + spec.prefix + ": " +
                               still.describe());
  }

  State state;
  state.phase = "building";
  state.owner_pid = getpid();
  state.created = model::utc_now_iso8601();
  state.version = model::tauplan_version();
  state.commit = model::tauplan_git_commit();
  state.ttl_s = options.fabric.ttl_s;
  state.spec = spec;
  std::remove(fabric_log_path(spec.prefix).c_str());
  InterruptWatch watch;
  try {
    write_state(state);
    build(spec, options, state, watch);
    state.phase = "up";
    write_state(state);
  } catch (...) {
    remove_testbed(spec.prefix);
    throw;
  }
  return state;
}

Status testbed_status(const std::string& prefix) {
  Status status;
  status.leftovers = find_leftovers(prefix);
  try {
    status.state = read_state(prefix);
  } catch (const std::exception& e) {
    status.health = "broken";
    status.problem = e.what();
    return status;
  }
  if (!status.state) {
    status.health = status.leftovers.empty() ? "down" : "broken";
    if (!status.leftovers.empty())
      status.problem = "no state file, but " + status.leftovers.describe();
    return status;
  }
  const State& state = *status.state;
  std::ifstream stats(fabric_stats_path(prefix));
  if (stats) {
    try {
      status.fabric_stats = nlohmann::json::parse(stats);
    } catch (const std::exception&) {
      status.fabric_stats = nullptr;
    }
  }
  if (state.phase != "up") {
    const bool builder_alive =
        state.owner_pid > 0 && kill(state.owner_pid, 0) == 0 &&
        process_command_line(state.owner_pid).find("testbed") != std::string::npos;
    status.health = builder_alive ? "building" : "broken";
    if (!builder_alive) status.problem = "an `up` that did not finish (killed?)";
    return status;
  }
  if (!process_matches(state.fabric_pid, fabric_marker(prefix))) {
    status.health = "broken";
    status.problem = "its fabric (pid " + std::to_string(state.fabric_pid) + ") is gone";
    return status;
  }
  status.fabric_cpu_s = process_cpu_seconds(state.fabric_pid);
  std::vector<std::string> wanted = {state.spec.control_netns()};
  for (const SpecHost& host : state.spec.hosts)
    wanted.push_back(host.netns);
  for (const std::string& name : wanted)
    if (std::find(status.leftovers.namespaces.begin(), status.leftovers.namespaces.end(), name) ==
        status.leftovers.namespaces.end()) {
      status.health = "broken";
      status.problem = "namespace " + name + " is gone";
      return status;
    }
  status.health = "up";
  return status;
}

State require_up(const std::string& prefix) {
  const Status status = testbed_status(prefix);
  if (status.health == "up") return *status.state;
  if (status.health == "down")
    throw InputError(state_path(prefix), "testbed",
                     "a testbed that is up (`tauplan testbed up PLATFORM.xml`)",
                     "none with prefix " + prefix);
  throw InputError(
      state_path(prefix), "testbed", "a testbed that is up",
      status.health + ": " + status.problem + " (run `tauplan testbed down`, then up again)");
}

PrefixLock::PrefixLock(const std::string& prefix) {
  make_state_dir();
  const std::string path = state_dir() + "/" + prefix + "testbed.lock";
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    close(fd_);
    fd_ = -1;
    throw InputError(path, "testbed",
                     "no other `tauplan testbed up` or `down` of prefix " + prefix + " running",
                     "one holds the lock");
  }
}

PrefixLock::~PrefixLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace tauplan::testbed
