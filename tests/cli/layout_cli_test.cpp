// layout_cli_test.cpp: `tauplan layout` and `tauplan published` end to end: impossible layouts
// are one line naming the key with exit 2 (acceptance item 6 of issue 13), a layout that does not
// fit names the smallest that do, and the Megatron comparison table regenerates exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::read_text_file;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kGpt3 =
    "workload: gpt3-175b\nplatform: " TAUPLAN_SOURCE_DIR "/platforms/h200-nvlink-ib.xml\n";

}  // namespace

TEST_CASE("layout: mesh sizes whose product differs from the workers") {
  const auto f = write_temp_file("product.yaml", kGpt3 +
                                                     "workers: 32\nbatch: 64\n"
                                                     "tensor_parallel: 8\ndata_parallel: 8\n");
  expect_bad_input({"layout", f}, f + ": data_parallel: expected data_parallel x tensor_parallel x "
                                      "pipeline_parallel = workers (32), got 8 x 8 x 1 = 64");
  const auto g = write_temp_file("product2.yaml", kGpt3 +
                                                      "workers: 30\nbatch: 60\n"
                                                      "tensor_parallel: 8\n");
  expect_bad_input({"layout", g}, g + ": workers: expected a multiple of tensor_parallel x "
                                      "pipeline_parallel (8 x 1 = 8)");
}

TEST_CASE("layout: a dimension split more ways than it has elements") {
  const auto f = write_temp_file("split.yaml", "workload: bert-large\nplatform: " TAUPLAN_SOURCE_DIR
                                               "/platforms/h200-nvlink-ib.xml\nworkers: 32\n"
                                               "batch: 64\ntensor_parallel: 32\n");
  expect_bad_input({"layout", f}, f + ": tensor_parallel: expected at most the 16 heads of "
                                      "bert-large");
  const auto g = write_temp_file("batch.yaml", kGpt3 + "workers: 32\nbatch: 16\n");
  expect_bad_input({"layout", g}, g + ": batch: expected at least data_parallel (32) sequences");
}

TEST_CASE("layout: heads not divisible by the tensor size") {
  const auto f = write_temp_file("heads.yaml", "workload: gpt2-xl\nplatform: " TAUPLAN_SOURCE_DIR
                                               "/platforms/h200-nvlink-ib.xml\nworkers: 8\n"
                                               "batch: 8\ntensor_parallel: 2\n");
  expect_bad_input({"layout", f},
                   f + ": tensor_parallel: expected a divisor of the 25 heads of gpt2-xl");
}

TEST_CASE("layout: key/value heads neither a multiple nor a divisor of the tensor size") {
  // 24 heads, 6 key/value heads, t = 4: 4 divides the heads, but 6 K/V heads neither split over
  // 4 ranks nor repeat a whole number of times on them.
  const auto w = write_temp_file("gqa6.yaml",
                                 "name: gqa6\ntransformer:\n  layers: 4\n"
                                 "  hidden: 1536\n  heads: 24\n  kv_heads: 6\n"
                                 "  sequence: 1024\n  vocabulary: 32000\n");
  const auto f = write_temp_file("gqa6-job.yaml", "workload: " + w +
                                                      "\nplatform: " TAUPLAN_SOURCE_DIR
                                                      "/platforms/h200-nvlink-ib.xml\nworkers: 8\n"
                                                      "batch: 8\ntensor_parallel: 4\n");
  expect_bad_input({"layout", f}, f + ": tensor_parallel: expected a divisor or a multiple of the "
                                      "6 key/value heads of gqa6, got 4");
}

