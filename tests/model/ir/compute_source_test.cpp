// Where compute time comes from: every shipped platform that names a GPU says it (a compute
// profile, or the source of its efficiency), no shipped platform times transformer layers of a
// profiled GPU from a flat efficiency, and hosts resolve to the catalog's profiles.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "model/base/error.hpp"
#include "model/compute/profile_file.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_shapes.hpp"
#include "model/ir/compute_source.hpp"
#include "model/ir/layout.hpp"

using namespace tauplan;
using namespace tauplan::model;

namespace {

std::string read_source_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("every shipped GPU platform names where its compute time comes from") {
  // A host or cluster element with a gpu_model prop must carry a compute_profile prop or a
  // compute_source prop (the efficiency's origin); a GPU with a catalog profile must not carry
  // an efficiency (its transformer layers are timed by the profile).
  const std::regex element(R"re(<(host|cluster)\b[^>]*>([\s\S]*?)</\1>)re");
  const std::regex gpu(R"re(<prop id="gpu_model" value="([^"]+)")re");
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator("platforms")) {
    if (entry.path().extension() != ".xml") continue;
    const std::string text = read_source_file(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), element), end; it != end; ++it) {
      const std::string body = (*it)[2];
      std::smatch model;
      if (!std::regex_search(body, model, gpu)) continue;
      CAPTURE(entry.path().string(), model[1].str());
      const bool profile = body.find("id=\"compute_profile\"") != std::string::npos;
      const bool source = body.find("id=\"compute_source\"") != std::string::npos;
      CHECK((profile || source));
      if (!gpu_spec(model[1]).compute_profile.empty())
        CHECK(body.find("id=\"efficiency\"") == std::string::npos);
      ++checked;
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("a GPU host is timed by its catalog profile, a CPU host by flop over speed") {
  Platform platform;
  platform.source_file = "test.xml";
  Host gpu_host;
  gpu_host.name = "g";
  gpu_host.gpu_model = "H200-SXM-141GB";
  gpu_host.speed_flops = 989.5e12;
  const ComputeProfile* profile = host_compute_profile(gpu_host, platform);
  REQUIRE(profile != nullptr);
  CHECK(profile == &catalog_compute_profile("h200-sxm-bf16", "x", "y"));
  CHECK(host_compute_source(gpu_host, platform).find("h200-sxm-bf16") != std::string::npos);

  Host cpu_host;
  cpu_host.name = "c";
  cpu_host.speed_flops = 1e11;
  CHECK(host_compute_profile(cpu_host, platform) == nullptr);
  CHECK(host_compute_source(cpu_host, platform).find("flop / host speed") == 0);

  Host named = cpu_host;
  named.properties["compute_profile"] = "no-such-profile";
  CHECK_THROWS_WITH(host_compute_profile(named, platform),
                    Catch::Contains("test.xml: host c prop compute_profile: expected a catalog "
                                    "profile"));
}

TEST_CASE("a catalog profile times only its own precision, a named profile is used as named") {
  Platform platform;
  platform.source_file = "test.xml";
  Host host;
  host.name = "g";
  host.gpu_model = "H200-SXM-141GB";
  host.speed_flops = 67e12;  // an fp32 speed: no bf16 GEMM time may stand for it
  host.properties["precision"] = "fp32";
  CHECK(host_compute_profile(host, platform) == nullptr);
  CHECK(host_compute_source(host, platform).find("flop / host speed") == 0);
  host.properties["precision"] = "bf16";
  CHECK(host_compute_profile(host, platform) ==
        &catalog_compute_profile("h200-sxm-bf16", "x", "y"));
  // The platform's own `compute_profile` prop is the user's choice, whatever the precision.
  host.properties["precision"] = "fp32";
  host.properties["compute_profile"] = "h200-sxm-bf16";
  CHECK(host_compute_profile(host, platform) ==
        &catalog_compute_profile("h200-sxm-bf16", "x", "y"));
}

TEST_CASE("every catalog profile reads back and can time a layer") {
  for (const std::string& name : catalog_profile_names()) {
    CAPTURE(name);
    const ComputeProfile& profile = catalog_compute_profile(name, "x", "y");
    CHECK(profile.problem().empty());
    CHECK_FALSE(profile.source.empty());
    CHECK_FALSE(profile.peak_flops_source.empty());
  }
  CHECK(catalog_profile_names().size() >= 2);
}

TEST_CASE("a profile whose measured shapes are far from a layer's is refused, not extrapolated") {
  ComputeProfile small;
  small.device = "tiny-gpu";
  small.precision = "bf16";
  small.source = "test";
  small.peak_flops = 1e15;
  small.memory_bandwidth_Bps = 1e12;
  small.default_attention_efficiency = 0.5;
  small.gemms = {{64, 64, 64, 1e-6}, {128, 128, 128, 4e-6}};
  const Workload gpt3 = load_workload("gpt3-175b");
  Layout layout;
  layout.tensor = 8;
  layout.pipeline = 1;
  layout.data = 1;
  layout.micro_batches = 1;
  CHECK_THROWS_WITH(stage_pass_seconds(gpt3, layout, 1, 0, small),
                    Catch::StartsWith("tiny-gpu profile: gemms: expected a measured GEMM within a "
                                      "factor 8 of qkv"));
  // Samples near every shape of the layer: accepted.
  ComputeProfile near = small;
  const LayerShape shape = layer_shape(*gpt3.transformer, 1, 8, false);
  near.gemms.clear();
  for (const ComputeOp& op : layer_ops(shape, Recompute::None))
    if (op.kind == ComputeOpKind::Gemm) near.gemms.push_back({op.m * op.count, op.n, op.k, 1e-3});
  for (const ComputeOp& op : logits_ops(shape, gpt3.transformer->vocabulary))
    if (op.kind == ComputeOpKind::Gemm) near.gemms.push_back({op.m * op.count, op.n, op.k, 1e-3});
  CHECK(stage_pass_seconds(gpt3, layout, 1, 0, near).forward > 0);
}
