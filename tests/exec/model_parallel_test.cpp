// model_parallel_test.cpp: tensor- and pipeline-parallel MLP training on threads. The split
// model's loss and gradients equal the unsplit model's (fp32, relative 1e-5), its all-reduces and
// sends are the closed forms' counts, and it trains.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include "exec/pipeline_parallel.hpp"
#include "exec/tensor_parallel.hpp"
#include "model/base/error.hpp"
#include "tests/exec/exec_support.hpp"

using namespace tauplan;

namespace {

exec::ModelParallelOptions parallel_mesh(
    int d, int t, int p, int m,
    model::PipelineSchedule schedule = model::PipelineSchedule::OneFOneB) {
  exec::ModelParallelOptions o;
  o.shape.widths = {784, 256, 128, 10};  // fashion-mlp
  o.data = d, o.tensor = t, o.pipeline = p, o.micro_batches = m;
  o.schedule = schedule;
  o.batch = 32;
  return o;
}

/// ||a - b|| / ||b||.
double relative_error(const std::vector<float>& a, const std::vector<float>& b, std::size_t from,
                      std::size_t to) {
  double diff = 0, norm = 0;
  for (std::size_t i = from; i < to; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    diff += d * d;
    norm += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("split MLPs give the unsplit model's loss and gradients (fp32, relative 1e-5)") {
  const exec::MlpShape shape = parallel_mesh(1, 1, 1, 1).shape;
  exec::Mlp reference(shape);
  reference.init(3);
  // A batch of 32 inputs like standardised pixels, labels of all classes.
  const test::PixelBatch batch = test::pixel_batch();
  const std::vector<float>& x = batch.x;
  const std::vector<int>& y = batch.y;
  const double loss = reference.forward_backward(x.data(), y.data(), 32);
  const std::vector<float> full_gradient(reference.gradients(),
                                         reference.gradients() + reference.parameter_count());
  const std::vector<float> parameters(reference.parameters(),
                                      reference.parameters() + reference.parameter_count());
  using model::PipelineSchedule;
  std::printf("%-20s %12s %12s %12s\n", "layout", "loss rel.err", "grad rel.err", "worst layer");
  for (const auto& o :
       {parallel_mesh(1, 2, 1, 1), parallel_mesh(1, 4, 1, 1),
        parallel_mesh(1, 1, 2, 1, PipelineSchedule::GPipe),
        parallel_mesh(1, 1, 2, 4, PipelineSchedule::GPipe), parallel_mesh(1, 1, 2, 4),
        parallel_mesh(1, 1, 3, 8), parallel_mesh(2, 1, 1, 1), parallel_mesh(2, 2, 1, 2),
        parallel_mesh(2, 1, 2, 4), parallel_mesh(1, 2, 2, 4), parallel_mesh(1, 4, 1, 4),
        parallel_mesh(2, 2, 2, 2, PipelineSchedule::GPipe)}) {
    INFO(o.label());
    const exec::StepGradients split =
        exec::step_gradients_threads(o, parameters, x.data(), y.data());
    const double loss_error = std::abs(split.loss - loss) / loss;
    const double gradient_error =
        relative_error(split.gradients, full_gradient, 0, full_gradient.size());
    double worst_layer = 0;
    for (int l = 0; l < shape.layers(); ++l) {
      const std::size_t from = exec::weight_offset(shape, l);
      const std::size_t to =
          exec::bias_offset(shape, l) + shape.widths[static_cast<std::size_t>(l) + 1];
      worst_layer = std::max(worst_layer, relative_error(split.gradients, full_gradient, from, to));
    }
    std::printf("%-20s %12.2e %12.2e %12.2e\n", o.label().c_str(), loss_error, gradient_error,
                worst_layer);
    CHECK(loss_error <= 1e-5);
    CHECK(gradient_error <= 1e-5);
    CHECK(worst_layer <= 1e-5);
  }
}

TEST_CASE("a step's tensor all-reduces and pipeline sends are the closed forms' counts") {
  std::vector<float> parameters(parallel_mesh(1, 1, 1, 1).shape.parameters());
  exec::init_parameters(parallel_mesh(1, 1, 1, 1).shape, 5, parameters.data());
  std::vector<float> x(32 * 784, 0.5f);
  std::vector<int> y(32, 3);
  // t = 4 on one stage: layers 0-1 are a column/row pair (one all-reduce forward; none backward,
  // the data needs no gradient), layer 2 is whole: 1 per micro-batch.
  auto t4 = exec::step_gradients_threads(parallel_mesh(1, 4, 1, 4), parameters, x.data(), y.data());
  for (long long count : t4.tensor_allreduces)
    CHECK(count == 4 * 1);
  for (long long count : t4.messages)
    CHECK(count == 0);
  // p = 3, m = 8: the first and last stage send m messages (activations, gradients), the middle
  // one 2 m.
  auto p3 = exec::step_gradients_threads(parallel_mesh(1, 1, 3, 8), parameters, x.data(), y.data());
  CHECK(p3.messages == std::vector<long long>{8, 16, 8});
  CHECK(p3.tensor_allreduces == std::vector<long long>{0, 0, 0});
  // t2 p2: stage 0 holds the pair (1 all-reduce forward per micro-batch), stage 1 the whole
  // output layer (none); each tensor rank sends its own copy between the stages.
  auto t2p2 =
      exec::step_gradients_threads(parallel_mesh(1, 2, 2, 4), parameters, x.data(), y.data());
  CHECK(t2p2.tensor_allreduces == std::vector<long long>{4, 4, 0, 0});
  CHECK(t2p2.messages == std::vector<long long>{4, 4, 4, 4});
  // A pair after another stage needs the input gradient: one more all-reduce backward.
  exec::TensorParallelStage middle(parallel_mesh(1, 1, 1, 1).shape, 1, 3, 0, 2);
  CHECK(middle.forward_allreduces() == 1);
  CHECK(middle.backward_allreduces(true) == 1);
  CHECK(middle.backward_allreduces(false) == 0);
}

TEST_CASE("tensor- and pipeline-parallel training learns the synthetic task") {
  exec::Dataset data = test::tiny_data(4000, 1000);
  for (auto o : {parallel_mesh(1, 2, 1, 1), parallel_mesh(1, 1, 2, 4), parallel_mesh(2, 2, 1, 2)}) {
    o.shape = test::tiny_shape();
    o.shape.widths = {32, 16, 8, 4};
    o.batch = 32;
    o.max_steps = 300;
    o.eval_every = 100;
    o.learning_rate = 0.1f;
    const exec::ModelParallelReport report = exec::train_model_parallel_threads(o, data);
    INFO(o.label() << ": accuracy " << report.accuracy);
    CHECK(report.steps == 300);
    CHECK(report.accuracy > 0.8);
    CHECK(report.ranks.size() == static_cast<std::size_t>(o.workers()));
    for (const auto& r : report.ranks) {
      CHECK(r.step_s > 0);
      CHECK(r.comm_s >= 0);
      CHECK(r.compute_s <= r.step_s);
    }
    CHECK(report.step_s > 0);
    CHECK(report.accuracy_curve.size() == 3);
  }
}

TEST_CASE("a mesh the MLP cannot take is one line naming the key") {
  exec::ModelParallelOptions o = parallel_mesh(1, 1, 4, 1);  // 4 stages, 3 layers
  CHECK_THROWS_WITH(exec::check_model_parallel(o),
                    Catch::Contains("pipeline_parallel: expected at most the 3 layers"));
  o = parallel_mesh(1, 3, 1, 1);  // 256 is not divisible by 3
  CHECK_THROWS_WITH(exec::check_model_parallel(o),
                    Catch::Contains("tensor_parallel: expected a divisor of the split layers"));
  o = parallel_mesh(2, 1, 2, 3);  // 16 samples per replica in 3 micro-batches
  CHECK_THROWS_WITH(exec::check_model_parallel(o),
                    Catch::Contains("micro_batches: expected a divisor of the 16 samples"));
}
