// run_program_test.cpp: exec's one interpreter of a layout program (exec/layout_program.hpp
// run_program), driven by a model that is neither the MLP nor the transformer: each stage adds
// its stage number + 1 to every value going forward and 1 to every gradient going back, on
// vectors whose every place holds its own value. The
// programs come from strategy mesh's Plan (1F1B, 3 stages, 4 micro-batches; 2 replicas) or are
// written here (1/t slices all-gathered by the receiving tensor group). Checked against closed
// forms: the handlers see the program's passes in its order, with `received` exactly where the
// pass waits on a send; the values that arrive are the sender's (a forward on the last stage
// holds micro-batch j + 1 + 2, the first stage's gradient 100 + j + 2); every send is
// counted; passes_done comes once, after the last pass, and each reduction follows it in order,
// its time counted as communication.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "exec/layout_program.hpp"
#include "exec/peer_group.hpp"
#include "exec/pipeline_parallel.hpp"
#include "exec/rank_threads.hpp"

using namespace tauplan;

namespace {

constexpr int kForward = 11, kBackward = 12, kGather = 13;
constexpr std::size_t kWidth = 4;
constexpr double kReduceSeconds = 0.02;

/// start, start + 10, start + 20, ...: every place of a vector holds its own value, so that a
/// slice sent from or received into the wrong place shows.
std::vector<float> ramp(float start) {
  std::vector<float> values(kWidth);
  for (std::size_t e = 0; e < kWidth; ++e)
    values[e] = start + 10.0f * static_cast<float>(e);
  return values;
}

/// A stage of the test model: forward adds stage + 1, backward adds 1.
class AddingStage final : public exec::PassHandlers {
 public:
  explicit AddingStage(int stage) : stage_(stage) {}

  std::vector<float>& prepare(const exec::ProgramPass& pass) override {
    events.push_back({pass.forward, pass.micro_batch, false, "prepare"});
    input_.assign(kWidth, -1.0f);
    return input_;
  }

  const std::vector<float>& run(const exec::ProgramPass& pass, bool received) override {
    events.push_back({pass.forward, pass.micro_batch, received, "run"});
    const float start = pass.forward ? static_cast<float>(pass.micro_batch)
                                     : 100.0f + static_cast<float>(pass.micro_batch);
    if (received) arrived.emplace_back(pass.forward, pass.micro_batch, input_);
    output_ = received ? input_ : ramp(start);
    for (float& v : output_)
      v += pass.forward ? static_cast<float>(stage_ + 1) : 1.0f;
    return output_;
  }

  void passes_done() override { events.push_back({false, -1, false, "passes_done"}); }
  /// Takes kReduceSeconds at least, so that the test can see the reductions timed.
  void reduce(const std::vector<int>& group) override {
    events.push_back({false, -1, false, "reduce"});
    reduced.push_back(group);
    std::this_thread::sleep_for(std::chrono::duration<double>(kReduceSeconds));
  }

  struct Event {
    bool forward;
    int micro_batch;
    bool received;
    std::string what;
  };
  std::vector<Event> events;
  std::vector<std::tuple<bool, int, std::vector<float>>> arrived;  ///< (forward, micro, input)
  std::vector<std::vector<int>> reduced;

 private:
  int stage_;
  std::vector<float> input_, output_;
};

exec::ProgramTransfers transfers(exec::PeerGroup& peers, std::vector<int> tensor_group,
                                 int tensor_index, double& comm_s, long long& messages) {
  return exec::ProgramTransfers{
      &peers,   std::move(tensor_group), tensor_index, kForward, kBackward, kGather, &comm_s,
      &messages};
}

}  // namespace

