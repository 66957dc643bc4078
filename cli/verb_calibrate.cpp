// verb_calibrate.cpp: `tauplan calibrate [--device cpu] [--out FILE] [--json]`, this machine as
// a platform.
//
// Measures, on this machine, the fashion-mlp training step (forward + backward + SGD update) of
// one worker at batch sizes 8..256 and the thread communicator's weighted-mean combine of K
// buffers at 1e3..1e7 floats (median of --repeats samples of at least 5 ms each), fits C(b) =
// overhead + b x per-sample cost and T(S) = alpha + S / beta (model/calibration.hpp), writes the
// SimGrid platform of K such workers (--out, default results/calibration/this-machine.xml), loads
// it back through sim/'s loader as a check, and prints the fits (a table, or JSON with --json).
// `--check FILE` only reads a calibration file's props and reports them (exit 2 if broken).
// What it leaves out: the CUDA device and the MPI/NCCL communicators, job files (K comes from
// --workers), and GPU props (efficiency, precision).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/verb.hpp"
#include "exec/mlp.hpp"
#include "exec/thread_communicator.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/workload.hpp"
#include "sim/platform_loader.hpp"

namespace tauplan::cli {

namespace {

struct CalibrateArgs {
  std::string device = "cpu";
  std::string out = "results/calibration/this-machine.xml";
  std::string check;
  bool json = false;
  int workers = 8;
  int repeats = 7;
  double max_floats = 1e7;
};

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Seconds per call of `f`, called back to back until at least kMinSample_s have passed, so that
// sub-millisecond calls are not timed one at a time.
constexpr double kMinSample_s = 0.005;
template <typename F>
double per_call_s(F&& f) {
  const auto t0 = Clock::now();
  int calls = 0;
  double elapsed = 0;
  do {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < kMinSample_s);
  return elapsed / calls;
}

// Median seconds of one fashion-mlp step (forward + backward + update) at batch `b`.
double time_step(exec::Mlp& mlp, int b, int repeats, std::mt19937& rng) {
  const int in = mlp.shape().inputs();
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> label(0, mlp.shape().classes() - 1);
  std::vector<float> x(static_cast<std::size_t>(b) * static_cast<std::size_t>(in));
  std::vector<int> y(static_cast<std::size_t>(b));
  for (float& v : x)
    v = pixel(rng);
  for (int& v : y)
    v = label(rng);
  mlp.forward_backward(x.data(), y.data(), b);  // warm-up: workspaces sized, caches filled
  mlp.sgd_step(1e-3f);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r)
    times.push_back(per_call_s([&] {
      mlp.forward_backward(x.data(), y.data(), b);
      mlp.sgd_step(1e-3f);
    }));
  return median(times);
}

// Median seconds of one thread-communicator combine of `workers` buffers of `n` floats.
double time_combine(int workers, std::size_t n, int repeats) {
  exec::ThreadCommunicator comm(workers);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(workers),
                                       std::vector<float>(n, 1.0f));
  std::vector<float*> buffers;
  for (auto& d : data)
    buffers.push_back(d.data());
  const std::vector<double> weights(static_cast<std::size_t>(workers), 1.0);
  comm.combine(buffers, weights, n, exec::CombineRule::Mean);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r)
    times.push_back(
        per_call_s([&] { comm.combine(buffers, weights, n, exec::CombineRule::Mean); }));
  return median(times);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

nlohmann::json fit_json(const model::LinearFit& fit) {
  return {{"intercept", fit.intercept},
          {"slope", fit.slope},
          {"r2", fit.r2},
          {"residuals", fit.residuals}};
}

