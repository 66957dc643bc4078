// device_memory_test.cpp: the trainer with replicas whose buffers the host may not touch, the
// path the CUDA replicas take (memory() == Device), checked on a machine without a GPU.
//
// A GuardedReplica keeps its parameters and gradients in pages mapped PROT_NONE, opened only
// inside its own methods (as a GPU replica copies to and from the device there) and inside the
// guarded communicator's combine(): a read or write of those buffers by the trainer itself
// kills the test with SIGSEGV. Its arithmetic is a CpuReplica's and its combine a
// ThreadCommunicator's, so the guarded run must give the host run's parameters bit for bit.
// What it leaves out: asynchronous device work and streams (the CUDA replica waits inside its
// own calls), NCCL, several threads (lockstep only: mprotect is process-wide).
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "exec/cpu_replica.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec_support.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

/// A float array in its own pages, inaccessible unless opened.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t count) : count_(count) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = std::max<std::size_t>(page, (count * sizeof(float) + page - 1) / page * page);
    void* p = mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    data_ = static_cast<float*>(p);
    all().push_back(this);
  }
  ~GuardedBuffer() {
    all().erase(std::find(all().begin(), all().end(), this));
    munmap(data_, bytes_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  float* data() const { return data_; }
  std::size_t size() const { return count_; }
  void protect(bool open) const {
    if (mprotect(data_, bytes_, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
      throw std::runtime_error("mprotect failed");
  }
  /// Every live buffer (the communicator opens them all around a combine).
  static std::vector<GuardedBuffer*>& all() {
    static std::vector<GuardedBuffer*> buffers;
    return buffers;
  }

 private:
  std::size_t count_;
  std::size_t bytes_ = 0;
  float* data_ = nullptr;
};

/// Opens buffers for a scope.
class Opened {
 public:
  explicit Opened(std::vector<const GuardedBuffer*> buffers) : buffers_(std::move(buffers)) {
    for (const GuardedBuffer* b : buffers_)
      b->protect(true);
  }
  ~Opened() {
    for (const GuardedBuffer* b : buffers_)
      b->protect(false);
  }
  Opened(const Opened&) = delete;
  Opened& operator=(const Opened&) = delete;

 private:
  std::vector<const GuardedBuffer*> buffers_;
};

void copy(const float* from, float* to, std::size_t n) {
  std::memcpy(to, from, n * sizeof(float));
}

/// A CpuReplica behind guarded "device" buffers, copied in and out as a GPU replica would be.
class GuardedReplica final : public Replica {
 public:
  explicit GuardedReplica(const MlpShape& shape)
      : inner_(shape), params_(inner_.parameter_count()), grads_(inner_.parameter_count()) {}

  MemorySpace memory() const override { return MemorySpace::Device; }
  std::size_t parameter_count() const override { return inner_.parameter_count(); }
  float* parameters() override { return params_.data(); }
  float* gradients() override { return grads_.data(); }
  void set_parameters_from_host(const float* host) override {
    Opened open({&params_});
    copy(host, params_.data(), params_.size());
  }
  void get_parameters_to_host(float* host) const override {
    Opened open({&params_});
    copy(params_.data(), host, params_.size());
  }
  void get_gradients_to_host(float* host) const override {
    Opened open({&grads_});
    copy(grads_.data(), host, grads_.size());
  }
  double compute(const float* x, const int* y, int n) override {
    Opened open({&params_, &grads_});
    copy(params_.data(), inner_.parameters(), params_.size());
    const double loss = inner_.compute(x, y, n);
    copy(inner_.gradients(), grads_.data(), grads_.size());
    return loss;
  }
  void sgd_step(float lr) override {
    Opened open({&params_, &grads_});
    copy(params_.data(), inner_.parameters(), params_.size());
    copy(grads_.data(), inner_.gradients(), grads_.size());
    inner_.sgd_step(lr);
    copy(inner_.parameters(), params_.data(), params_.size());
  }
  long long correct(const float* x, const int* y, long long n) override {
    Opened open({&params_});
    copy(params_.data(), inner_.parameters(), params_.size());
    return inner_.correct(x, y, n);
  }

 private:
  CpuReplica inner_;
  GuardedBuffer params_;
  GuardedBuffer grads_;
};

/// K workers in this process, combined like the thread communicator with every guarded buffer
/// opened for the call (as a device communicator works on device memory); no subgroups, as the
/// device communicator.
class GuardedCommunicator final : public Communicator {
 public:
  explicit GuardedCommunicator(int workers) : workers_(workers), inner_(workers) {}
  MemorySpace memory() const override { return MemorySpace::Device; }
  std::string name() const override { return "guarded"; }
  int workers() const override { return workers_; }
  int local_workers() const override { return workers_; }
  int first_local_worker() const override { return 0; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override {
    const std::vector<GuardedBuffer*>& live = GuardedBuffer::all();
    Opened open(std::vector<const GuardedBuffer*>(live.begin(), live.end()));
    inner_.combine(local_buffers, local_weights, n, rule);
    ++combines;
  }
  void barrier() override {}
  double max_all(double value) override { return value; }

  int combines = 0;

 private:
  int workers_;
  ThreadCommunicator inner_;
};

model::Platform crossbar() {
  return model::make_crossbar_platform(std::vector<double>(8, 1e9), 1e9, 1e-5);
}

/// sync over K workers with its gradient all-reduced in buckets of 100 bytes (several collectives
/// over slices of the vector).
model::Plan bucketed_sync(int workers) {
  return test::make_plan("sync", workers, 32, 1, crossbar(), model::BatchSplit::Even, true, 100);
}

Measurement run_host(const model::Plan& plan, const Dataset& data, const TrainOptions& o) {
  ThreadCommunicator comm(plan.workers);
  return train(plan, crossbar(), data, test::tiny_shape(), comm, cpu_replica_factory(), o);
}

Measurement run_guarded(const model::Plan& plan, const Dataset& data, const TrainOptions& o,
                        int* combines = nullptr) {
  GuardedCommunicator comm(plan.workers);
  const ReplicaFactory factory = [](const MlpShape& shape, int) {
    return std::make_unique<GuardedReplica>(shape);
  };
  Measurement m = train(plan, crossbar(), data, test::tiny_shape(), comm, factory, o);
  if (combines) *combines = comm.combines;
  return m;
}

}  // namespace

TEST_CASE("a guarded buffer kills whoever touches it unopened", "[exec][device]") {
  // The fixture's own check: without it, the tests below could not fail.
  GuardedBuffer buffer(16);
  {
    Opened open({&buffer});
    buffer.data()[3] = 1.5f;
    CHECK(buffer.data()[3] == 1.5f);
  }
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGSEGV, SIG_DFL);  // not Catch's handler: die of it, silently
    volatile float* p = buffer.data();
    p[3] = 2.0f;  // unopened: SIGSEGV
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);
}

TEST_CASE("device-memory replicas: the trainer touches their buffers only through them",
          "[exec][device]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(24);
  for (const model::Plan& plan : {test::make_plan("single", 1, 32), test::make_plan("sync", 4, 32),
                                  test::make_plan("local-sgd", 3, 8, 4), bucketed_sync(2)}) {
    const long long collectives = plan.count(model::OpKind::Collective);
    INFO(plan.strategy << " K=" << plan.workers << ", " << collectives << " collectives a round");
    int combines = 0;
    const Measurement guarded = run_guarded(plan, data, o, &combines);
    const Measurement host = run_host(plan, data, o);
    CHECK(guarded.steps == host.steps);
    CHECK(guarded.rounds == host.rounds);
    CHECK(guarded.final_parameters == host.final_parameters);
    REQUIRE(guarded.curve.size() == host.curve.size());
    for (std::size_t i = 0; i < host.curve.size(); ++i)
      CHECK(guarded.curve[i].accuracy == host.curve[i].accuracy);
    // The combines really ran through the communicator: every collective of every round.
    if (plan.workers > 1) CHECK(combines == host.rounds * collectives);
  }
}

TEST_CASE("device-memory replicas say why gradient buckets are not streamed", "[exec][device]") {
  const Dataset data = test::tiny_data();
  TrainOptions o = test::quick_options(8);
  o.timing = Timing::Concurrent;
  // One worker in this process and concurrent timing: a host replica would stream its buckets.
  const Measurement m = run_guarded(bucketed_sync(1), data, o);
  CHECK(m.extra.value("overlap", std::string()).find("device replicas") != std::string::npos);
}
