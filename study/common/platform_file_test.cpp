// platform_file_test.cpp: a user's platform file (study/common/platform_file.hpp): SimGrid XML
// loads as it is, with its bytes' hash; a cluster spec generates
// $TMPDIR/tauplan-platforms/STEM-HASH.xml, HASH the FNV-1a of the spec's bytes, the version and the
// commit, written once (a cached file is reused, not rewritten), loaded with the spec named as its
// source; provenance names the spec, its hash and the generated file; a bad spec or an unwritable
// cache is one InputError.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "model/inputs/cluster_generator.hpp"
#include "model/inputs/cluster_spec_file.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/result.hpp"
#include "study/common/files.hpp"
#include "study/common/platform_file.hpp"
#include "study/common/study_test_support.hpp"

namespace fs = std::filesystem;
using namespace tauplan;

namespace {  // what a loaded platform holds

size_t worker_count(const model::Platform& platform) {
  return platform.worker_hosts().size();
}

}  // namespace

TEST_CASE("platform file: SimGrid XML is loaded as it is, hashed by its bytes") {
  const std::string xml = test::source_path("platforms/test-crossbar-4.xml");
  CHECK(study::platform_xml_path(xml) == xml);
  const model::Platform platform = study::load_user_platform(xml);
  CHECK(platform.source_file == xml);
  CHECK(platform.source_hash == model::fnv1a_hex(study::read_text(xml)));
  const study::PlatformProvenance p = study::platform_provenance(xml, platform);
  CHECK(p.file == xml);
  CHECK(p.hash == platform.source_hash);
  CHECK(p.extra.empty());
}

TEST_CASE("platform file: a cluster spec is generated once into the cache, named by its hash") {
  const test::Scratch scratch("platform-spec");
  const test::ScopedEnv tmpdir("TMPDIR", scratch.path("tmp"));
  const std::string bytes = "preset: dgx-h100\nnodes: 2\n";
  const std::string spec = scratch.write("two.yaml", bytes);
  const std::string expected =
      scratch.path("tmp/tauplan-platforms/two-" +
                   model::fnv1a_hex(bytes + "\n" + model::tauplan_version() + "\n" +
                                    model::tauplan_git_commit()) +
                   ".xml");
  REQUIRE(study::platform_xml_path(spec) == expected);
  REQUIRE(fs::is_regular_file(expected));
  // Only the file itself is left in the cache (the temporary was renamed over it).
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path("tmp/tauplan-platforms")))
    files += entry.is_regular_file() ? 1 : 0;
  CHECK(files == 1);

  const model::Platform platform = study::load_user_platform(spec);
  CHECK(platform.source_file == spec + " (generated)");
  CHECK(platform.source_hash == model::fnv1a_hex(study::read_text(expected)));
  const auto shape = model::cluster::cluster_shape(model::cluster::parse_cluster_spec(bytes, spec));
  CHECK(worker_count(platform) == static_cast<size_t>(shape.gpus));
  CHECK(worker_count(platform) == 16);
  const study::PlatformProvenance p = study::platform_provenance(spec, platform);
  CHECK(p.file == spec);
  CHECK(p.hash == model::fnv1a_hex(bytes));
  CHECK(p.extra.at("platform_xml") == expected);
  CHECK(p.extra.at("platform_xml_hash") == platform.source_hash);

  // A cached file is reused as it is: not regenerated, not rewritten.
  const std::string marker = study::read_text(expected) + "<!-- cached -->\n";
  study::write_text(expected, marker);
  CHECK(study::platform_xml_path(spec) == expected);
  CHECK(study::read_text(expected) == marker);
  // Other bytes are another file.
  const std::string other = scratch.write("two.yaml", bytes + "wiring: plain\n");
  CHECK(study::platform_xml_path(other) != expected);
}

TEST_CASE("platform file: a bad spec or an unwritable cache is one InputError") {
  const test::Scratch scratch("platform-bad");
  const test::ScopedEnv tmpdir("TMPDIR", scratch.path("tmp"));
  const std::string spec = scratch.write("bad.yaml", "preset: dgx-h100\nnodez: 4\n");
  const std::string bad = test::input_error([&] { study::platform_xml_path(spec); });
  CHECK(test::names_file_and_key(bad, spec, "nodez"));
  CHECK_FALSE(fs::exists(scratch.path("tmp/tauplan-platforms")));
  const std::string missing = test::input_error([&] { study::load_user_platform(spec + ".yaml"); });
  CHECK(missing.rfind(spec + ".yaml: platform: expected", 0) == 0);

  const std::string blocker = scratch.write("blocker", "not a folder\n");
  const test::ScopedEnv blocked("TMPDIR", blocker);
  const std::string good = scratch.write("good.yaml", "preset: dgx-h100\nnodes: 1\n");
  const std::string unwritable = test::input_error([&] { study::platform_xml_path(good); });
  CHECK(test::names_file_and_key(unwritable, blocker + "/tauplan-platforms", "platform"));
  CHECK(unwritable.find("a writable folder for generated platforms (set TMPDIR)") !=
        std::string::npos);
}