TEST_CASE("layout: a workload whose kv_heads do not divide its heads, or a bad attention kernel") {
  auto job = [](const std::string& name, const std::string& extra) {
    const auto w = write_temp_file(name + ".yaml", "name: " + name +
                                                       "\ntransformer:\n  layers: 4\n"
                                                       "  hidden: 1024\n  heads: 16\n"
                                                       "  sequence: 1024\n  vocabulary: 32000\n" +
                                                       extra);
    return std::make_pair(
        w, write_temp_file(name + "-job.yaml", "workload: " + w +
                                                   "\nplatform: " TAUPLAN_SOURCE_DIR
                                                   "/platforms/h200-nvlink-ib.xml\nworkers: 8\n"
                                                   "batch: 8\n"));
  };
  const auto [kv_w, kv_job] = job("kv5", "  kv_heads: 5\n");
  expect_bad_input({"layout", kv_job},
                   kv_w + ": transformer.kv_heads: expected a divisor of heads (16), got 5");
  const auto [att_w, att_job] = job("flashy", "  attention: flashy\n");
  expect_bad_input({"layout", att_job},
                   att_w + ": transformer.attention: expected flash or math, got 'flashy'");
  // Flash needs less activation memory than math, the same model state.
  const auto [math_w, math_job] = job("math", "  attention: math\n");
  const auto [flash_w, flash_job] = job("flash", "  attention: flash\n");
  const auto m = run_tauplan({"layout", math_job, "--json"});
  const auto fl = run_tauplan({"layout", flash_job, "--json"});
  INFO(m.err << fl.err);
  REQUIRE(m.exit_code == 0);
  REQUIRE(fl.exit_code == 0);
  const auto md = nlohmann::json::parse(m.out)["memory"]["stages"][0];
  const auto fd = nlohmann::json::parse(fl.out)["memory"]["stages"][0];
  CHECK(fd["activation_bytes"].get<double>() < md["activation_bytes"].get<double>());
  CHECK(fd["optimizer_bytes"].get<double>() == md["optimizer_bytes"].get<double>());
}

TEST_CASE("layout: memory per GPU with the reserve, and MFU, in text and JSON") {
  const auto f = write_temp_file("mfu.yaml", kGpt3 +
                                                 "workers: 32\nbatch: 64\n"
                                                 "tensor_parallel: 8\npipeline_parallel: 4\n"
                                                 "micro_batches: 64\n");
  const auto t = run_tauplan({"layout", f});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("reserve") != std::string::npos);
  CHECK(t.out.find("memory per GPU: peak ") != std::string::npos);
  CHECK(t.out.find("MFU ") != std::string::npos);
  CHECK(t.out.find("MFU -") == std::string::npos);  // the H200 has a bf16 peak
  const auto j = run_tauplan({"layout", f, "--json"});
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  const double mfu = doc["mfu"].get<double>();
  CHECK(mfu > 0);
  CHECK(mfu < 1);
  CHECK(mfu == Approx(doc["time"]["model_flops_per_worker"].get<double>() /
                      doc["peak_flops_per_gpu"].get<double>()));
  CHECK(doc["precision"] == "bf16");
  const double per_gpu = doc["memory_per_gpu_bytes"].get<double>();
  CHECK(per_gpu == doc["memory"]["peak_bytes"].get<double>());
  const auto& peak = doc["memory"]["stages"][doc["memory"]["peak_stage"].get<int>()];
  // The reserve: more than the CUDA context and NCCL buffers (1 GiB), inside the peak.
  CHECK(doc["memory"]["reserve_bytes"].get<double>() > 1024.0 * 1024 * 1024);
  CHECK(per_gpu ==
        Approx(peak["weight_bytes"].get<double>() + peak["gradient_bytes"].get<double>() +
               peak["optimizer_bytes"].get<double>() + peak["activation_bytes"].get<double>() +
               peak["reserve_bytes"].get<double>()));
  // --fit: a memory and an MFU column, per layout in JSON.
  const auto fit = run_tauplan({"layout", f, "--fit", "--count", "2"});
  REQUIRE(fit.exit_code == 0);
  CHECK(fit.out.find("memory GiB") != std::string::npos);
  CHECK(fit.out.find("MFU") != std::string::npos);
  const auto fit_json = run_tauplan({"layout", f, "--fit", "--count", "2", "--json"});
  REQUIRE(fit_json.exit_code == 0);
  const nlohmann::json fitted = nlohmann::json::parse(fit_json.out);
  for (const auto& row : fitted["fitting_layouts"]) {
    CHECK(row["memory_per_gpu_bytes"].get<double>() > 0);
    CHECK(row["mfu"].get<double>() > 0);
  }
}

