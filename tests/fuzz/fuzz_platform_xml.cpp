// fuzz_platform_xml.cpp: libFuzzer target for SimGrid platform files, through sim::load_platform.
//
// SimGrid allows one Engine per process and aborts on many bad platforms, so the target works in
// two steps. In process, the checker that reads the XML before SimGrid does
// (model/inputs/simgrid_xml_check.hpp) runs on every input: its coverage guides the fuzzer. An
// input it accepts then goes to SimGrid in a forked child: sim::load_platform, then a ring
// all-reduce plan on up to 4 workers, evaluated by the analytic engine and simulated. The child
// must end with 0 (loaded and simulated, finite positive times) or 2 (an InputError or a
// SimulationError, as the CLI would report); a signal (SimGrid's abort, a sanitizer report), exit 1
// (another exception) or a hang (alarm after 20 s) makes the parent abort, which libFuzzer records
// as a crash with the input. What it leaves out: coverage inside the child (not fed back).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/simgrid_xml_check.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/strategy.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"

namespace {

// In the child: load, plan, evaluate, simulate. Returns the exit code.
int load_and_simulate(const std::string& path) {
  using namespace tauplan;
  try {
    const model::Platform platform = sim::load_platform(path);
    const auto workers = platform.worker_hosts();
    if (workers.empty()) return 2;
    model::StrategyOptions options;
    options.file = "fuzz";
    options.workers = static_cast<int>(std::min<size_t>(workers.size(), 4));
    options.batch = 64;
    options.collective = "ring";
    options.check_memory = false;
    const model::Workload workload = model::load_workload("fashion-mlp");
    const model::FixedCounts convergence(2);
    const std::string strategy = options.workers > 1 ? "sync" : "single";
    const model::Plan plan = model::make_plan(strategy, options, workload, platform, convergence);
    const model::ResultRow predicted = model::analyze(plan, platform);
    sim::SimOptions sim_options;
    sim_options.origin = "fuzz";
    const model::ResultRow simulated = sim::simulate(plan, platform, sim_options);
    for (double t : {predicted.total_s, simulated.total_s})
      if (!(t > 0) || !std::isfinite(t)) return 1;
    return 0;
  } catch (const InputError&) {
    return 2;
  } catch (const sim::SimulationError&) {
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_platform_xml: child: %s\n", e.what());
    return 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::string folder = [] {
    char pattern[] = "/tmp/tauplan-fuzz-platform-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    return std::string(made);
  }();
  const std::string path = folder + "/platform.xml";
  try {
    tauplan::model::check_simgrid_platform_xml(text, path);
  } catch (const tauplan::InputError&) {
    return 0;  // refused before SimGrid: the expected answer to most inputs
  }
  std::ofstream(path, std::ios::binary) << text;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    signal(SIGALRM, SIG_DFL);  // libFuzzer's handler is inherited; a hang must end the child
    alarm(20);
    _exit(load_and_simulate(path));
  }
  // libFuzzer's own once-a-second SIGALRM interrupts waitpid (EINTR): wait again. (Aborting
  // on it made a comment-only change of platforms/testbed-ps.xml a "crash".)
  int status = 0;
  pid_t waited = -1;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited != pid) std::abort();
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2)) return 0;
  std::fprintf(stderr,
               "fuzz_platform_xml: SimGrid child ended with %s %d on an input the checker "
               "accepted\n",
               WIFSIGNALED(status) ? "signal" : "exit code",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  std::abort();
}
