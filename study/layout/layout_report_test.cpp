// layout_report_test.cpp: `tauplan layout` in this process (study/layout/layout_report.hpp) on
// GPT-3 175B over 32 H200s (d4 t2 p4, 16 micro-batches, 1F1B, ZeRO 3, selective recomputation): the
// report is the closed forms of model/ir/layout_memory.hpp and model/ir/layout_cost.hpp called
// directly, and holds their identities (ZeRO 3 shards weights and optimizer over d; 1F1B holds p -
// s micro-batches on stage s; a stage's total is its parts; the pipeline is the slot x (m + p - 1),
// the bubble the slot x (p - 1); the step the pipeline + data + update; MFU the model flop/s
// over the peak); a layout that does not fit is one InputError naming the smallest that do, the
// first of --fit's list, each of which fits the GPU memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "model/ir/layout.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "study/common/inputs.hpp"
#include "study/common/study_test_support.hpp"
#include "study/layout/layout_report.hpp"

using namespace tauplan;
using nlohmann::json;

namespace {  // GPT-3 175B on the H200 platform, and the numbers of a report

std::string gpt3_job(const test::Scratch& scratch, const std::string& layout) {
  return scratch.write("gpt3.yaml", "workload: gpt3-175b\nplatform: " +
                                        test::source_path("platforms/h200-nvlink-ib.xml") +
                                        "\nworkers: 32\nbatch: 64\n" + layout);
}

const char* kFits =
    "tensor_parallel: 2\npipeline_parallel: 4\nmicro_batches: 16\npipeline_schedule: 1f1b\n"
    "zero_stage: 3\nrecompute: selective\n";

double number(const json& j, const char* key) {
  return j.at(key).get<double>();
}

}  // namespace

TEST_CASE("layout: the report is the layout's closed forms, with their identities") {
  const test::Scratch scratch("layout");
  const std::string job = gpt3_job(scratch, kFits);
  const study::LayoutOutcome out = study::run_layout({job, {}, false, 8});
  const json& doc = out.document;
  CHECK(doc.at("layout") == "d4 t2 p4 m16 1f1b zero3 selective");
  CHECK(doc.at("workers") == 32);
  CHECK(out.text.find("fits\n") != std::string::npos);

  // The model's functions called directly give the same numbers.
  const model::Job loaded = model::load_job(job, study::all_job_keys(), {});
  const model::Workload workload = study::load_job_workload(loaded);
  const model::Layout layout = model::layout_from_job(loaded);
  const model::LayoutMemory memory = model::layout_memory(workload, layout, 64);
  CHECK(number(doc, "memory_per_gpu_bytes") == memory.peak_bytes);
  CHECK(number(doc, "memory_per_gpu_bytes") <= number(doc, "gpu_memory_bytes"));

  const json& stages = doc.at("memory").at("stages");
  REQUIRE(stages.size() == 4);
  int layers = 0;
  double peak = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    CAPTURE(s);
    const json& st = stages[s];
    layers += st.at("layers").get<int>();
    const double parameters = number(st, "parameters");
    // ZeRO 3: weights, gradients and optimizer state sharded over the 4 data-parallel ranks.
    CHECK(number(st, "weight_bytes") ==
          Approx(parameters * workload.bytes_per_parameter / 4).epsilon(1e-12));
    CHECK(number(st, "optimizer_bytes") ==
          Approx(parameters * workload.optimizer_bytes_per_parameter / 4).epsilon(1e-12));
    // 1F1B: stage s holds the activations of p - s micro-batches at its peak.
    CHECK(number(st, "in_flight_micro_batches") == static_cast<double>(4 - s));
    const double total = number(st, "weight_bytes") + number(st, "gradient_bytes") +
                         number(st, "optimizer_bytes") + number(st, "activation_bytes") +
                         number(st, "reserve_bytes");
    CHECK(number(st, "total_bytes") == Approx(total).epsilon(1e-12));
    peak = std::max(peak, number(st, "total_bytes"));
  }
  CHECK(layers == workload.transformer->layers);
  CHECK(number(doc.at("memory"), "peak_bytes") == peak);

  const json& time = doc.at("time");
  const double slot = number(time, "slot_s");
  CHECK(number(time, "pipeline_s") == Approx(slot * (16 + 3)).epsilon(1e-12));
  CHECK(number(time, "bubble_s") == Approx(slot * 3).epsilon(1e-12));
  CHECK(number(time, "iteration_s") ==
        Approx(number(time, "pipeline_s") + number(time, "data_s") + number(time, "update_s"))
            .epsilon(1e-12));
  CHECK(number(doc, "mfu") ==
        Approx(number(time, "model_flops_per_worker") / number(doc, "peak_flops_per_gpu"))
            .epsilon(1e-12));
  CHECK(doc.at("precision") == "bf16");
  // Overrides are job keys: another pipeline size and micro-batch count is another layout.
  const study::LayoutOutcome p2 =
      study::run_layout({job, {{"pipeline_parallel", "2"}, {"micro_batches", "8"}}, false, 8});
  CHECK(p2.document.at("layout") == "d8 t2 p2 m8 1f1b zero3 selective");
  const json& p2_time = p2.document.at("time");
  CHECK(number(p2_time, "pipeline_s") ==
        Approx(number(p2_time, "slot_s") * (8 + 1)).epsilon(1e-12));
  CHECK(number(p2_time, "bubble_s") == Approx(number(p2_time, "slot_s")).epsilon(1e-12));
}

TEST_CASE("layout: a layout that does not fit names the smallest that do, as --fit lists them") {
  const test::Scratch scratch("layout-fit");
  const std::string job = gpt3_job(scratch, "tensor_parallel: 8\npipeline_parallel: 4\n");
  const std::string error = test::input_error([&] { study::run_layout({job, {}, false, 8}); });
  CHECK(test::names_file_and_key(
      error, job, "layout (tensor_parallel, pipeline_parallel, zero_stage, recompute ...)"));
  CHECK(error.find("got d1 t8 p4 1f1b needing ") != std::string::npos);

  const study::LayoutOutcome fit = study::run_layout({job, {}, true, 5});
  const json& rows = fit.document.at("fitting_layouts");
  REQUIRE(rows.size() == 5);
  const double gpu = 141.0 * 1024 * 1024 * 1024;
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    CHECK(number(rows[i], "memory_per_gpu_bytes") <= gpu);
    const json& t = rows[i].at("time");
    CHECK(number(rows[i], "mfu") ==
          Approx(number(t, "model_flops_per_worker") / number(rows[i], "peak_flops_per_gpu"))
              .epsilon(1e-12));
  }
  // The error's three are --fit's first three, in its order.
  size_t at = 0;
  for (size_t i = 0; i < 3; ++i) {
    at = error.find(rows[i].at("layout").get<std::string>() + " (", at);
    CHECK(at != std::string::npos);
  }
  CHECK(error.find("the smallest that do: " + rows[0].at("layout").get<std::string>() + " (") !=
        std::string::npos);
}
