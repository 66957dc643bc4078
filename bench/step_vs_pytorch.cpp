// step_vs_pytorch.cpp: tauplan's CPU training step against PyTorch's, side by side, in one run.
//
// What a worker does per step, through the trainer's own code path (a CpuReplica from
// cpu_replica_factory(): compute() = forward + backward, then sgd_step()), against PyTorch's
// step for the same MLP (Linear+ReLU, softmax cross-entropy averaged over the batch, plain SGD),
// on the same parameters and the same batch (row-major float32 inputs, int labels), with the
// same threads (tauplan's set_compute_threads, PyTorch's torch.set_num_threads and its
// OpenBLAS's openblas_set_num_threads). PyTorch runs in a child process
// (bench/pytorch_cpu_step.py) driven over a pipe; the two take turns, A B A B, each timing a
// repetition of `steps` steps on the wall clock (steady_clock here, perf_counter_ns there)
// while the other waits, so load on the machine falls on both alike. Parameters are reset to
// the same initial values before every repetition (untimed), so every repetition does the
// same work. Before timing, both compute the loss and gradient once from those parameters and
// the gradients are compared (relative error per tensor: max |tauplan - torch| / max |torch|,
// bound 1e-4, and the loss likewise): the comparison is of equal work, or it stops (exit 1).
//
// Prints the machine, each side's BLAS, versions and commit, then per (threads, batch) the
// median step time of each side with its quartiles, the ratio of the medians tauplan/PyTorch
// (<= 1: tauplan at least as fast) and the median and quartiles of the per-pair ratios.
// Without PyTorch (or NumPy) it says why, times tauplan alone and exits 0.
// What it leaves out: the gather of a batch from the data set (the trainer's, identical for
// any model code), and data loading.
//
//   bench_step_vs_pytorch [--batches 16,64,256,1024] [--threads 1,2] [--reps 31]
//       [--rep-ms 40] [--widths 784,256,128,10] [--lr 0.01] [--python /usr/bin/python3]
//       [--script bench/pytorch_cpu_step.py] [--torch-foreach auto|on|off] [--gap-ms G]
//       [--json FILE]
// --gap-ms: a pause after each turn (default 0 with one thread, 150 ms with more: an idle
// OpenBLAS thread spins for up to 2^28 cycles after its last product, an idle OpenMP thread
// for a while too, and would take a core from the other side's turn). OMP_WAIT_POLICY in the
// environment reaches PyTorch's OpenMP threads (tauplan has none) and is printed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "exec/cpu_blas.hpp"
#include "exec/cpu_replica.hpp"
#include "exec/mlp.hpp"
#include "exec/mlp_kernels.hpp"
#include "model/ir/result.hpp"

#ifndef TAUPLAN_BENCH_SOURCE_DIR
#define TAUPLAN_BENCH_SOURCE_DIR "bench"
#endif
#ifndef TAUPLAN_BUILD_TYPE
#define TAUPLAN_BUILD_TYPE "?"
#endif

using nlohmann::json;
using tauplan::exec::MlpShape;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_step_vs_pytorch: error: %s\n", message.c_str());
  std::exit(2);
}

std::vector<int> parse_ints(const std::string& flag, const std::string& text, int minimum) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < minimum || v > 1 << 24)
      usage_error(flag + ": expected integers >= " + std::to_string(minimum) +
                  " separated by commas, got '" + text + "'");
    values.push_back(static_cast<int>(v));
  }
  if (values.empty()) usage_error(flag + ": expected at least one value");
  return values;
}

