// mpi_watchdog.cpp: the SIGTERM handler and the deadline thread of mpi_watchdog.hpp.
//
// The signal handler only reads atomics and calls write(2) and _exit(2), which are
// async-signal-safe; its message is composed in a buffer on its own stack.
#include "exec/mpi_watchdog.hpp"

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

std::atomic<const char*> g_waiting_in{nullptr};  // innermost MpiWait, nullptr outside MPI
std::atomic<long long> g_wait_since_ns{0};       // its start (steady clock), 0: no deadline
std::atomic<long long> g_timeout_ns{300'000'000'000LL};
char g_prefix[256] = "tauplan: error: MPI rank";  // "tauplan: error: rank R of N (host H)"

std::mutex g_mutex;
std::condition_variable g_wake;
bool g_stop = false;
std::thread g_thread;

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Appends `text` to `line` (capacity `cap`), async-signal-safe.
void append(char* line, std::size_t cap, const char* text) {
  std::size_t used = std::strlen(line);
  while (*text != '\0' && used + 1 < cap)
    line[used++] = *text++;
  line[used] = '\0';
}

void append_number(char* line, std::size_t cap, long long value) {
  char digits[24];
  int n = 0;
  if (value < 0) value = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 23);
  char text[24];
  for (int i = 0; i < n; ++i)
    text[i] = digits[n - 1 - i];
  text[n] = '\0';
  append(line, cap, text);
}

void append_activity(char* line, std::size_t cap) {
  const char* what = g_waiting_in.load();
  if (what != nullptr) {
    append(line, cap, "waiting in ");
    append(line, cap, what);
  } else {
    append(line, cap, "computing (outside MPI)");
  }
}

void write_line(const char* line) {
  std::size_t left = std::strlen(line);
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, line, left);
    if (written <= 0) return;
    line += written;
    left -= static_cast<std::size_t>(written);
  }
}

extern "C" void on_termination_signal(int signal_number) {
  char line[768] = "";
  append(line, sizeof line, g_prefix);
  append(line, sizeof line, ": stopped by signal ");
  append_number(line, sizeof line, signal_number);
  append(line, sizeof line, " from the MPI launcher while ");
  append_activity(line, sizeof line);
  append(line, sizeof line, ": another rank failed, or the run was interrupted\n");
  write_line(line);
  _exit(kExitRankFailure);
}

void watchdog_loop() {
  std::unique_lock<std::mutex> lock(g_mutex);
  while (!g_stop) {
    g_wake.wait_for(lock, std::chrono::milliseconds(100));
    const long long since = g_wait_since_ns.load();
    const long long timeout = g_timeout_ns.load();
    if (since == 0 || now_ns() - since <= timeout) continue;
    char line[768] = "";
    append(line, sizeof line, g_prefix);
    append(line, sizeof line, ": no answer from the other ranks for ");
    append_number(line, sizeof line, timeout / 1'000'000'000LL);
    append(line, sizeof line, " s while ");
    append_activity(line, sizeof line);
    append(line, sizeof line,
           ": a rank stopped answering or the network is cut (the job's mpi_timeout_s)\n");
    write_line(line);
    _exit(kExitRankFailure);
  }
}

}  // namespace

void start_mpi_watchdog(int rank, int size) {
  const char* host = std::getenv("TAUPLAN_TESTBED_HOST");
  char machine[128] = "";
  if (host == nullptr || *host == '\0') {
    if (gethostname(machine, sizeof machine - 1) != 0) std::strcpy(machine, "?");
    host = machine;
  }
  std::snprintf(g_prefix, sizeof g_prefix, "tauplan: error: MPI rank %d of %d (host %s)", rank,
                size, host);
  struct sigaction action {};
  action.sa_handler = on_termination_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_thread.joinable()) return;
  g_stop = false;
  g_thread = std::thread(watchdog_loop);
}

void stop_mpi_watchdog() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stop = true;
  }
  g_wake.notify_all();
  if (g_thread.joinable()) g_thread.join();
}

void set_mpi_wait_timeout(double seconds) {
  if (seconds > 0) g_timeout_ns = static_cast<long long>(seconds * 1e9);
}

double mpi_wait_timeout() {
  return static_cast<double>(g_timeout_ns.load()) * 1e-9;
}

MpiWait::MpiWait(const char* what, bool deadline)
    : previous_what_(g_waiting_in.load()), previous_since_ns_(g_wait_since_ns.load()) {
  g_waiting_in = what;
  g_wait_since_ns = deadline ? now_ns() : 0;
}

MpiWait::~MpiWait() {
  g_waiting_in = previous_what_;
  // An enclosing wait resumes with a fresh deadline: the inner one made progress.
  g_wait_since_ns = previous_since_ns_ != 0 ? now_ns() : 0;
}

}  // namespace tauplan::exec
