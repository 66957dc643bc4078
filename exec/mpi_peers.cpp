// mpi_peers.cpp: MPI point-to-point calls behind PeerGroup, each blocking one watched (MpiWait);
// a stub that throws without MPI.
#include "exec/mpi_peers.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <limits>
#include <stdexcept>
#include <thread>
#include <utility>

#ifdef TAUPLAN_HAVE_MPI
#include <mpi.h>

#include "exec/mpi_watchdog.hpp"
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
  std::vector<float> floats;  // send's (post_send's buffer is the caller's)
  MPI_Request request = MPI_REQUEST_NULL;
};

struct MpiPeers::Comm {
  MPI_Comm comm = MPI_COMM_WORLD;
  std::vector<MPI_Request> posted_recvs;
  std::deque<Pending> pending;  // sends in flight, oldest first (a deque: they never move)
};

MpiPeers::MpiPeers() : MpiPeers(MPI_COMM_WORLD) {}

MpiPeers::MpiPeers(MPI_Comm comm) : comm_(std::make_unique<Comm>()) {
  comm_->comm = comm;
  check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
}

MpiPeers::~MpiPeers() {
  if (std::uncaught_exceptions() > 0) {
    // While an exception unwinds, another rank may be gone: nothing is waited for (~MpiSession),
    // and the buffers of sends in flight are left to the process's end, where MPI may still read
    // them (a deque's move keeps its elements where they are).
    static_cast<void>(new std::deque<Pending>(std::move(comm_->pending)));
    return;
  }
  try {
    // Receives still posted (a collective that threw) must not land in buffers that are gone.
    for (MPI_Request& request : comm_->posted_recvs) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    reclaim(true);
  } catch (...) {  // a destructor does not throw; MPI reports its own errors
  }
}