TEST_CASE("layout: a GPU without a peak at the workload's precision prints MFU - and why") {
  // The K80 has no fp16 or bf16 rate in the catalog; this workload trains in 2-byte precision.
  const auto w = write_temp_file("half.yaml",
                                 "name: half\nbytes_per_parameter: 2\n"
                                 "optimizer_bytes_per_parameter: 12\n"
                                 "transformer:\n  layers: 2\n  hidden: 512\n"
                                 "  heads: 8\n  sequence: 512\n  vocabulary: 8000\n");
  const auto f = write_temp_file("k80.yaml", "workload: " + w +
                                                 "\nplatform: " TAUPLAN_SOURCE_DIR
                                                 "/platforms/cloud-k80-p100-v100.xml\nworkers: 1\n"
                                                 "batch: 1\n");
  const auto t = run_tauplan({"layout", f});
  INFO(t.err << t.out);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("MFU - (host ") != std::string::npos);
  CHECK(t.out.find("no fp16 peak") != std::string::npos);
  const auto j = run_tauplan({"layout", f, "--json"});
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["mfu"].is_null());
  REQUIRE(doc["mfu_missing"].is_string());
  CHECK(doc["mfu_missing"].get<std::string>().find("K80") != std::string::npos);
}

TEST_CASE("layout: stages more than layers") {
  const auto f =
      write_temp_file("stages.yaml", "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR
                                     "/platforms/h200-nvlink-ib.xml\nworkers: 16\n"
                                     "batch: 16\npipeline_parallel: 16\n");
  expect_bad_input({"layout", f},
                   f + ": pipeline_parallel: expected at most the 12 layers of gpt2-small");
}

TEST_CASE("layout: micro-batches not dividing the batch") {
  const auto f = write_temp_file("micro.yaml", kGpt3 +
                                                   "workers: 32\nbatch: 64\n"
                                                   "tensor_parallel: 8\npipeline_parallel: 4\n"
                                                   "micro_batches: 48\n");
  expect_bad_input({"layout", f}, f + ": micro_batches: expected a divisor of the 64 sequences "
                                      "each data-parallel replica takes");
  // The same key as a flag names the command line.
  const auto g = write_temp_file("micro2.yaml", kGpt3 + "workers: 32\nbatch: 64\n");
  expect_bad_input({"layout", g, "--micro_batches", "0"},
                   "command line: --micro_batches: expected a whole number between 1");
}

