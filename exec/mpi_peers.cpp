// mpi_peers.cpp: MPI_Isend / MPI_Recv behind PeerGroup; a stub that throws without MPI.
#include "exec/mpi_peers.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

#ifdef TAUPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace tauplan::exec {

#ifdef TAUPLAN_HAVE_MPI

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

struct MpiPeers::Pending {
  std::vector<char> data;     // send_message's
  std::vector<float> floats;  // send's
  MPI_Request request = MPI_REQUEST_NULL;
};

MpiPeers::MpiPeers() {
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiPeers::~MpiPeers() {
  try {
    reclaim(true);
  } catch (...) {  // a destructor does not throw; MPI reports its own errors
  }
}

void MpiPeers::reclaim(bool wait) {
  while (!pending_.empty()) {
    Pending& oldest = *pending_.front();
    if (wait) {
      check(MPI_Wait(&oldest.request, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
      int done = 0;
      check(MPI_Test(&oldest.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) return;
    }
    pending_.pop_front();
  }
}

void MpiPeers::send(int to, const float* data, std::size_t n, int tag) {
  reclaim(false);
  auto pending = std::make_unique<Pending>();
  pending->floats.assign(data, data + n);
  check(MPI_Isend(pending->floats.data(), as_count(n), MPI_FLOAT, to, tag, MPI_COMM_WORLD,
                  &pending->request),
        "MPI_Isend");
  pending_.push_back(std::move(pending));
}

void MpiPeers::recv(int from, float* data, std::size_t n, int tag) {
  check(MPI_Recv(data, as_count(n), MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiPeers::send_message(int to, std::vector<char> message, int tag) {
  reclaim(false);
  auto pending = std::make_unique<Pending>();
  pending->data = std::move(message);
  check(MPI_Isend(pending->data.data(), as_count(pending->data.size()), MPI_BYTE, to, tag,
                  MPI_COMM_WORLD, &pending->request),
        "MPI_Isend");
  pending_.push_back(std::move(pending));
}

PeerEnvelope MpiPeers::recv_any(int from, int tag, std::vector<char>& message) {
  MPI_Status status;
  check(MPI_Probe(from == kAnySource ? MPI_ANY_SOURCE : from, tag == kAnyTag ? MPI_ANY_TAG : tag,
                  MPI_COMM_WORLD, &status),
        "MPI_Probe");
  int bytes = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
  message.resize(static_cast<std::size_t>(bytes));
  check(MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE),
        "MPI_Recv");
  return PeerEnvelope{status.MPI_SOURCE, status.MPI_TAG, message.size()};
}

void MpiPeers::barrier() {
  reclaim(true);
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

#else

struct MpiPeers::Pending {};

MpiPeers::MpiPeers() {
  throw std::runtime_error("tauplan was built without MPI");
}
MpiPeers::~MpiPeers() = default;
void MpiPeers::reclaim(bool /*wait*/) {}
void MpiPeers::send(int /*to*/, const float* /*data*/, std::size_t /*n*/, int /*tag*/) {}
void MpiPeers::recv(int /*from*/, float* /*data*/, std::size_t /*n*/, int /*tag*/) {}
void MpiPeers::send_message(int /*to*/, std::vector<char> /*message*/, int /*tag*/) {}
PeerEnvelope MpiPeers::recv_any(int /*from*/, int /*tag*/, std::vector<char>& /*message*/) {
  return {};
}
void MpiPeers::barrier() {}

#endif

}  // namespace tauplan::exec
