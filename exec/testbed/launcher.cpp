// launcher.cpp: mpirun's command line, its agent and the rank wrapper; see launcher.hpp.
#include "exec/testbed/launcher.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/system.hpp"
#include "model/base/error.hpp"

namespace tauplan::testbed {

namespace {

[[noreturn]] void exec_or_throw(const std::vector<std::string>& argv) {
  std::vector<std::string> copies = argv;
  std::vector<char*> args;
  for (std::string& a : copies)
    args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(errno));
}

}  // namespace

std::vector<int> rank_hosts(const State& state, int ranks, const std::vector<std::string>& names) {
  const Spec& spec = state.spec;
  const int hosts = static_cast<int>(spec.hosts.size());
  std::vector<int> out;
  if (names.empty()) {
    const int n = ranks == 0 ? hosts : ranks;
    if (n < 1 || n > hosts)
      throw InputError(state_path(spec.prefix), "--np",
                       "1 to " + std::to_string(hosts) + " ranks (one per testbed host)",
                       std::to_string(ranks));
    for (int r = 0; r < n; ++r)
      out.push_back(r);
    return out;
  }
  for (const std::string& name : names) {
    int found = -1;
    for (int h = 0; h < hosts; ++h)
      if (spec.hosts[static_cast<std::size_t>(h)].name == name) found = h;
    if (found < 0)
      throw InputError(state_path(spec.prefix), "--hosts", "hosts of the testbed (testbed status)",
                       name);
    if (std::find(out.begin(), out.end(), found) != out.end())
      throw InputError(state_path(spec.prefix), "--hosts", "each host once (one rank per host)",
                       name + " twice");
    out.push_back(found);
  }
  if (ranks != 0 && ranks != static_cast<int>(out.size()))
    throw InputError("command line", "--np",
                     "the number of --hosts (" + std::to_string(out.size()) + ") or nothing",
                     std::to_string(ranks));
  return out;
}

std::vector<std::string> mpirun_command(const State& state, const std::vector<int>& hosts,
                                        const std::vector<std::string>& command,
                                        const std::string& executable) {
  const Spec& spec = state.spec;
  if (command.empty())
    throw InputError("command line", "testbed run", "a command after --", "nothing");
  const int ranks = static_cast<int>(hosts.size());
  std::string host_list;
  for (int r = 0; r < ranks; ++r)
    host_list += (r ? "," : "") +
                 spec.hosts.at(static_cast<std::size_t>(hosts[static_cast<std::size_t>(r)])).netns;
  std::vector<std::string> argv = {"mpirun",
                                   "--allow-run-as-root",
                                   "--bind-to",
                                   "none",
                                   "--host",
                                   host_list,
                                   "-np",
                                   std::to_string(ranks),
                                   "--mca",
                                   "plm_rsh_agent",
                                   executable + " testbed agent --prefix " + spec.prefix,
                                   "--mca",
                                   "plm_rsh_no_tree_spawn",
                                   "1",
                                   "--mca",
                                   "pml",
                                   "ob1",
                                   "--mca",
                                   "btl",
                                   "tcp,self",
                                   "--mca",
                                   "btl_tcp_if_include",
                                   kEmulatedSubnet,
                                   "--mca",
                                   "oob_tcp_if_include",
                                   kMgmtSubnet,
                                   "--mca",
                                   "mpi_yield_when_idle",
                                   "1",
                                   executable,
                                   "testbed",
                                   "rank",
                                   "--prefix",
                                   spec.prefix,
                                   "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

void exec_in_control_namespace(const State& state, const std::vector<std::string>& mpirun_argv) {
  enter_namespace(state.spec.control_netns());
  exec_or_throw(mpirun_argv);
}

void exec_agent(const State& state, const std::string& netns,
                const std::vector<std::string>& words) {
  bool known = false;
  for (const SpecHost& host : state.spec.hosts)
    known = known || host.netns == netns;
  if (!known)
    throw InputError(state_path(state.spec.prefix), "testbed agent",
                     "a host namespace of the testbed", netns);
  if (words.empty()) throw InputError("command line", "testbed agent", "a command", "nothing");
  std::string command;
  for (const std::string& w : words)
    command += (command.empty() ? "" : " ") + w;
  // Each host's daemon (and its ranks) gets a temporary folder of its own. Every namespace has
  // the same host name and sees the same /tmp, so OpenMPI's session folders
  // (/tmp/ompi.<hostname>.<uid>/...), made by all daemons of a run at once, would be shared:
  // about one launch in ten then lost a daemon that never called back, and mpirun waited
  // forever (seen 2 in 12 back-to-back runs on test-ps; none in 40 with a folder per host).
  const std::string tmp = host_tmp_dir(netns);
  if (mkdir(tmp.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("testbed agent: cannot create " + tmp + ": " + std::strerror(errno));
  setenv("TMPDIR", tmp.c_str(), 1);
  enter_namespace(netns);
  exec_or_throw({"/bin/sh", "-c", command});
}

int current_host(const Spec& spec) {
  for (std::size_t i = 0; i < spec.hosts.size(); ++i)
    if (in_namespace(spec.hosts[i].netns)) return static_cast<int>(i);
  return -1;
}

void exec_rank(const State& state, const std::vector<std::string>& command) {
  const Spec& spec = state.spec;
  const int host = current_host(spec);
  if (host < 0)
    throw std::runtime_error("testbed rank: this process (pid " + std::to_string(getpid()) +
                             ") runs in none of the namespaces of testbed " + spec.prefix);
  if (command.empty()) throw InputError("command line", "testbed rank", "a command", "nothing");
  const SpecHost& h = spec.hosts[static_cast<std::size_t>(host)];
  setenv("TAUPLAN_TESTBED_HOST", h.name.c_str(), 1);
  setenv("TAUPLAN_TESTBED_NETNS", h.netns.c_str(), 1);
  setenv("TAUPLAN_TESTBED_ADDRESS", h.address.c_str(), 1);
  setenv("TAUPLAN_TESTBED_SCALE", fmt::format("{:.17g}", spec.scale).c_str(), 1);
  setenv("TAUPLAN_TESTBED_PLATFORM", spec.platform_file.c_str(), 1);
  exec_or_throw(command);
}

}  // namespace tauplan::testbed