void MpiPeers::reclaim(bool wait) {
  while (!comm_->pending.empty()) {
    Pending& oldest = comm_->pending.front();
    if (wait) {
      const MpiWait waiting(wait_label());
      check(MPI_Wait(&oldest.request, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
      int done = 0;
      check(MPI_Test(&oldest.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) return;
    }
    comm_->pending.pop_front();
  }
}

void MpiPeers::post(const void* data, std::size_t count, bool floats, int to, int tag) {
  Pending& pending = comm_->pending.back();
  check(MPI_Isend(data, as_count(count), floats ? MPI_FLOAT : MPI_BYTE, to, tag, comm_->comm,
                  &pending.request),
        "MPI_Isend");
  ++sent_;
}

void MpiPeers::send(int to, const float* data, std::size_t n, int tag) {
  reclaim(false);
  Pending& pending = comm_->pending.emplace_back();
  pending.floats.assign(data, data + n);
  post(pending.floats.data(), n, true, to, tag);
}

void MpiPeers::post_send(int to, const float* data, std::size_t n, int tag) {
  comm_->pending.emplace_back();  // no buffer: the caller's stays until complete_posted()
  post(data, n, true, to, tag);
}

void MpiPeers::send_message(int to, std::vector<char> message, int tag) {
  reclaim(false);
  Pending& pending = comm_->pending.emplace_back();
  pending.data = std::move(message);
  post(pending.data.data(), pending.data.size(), false, to, tag);
}

void MpiPeers::recv(int from, float* data, std::size_t n, int tag) {
  const MpiWait waiting(wait_label());
  check(MPI_Recv(data, as_count(n), MPI_FLOAT, from, tag, comm_->comm, MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiPeers::post_recv(int from, float* data, std::size_t n, int tag) {
  comm_->posted_recvs.emplace_back();
  check(
      MPI_Irecv(data, as_count(n), MPI_FLOAT, from, tag, comm_->comm, &comm_->posted_recvs.back()),
      "MPI_Irecv");
}

void MpiPeers::complete_posted() {
  std::vector<MPI_Request>& recvs = comm_->posted_recvs;
  {
    const MpiWait waiting(wait_label());
    check(MPI_Waitall(static_cast<int>(recvs.size()), recvs.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
  }
  recvs.clear();
  reclaim(true);
}

void MpiPeers::send_recv(int to, const float* send_data, std::size_t send_n, int from,
                         float* recv_data, std::size_t recv_n, int tag) {
  const MpiWait waiting(wait_label());
  if (to == from && std::max(send_n, recv_n) > kExchangePieceFloats) {
    exchange_in_pieces(to, send_data, send_n, recv_data, recv_n, tag);
    ++sent_;
    return;
  }
  check(MPI_Sendrecv(send_data, as_count(send_n), MPI_FLOAT, to, tag, recv_data, as_count(recv_n),
                     MPI_FLOAT, from, tag, comm_->comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  ++sent_;
}

void MpiPeers::exchange_in_pieces(int peer, const float* send_data, std::size_t send_n,
                                  float* recv_data, std::size_t recv_n, int tag) {
  // Every receive first, then every send: each piece is below the eager limit, so it leaves at
  // once and needs no clear-to-send that could wait behind this rank's own bytes.
  std::vector<MPI_Request> requests;
  requests.reserve((send_n + recv_n) / kExchangePieceFloats + 2);
  for (std::size_t at = 0; at < recv_n; at += kExchangePieceFloats) {
    requests.emplace_back();
    check(MPI_Irecv(recv_data + at, as_count(std::min(kExchangePieceFloats, recv_n - at)),
                    MPI_FLOAT, peer, tag, comm_->comm, &requests.back()),
          "MPI_Irecv");
  }
  for (std::size_t at = 0; at < send_n; at += kExchangePieceFloats) {
    requests.emplace_back();
    check(MPI_Isend(send_data + at, as_count(std::min(kExchangePieceFloats, send_n - at)),
                    MPI_FLOAT, peer, tag, comm_->comm, &requests.back()),
          "MPI_Isend");
  }
  check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
}

PeerEnvelope MpiPeers::probe(int from, int tag) {
  const MpiWait waiting(wait_label());
  MPI_Status status;
  check(MPI_Probe(from == kAnySource ? MPI_ANY_SOURCE : from, tag == kAnyTag ? MPI_ANY_TAG : tag,
                  comm_->comm, &status),
        "MPI_Probe");
  int bytes = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
  return PeerEnvelope{status.MPI_SOURCE, status.MPI_TAG, static_cast<std::size_t>(bytes)};
}

PeerEnvelope MpiPeers::recv_any(int from, int tag, std::vector<char>& message) {
  const PeerEnvelope envelope = probe(from, tag);
  message.resize(envelope.bytes);
  const MpiWait waiting(wait_label());
  check(MPI_Recv(message.data(), as_count(envelope.bytes), MPI_BYTE, envelope.from, envelope.tag,
                 comm_->comm, MPI_STATUS_IGNORE),
        "MPI_Recv");
  return envelope;
}

void MpiPeers::barrier() {
  complete_posted();
  const MpiWait waiting(wait_label());
  check(MPI_Barrier(comm_->comm), "MPI_Barrier");
}

void MpiPeers::barrier_asleep() {
  complete_posted();
  const MpiWait waiting(wait_label());
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_->comm, &request), "MPI_Ibarrier");
  wait_asleep(request, "MPI_Ibarrier");
}

void wait_asleep(MPI_Request& request, const char* call) {
  constexpr std::chrono::microseconds kTestInterval{200};
  int done = 0;
  for (;;) {
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
    if (done) return;
    std::this_thread::sleep_for(kTestInterval);
  }
}

#else

struct MpiPeers::Pending {};
struct MpiPeers::Comm {};

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
void MpiPeers::barrier_asleep() {}
void MpiPeers::post_send(int /*to*/, const float* /*data*/, std::size_t /*n*/, int /*tag*/) {}
void MpiPeers::post_recv(int /*from*/, float* /*data*/, std::size_t /*n*/, int /*tag*/) {}
void MpiPeers::complete_posted() {}
void MpiPeers::send_recv(int /*to*/, const float* /*send_data*/, std::size_t /*send_n*/,
                         int /*from*/, float* /*recv_data*/, std::size_t /*recv_n*/, int /*tag*/) {}
PeerEnvelope MpiPeers::probe(int /*from*/, int /*tag*/) {
  return {};
}

#endif

}  // namespace tauplan::exec
