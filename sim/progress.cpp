// progress.cpp: the progress meter of long simulations (see progress.hpp).
#include "sim/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace tauplan::sim {
namespace {

constexpr double kTerminalDelay_s = 2;     // before the first line on a terminal
constexpr double kTerminalPeriod_s = 0.5;  // between terminal updates
constexpr double kLogDelay_s = 10;         // before the first line in a log
constexpr double kLogPeriod_s = 60;        // between log lines

}  // namespace

ProgressMeter::ProgressMeter(std::string what, long long total)
    : what_(std::move(what)),
      total_(total),
      terminal_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_line_(start_) {}

ProgressMeter::~ProgressMeter() {
  finish();
}

std::string ProgressMeter::duration_text(double seconds) {
  if (!(seconds >= 0)) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
  return fmt::format("{} d {:02} h", s / 86400, (s % 86400) / 3600);
}

void ProgressMeter::update(long long done) {
  if (total_ <= 1 || done <= 0) return;
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double since_last = std::chrono::duration<double>(now - last_line_).count();
  const bool due = terminal_ ? elapsed >= kTerminalDelay_s && since_last >= kTerminalPeriod_s
                             : elapsed >= kLogDelay_s && (!printed_ || since_last >= kLogPeriod_s);
  if (!due || done >= total_) return;
  const double eta = elapsed * static_cast<double>(total_ - done) / static_cast<double>(done);
  const std::string line =
      fmt::format("tauplan: {}: round {} of {} ({:.1f}%), {} elapsed, about {} left", what_, done,
                  total_, 100.0 * static_cast<double>(done) / static_cast<double>(total_),
                  duration_text(elapsed), duration_text(eta));
  if (terminal_) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
  last_line_ = now;
}

void ProgressMeter::finish() {
  if (!line_open_) return;
  std::fputs("\r\033[K", stderr);  // the next output starts on a clean line
  std::fflush(stderr);
  line_open_ = false;
}

}  // namespace tauplan::sim
