// measure_test.cpp: jobs read into exec settings, `measure` end to end on synthetic data, result
// rows and traces, and the bad inputs of a measure job.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "exec/job_keys.hpp"
#include "exec/measure.hpp"
#include "exec/report.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

using test::job_from;

namespace {

const std::string kQuickJob =
    "workers: 2\nbatch: 16\ntau: 2\nhidden: [16]\nmax_steps: 8\neval_every: 4\n"
    "data_dir: /nonexistent/fashion\nallow_synthetic: true\ntrain_samples: 400\n"
    "eval_samples: 100\ntarget_accuracy: 0.99\ntrace_rounds: 1\n";

MeasureRun quick_measure(const std::map<std::string, std::string>& flags,
                         const std::vector<std::string>& strategies) {
  const model::Job job = job_from(kQuickJob, flags);
  // 64 identical hosts, so that only exec (never the plan generator) can refuse a large K.
  return measure(job, test::tiny_workload(),
                 test::platform_with_speeds(std::vector<double>(64, 1e9)), strategies, nullptr,
                 nullptr);
}

}  // namespace

TEST_CASE("exec keys are read from a job", "[exec][measure]") {
  const ExecSettings s = exec_settings(job_from(
      "hidden: [64, 32]\ntiming: concurrent\ncombine: adasum\nlearning_rate: 0.2\nseed: 9\n"));
  CHECK(s.hidden == std::vector<int>{64, 32});
  CHECK(s.train.timing == Timing::Concurrent);
  CHECK(s.train.combine == CombineRule::Adasum);
  CHECK(s.train.learning_rate == 0.2);
  CHECK(s.train.seed == 9);
  CHECK(s.train.engine == "exec-cpu");
  CHECK(s.device == Device::Cpu);
  CHECK_THROWS_AS(exec_settings(job_from("hidden: [64, x]\n")), InputError);
  CHECK_THROWS_AS(job_from("timing: fast\n"), InputError);
}

TEST_CASE("measure runs single, sync and local-sgd and reports them", "[exec][measure]") {
  const MeasureRun run = quick_measure({}, {"single", "sync", "local-sgd"});
  REQUIRE(run.measurements.size() == 3);
  CHECK(run.reporter);
  const Measurement& local = run.measurements[2];
  CHECK(local.strategy == "local-sgd");
  CHECK(local.synthetic);
  CHECK(local.communicator == "threads");
  CHECK(local.steps == 8);
  CHECK(local.rounds == 4);

  const model::ResultRow row = to_result_row(local);
  CHECK(row.engine == "exec-cpu");
  CHECK(row.timing == "lockstep");
  CHECK(row.workers == 2);
  CHECK(row.tau == 2);
  CHECK(row.rounds == 4);
  CHECK(row.total_s == Approx(row.round_s * 4));
  CHECK(row.extra.at("dataset") == "synthetic-gaussian-mixture");
  CHECK(row.extra.at("synthetic_data") == true);
  CHECK(row.extra.at("combine") == "mean");
  CHECK(row.extra.at("per_worker").size() == 2);
  CHECK(row.extra.at("per_worker")[0].contains("C_s"));
  CHECK(row.extra.at("accuracy_curve").size() == 2);
  CHECK(row.extra.at("rounds_to_target").is_null());  // 0.99 is out of reach in 8 steps

  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(run.measurements).json());
  int complete = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") ++complete;
  CHECK(complete > 0);
  std::ostringstream out;
  write_chrome_trace(run.measurements, out);
  CHECK(nlohmann::json::parse(out.str()).contains("traceEvents"));
}

