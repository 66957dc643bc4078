// notice.cpp: notices printed once per topic (see notice.hpp).
#include "model/base/notice.hpp"

#include <cstdio>
#include <mutex>
#include <set>

namespace tauplan::model {
namespace {

struct NoticeState {
  std::mutex mutex;
  std::set<std::string> seen;
  std::function<void(const std::string&)> sink;
};

NoticeState& state() {
  static NoticeState s;
  return s;
}

}  // namespace

void notice_once(const std::string& message, const std::string& topic) {
  NoticeState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.seen.insert(topic.empty() ? message : topic).second) return;
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.sink) {
    s.sink(line);
    return;
  }
  std::fprintf(stderr, "tauplan: note: %s\n", line.c_str());
  std::fflush(stderr);
}

void set_notice_sink(std::function<void(const std::string&)> sink) {
  NoticeState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sink = std::move(sink);
  s.seen.clear();
}

}  // namespace tauplan::model
