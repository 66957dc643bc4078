// transformer_measure.hpp: `tauplan measure` of a transformer workload: its shape trained for
// real as exec's decoder block (exec/transformer_trainer.hpp), once per strategy.
//
// The workload's `transformer:` map becomes a BlockConfig; what the block cannot be (rotary
// positions, embeddings tied to the head, biases in the linear layers, BERT's token types and
// task heads, other than 4 bytes per parameter) is refused naming the workload file and key.
// Strategies: single (one worker), sync (K data-parallel workers, gradients combined through a
// Communicator: the shared-memory threads one, thread-messages or MPI, which run the plan's
// collective algorithm) and mesh (the job's data x tensor x pipeline layout, micro-batches and
// schedule); the Plan is made by the model's generators first, so that a layout the model
// refuses (tensor_parallel not dividing the heads ...) is refused here too, and mesh's ranks
// each run their part of that Plan (a Plan a rank cannot run is refused before training,
// naming `strategies`). Every run is threads in this process, or under mpirun one MPI process
// per rank of mesh's layout, per worker of sync (and per server of ps and sparknet, whose
// processing the row's `servers` gives, as the MLP's rows do), single on rank 0 alone; on the
// wall clock (timing: concurrent), Adam at the job's learning_rate, max_steps steps of the job's
// batch (global, in sequences) from the synthetic token stream of the job's seed. The row's round
// is the median over steps of the slowest rank's step, its compute and communication that rank's
// medians; the loss (first step, mean of the last tenth of the steps, the stream's entropy floor,
// log vocabulary) and the loss of every step are in its extra. What it leaves out: CUDA
// (refused), local SGD and the asynchronous strategies (refused), a target loss (it runs
// max_steps), and trace spans.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "exec/mpi_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec/transformer_config.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"

namespace tauplan::exec {

/// The decoder block of a transformer workload (micro_batch and tensor left at 1): InputError
/// naming the workload's file and the `transformer.` key exec's block cannot follow.
BlockConfig transformer_block_config(const model::Workload& workload);

/// Measures every strategy of the job on a transformer workload (workload.transformer set).
std::vector<Measurement> measure_transformer(const model::Job& job, const model::Workload& workload,
                                             const model::Platform& platform,
                                             const std::vector<std::string>& strategies,
                                             MpiSession* mpi, std::ostream* log);

}  // namespace tauplan::exec
