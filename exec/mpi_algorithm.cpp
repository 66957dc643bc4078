// mpi_algorithm.cpp: the registry of MPI collective algorithms, watched point-to-point messages,
// and the building blocks the algorithms share (chunks, ring phases, push and pull to servers).
//
// Adding an algorithm: one file mpi_<name>.cpp with its class and factory, one line in
// registry() below.
#include "exec/mpi_algorithm.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <stdexcept>

#include "exec/combine.hpp"
#include "exec/mpi_watchdog.hpp"
#include "model/base/registry.hpp"

namespace tauplan::exec {
namespace {

const model::Registry<MpiAlgorithm>& registry() {
  static const model::Registry<MpiAlgorithm> algorithms(
      "collective",
      {make_mpi_ring, make_mpi_ps, make_mpi_tree, make_mpi_sparknet, make_mpi_hierarchical});
  return algorithms;
}

int as_count(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::runtime_error("MPI message of " + std::to_string(n) + " floats is too large");
  return static_cast<int>(n);
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + call);
}

int modulo(int a, int m) {
  return ((a % m) + m) % m;
}

}  // namespace

const MpiAlgorithm& mpi_algorithm(const std::string& name, const std::string& file) {
  return registry().get(name, file);
}

std::vector<std::string> mpi_algorithm_names() {
  return registry().names();
}

// ------------------------------------------------------------------ messages

void MpiMessages::send(const float* data, std::size_t count, int to, int tag, const char* what) {
  const MpiWait wait(what);
  check(MPI_Send(data, as_count(count), MPI_FLOAT, to, tag, comm_), "MPI_Send");
  ++sent_;
}