struct Options {
  std::vector<int> batches{16, 64, 256, 1024};
  std::vector<int> threads{1, 2};
  std::vector<int> widths{784, 256, 128, 10};
  int reps = 31;
  double rep_ms = 40;
  double lr = 0.01;
  double gap_ms = -1;  // pause after each turn; < 0: 0 with one thread, 150 ms with more
  std::string python = "/usr/bin/python3";
  std::string script = std::string(TAUPLAN_BENCH_SOURCE_DIR) + "/pytorch_cpu_step.py";
  std::string torch_foreach = "auto";
  std::string json_path;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + ": expected a value");
      return argv[++i];
    };
    auto number = [&](double minimum) {
      const std::string text = value();
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v) || v < minimum)
        usage_error(a + ": expected a number >= " + std::to_string(minimum) + ", got '" + text +
                    "'");
      return v;
    };
    if (a == "--batches") {
      o.batches = parse_ints(a, value(), 1);
    } else if (a == "--threads") {
      o.threads = parse_ints(a, value(), 1);
    } else if (a == "--widths") {
      o.widths = parse_ints(a, value(), 1);
      if (o.widths.size() < 2) usage_error("--widths: expected an input and an output width");
    } else if (a == "--reps") {
      o.reps = static_cast<int>(number(3));
    } else if (a == "--rep-ms") {
      o.rep_ms = number(0.1);
    } else if (a == "--gap-ms") {
      o.gap_ms = number(0);
    } else if (a == "--lr") {
      o.lr = number(0);
    } else if (a == "--python") {
      o.python = value();
    } else if (a == "--script") {
      o.script = value();
    } else if (a == "--torch-foreach") {
      o.torch_foreach = value();
      if (o.torch_foreach != "auto" && o.torch_foreach != "on" && o.torch_foreach != "off")
        usage_error("--torch-foreach: expected auto, on or off, got '" + o.torch_foreach + "'");
    } else if (a == "--json") {
      o.json_path = value();
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "bench_step_vs_pytorch [--batches 16,64,256,1024] [--threads 1,2] [--reps 31]\n"
          "  [--rep-ms 40] [--widths 784,256,128,10] [--lr 0.01] [--python /usr/bin/python3]\n"
          "  [--script bench/pytorch_cpu_step.py] [--torch-foreach auto|on|off] [--gap-ms G]\n"
          "  [--json FILE]\n");
      std::exit(0);
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  }
  return o;
}

// ------------------------------------------------------------------ the PyTorch child process

