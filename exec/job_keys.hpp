// job_keys.hpp: the job keys exec/ understands, and a job read into exec's settings.
//
// exec adds its own keys to the model's table (job.hpp): the target test accuracy, learning
// rate, step limit, evaluation interval, timing mode, combine rule, device (cpu or cuda), the
// communicator and its MPI deadline, the MLP's hidden widths and where the data comes from. Every
// key is also a CLI flag. What it leaves out: the model's keys (workload, platform, strategies,
// workers, batch, tau, split, collective, seed), which model::strategy_options reads.
#pragma once

#include <string>
#include <vector>

#include "exec/dataset.hpp"
#include "exec/mlp.hpp"
#include "exec/trainer.hpp"
#include "model/ir/job.hpp"

namespace tauplan::exec {

enum class Device { Cpu, Cuda };

struct ExecSettings {
  TrainOptions train;
  DatasetOptions data;
  std::vector<int> hidden{256, 128};  ///< hidden widths; input and output come from the data
  Device device = Device::Cpu;
  std::string communicator = "auto";  ///< auto | threads | mpi | device | nccl
  double mpi_timeout_s = 300;         ///< longest MPI wait before the run is ended
};

std::vector<model::KeySpec> exec_job_keys();
/// Reads exec's keys (and `seed`) from a job loaded with exec_job_keys() among its specs.
ExecSettings exec_settings(const model::Job& job);
/// The MLP for a data set: data.features, the hidden widths, data.classes.
MlpShape mlp_shape(const std::vector<int>& hidden, const Dataset& data);

}  // namespace tauplan::exec