void MpiMessages::recv(float* data, std::size_t count, int from, int tag, const char* what) {
  const MpiWait wait(what);
  check(MPI_Recv(data, as_count(count), MPI_FLOAT, from, tag, comm_, MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiMessages::send_recv(const float* send_data, std::size_t send_count, int to,
                            float* recv_data, std::size_t recv_count, int from, int tag,
                            const char* what) {
  const MpiWait wait(what);
  check(MPI_Sendrecv(send_data, as_count(send_count), MPI_FLOAT, to, tag, recv_data,
                     as_count(recv_count), MPI_FLOAT, from, tag, comm_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  ++sent_;
}

void MpiMessages::post_send(const float* data, std::size_t count, int to, int tag) {
  pending_.emplace_back();
  check(MPI_Isend(data, as_count(count), MPI_FLOAT, to, tag, comm_, &pending_.back()), "MPI_Isend");
  ++sent_;
}

void MpiMessages::post_recv(float* data, std::size_t count, int from, int tag) {
  pending_.emplace_back();
  check(MPI_Irecv(data, as_count(count), MPI_FLOAT, from, tag, comm_, &pending_.back()),
        "MPI_Irecv");
}

void MpiMessages::wait_all(const char* what) {
  const MpiWait wait(what);
  check(MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  pending_.clear();
}

std::pair<int, std::size_t> MpiMessages::probe(int from, const char* what) {
  const MpiWait wait(what);
  MPI_Status status;
  check(MPI_Probe(from, MPI_ANY_TAG, comm_, &status), "MPI_Probe");
  int count = 0;
  check(MPI_Get_count(&status, MPI_FLOAT, &count), "MPI_Get_count");
  return {status.MPI_TAG, static_cast<std::size_t>(count)};
}

// ------------------------------------------------------------------ building blocks

std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int parts, int i) {
  assert(parts >= 1 && i >= 0 && i < parts);
  const auto p = static_cast<std::size_t>(parts);
  const auto index = static_cast<std::size_t>(i);
  const std::size_t base = n / p, extra = n % p;
  const std::size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

std::vector<float> weighted_with_weight(const float* data, double weight, std::size_t n) {
  std::vector<float> out(n + 1);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(weight * static_cast<double>(data[i]));
  out[n] = static_cast<float>(weight);
  return out;
}

void divide_by_weight(const float* sum, std::size_t n, float* out) {
  const double total = static_cast<double>(sum[n]);
  assert(total > 0);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(static_cast<double>(sum[i]) / total);
}

void ring_reduce_scatter(MpiMessages& messages, const std::vector<int>& ring, int position,
                         float* data, std::size_t n, int tag, const char* what) {
  const int r = static_cast<int>(ring.size());
  if (r < 2) return;
  const int next = ring[static_cast<std::size_t>(modulo(position + 1, r))];
  const int previous = ring[static_cast<std::size_t>(modulo(position - 1, r))];
  std::vector<float> incoming(chunk_range(n, r, 0).second);  // the largest chunk
  for (int step = 0; step < r - 1; ++step) {
    const auto [send_begin, send_end] = chunk_range(n, r, modulo(position - step, r));
    const auto [recv_begin, recv_end] = chunk_range(n, r, modulo(position - step - 1, r));
    messages.send_recv(data + send_begin, send_end - send_begin, next, incoming.data(),
                       recv_end - recv_begin, previous, tag, what);
    for (std::size_t i = recv_begin; i < recv_end; ++i)
      data[i] += incoming[i - recv_begin];
  }
}

void ring_all_gather(MpiMessages& messages, const std::vector<int>& ring, int position, float* data,
                     std::size_t n, int shift, int tag, const char* what) {
  const int r = static_cast<int>(ring.size());
  if (r < 2) return;
  const int next = ring[static_cast<std::size_t>(modulo(position + 1, r))];
  const int previous = ring[static_cast<std::size_t>(modulo(position - 1, r))];
  for (int step = 0; step < r - 1; ++step) {
    const auto [send_begin, send_end] = chunk_range(n, r, modulo(position + shift - step, r));
    const auto [recv_begin, recv_end] = chunk_range(n, r, modulo(position + shift - step - 1, r));
    messages.send_recv(data + send_begin, send_end - send_begin, next, data + recv_begin,
                       recv_end - recv_begin, previous, tag, what);
  }
}

void push_pull_mean(const MpiLayout& layout, MpiMessages& messages, float* data, double weight,
                    std::size_t n, int push_tag, int pull_tag, const char* what) {
  std::vector<std::vector<float>> shards(static_cast<std::size_t>(layout.servers));
  for (int j = 0; j < layout.servers; ++j) {
    const auto [begin, end] = chunk_range(n, layout.servers, j);
    std::vector<float>& shard = shards[static_cast<std::size_t>(j)];
    shard.assign(data + begin, data + end);
    shard.push_back(static_cast<float>(weight));
    messages.post_recv(data + begin, end - begin, layout.workers + j, pull_tag);
    messages.post_send(shard.data(), shard.size(), layout.workers + j, push_tag);
  }
  messages.wait_all(what);
}

bool serve_push_pull(const MpiLayout& layout, MpiMessages& messages, int push_tag, int pull_tag,
                     int stop_tag, const char* what, ServedCall* call) {
  using Clock = std::chrono::steady_clock;
  const auto [tag, count] = messages.probe(0, what);
  ServedCall served;
  served.first_message = Clock::now();
  const auto k_count = static_cast<std::size_t>(layout.workers);
  if (tag == stop_tag) {
    float none = 0;
    for (int k = 0; k < layout.workers; ++k)
      messages.recv(&none, 0, k, stop_tag, what);
    return false;
  }
  if (tag != push_tag || count < 1)
    throw std::logic_error("MPI server: unexpected message (tag " + std::to_string(tag) + ", " +
                           std::to_string(count) + " floats) from worker 0");
  const std::size_t len = count - 1;
  std::vector<std::vector<float>> pushed(k_count, std::vector<float>(count));
  for (int k = 0; k < layout.workers; ++k)
    messages.post_recv(pushed[static_cast<std::size_t>(k)].data(), count, k, push_tag);
  messages.wait_all(what);
  const auto pushed_in = Clock::now();  // the server's own work starts: every push is here
  const std::vector<float> mean = mean_of_pushes(pushed, len);
  for (int k = 0; k < layout.workers; ++k)
    messages.post_send(mean.data(), len, k, pull_tag);
  served.processing_s = std::chrono::duration<double>(Clock::now() - pushed_in).count();
  served.messages = 2LL * layout.workers;
  served.bytes = static_cast<long long>(k_count * len * sizeof(float));
  messages.wait_all(what);
  if (call != nullptr) *call = served;
  return true;
}

void stop_servers(const MpiLayout& layout, MpiMessages& messages, int stop_tag) {
  const float none = 0;
  for (int j = 0; j < layout.servers; ++j)
    messages.post_send(&none, 0, layout.workers + j, stop_tag);
  messages.wait_all("the stop message to the server ranks");
}

}  // namespace tauplan::exec
