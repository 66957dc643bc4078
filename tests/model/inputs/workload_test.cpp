// workload_test.cpp: the built-in catalogs load, are self-consistent, and bad YAML is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "model/base/error.hpp"
#include "model/inputs/workload.hpp"

using namespace tauplan;

TEST_CASE("the workload catalog holds the models the issue lists, each consistent") {
  const auto names = model::catalog_workload_names();
  for (const char* expected :
       {"alexnet", "googlenet", "vgg-16", "resnet-50", "bert-base", "bert-large",
        "transformer-base", "gpt2-small", "fashion-mlp", "llama3-8b", "llama3-70b", "llama3-405b"})
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  for (const auto& name : names) {
    INFO(name);
    const auto w = model::load_workload(name);
    CHECK(w.name == name);
    CHECK(w.parameters > 0);
    CHECK(w.flop_per_sample > 0);
    if (w.layers.empty()) continue;
    double params = 0, flop = 0;
    for (const auto& l : w.layers)
      params += l.parameters, flop += l.flop_per_sample;
    CHECK(params == Approx(w.parameters).epsilon(0.01));
    CHECK(flop == Approx(w.flop_per_sample).epsilon(0.01));
  }
}

TEST_CASE("fashion-mlp is the 784-256-128-10 MLP exec/ trains") {
  const auto w = model::load_workload("fashion-mlp");
  CHECK(w.parameters == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  CHECK(w.flop_per_sample == Approx(3.0 * 2 * (784 * 256 + 256 * 128 + 128 * 10)).epsilon(0.01));
  CHECK(w.layers.size() == 3);
  CHECK(w.mlp_widths == std::vector<int>{784, 256, 128, 10});
}

TEST_CASE("an MLP's widths must be whole, positive and agree with its totals and layers") {
  const std::string head = "name: m\nparameters: 17\nflop_per_sample: 72\n";  // 2-3-2
  CHECK(model::parse_workload_yaml(head + "widths: [2, 3, 2]\n", "w.yaml").mlp_widths ==
        std::vector<int>{2, 3, 2});
  CHECK_THROWS_WITH(model::parse_workload_yaml(head + "widths: [2]\n", "w.yaml"),
                    Catch::Contains("w.yaml: widths: expected a list of at least 2"));
  CHECK_THROWS_WITH(model::parse_workload_yaml(head + "widths: [2, 2.5, 2]\n", "w.yaml"),
                    Catch::Contains("w.yaml: widths[1]: expected a whole number"));
  CHECK_THROWS_WITH(model::parse_workload_yaml(head + "widths: [2, 0, 2]\n", "w.yaml"),
                    Catch::Contains("w.yaml: widths[1]: expected a number in [1, "));
  CHECK_THROWS_WITH(model::parse_workload_yaml(head + "widths: [2, 4, 2]\n", "w.yaml"),
                    Catch::Contains("w.yaml: parameters: expected 22, what the dense layers"));
  CHECK_THROWS_WITH(model::parse_workload_yaml(
                        head + "widths: [2, 3, 2]\nlayers: [{parameters: 8, flop_per_sample: "
                               "36}, {parameters: 9, flop_per_sample: 36}]\n",
                        "w.yaml"),
                    Catch::Contains("w.yaml: layers[0].parameters: expected 9"));
}

TEST_CASE("the GPU catalog has peaks, memory and sources") {
  const auto& gpus = model::gpu_catalog();
  CHECK(gpus.size() >= 10);
  for (const auto& g : gpus) {
    INFO(g.model);
    CHECK(g.peak_fp32_flops > 0);
    CHECK(g.memory_bytes > 0);
    CHECK_FALSE(g.source.empty());
  }
  CHECK(model::gpu_spec("V100-SXM2-16GB").peak_flops("fp32") == Approx(15.7e12).epsilon(0.01));
  CHECK_THROWS_WITH(
      model::gpu_spec("GTX-9999", "p.xml", "host h0 prop gpu_model"),
      Catch::Contains("p.xml: host h0 prop gpu_model: expected a GPU of the catalog"));
}

TEST_CASE("bad workload files name the file and key") {
  CHECK_THROWS_WITH(
      model::parse_workload_yaml("name: x\nparameters: -5\nflop_per_sample: 1\n", "w.yaml"),
      Catch::Contains("w.yaml: parameters: expected a number in (0, 1e+15]"));
  CHECK_THROWS_WITH(model::parse_workload_yaml("name: x\nparameters: 5\n", "w.yaml"),
                    Catch::Contains("w.yaml: flop_per_sample"));
  CHECK_THROWS_WITH(model::parse_workload_yaml("name: x\nparams: 5\n", "w.yaml"),
                    Catch::Contains("w.yaml: params: expected one of the known keys"));
  CHECK_THROWS_WITH(
      model::parse_workload_yaml(
          "name: x\nparameters: 5\nflop_per_sample: 1\nlayers: [{name: a, parameters: 1}]\n",
          "w.yaml"),
      Catch::Contains("w.yaml: layers[0].parameters"));
  CHECK_THROWS_WITH(model::load_workload("no-such-model"),
                    Catch::Contains("no-such-model: workload: expected a catalog name"));
}