TEST_CASE("layout: a layout that does not fit names the smallest layouts that do") {
  const auto f = write_temp_file("nofit.yaml", kGpt3 +
                                                   "workers: 32\nbatch: 64\n"
                                                   "tensor_parallel: 8\n");
  expect_bad_input({"layout", f},
                   f + ": layout (tensor_parallel, pipeline_parallel, zero_stage, recompute ...): "
                       "expected a layout of 32 workers that fits in 141.0 GiB per GPU (the "
                       "smallest that do: d32 zero3 full");
  const auto r = run_tauplan({"layout", f, "--fit", "--count", "3"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("d32 zero3 full") != std::string::npos);
}

TEST_CASE("layout: a fitting layout reports memory per stage, traffic and step time") {
  const auto f = write_temp_file("fits.yaml", kGpt3 +
                                                  "workers: 32\nbatch: 64\n"
                                                  "tensor_parallel: 8\npipeline_parallel: 4\n"
                                                  "micro_batches: 64\n");
  const auto r = run_tauplan({"layout", f, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["layout"] == "d1 t8 p4 m64 1f1b");
  CHECK(doc["memory"]["stages"].size() == 4);
  CHECK(doc["memory"]["peak_bytes"].get<double>() <= doc["gpu_memory_bytes"].get<double>());
  // 1F1B: stage r holds min(p - r, m) micro-batches.
  for (int stage = 0; stage < 4; ++stage)
    CHECK(doc["memory"]["stages"][stage]["in_flight_micro_batches"].get<double>() == 4 - stage);
  const double pipeline = doc["time"]["pipeline_s"], bubble = doc["time"]["bubble_s"];
  CHECK(bubble / pipeline == Approx(3.0 / (64 + 3)));
  CHECK(doc["context"]["platform_hash"].get<std::string>().size() == 16);
  CHECK(doc["context"]["seed"] == 1);
  // The engines refuse the layout keys they would ignore.
  const auto p = run_tauplan({"predict", f});
  CHECK(p.exit_code == 2);
  CHECK(p.err.find("tensor_parallel: expected its default unless `strategies` include mesh") !=
        std::string::npos);
}

TEST_CASE("published: the Megatron comparison regenerates experiments/parallelism/table.md") {
  const auto r = run_tauplan({"published"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Only where the table came from: no note (the platform's efficiency and passes are the
  // calibration's fit).
  CHECK(r.err.rfind("# published engine=analytic", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const std::string committed =
      read_text_file(TAUPLAN_SOURCE_DIR "/experiments/parallelism/table.md");
  CHECK(r.out == committed);
  // The target: a median error of 10% at most, over the runs the calibration is not.
  const auto j = run_tauplan({"published", "--json"});
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["median_abs_error_independent"].get<double>() <= 0.10);
  CHECK(doc["runs"].size() == 18);
}

TEST_CASE("published: the held-out H100 runs stay within issue 26's 10% median") {
  // The first run (experiments/parallelism/heldout-first-run/) gave 3.8% median, 11.4% largest;
  // a model change that moves these must say so in experiments/parallelism/README.md.
  const auto j = run_tauplan(
      {"published", TAUPLAN_SOURCE_DIR "/experiments/parallelism/h100-heldout.yaml", "--json"});
  INFO(j.err);
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc["runs"].size() == 15);
  double largest = 0;
  for (const auto& run : doc["runs"]) {
    CHECK_FALSE(run["calibration_configuration"].get<bool>());
    largest = std::max(largest, std::abs(run["error"].get<double>()));
  }
  CHECK(doc["median_abs_error_independent"].get<double>() <= 0.10);
  CHECK(largest <= 0.30);  // the bound written before the first run
}

TEST_CASE("published: a bad runs file is one line naming the key") {
  const auto f = write_temp_file("runs.yaml", "platform: selene-a100\ncalibration: {}\n");
  expect_bad_input({"published", "--runs", f}, f + ": calibration.source");
}

TEST_CASE("layout cli: predict on a job too large for data parallelism lists layouts that fit") {
  const auto r = tauplan::test::run_tauplan({"predict", "--workload", "gpt3-175b", "--platform",
                                             "h200-nvlink-ib", "--strategies", "sync", "--workers",
                                             "32", "--batch", "64"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("batch: expected a per-worker batch that fits") != std::string::npos);
  CHECK(r.err.find("layouts of 32 workers that fit: ") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE(
    "mesh cli: predict and simulate run a transformer's layout, measure refuses it, bad layouts "
    "exit 2") {
  const auto f = write_temp_file(
      "mesh.yaml", "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR
                   "/platforms/h200-nvlink-ib.xml\nstrategies: [mesh]\nworkers: 8\nbatch: 32\n"
                   "tensor_parallel: 2\npipeline_parallel: 2\nmicro_batches: 4\n"
                   "iterations: 10\n");
  const auto predicted = run_tauplan({"predict", f, "--json"});
  INFO(predicted.err);
  REQUIRE(predicted.exit_code == 0);
  const auto simulated = run_tauplan({"simulate", f, "--json"});
  INFO(simulated.err);
  REQUIRE(simulated.exit_code == 0);
  const auto a = nlohmann::json::parse(predicted.out)["results"][0];
  const auto s = nlohmann::json::parse(simulated.out)["results"][0];
  CHECK(a["strategy"] == "mesh");
  CHECK(a["workers"] == 8);
  CHECK(a["rounds"] == 10);
  // Tensor pairs share a node of the H200 platform, its NVLink uncontended: SimGrid's sharing
  // of a host's links between concurrent sends and all-reduces moves the round by < 1%.
  CHECK(s["round_s"].get<double>() == Approx(a["round_s"].get<double>()).epsilon(0.01));
  CHECK(a["comm_s"].get<double>() > 0);
  const auto measured = run_tauplan({"measure", f});
  CHECK(measured.exit_code == 2);
  CHECK(std::count(measured.err.begin(), measured.err.end(), '\n') == 1);
  // exec trains transformers as its decoder block, which has an untied vocabulary head.
  CHECK(measured.err.find("catalog:gpt2-small: transformer.tied_embeddings: expected false") !=
        std::string::npos);
  const auto g = write_temp_file("mesh-bad.yaml",
                                 "workload: gpt2-small\nplatform: " TAUPLAN_SOURCE_DIR
                                 "/platforms/h200-nvlink-ib.xml\nstrategies: [mesh]\nworkers: 8\n"
                                 "batch: 32\ntensor_parallel: 2\npipeline_parallel: 2\n"
                                 "micro_batches: 4\nvirtual_stages: 5\n");
  // 12 layers do not split into 2 x 5 chunks (interleaving itself runs: layout_plan_test.cpp).
  expect_bad_input({"predict", g}, g + ": virtual_stages: expected a number that splits the 12 "
                                       "layers of gpt2-small");
  const auto h = write_temp_file("mesh-cnn.yaml",
                                 "workload: resnet-50\nplatform: " TAUPLAN_SOURCE_DIR
                                 "/platforms/h200-nvlink-ib.xml\nstrategies: [mesh]\nworkers: 2\n"
                                 "batch: 32\n");
  expect_bad_input({"simulate", h},
                   h + ": workload: expected a transformer workload (layers, hidden, heads, ...) "
                       "or an MLP (widths)");
}

TEST_CASE(
    "mesh cli: an MLP's layout is predicted, simulated and trained for real (threads), the "
    "same Plan, a hidden width other than the workload's, or lockstep timing, is exit 2") {
  const std::string job =
      "workload: fashion-mlp\nplatform: " TAUPLAN_SOURCE_DIR
      "/platforms/test-crossbar-4.xml\nstrategies: [mesh]\nworkers: 4\nbatch: 32\n"
      "tensor_parallel: 2\npipeline_parallel: 2\nmicro_batches: 2\ndata_dir: /nonexistent\n"
      "allow_synthetic: true\ntrain_samples: 2000\neval_samples: 200\nmax_steps: 40\n"
      "eval_every: 20\ntarget_accuracy: 0.05\ntiming: concurrent\n";
  const auto f = write_temp_file("mesh-mlp.yaml", job);
  const auto predicted = run_tauplan({"predict", f, "--json"});
  INFO(predicted.err);
  REQUIRE(predicted.exit_code == 0);
  const auto measured = run_tauplan({"measure", f, "--json"});
  INFO(measured.err);
  REQUIRE(measured.exit_code == 0);
  const auto a = nlohmann::json::parse(predicted.out)["results"][0];
  const auto m = nlohmann::json::parse(measured.out)["results"][0];
  CHECK(a["strategy"] == "mesh");
  CHECK(m["strategy"] == "mesh");
  CHECK(m["workers"] == 4);
  CHECK(m["timing"] == "concurrent");
  CHECK(m["round_s"].get<double>() > 0);
  CHECK(m["steps"].get<long long>() == 20);  // the target is reached at the first evaluation
  // Every rank of d1 t2 p2: stage 0 holds the pair fc1-fc2 (1 all-reduce forward, none backward:
  // it starts the network), stage 1 the output layer, replicated (none); 2 micro-batches.
  const auto ranks = m["ranks"];
  REQUIRE(ranks.size() == 4);
  for (const auto& r : ranks) {
    INFO(r.dump());
    CHECK(r["tensor_allreduces_per_step"] == (r["stage"] == 0 ? 2 : 0));
    CHECK(r["pipeline_sends_per_step"] == 2);
  }
  const auto g = write_temp_file("mesh-mlp-hidden.yaml", job + "hidden: [64]\n");
  expect_bad_input({"measure", g},
                   g + ": hidden: expected the hidden widths of workload 'fashion-mlp'");
  expect_bad_input({"measure", f, "--timing", "lockstep"},
                   "command line: --timing: expected concurrent for strategy mesh");
}