TEST_CASE("bad measure inputs are InputErrors", "[exec][measure]") {
  // The keys below are given as flags (quick_measure's overrides): an error names the flag.
  const auto key_is = [](const char* key) {
    return Catch::Predicate<InputError>(
        [key](const InputError& e) { return e.key() == key || e.key() == std::string("--") + key; },
        std::string("key ") + key);
  };
  SECTION("missing data and no fallback") {
    CHECK_THROWS_MATCHES(quick_measure({{"allow_synthetic", "false"}}, {"single"}), InputError,
                         key_is("data_dir"));
  }
  SECTION("communicator mpi without an MPI launcher") {
    CHECK_THROWS_MATCHES(quick_measure({{"communicator", "mpi"}}, {"sync"}), InputError,
                         key_is("communicator"));
  }
  SECTION("a GPU communicator on the CPU") {
    CHECK_THROWS_MATCHES(quick_measure({{"communicator", "nccl"}}, {"sync"}), InputError,
                         key_is("communicator"));
  }
  SECTION("a batch larger than the data") {
    CHECK_THROWS_MATCHES(quick_measure({{"batch", "500"}}, {"sync"}), InputError, key_is("batch"));
  }
  SECTION("more NCCL workers than GPUs, or no CUDA at all") {
    // Tests never assume a GPU: 64 NCCL ranks (one GPU each) cannot be met on any test machine.
    const auto device_or_workers = Catch::Predicate<InputError>(
        [](const InputError& e) { return e.key() == "--device" || e.key() == "--workers"; },
        "key device (no CUDA or no GPU) or workers (too few GPUs)");
    CHECK_THROWS_MATCHES(
        quick_measure(
            {{"device", "cuda"}, {"communicator", "nccl"}, {"workers", "64"}, {"batch", "64"}},
            {"sync"}),
        InputError, device_or_workers);
  }
}

TEST_CASE(
    "trace events survive serialisation, and a collective's flows sum every process's "
    "messages",
    "[exec][measure]") {
  TraceEvent compute{"w0 forward+backward", "compute", 0, 3, 0.25, 0.5, 1, 0};
  TraceEvent comm0{"all-reduce (ring)", "comm", 0, 3, 0.75, 0.125, 0, 2};
  TraceEvent comm1{"all-reduce (ring)", "comm", 1, 3, 0.75, 0.125, 0, 2};
  TraceEvent server{"all-reduce (ring)", "comm", 2, 3, 0.75, 0.125, 0, 3};
  const std::vector<TraceEvent> parsed =
      parse_trace(serialize_trace({compute, comm0, comm1, server}));
  REQUIRE(parsed.size() == 4);
  CHECK(parsed[0].name == compute.name);
  CHECK(parsed[0].start_s == compute.start_s);
  CHECK(parsed[3].messages == 3);
  CHECK(parsed[3].track == 2);

  Measurement m;
  m.strategy = "sync";
  m.engine = "exec-cpu";
  m.communicator = "mpi";
  m.collective = "ps";
  m.workers = 2;
  m.per_worker.resize(2);
  for (int k = 0; k < 2; ++k) {
    m.per_worker[static_cast<std::size_t>(k)].worker = k;
    m.per_worker[static_cast<std::size_t>(k)].host_name = "h" + std::to_string(k);
  }
  m.server_hosts = {"ps0"};
  m.trace = parsed;
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace({m}).json());
  std::vector<std::string> tracks;
  int comm_spans = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("name") == "thread_name") tracks.push_back(e.at("args").at("name"));
    if (e.at("ph") == "X" && e.at("cat") == "comm") {
      ++comm_spans;
      CHECK(e.at("args").at("flows") == "7");  // 2 + 2 + 3
      CHECK(e.at("ts") == Approx(0.75e6));
      CHECK(e.at("dur") == Approx(0.125e6));
    }
    if (e.at("ph") == "X" && e.at("cat") == "compute")
      CHECK(e.at("args") == nlohmann::json{{"round", "3"}, {"steps", "1"}});
  }
  CHECK(comm_spans == 3);
  CHECK(tracks == std::vector<std::string>{"w0 h0", "w1 h1", "server ps0"});
}
