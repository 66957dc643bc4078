// chrome_trace.cpp: writes Chrome trace events as JSON text (see chrome_trace.hpp).
#include "model/base/chrome_trace.hpp"

#include <cstdio>
#include <fstream>

#include "model/base/error.hpp"

namespace tauplan::model {
namespace {

// Microseconds with nanosecond resolution: enough for SimGrid's 1e-9 s precision.
std::string microseconds(double seconds) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f", seconds * 1e6);
  return buffer;
}

std::string args_json(const ChromeTrace::Args& args) {
  std::string out = "{";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out += ",";
    out += json_quote(args[i].first) + ":" + json_quote(args[i].second);
  }
  return out + "}";
}

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void ChromeTrace::name_process(int pid, const std::string& name) {
  events_.push_back("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":0,\"args\":{\"name\":" + json_quote(name) + "}}");
  events_.push_back("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(pid) + "}}");
}

void ChromeTrace::name_thread(int pid, int tid, const std::string& name) {
  events_.push_back("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + json_quote(name) +
                    "}}");
  events_.push_back("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":" + std::to_string(tid) +
                    ",\"args\":{\"sort_index\":" + std::to_string(tid) + "}}");
}

void ChromeTrace::span(int pid, int tid, const std::string& name, const std::string& category,
                       double start_s, double duration_s, const Args& args) {
  events_.push_back("{\"name\":" + json_quote(name) + ",\"cat\":" + json_quote(category) +
                    ",\"ph\":\"X\",\"ts\":" + microseconds(start_s) +
                    ",\"dur\":" + microseconds(duration_s) + ",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":" + std::to_string(tid) + ",\"args\":" + args_json(args) + "}");
}

void ChromeTrace::instant(int pid, int tid, const std::string& name, const std::string& category,
                          double time_s, const Args& args) {
  events_.push_back("{\"name\":" + json_quote(name) + ",\"cat\":" + json_quote(category) +
                    ",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + microseconds(time_s) +
                    ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
                    ",\"args\":" + args_json(args) + "}");
}

std::string ChromeTrace::json() const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    out += events_[i];
    out += i + 1 < events_.size() ? ",\n" : "\n";
  }
  return out + "]}\n";
}

void ChromeTrace::write(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, "trace", "a writable file for the Chrome trace");
  out << json();
  if (!out) throw InputError(path, "trace", "a writable file for the Chrome trace", "write failed");
}

}  // namespace tauplan::model
