// progress.hpp: progress and ETA of a long simulation, on stderr.
//
// A simulation of 660,000 rounds runs for minutes; the user should see that it moves and when it
// will end. The meter stays silent for short runs. On a terminal it rewrites one line ("\r")
// at most every half second once 2 s have passed; when stderr is a file or a pipe it writes one
// whole line a minute once 10 s have passed, so that logs stay short. Never on stdout. The ETA
// assumes the remaining rounds take as long as the mean round so far. What it leaves out:
// progress inside one round (a round is the unit), and anything but the wall clock.
#pragma once

#include <chrono>
#include <string>

namespace tauplan::sim {

class ProgressMeter {
 public:
  /// `what` names the run ("simulate 'sync'"); `total` rounds are expected.
  ProgressMeter(std::string what, long long total);
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;
  ~ProgressMeter();

  /// `done` rounds of `total` are done; prints when a line is due.
  void update(long long done);
  /// Ends the terminal line if one was written (also done by the destructor).
  void finish();

  /// "1 h 05 min", "42 s": a duration for people.
  static std::string duration_text(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  long long total_;
  bool terminal_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  bool line_open_ = false;  ///< a terminal line without its newline yet
  bool printed_ = false;
};

}  // namespace tauplan::sim
