// mpi_communicator.cpp: MPI_Allreduce on doubles for the mean, Allgather + local tree for
// Adasum. Compiled only when MPI is found.
#include "exec/mpi_communicator.hpp"

#include <mpi.h>

#include <cassert>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "model/error.hpp"

namespace tauplan::exec {
namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

int as_count(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::runtime_error("MPI message too large");
  return static_cast<int>(n);
}

}  // namespace

bool mpi_compiled() {
  return true;
}

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
  }
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

int MpiSession::rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiSession::size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void MpiSession::broadcast(void* data, int bytes, int root) const {
  check(MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

void MpiSession::barrier() const {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

MpiCommunicator::MpiCommunicator(int workers, const std::string& job_file) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (workers != size_)
    throw InputError(
        job_file, "workers",
        "the MPI world size " + std::to_string(size_) + " (one worker per rank: mpirun -np K)",
        std::to_string(workers));
}

void MpiCommunicator::combine(const std::vector<float*>& local_buffers,
                              const std::vector<double>& local_weights, std::size_t n,
                              CombineRule rule) {
  assert(local_buffers.size() == 1 && local_weights.size() == 1);
  float* buffer = local_buffers.front();
  std::vector<double> weights(static_cast<std::size_t>(size_));
  check(MPI_Allgather(local_weights.data(), 1, MPI_DOUBLE, weights.data(), 1, MPI_DOUBLE,
                      MPI_COMM_WORLD),
        "MPI_Allgather");
  if (rule == CombineRule::Mean) {
    double total = 0;
    for (double w : weights)
      total += w;  // rank order, as ThreadCommunicator
    const double scale = local_weights.front() / total;
    sum_.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      sum_[i] = scale * static_cast<double>(buffer[i]);
    check(
        MPI_Allreduce(MPI_IN_PLACE, sum_.data(), as_count(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
    for (std::size_t i = 0; i < n; ++i)
      buffer[i] = static_cast<float>(sum_[i]);
    return;
  }
  gathered_.resize(n * static_cast<std::size_t>(size_));
  check(MPI_Allgather(buffer, as_count(n), MPI_FLOAT, gathered_.data(), as_count(n), MPI_FLOAT,
                      MPI_COMM_WORLD),
        "MPI_Allgather");
  std::vector<const float*> inputs;
  for (int r = 0; r < size_; ++r)
    inputs.push_back(gathered_.data() + n * static_cast<std::size_t>(r));
  combine_adasum(inputs, weights, n, buffer);
}

void MpiCommunicator::barrier() {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

double MpiCommunicator::max_all(double value) {
  double out = value;
  check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

}  // namespace tauplan::exec