TEST_CASE("run_program: a model of its own runs strategy mesh's Plan, passes in order") {
  const int d = GENERATE(1, 2);
  exec::ModelParallelOptions o;
  o.shape.widths = {784, 256, 128, 10};
  o.data = d, o.pipeline = 3, o.micro_batches = 4, o.batch = 32;
  o.schedule = model::PipelineSchedule::OneFOneB;
  const model::Plan plan = exec::mlp_layout_plan(o);
  const int ranks = o.workers();
  std::vector<exec::RankProgram> programs;
  std::vector<AddingStage> stages;
  for (int r = 0; r < ranks; ++r) {
    programs.push_back(exec::rank_program(plan, r));
    stages.emplace_back(programs.back().stage);
  }
  std::vector<long long> messages(static_cast<std::size_t>(ranks), 0);
  std::mutex checks;  // Catch2's assertions are not thread-safe
  exec::ThreadPeerHub hub(ranks);
  exec::on_threads(
      ranks,
      [&](int r) {
        const std::size_t i = static_cast<std::size_t>(r);
        double comm_s = 0;
        exec::run_program(programs[i], stages[i],
                          transfers(hub.peer(r), {r}, 0, comm_s, messages[i]));
        // The reductions' time is communication: at least their handlers' sleep.
        std::lock_guard<std::mutex> lock(checks);
        CHECK(comm_s >= kReduceSeconds * static_cast<double>(programs[i].reductions.size()));
      },
      [&hub] { hub.abort(); });

  for (int r = 0; r < ranks; ++r) {
    const std::size_t i = static_cast<std::size_t>(r);
    const exec::RankProgram& program = programs[i];
    const AddingStage& stage = stages[i];
    INFO("rank " << r << ", stage " << program.stage);
    // prepare and run per pass, in the program's order; then passes_done, then each reduction.
    REQUIRE(stage.events.size() == 2 * program.passes.size() + 1 + program.reductions.size());
    long long sends = 0;
    for (std::size_t k = 0; k < program.passes.size(); ++k) {
      const exec::ProgramPass& pass = program.passes[k];
      for (std::size_t e : {2 * k, 2 * k + 1}) {
        CHECK(stage.events[e].forward == pass.forward);
        CHECK(stage.events[e].micro_batch == pass.micro_batch);
      }
      CHECK(stage.events[2 * k].what == "prepare");
      CHECK(stage.events[2 * k + 1].what == "run");
      CHECK(stage.events[2 * k + 1].received == (pass.receive_from >= 0));
      sends += static_cast<long long>(pass.send_to.size());
    }
    CHECK(stage.events[2 * program.passes.size()].what == "passes_done");
    CHECK(stage.reduced == program.reductions);
    CHECK(program.reductions.size() == (d > 1 ? 1u : 0u));
    CHECK(messages[i] == sends);
    // What arrived: a forward on stage s holds j + 1 + ... + s; a backward on stage s holds the
    // last stage's 100 + j plus 1 per stage after it that passed it back.
    for (const auto& [forward, micro, input] : stage.arrived) {
      const int s = program.stage;
      const float expected = forward ? static_cast<float>(micro + s * (s + 1) / 2)
                                     : static_cast<float>(100 + micro + (2 - s));
      CHECK(input == ramp(expected));
    }
    CHECK(stage.arrived.size() ==
          static_cast<std::size_t>((program.stage > 0 ? 4 : 0) + (program.stage < 2 ? 4 : 0)));
  }
}

TEST_CASE("run_program: 1/t slices sent, all-gathered by the receiving tensor group") {
  // Ranks 0, 1: stage 0, tensor ranks 0 and 1; ranks 2, 3: stage 1. One forward, no backward.
  std::vector<exec::RankProgram> programs(4);
  for (int r = 0; r < 4; ++r) {
    exec::ProgramPass pass;
    pass.forward = true;
    if (r < 2) {
      pass.send_to = {r + 2};
      pass.send_slice = true;
    } else {
      pass.receive_from = r - 2;
      pass.gather_sends = 1;
      pass.gather_peers = {r == 2 ? 3 : 2};
    }
    programs[static_cast<std::size_t>(r)].passes = {pass};
    programs[static_cast<std::size_t>(r)].stage = r / 2;
  }
  std::vector<AddingStage> stages{AddingStage(0), AddingStage(0), AddingStage(1), AddingStage(1)};
  std::vector<long long> messages(4, 0);
  exec::ThreadPeerHub hub(4);
  exec::on_threads(
      4,
      [&](int r) {
        const std::size_t i = static_cast<std::size_t>(r);
        const std::vector<int> group = r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
        double comm_s = 0;
        exec::run_program(programs[i], stages[i],
                          transfers(hub.peer(r), group, r % 2, comm_s, messages[i]));
      },
      [&hub] { hub.abort(); });
  // Stage 0's output is micro-batch 0's ramp + 1 on both tensor ranks; each sends its half, and
  // the receivers' ring puts the halves back in their places (a place left unfilled holds -1).
  for (int r : {2, 3}) {
    const AddingStage& stage = stages[static_cast<std::size_t>(r)];
    REQUIRE(stage.arrived.size() == 1);
    CHECK(std::get<2>(stage.arrived[0]) == ramp(1.0f));
  }
  // One stage send per sender; one ring step per receiver (t - 1).
  CHECK(messages == std::vector<long long>{1, 1, 1, 1});
}
