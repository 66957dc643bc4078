// mpi_stub.cpp: the MPI communicator's entry points in a build without MPI.
//
// Compiled instead of mpi_communicator.cpp when CMake finds no MPI: asking for MPI is then a
// clear InputError rather than a link error. What it leaves out: everything MPI does.
#include <cstdlib>
#include <stdexcept>

#include "exec/mpi_communicator.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {

bool mpi_compiled() {
  return false;
}

std::string mpi_tcp_progress() {
  return "";
}

std::string mpi_process_host() {
  return "";
}

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

MpiSession::MpiSession(int* /*argc*/, char*** /*argv*/) {
  throw std::runtime_error("tauplan was built without MPI");
}
MpiSession::~MpiSession() = default;
int MpiSession::rank() const {
  return 0;
}
int MpiSession::size() const {
  return 1;
}
void MpiSession::broadcast(void* /*data*/, int /*bytes*/, int /*root*/) const {}
void MpiSession::barrier(bool /*deadline*/) const {}
void MpiSession::set_wait_timeout(double /*seconds*/) const {}

struct MpiCommunicator::State {};

MpiCommunicator::MpiCommunicator(const model::Plan& /*plan*/, const model::Platform& /*platform*/,
                                 const KeyOrigins& origins) {
  throw InputError(origins.of("communicator"), "threads (this tauplan was built without MPI)",
                   "mpi");
}
MpiCommunicator::~MpiCommunicator() = default;
bool MpiCommunicator::is_server() const {
  return false;
}
PeerGroup& MpiCommunicator::worker_peers() {
  throw std::logic_error("tauplan was built without MPI");
}
std::vector<TraceEvent> MpiCommunicator::serve(long long /*trace_rounds*/,
                                               ServerProcessing* /*processing*/) {
  return {};
}
int MpiCommunicator::rank() const {
  return 0;
}
int MpiCommunicator::size() const {
  return 1;
}
int MpiCommunicator::workers() const {
  return 1;
}
int MpiCommunicator::local_workers() const {
  return 1;
}
int MpiCommunicator::first_local_worker() const {
  return 0;
}
void MpiCommunicator::combine(const std::vector<float*>& /*local_buffers*/,
                              const std::vector<double>& /*local_weights*/, std::size_t /*n*/,
                              CombineRule /*rule*/) {}
void MpiCommunicator::combine_group(const std::vector<int>& /*group*/,
                                    const std::vector<float*>& /*member_buffers*/,
                                    const std::vector<double>& /*member_weights*/,
                                    std::size_t /*n*/, CombineRule /*rule*/) {}
void MpiCommunicator::make_subgroups(const model::Plan& /*plan*/,
                                     const model::Platform& /*platform*/,
                                     const KeyOrigins& /*origins*/) {}
void MpiCommunicator::barrier() {}
double MpiCommunicator::max_all(double value) {
  return value;
}
std::vector<double> MpiCommunicator::all_gather(const std::vector<double>& values) {
  return values;
}
void MpiCommunicator::align_start() {}
std::chrono::steady_clock::time_point MpiCommunicator::agree_round_start() {
  return std::chrono::steady_clock::now();
}
void MpiCommunicator::finish() {}
std::vector<std::string> MpiCommunicator::gather_to_first(const std::string& text) {
  return {text};
}
bool MpiCommunicator::combines_from_second_thread() const {
  return false;
}
long long MpiCommunicator::messages_sent() const {
  return 0;
}
std::vector<std::string> MpiCommunicator::process_hosts() const {
  return {};
}

}  // namespace tauplan::exec
