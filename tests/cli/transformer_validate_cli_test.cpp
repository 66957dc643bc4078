// transformer_validate_cli_test.cpp: `tauplan calibrate --compute` writes a profile and refuses
// bad flags naming them (exit 2, one line); `tauplan validate` of a transformer job with a tiny
// profile and two steps prints the measured-against-predicted table, the step parts of each row's
// slowest rank, and writes its CSV and JSON.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::read_text_file;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

TEST_CASE("calibrate --compute: bad flags are refused naming the flag") {
  const std::string out = write_temp_file("profile.json", "");
  expect_bad_input({"calibrate", "--compute", out, "--compute-dims", "16,20"}, "--compute-dims");
  expect_bad_input({"calibrate", "--compute", out, "--compute-threads", "0"}, "--compute-threads");
  expect_bad_input({"calibrate", "--compute-threads", "2"}, "--compute-threads");
  expect_bad_input({"calibrate", "--compute", "/nonexistent-folder/p.json", "--compute-dims", "20"},
                   "--compute");
}

namespace {

/// A row's step parts (its slowest rank's): the measured and predicted parts agree on which stage
/// holds the head and the embedding (block-small: 2 layers; pipeline-2: 1 layer a stage, 4
/// micro-batches, so stage 0 has the embedding only, stage 1 the head only), the predicted
/// layers are the stage's layers times its micro-batches times the predicted layer, and the
/// predicted update of a single-stage layout is the +terms' Adam (one stage holds it all).
void check_step_parts(const nlohmann::json& row) {
  const auto& parts = row["step_parts"];
  REQUIRE(parts.is_object());
  const auto& measured = parts["measured"];
  const auto& predicted = parts["predicted"];
  const int stage = parts["stage"].get<int>();
  const bool pipeline = row["config"] == "pipeline-2";
  const bool head = !pipeline || stage == 1, embedding = stage == 0;
  CHECK((measured["head_s"].get<double>() > 0) == head);
  CHECK((predicted["head_s"].get<double>() > 0) == head);
  CHECK((measured["embedding_s"].get<double>() > 0) == embedding);
  CHECK(predicted["embedding_s"].get<double>() ==
        (embedding ? row["embedding_s"].get<double>() : 0.0));
  CHECK(measured["layers_s"].get<double>() > 0);
  CHECK(measured["update_s"].get<double>() > 0);
  const double layers_times_micro = pipeline ? 1 * 4 : 2;
  CHECK(predicted["layers_s"].get<double>() ==
        Approx(layers_times_micro * row["layer_predicted_s"].get<double>()).epsilon(1e-12));
  if (!pipeline)
    CHECK(predicted["update_s"].get<double>() == Approx(row["adam_s"].get<double>()));
  else
    CHECK(predicted["update_s"].get<double>() < row["adam_s"].get<double>() * 1.0000001);
}

}  // namespace

TEST_CASE("validate: a transformer job prints measured against predicted round and layer") {
  const std::string profile = write_temp_file("profile.json", "");
  const auto c = run_tauplan(
      {"calibrate", "--compute", profile, "--compute-dims", "20,80,320", "--compute-threads", "2"});
  INFO("calibrate stderr: " << c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("compute profile") != std::string::npos);
  const std::string out = std::filesystem::path(profile).parent_path().string() + "/validation";
  const auto r =
      run_tauplan({"validate", TAUPLAN_SOURCE_DIR "/experiments/transformer/validate-small.yaml",
                   "--profile", profile, "--max_steps", "2", "--out", out},
                  "", 120);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  for (const std::string row :
       {"single", "sync-2", "tensor-2", "pipeline-2", "median |error|", "where a step goes"})
    CHECK(r.out.find(row) != std::string::npos);
  const std::string csv = read_text_file(out + "/validate-small.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
  // The JSON in validate's one schema (study/validate/validate_support.hpp): each row's
  // engines.<label> with its errors, the summary's <label> blocks from them.
  const auto report = nlohmann::json::parse(read_text_file(out + "/validate-small.json"));
  for (const auto& row : report["rows"]) {
    INFO(row.dump());
    const auto& analytic = row["engines"]["analytic"];
    CHECK(
        analytic["error_round"].get<double>() ==
        Approx(row["round_analytic_s"].get<double>() / row["round_measured_s"].get<double>() - 1));
    // With the terms: the analytic round plus the Adam and embedding traffic, in round and
    // compute alike.
    const auto& terms = row["engines"]["analytic_with_terms"];
    const double added = row["adam_s"].get<double>() + row["embedding_s"].get<double>();
    CHECK(terms["round_s"].get<double>() ==
          Approx(row["round_analytic_s"].get<double>() + added).epsilon(1e-12));
    CHECK(terms["compute_s"].get<double>() ==
          Approx(analytic["compute_s"].get<double>() + added).epsilon(1e-12));
    // One worker has no communication to compare; a pipeline's round is not split in two.
    CHECK(analytic["error_comm"].is_null() ==
          (row["workers"] == 1 || row["config"] == "pipeline-2"));
    CHECK(analytic["error_compute"].is_null() == (row["config"] == "pipeline-2"));
    check_step_parts(row);
  }
  const auto& summary = report["summary"];
  CHECK(summary["configurations"] == 4);
  for (const char* engine : {"analytic", "analytic_with_terms"})
    CHECK(summary[engine]["median_abs_error_round"].is_number());
  CHECK(summary["median_abs_error_layer"].is_number());
  expect_bad_input({"validate", TAUPLAN_SOURCE_DIR "/experiments/transformer/validate-small.yaml",
                    "--profile", profile, "--calibration", out},
                   "--profile");
}
