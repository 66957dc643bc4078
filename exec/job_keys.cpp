// job_keys.cpp: exec's key table and its reading into ExecSettings.
#include "exec/job_keys.hpp"

#include <cmath>

#include "model/base/error.hpp"

namespace tauplan::exec {

std::vector<model::KeySpec> exec_job_keys() {
  using model::KeySpec;
  using model::KeyType;
  std::vector<KeySpec> keys;
  auto add = [&keys](const char* name, KeyType type, const char* value, const char* help,
                     std::vector<std::string> choices = {}, double min = -1e300, double max = 1e300,
                     bool min_exclusive = false) {
    KeySpec spec;
    spec.name = name;
    spec.type = type;
    spec.default_value = value;
    spec.help = help;
    spec.choices = std::move(choices);
    spec.min_value = min;
    spec.max_value = max;
    spec.min_exclusive = min_exclusive;
    keys.push_back(std::move(spec));
  };
  add("target_accuracy", KeyType::Real, "0.85",
      "measure: stop when test accuracy reaches this (0 < a <= 1)", {}, 0, 1, true);
  add("learning_rate", KeyType::Real, "0.1", "measure: SGD learning rate", {}, 0, 1e300, true);
  add("max_steps", KeyType::Integer, "20000",
      "measure: SGD steps per worker before giving up on the target", {}, 1);
  add("eval_every", KeyType::Integer, "100",
      "measure: evaluate test accuracy every this many steps per worker (rounded up to rounds)", {},
      1);
  // At most a million samples: Fashion-MNIST has 60,000; a synthetic stand-in of more would
  // not fit in memory (784 floats a sample).
  constexpr double kMaxSamples = 1e6;
  add("eval_samples", KeyType::Integer, "0", "measure: test samples per evaluation (0: all)", {}, 0,
      kMaxSamples);
  add("train_samples", KeyType::Integer, "0", "measure: training samples to use (0: all)", {}, 0,
      kMaxSamples);
  add("timing", KeyType::Text, "lockstep",
      "measure: lockstep (workers one after another, virtual clock) or concurrent (threads or "
      "MPI ranks at once, barrier-aligned rounds, wall clock)",
      {"lockstep", "concurrent"});
  add("lockstep_clock", KeyType::Text, "thread-cpu",
      "measure: in lockstep, time CPU work by the worker thread's CPU time (robust to other "
      "processes) or by the wall clock",
      {"thread-cpu", "wall"});
  add("combine", KeyType::Text, "mean",
      "measure: how workers' vectors are combined: mean (SparkNet) or adasum", {"mean", "adasum"});
  add("device", KeyType::Text, "cpu", "measure: cpu (Eigen) or cuda (cuBLAS)", {"cpu", "cuda"});
  add("communicator", KeyType::Text, "auto",
      "measure: auto (mpi under mpirun, else threads on cpu, device on cuda), threads (shared-"
      "memory reduction), thread-messages (the plan's collective algorithm as messages between "
      "threads), mpi, device (K workers on one GPU) or nccl (one GPU per worker)",
      {"auto", "threads", "thread-messages", "mpi", "device", "nccl"});
  add("hidden", KeyType::TextList, "256,128", "measure: hidden layer widths of the MLP");
  add("data_dir", KeyType::Path, "",
      "measure: folder with the Fashion-MNIST IDX files (default $TAUPLAN_DATA_DIR, else "
      "/usr/share/datasets/fashion-mnist)");
  add("allow_synthetic", KeyType::Boolean, "false",
      "measure: train on a synthetic task when Fashion-MNIST is absent");
  add("emulate_slowdown", KeyType::Boolean, "true",
      "measure: slow each worker down by the platform's relative host speed (emulated)");
  add("trace_rounds", KeyType::Integer, "20", "measure: rounds recorded in --trace", {}, 0);
  add("mpi_timeout_s", KeyType::Seconds, "300",
      "measure under MPI: end the run (exit 4) when a rank waits longer than this for the "
      "others; must exceed a round's compute plus an evaluation",
      {}, 0, 1e9, true);
  for (KeySpec& spec : keys)  // training settings: no other engine reads them
    spec.read_by = {"exec"};
  return keys;
}

ExecSettings exec_settings(const model::Job& job) {
  ExecSettings s;
  TrainOptions& t = s.train;
  t.origins = job.origins();
  t.target_accuracy = job.real("target_accuracy");
  t.learning_rate = job.real("learning_rate");
  t.max_steps = job.integer("max_steps");
  t.eval_every_steps = job.integer("eval_every");
  t.eval_samples = job.integer("eval_samples");
  if (!parse_timing(job.text("timing"), t.timing))
    throw InputError(job.origin_of("timing"), "lockstep or concurrent", job.text("timing"));
  if (!parse_combine_rule(job.text("combine"), t.combine))
    throw InputError(job.origin_of("combine"), "mean or adasum", job.text("combine"));
  t.clock = job.text("lockstep_clock") == "wall" ? ComputeClock::Wall : ComputeClock::ThreadCpu;
  t.emulate_slowdown = job.boolean("emulate_slowdown");
  t.trace_rounds = job.integer("trace_rounds");
  t.seed = job.has("seed") ? static_cast<std::uint64_t>(job.integer("seed")) : 1;
  s.device = job.text("device") == "cuda" ? Device::Cuda : Device::Cpu;
  t.engine = s.device == Device::Cuda ? "exec-cuda" : "exec-cpu";
  s.communicator = job.text("communicator");
  s.mpi_timeout_s = job.real("mpi_timeout_s");

  s.hidden.clear();
  for (const std::string& item : job.list("hidden")) {
    std::size_t used = 0;
    long width = 0;
    try {
      width = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || width < 1 || width > 1000000)
      throw InputError(job.origin_of("hidden"), "layer widths as whole numbers >= 1",
                       "'" + item + "'");
    s.hidden.push_back(static_cast<int>(width));
  }

  DatasetOptions& d = s.data;
  d.origins = job.origins();
  d.key = "data_dir";
  if (job.has("data_dir") && !job.text("data_dir").empty()) d.dir = job.path("data_dir");
  d.allow_synthetic = job.boolean("allow_synthetic");
  d.train_limit = job.integer("train_samples");
  d.synthetic.seed = t.seed;
  return s;
}

MlpShape mlp_shape(const std::vector<int>& hidden, const Dataset& data) {
  MlpShape shape;
  shape.widths.clear();
  shape.widths.push_back(data.features);
  for (int h : hidden)
    shape.widths.push_back(h);
  shape.widths.push_back(data.classes);
  return shape;
}

}  // namespace tauplan::exec
