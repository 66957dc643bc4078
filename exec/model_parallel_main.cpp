// model_parallel_main.cpp: `tauplan_model_parallel`, real tensor- and pipeline-parallel training
// of the MLP on Fashion-MNIST (exec/pipeline_parallel.hpp), one thread per rank, or one MPI
// process per rank when started by mpirun.
//
//   tauplan_model_parallel [--tensor T] [--pipeline P] [--data D] [--micro-batches M]
//                          [--schedule 1f1b|gpipe] [--widths 784,256,128,10] [--batch 64]
//                          [--lr 0.1] [--target 0.85] [--max-steps 20000] [--eval-every 100]
//                          [--seed 1] [--test-limit N] [--data-dir DIR] [--synthetic] [--json]
//   mpirun -np 4 tauplan_model_parallel --tensor 2 --pipeline 2 ...
//
// Prints a summary (or the report as JSON): steps and test accuracy, the median step time of the
// slowest rank, and each rank's stage, shard, median step, compute and communication. Bad
// arguments are one line naming the flag, exit 2. What it leaves out: everything the engine
// leaves out (pipeline_parallel.hpp); `tauplan measure` does not run
// layouts, and this program is how they are measured.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "exec/dataset.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/mpi_peers.hpp"
#include "exec/pipeline_parallel.hpp"
#include "model/base/error.hpp"
#include "model/ir/result.hpp"

using namespace tauplan;

namespace {

long long whole(const std::string& flag, const std::string& text, long long least) {
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= least) return value;
  } catch (const std::exception&) {
  }
  throw InputError("<command line>", flag, "a whole number >= " + std::to_string(least),
                   "'" + text + "'");
}

double number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw InputError("<command line>", flag, "a number >= 0", "'" + text + "'");
}

int run(int argc, char** argv) {
  exec::ModelParallelOptions o;
  o.target_accuracy = 0.85;
  o.max_steps = 20000;
  exec::DatasetOptions data_options;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError("<command line>", flag, "a value", "nothing");
      return argv[++i];
    };
    if (flag == "--tensor") {
      o.tensor = static_cast<int>(whole(flag, value(), 1));
    } else if (flag == "--pipeline") {
      o.pipeline = static_cast<int>(whole(flag, value(), 1));
    } else if (flag == "--data") {
      o.data = static_cast<int>(whole(flag, value(), 1));
    } else if (flag == "--micro-batches") {
      o.micro_batches = static_cast<int>(whole(flag, value(), 1));
    } else if (flag == "--schedule") {
      const std::string s = value();
      if (s != "1f1b" && s != "gpipe")
        throw InputError("<command line>", flag, "1f1b or gpipe", "'" + s + "'");
      o.schedule =
          s == "gpipe" ? model::PipelineSchedule::GPipe : model::PipelineSchedule::OneFOneB;
    } else if (flag == "--widths") {
      o.shape.widths.clear();
      std::stringstream in(value());
      std::string item;
      while (std::getline(in, item, ','))
        o.shape.widths.push_back(static_cast<int>(whole(flag, item, 1)));
      if (o.shape.widths.size() < 2)
        throw InputError("<command line>", flag, "an input and an output width at least");
    } else if (flag == "--batch") {
      o.batch = whole(flag, value(), 1);
    } else if (flag == "--lr") {
      o.learning_rate = static_cast<float>(number(flag, value()));
    } else if (flag == "--target") {
      o.target_accuracy = number(flag, value());
    } else if (flag == "--max-steps") {
      o.max_steps = whole(flag, value(), 1);
    } else if (flag == "--eval-every") {
      o.eval_every = whole(flag, value(), 1);
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(whole(flag, value(), 0));
    } else if (flag == "--test-limit") {
      o.test_limit = whole(flag, value(), 1);
    } else if (flag == "--data-dir") {
      data_options.dir = value();
    } else if (flag == "--synthetic") {
      data_options.allow_synthetic = true;
      data_options.dir = "/nonexistent";
    } else if (flag == "--json") {
      json = true;
    } else {
      throw InputError("<command line>", flag, "a flag of tauplan_model_parallel (see its header)",
                       "an unknown flag");
    }
  }
  exec::check_model_parallel(o);
  data_options.key = "--data-dir";
  const exec::Dataset data = exec::load_dataset(data_options);
  if (data.features != o.shape.inputs() || data.classes != o.shape.classes())
    throw InputError("<command line>", "--widths",
                     "the data set's " + std::to_string(data.features) + " inputs and " +
                         std::to_string(data.classes) + " classes at the ends");

  exec::ModelParallelReport report;
  bool print = true;
  if (exec::launched_by_mpi_launcher()) {
    exec::MpiSession session(&argc, &argv);
    exec::MpiPeers peers;
    report = exec::train_model_parallel(o, data, peers);
    print = peers.rank() == 0;
  } else {
    report = exec::train_model_parallel_threads(o, data);
  }
  if (!print) return 0;
  nlohmann::json document = report.to_json();
  document["context"] = {{"program", "tauplan_model_parallel"},
                         {"version", model::tauplan_version()},
                         {"commit", model::tauplan_git_commit()},
                         {"date", model::utc_now_iso8601()},
                         {"engine", "exec-cpu"}};
  document["data"] = {{"name", data.name}, {"source", data.source}, {"synthetic", data.synthetic}};
  document["mlp"] = o.shape.to_string();
  document["batch"] = o.batch;
  document["learning_rate"] = o.learning_rate;
  document["seed"] = o.seed;
  document["target_accuracy"] = o.target_accuracy;
  if (json) {
    std::cout << document.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "%s on %s, MLP %s, batch %lld, lr %g, %s: %lld steps, test accuracy %.4f (%s "
      "target %.2f), %.2f s training, median step of the slowest rank %.3f ms\n",
      report.label.c_str(), data.name.c_str(), o.shape.to_string().c_str(), o.batch,
      static_cast<double>(o.learning_rate), report.transport.c_str(), report.steps, report.accuracy,
      report.reached_target ? "reached" : "did not reach", o.target_accuracy, report.wall_s,
      report.step_s * 1e3);
  std::printf("%5s %5s %6s %5s %12s %12s %12s %11s %7s\n", "rank", "data", "tensor", "stage",
              "step ms", "compute ms", "comm ms", "allreduces", "sends");
  for (const auto& r : report.ranks)
    std::printf("%5d %5d %6d %5d %12.3f %12.3f %12.3f %11lld %7lld\n", r.rank, r.data_index,
                r.tensor_index, r.stage, r.step_s * 1e3, r.compute_s * 1e3, r.comm_s * 1e3,
                r.tensor_allreduces, r.messages);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "tauplan_model_parallel: error: %s\n", e.what());
    return kExitBadInput;
  }
}