void check_file(const CalibrateArgs& a) {
  const model::Platform platform = sim::load_platform(a.check);
  const model::Calibration c = model::read_calibration(platform);
  if (a.json) {
    std::cout << nlohmann::json{{"file", a.check},
                                {"workers", c.hosts},
                                {"step_overhead_s", c.step_overhead_s},
                                {"r2_compute", c.r2_compute},
                                {"r2_comm", c.r2_comm},
                                {"calibrated_from", c.calibrated_from},
                                {"date", c.date}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format(
        "{}: {} calibrated workers, step_overhead_s {:.6g}, R^2 compute {:.6f}, "
        "comm {:.6f} ({}, {})\n",
        a.check, c.hosts, c.step_overhead_s, c.r2_compute, c.r2_comm, c.calibrated_from, c.date);
  }
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.check.empty()) return check_file(a);
  const std::string origin = "<command line>";
  if (a.device != "cpu")
    throw InputError(origin, "device", "cpu (calibration of cuda is not implemented yet)",
                     a.device);
  if (a.workers < 1)
    throw InputError(origin, "workers", "a whole number >= 1", std::to_string(a.workers));
  if (a.repeats < 1)
    throw InputError(origin, "repeats", "a whole number >= 1", std::to_string(a.repeats));
  if (!(a.max_floats >= 1e3))
    throw InputError(origin, "max-floats", "a number >= 1000", fmt::format("{}", a.max_floats));

  const model::Workload workload = model::load_workload("fashion-mlp");
  exec::Mlp mlp(exec::MlpShape{});
  mlp.init(1);
  std::mt19937 rng(1);
  std::vector<double> batches;
  std::vector<double> step_s;
  for (int b : {8, 16, 32, 64, 128, 256}) {
    batches.push_back(b);
    step_s.push_back(time_step(mlp, b, a.repeats, rng));
  }
  const model::LinearFit compute = model::fit_line(batches, step_s, "compute fit");
  if (!(compute.slope > 0))
    throw std::runtime_error("calibrate: the step time did not grow with the batch size");

  std::vector<double> bytes;
  std::vector<double> combine_s;
  for (double n = 1e3; n <= a.max_floats * (1 + 1e-9); n *= 10) {
    const auto floats = static_cast<std::size_t>(n);
    bytes.push_back(static_cast<double>(floats * sizeof(float)));
    combine_s.push_back(time_combine(a.workers, floats, a.repeats));
  }
  const model::LinearFit comm = model::fit_line(bytes, combine_s, "combine fit");
  if (!(comm.slope > 0))
    throw std::runtime_error("calibrate: the combine time did not grow with the size");

  // A negative intercept is noise around a latency too small to resolve; say so and use 0.
  if (compute.intercept < 0)
    std::cerr << fmt::format("calibrate: step overhead fitted as {:.3g} s < 0, written as 0\n",
                             compute.intercept);
  if (comm.intercept < 0)
    std::cerr << fmt::format("calibrate: combine alpha fitted as {:.3g} s < 0, written as 0\n",
                             comm.intercept);

  model::Calibration c;
  c.hosts = a.workers;
  c.flop_per_sample = workload.flop_per_sample;
  c.step_overhead_s = std::max(0.0, compute.intercept);
  c.per_sample_s = compute.slope;
  c.r2_compute = compute.r2;
  c.alpha_s = std::max(0.0, comm.intercept);
  c.beta_Bps = 1.0 / comm.slope;
  c.r2_comm = comm.r2;
  c.calibrated_from = fmt::format("fashion-mlp {} step on cpu, threads communicator K={}",
                                  exec::MlpShape{}.to_string(), a.workers);
  c.date = utc_now();

  const std::filesystem::path out(a.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  {
    std::ofstream file(out);
    if (!file) throw InputError(origin, "out", "a writable file", a.out);
    file << model::calibration_xml(c);
  }
  // The file must load like any platform and carry readable calibration props.
  const model::Calibration back = model::read_calibration(sim::load_platform(a.out));
  if (back.hosts != c.hosts)
    throw std::runtime_error("calibrate: the written platform reads back wrong");

  if (a.json) {
    nlohmann::json j{{"out", a.out},
                     {"date", c.date},
                     {"calibrated_from", c.calibrated_from},
                     {"workers", c.hosts},
                     {"repeats", a.repeats},
                     {"compute", fit_json(compute)},
                     {"batches", batches},
                     {"step_s", step_s},
                     {"step_overhead_s", c.step_overhead_s},
                     {"per_sample_s", c.per_sample_s},
                     {"flop_per_sample", c.flop_per_sample},
                     {"speed_flops", c.speed_flops()},
                     {"comm", fit_json(comm)},
                     {"bytes", bytes},
                     {"combine_s", combine_s},
                     {"alpha_s", c.alpha_s},
                     {"beta_Bps", c.beta_Bps}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "compute  C(b) = {:.4g} s + b x {:.4g} s  (R^2 {:.5f}; {:.4g} flop/s)\n"
        "combine  T(S) = {:.4g} s + S / {:.4g} B/s  (R^2 {:.5f}; K = {})\n"
        "wrote {}\n",
        c.step_overhead_s, c.per_sample_s, c.r2_compute, c.speed_flops(), c.alpha_s, c.beta_Bps,
        c.r2_comm, c.hosts, a.out);
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* verb = app.add_subcommand(
      "calibrate", "measure this machine (C(b) and combine fits) and write it as a platform XML");
  verb->add_option("--device", args->device, "cpu (default)");
  verb->add_option("--out", args->out, "platform XML to write (default " + args->out + ")");
  verb->add_option("--workers", args->workers, "K: hosts in the platform and buffers per combine");
  verb->add_option("--repeats", args->repeats, "timed runs per point (median), default 7");
  verb->add_option("--max-floats", args->max_floats, "largest combine in floats, default 1e7");
  verb->add_option("--check", args->check, "only read and check a calibration platform FILE");
  verb->add_flag("--json", args->json, "print a JSON summary");
  verb->callback([args] { run_calibrate(*args); });
}

static const VerbRegistration kRegistration{35, register_calibrate};

}  // namespace tauplan::cli