class PythonPeer {
 public:
  PythonPeer(const std::string& python, const std::string& script) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[0]);
      close(to_child[1]);
      close(from_child[0]);
      close(from_child[1]);
      execl(python.c_str(), python.c_str(), script.c_str(), "--serve", static_cast<char*>(nullptr));
      std::fprintf(stderr, "bench_step_vs_pytorch: cannot run %s: %s\n", python.c_str(),
                   std::strerror(errno));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
    signal(SIGPIPE, SIG_IGN);  // a dead child shows as a failed write, not a signal
  }
  PythonPeer(const PythonPeer&) = delete;
  PythonPeer& operator=(const PythonPeer&) = delete;
  ~PythonPeer() {
    if (pid_ <= 0) return;
    const std::string quit = "{\"cmd\": \"quit\"}\n";
    if (write(to_, quit.data(), quit.size()) < 0) { /* already gone */
    }
    close(to_);
    close(from_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

  /// Sends one command and returns the reply; an empty object when the child is gone.
  json call(const json& command, int timeout_s = 600) {
    const std::string line = command.dump() + "\n";
    if (write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return {};
    std::string reply;
    char c = 0;
    while (true) {
      pollfd p{from_, POLLIN, 0};
      const int ready = poll(&p, 1, timeout_s * 1000);
      if (ready <= 0) throw std::runtime_error("no reply from the PyTorch process in time");
      const ssize_t got = read(from_, &c, 1);
      if (got <= 0) return {};
      if (c == '\n') break;
      reply += c;
    }
    return json::parse(reply);
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

// ------------------------------------------------------------------ machine description

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "?";
}

std::string cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::stringstream words(line.substr(line.find(':') + 1));
    std::string word, kept;
    const std::vector<std::string> interesting = {
        "sse4_2",   "avx",         "avx2",        "fma",         "avx512f",  "avx512bw",
        "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "hypervisor"};
    while (words >> word)
      if (std::find(interesting.begin(), interesting.end(), word) != interesting.end())
        kept += (kept.empty() ? "" : " ") + word;
    return kept;
  }
  return "?";
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> mapped_libraries() {
  std::vector<std::string> found;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = path.substr(path.rfind('/') + 1);
    if ((name.find("blas") != std::string::npos || name.find("lapack") != std::string::npos ||
         name.find("mkl") != std::string::npos) &&
        std::find(found.begin(), found.end(), path) == found.end())
      found.push_back(path);
  }
  return found;
}

// ------------------------------------------------------------------ statistics

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double position = q * static_cast<double>(v.size() - 1);
  const auto low = static_cast<std::size_t>(std::floor(position));
  const auto high = std::min(low + 1, v.size() - 1);
  const double frac = position - static_cast<double>(low);
  return v[low] * (1 - frac) + v[high] * frac;
}

struct Summary {
  double median, q25, q75, min, max;
};

Summary summarise(const std::vector<double>& v) {
  return {quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75),
          *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

json to_json(const Summary& s, double scale) {
  return {{"median", s.median * scale},
          {"q25", s.q25 * scale},
          {"q75", s.q75 * scale},
          {"min", s.min * scale},
          {"max", s.max * scale}};
}

// ------------------------------------------------------------------ files for the child

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<float> read_floats(const std::string& path, std::size_t count) {
  std::vector<float> values(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(count * sizeof(float)));
  if (!in)
    throw std::runtime_error("cannot read " + std::to_string(count) + " floats from " + path);
  return values;
}

/// max |a - b| / max |b| over [begin, end).
double relative_error(const float* a, const float* b, std::size_t begin, std::size_t end) {
  double diff = 0, scale = 0;
  for (std::size_t i = begin; i < end; ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// ------------------------------------------------------------------ one configuration

struct Workload {
  MlpShape shape;
  std::vector<float> params, x;
  std::vector<int> y;
};

Workload make_workload(const std::vector<int>& widths, int batch) {
  Workload w;
  w.shape.widths = widths;
  w.params.resize(w.shape.parameters());
  tauplan::exec::init_parameters(w.shape, 1, w.params.data());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);  // like scaled image intensities
  w.x.resize(static_cast<std::size_t>(batch) * static_cast<std::size_t>(w.shape.inputs()));
  for (float& v : w.x)
    v = pixel(rng);
  w.y.resize(static_cast<std::size_t>(batch));
  for (int& v : w.y)
    v = static_cast<int>(rng() % static_cast<std::uint64_t>(w.shape.classes()));
  return w;
}

/// Seconds per step over `steps` steps of the replica, after resetting its parameters.
double time_tauplan(tauplan::exec::Replica& replica, const Workload& w, int steps, float lr) {
  replica.set_parameters_from_host(w.params.data());
  const int n = static_cast<int>(w.y.size());
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) {
    replica.compute(w.x.data(), w.y.data(), n);
    replica.sgd_step(lr);
  }
  return std::chrono::duration<double>(Clock::now() - start).count() / steps;
}

// ------------------------------------------------------------------ the run's steps

// The PyTorch child (none when skipped), its hello reply, and why it was skipped ("" if not).
struct Peer {
  std::unique_ptr<PythonPeer> peer;
  json hello;
  std::string skipped;
};

// The child first: its reply says whether there is anything to compare with.
Peer start_peer(const Options& o) {
  Peer p;
  if (access(o.python.c_str(), X_OK) != 0) {
    p.skipped = "no executable " + o.python + " (--python)";
  } else if (access(o.script.c_str(), R_OK) != 0) {
    p.skipped = "no script " + o.script + " (--script)";
  } else {
    p.peer = std::make_unique<PythonPeer>(o.python, o.script);
    p.hello = p.peer->call({{"cmd", "hello"}});
    if (p.hello.is_null() || p.hello.empty())
      p.skipped = o.python + " " + o.script + " exited without a reply";
    else if (p.hello.contains("skip"))
      p.skipped = p.hello["skip"].get<std::string>();
    else if (p.hello.contains("error"))
      p.skipped = "PyTorch process: " + p.hello["error"].get<std::string>();
  }
  if (!p.skipped.empty()) p.peer.reset();
  return p;
}

// The run's context for --json: machine, builds, libraries, options, PyTorch's hello.
json make_context(const Options& o, const Peer& p, const std::string& load_before,
                  const std::string& omp_wait_policy) {
  struct utsname host {};
  uname(&host);
  json context = {
      {"commit", tauplan::model::tauplan_git_commit()},
      {"date", tauplan::model::utc_now_iso8601()},
      {"cpu", cpu_model()},
      {"cpu_flags", cpu_flags()},
      {"online_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
      {"kernel", std::string(host.release)},
      {"compiler", std::string("g++ ") + __VERSION__},
      {"build_type", TAUPLAN_BUILD_TYPE},
      {"tauplan_blas", tauplan::exec::compute_backend_description()},
      {"tauplan_kernels", tauplan::exec::kernels::selected_isa()},
      {"tauplan_libraries", mapped_libraries()},
      {"widths", MlpShape{o.widths}.to_string()},
      {"reps", o.reps},
      {"rep_ms", o.rep_ms},
      {"gap_ms", o.gap_ms < 0 ? "0 with one thread, 150 with more" : std::to_string(o.gap_ms)},
      {"lr", o.lr},
      {"timing", "wall clock per repetition of `steps` steps, sides alternating A B A B"},
      {"load_before", load_before},
      {"omp_wait_policy", omp_wait_policy}};
  if (p.skipped.empty())
    context["pytorch"] = p.hello;
  else
    context["pytorch_skipped"] = p.skipped;
  return context;
}

// The header on stdout: machine, both sides' BLAS and versions, then the table's head.
void print_header(const Options& o, const Peer& p, const json& context,
                  const std::string& load_before, const std::string& omp_wait_policy) {
  json hello = p.hello;  // a copy: operator[] on a missing key inserts null, as before
  std::printf("# tauplan CPU training step vs PyTorch, MLP %s\n",
              MlpShape{o.widths}.to_string().c_str());
  std::printf("commit %s, %s, %s, build %s\n", tauplan::model::tauplan_git_commit(),
              context["date"].get<std::string>().c_str(),
              context["compiler"].get<std::string>().c_str(), TAUPLAN_BUILD_TYPE);
  std::printf("cpu: %s (%ld online), flags: %s; load average before: %s\n", cpu_model().c_str(),
              sysconf(_SC_NPROCESSORS_ONLN), cpu_flags().c_str(), load_before.c_str());
  std::printf("tauplan BLAS: %s; element-wise kernels: %s\n",
              tauplan::exec::compute_backend_description().c_str(),
              tauplan::exec::kernels::selected_isa());
  if (p.skipped.empty()) {
    std::string libraries;
    for (const auto& l : hello["libraries"])
      libraries += (libraries.empty() ? "" : ", ") + l.get<std::string>();
    const std::string openblas = hello.contains("openblas") ? hello["openblas"].get<std::string>()
                                                            : std::string("OpenBLAS not loaded");
    std::printf("PyTorch %s (Python %s, %s): BLAS_INFO=%s; %s; mapped: %s; OMP_WAIT_POLICY=%s\n",
                hello["torch"].get<std::string>().c_str(),
                hello["python"].get<std::string>().c_str(),
                hello["executable"].get<std::string>().c_str(),
                hello["blas_info"].get<std::string>().c_str(), openblas.c_str(), libraries.c_str(),
                omp_wait_policy.c_str());
  } else {
    std::printf("PyTorch: skipped: %s (timing tauplan alone)\n", p.skipped.c_str());
  }
  std::printf(
      "each repetition: one side runs `steps` steps (about %.0f ms) on the wall clock, "
      "then the other; %d repetitions each, medians [quartiles]\n\n",
      o.rep_ms, o.reps);
  std::printf(
      "| threads | batch | steps/rep | tauplan ms | PyTorch ms | tauplan/PyTorch (medians) "
      "| per-pair ratio | check | PyTorch threads, BLAS threads, SGD |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
}

// One (threads, batch) configuration: its workload, tauplan's loss and gradient from the
// initial parameters, the steps of a warm-up and of a repetition, its JSON row and the text of
// its check and PyTorch-setup columns.
struct Config {
  int threads = 0, batch = 0;
  Workload w;
  double loss = 0;
  std::vector<float> grads;
  int warm_steps = 0, steps = 0;
  json row;
  std::string check = "-", torch_setup = "-";
};

// The worst relative error of the loss and of every layer's weight and bias gradients, PyTorch's
// against tauplan's; per layer the errors in `tensors`.
double compare_gradients(const Config& c, const std::vector<float>& torch_grads, double torch_loss,
                         json& tensors) {
  const Workload& w = c.w;
  double worst = std::fabs(c.loss - torch_loss) / std::fabs(torch_loss);
  for (int l = 0; l < w.shape.layers(); ++l) {
    const auto wb = tauplan::exec::weight_offset(w.shape, l);
    const auto bb = tauplan::exec::bias_offset(w.shape, l);
    const auto be = bb + static_cast<std::size_t>(w.shape.widths[static_cast<std::size_t>(l) + 1]);
    const double ew = relative_error(c.grads.data(), torch_grads.data(), wb, bb);
    const double eb = relative_error(c.grads.data(), torch_grads.data(), bb, be);
    tensors.push_back({{"layer", l}, {"weight", ew}, {"bias", eb}});
    worst = std::max({worst, ew, eb});
  }
  return worst;
}

enum class Checked { Same, Differ, SetupFailed };

// PyTorch set up on the same parameters and batch (files in `folder`) and its loss and gradient
// checked against tauplan's: the row's PyTorch fields and the check columns filled; the table's
// line and the error printed when they differ, the error when the setup fails; PyTorch warmed
// up when they agree.
Checked check_against_pytorch(PythonPeer& peer, const Options& o, const std::string& folder,
                              Config& c) {
  const Workload& w = c.w;
  write_binary(folder + "/params.f32", w.params);
  write_binary(folder + "/x.f32", w.x);
  std::vector<std::int32_t> y32(w.y.begin(), w.y.end());
  write_binary(folder + "/y.i32", y32);
  json setup = peer.call({{"cmd", "setup"},
                          {"dir", folder},
                          {"widths", o.widths},
                          {"batch", c.batch},
                          {"threads", c.threads},
                          {"lr", o.lr},
                          {"foreach", o.torch_foreach},
                          {"rep_steps", c.steps}});
  if (setup.empty() || setup.contains("error")) {
    std::fprintf(stderr, "bench_step_vs_pytorch: error: PyTorch setup failed: %s\n",
                 setup.dump().c_str());
    return Checked::SetupFailed;
  }
  const std::vector<float> torch_grads = read_floats(folder + "/grads_torch.f32", c.grads.size());
  const double torch_loss = setup["loss"].get<double>();
  json tensors = json::array();
  const double worst = compare_gradients(c, torch_grads, torch_loss, tensors);
  const bool equal = worst <= 1e-4;
  char text[64];
  std::snprintf(text, sizeof text, "%s %.1e", equal ? "ok" : "FAIL", worst);
  c.check = text;
  c.row["pytorch_loss"] = torch_loss;
  c.row["check"] = {
      {"bound", 1e-4}, {"worst_relative_error", worst}, {"tensors", tensors}, {"ok", equal}};
  c.row["pytorch_setup"] = setup;
  c.torch_setup =
      std::to_string(setup["threads"].get<int>()) + ", " +
      (setup["blas_threads"].is_null() ? std::string("?")
                                       : std::to_string(setup["blas_threads"].get<int>())) +
      (setup["foreach"].get<bool>() ? ", foreach" : ", for-loop");
  if (!equal) {
    std::printf("| %d | %d | - | - | - | - | - | %s | - |\n", c.threads, c.batch, c.check.c_str());
    std::fprintf(stderr,
                 "bench_step_vs_pytorch: error: tauplan and PyTorch disagree on the loss "
                 "or gradient (worst relative error %.2e > 1e-4): not the same work\n",
                 worst);
    return Checked::Differ;
  }
  peer.call({{"cmd", "run"}, {"steps", c.warm_steps}});  // PyTorch's warm-up
  return Checked::Same;
}

// The timed repetitions, the sides alternating (tauplan alone without `peer`): the row's
// timings and the table's line.
void time_and_print(tauplan::exec::Replica& replica, PythonPeer* peer, const Options& o,
                    Config& c) {
  const Workload& w = c.w;
  const int steps = c.steps;
  const auto lr = static_cast<float>(o.lr);
  json& row = c.row;
  // With several threads, a side's idle BLAS and OpenMP threads spin for a while after its
  // turn (OpenBLAS: up to 2^28 cycles) and would steal a core from the other side's turn.
  const double gap_s = (o.gap_ms >= 0 ? o.gap_ms : c.threads > 1 ? 150 : 0) * 1e-3;
  auto pause = [gap_s] {
    if (gap_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(gap_s));
  };
  std::vector<double> ours, theirs, ratios;
  for (int r = 0; r < o.reps; ++r) {
    ours.push_back(time_tauplan(replica, w, steps, lr));
    pause();
    if (!peer) continue;
    const json reply = peer->call({{"cmd", "run"}, {"steps", steps}});
    pause();
    if (reply.empty() || !reply.contains("step_s"))
      throw std::runtime_error("PyTorch run failed: " + reply.dump());
    theirs.push_back(reply["step_s"].get<double>());
    ratios.push_back(ours.back() / theirs.back());
  }
  const Summary a = summarise(ours);
  row["tauplan_ms"] = to_json(a, 1e3);
  row["tauplan_samples"] = ours;
  char ours_text[64], theirs_text[64] = "-", ratio_text[32] = "-", pair_text[64] = "-";
  std::snprintf(ours_text, sizeof ours_text, "%.3f [%.3f, %.3f]", a.median * 1e3, a.q25 * 1e3,
                a.q75 * 1e3);
  if (peer) {
    const Summary b = summarise(theirs);
    const Summary q = summarise(ratios);
    row["pytorch_ms"] = to_json(b, 1e3);
    row["pytorch_samples"] = theirs;
    row["ratio_of_medians"] = a.median / b.median;
    row["pair_ratio"] = to_json(q, 1);
    std::snprintf(theirs_text, sizeof theirs_text, "%.3f [%.3f, %.3f]", b.median * 1e3, b.q25 * 1e3,
                  b.q75 * 1e3);
    std::snprintf(ratio_text, sizeof ratio_text, "%.3f", a.median / b.median);
    std::snprintf(pair_text, sizeof pair_text, "%.3f [%.3f, %.3f]", q.median, q.q25, q.q75);
  }
  std::printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s |\n", c.threads, c.batch, steps,
              ours_text, theirs_text, ratio_text, pair_text, c.check.c_str(),
              c.torch_setup.c_str());
  std::fflush(stdout);
}

// The sweep over (threads, batch): the options, the PyTorch child (nullptr: tauplan alone), the
// folder of the files for it, the rows for --json and the exit status so far.
struct Sweep {
  const Options& o;
  PythonPeer* peer;
  std::string folder;
  json rows = json::array();
  int exit_code = 0;
};

// One (threads, batch) configuration sized, checked against PyTorch and timed; its row kept.
// False when the sweep must stop (PyTorch's setup failed).
bool run_config(Sweep& s, int threads, int batch) {
  const Options& o = s.o;
  Config c;
  c.threads = threads;
  c.batch = batch;
  c.w = make_workload(o.widths, batch);
  const Workload& w = c.w;
  auto replica = tauplan::exec::cpu_replica_factory()(w.shape, 0);
  const auto lr = static_cast<float>(o.lr);

  // Equal work: the same loss and gradient from the same parameters and batch.
  replica->set_parameters_from_host(w.params.data());
  c.loss = replica->compute(w.x.data(), w.y.data(), batch);
  c.grads.resize(w.params.size());
  replica->get_gradients_to_host(c.grads.data());

  // Warm up and size a repetition: about rep_ms of tauplan's steps.
  double step_s = time_tauplan(*replica, w, 3, lr);
  c.warm_steps = std::max(3, static_cast<int>(0.2 / step_s));
  step_s = time_tauplan(*replica, w, c.warm_steps, lr);
  c.steps = std::max(3, static_cast<int>(o.rep_ms * 1e-3 / step_s));

  c.row = {
      {"threads", threads}, {"batch", batch}, {"steps_per_rep", c.steps}, {"tauplan_loss", c.loss}};
  if (s.peer) {
    const Checked checked = check_against_pytorch(*s.peer, o, s.folder, c);
    if (checked == Checked::SetupFailed) {
      s.exit_code = 1;
      return false;
    }
    if (checked == Checked::Differ) {
      s.exit_code = 1;
      s.rows.push_back(c.row);
      return true;
    }
  }
  time_and_print(*replica, s.peer, o, c);
  s.rows.push_back(c.row);
  return true;
}

// The load average after, on stdout and in the context; --json written (exit 2 when it cannot
// be); the exit status.
int finish(const Options& o, json& context, const json& rows, int exit_code) {
  context["load_after"] = read_first_line("/proc/loadavg");
  std::printf("\nload average after: %s\n", context["load_after"].get<std::string>().c_str());
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << json{{"context", context}, {"results", rows}}.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_step_vs_pytorch: error: cannot write --json %s\n",
                   o.json_path.c_str());
      return 2;
    }
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::string load_before = read_first_line("/proc/loadavg");
  const char* omp_env = std::getenv("OMP_WAIT_POLICY");  // inherited by PyTorch's OpenMP
  const std::string omp_wait_policy = omp_env ? omp_env : "(unset)";

  const Peer p = start_peer(o);
  json context = make_context(o, p, load_before, omp_wait_policy);
  print_header(o, p, context, load_before, omp_wait_policy);

  char dir_template[] = "/tmp/tauplan-step-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) {
    std::fprintf(stderr, "bench_step_vs_pytorch: error: cannot create a temporary folder\n");
    return 1;
  }
  Sweep s{o, p.peer.get(), dir, json::array(), 0};
  for (const int threads : o.threads) {
    tauplan::exec::set_compute_threads(threads);
    for (const int batch : o.batches)
      if (!run_config(s, threads, batch)) break;
    if (s.exit_code) break;
  }
  for (const char* name : {"params.f32", "x.f32", "y.i32", "grads_torch.f32"})
    std::remove((s.folder + "/" + name).c_str());
  rmdir(s.folder.c_str());
  return finish(o, context, s.rows, s.exit_code);
}
