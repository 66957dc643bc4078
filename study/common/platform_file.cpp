// platform_file.cpp: see platform_file.hpp.
#include "study/common/platform_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/cluster_spec_file.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/ir/result.hpp"

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
namespace mc = model::cluster;

fs::path cache_folder() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "tauplan-platforms";
}

// STEM-HASH.xml: the spec's bytes and the build that generates them.
fs::path cache_file(const std::string& spec_path, const std::string& bytes) {
  const std::string key = model::fnv1a_hex(bytes + "\n" + model::tauplan_version() + "\n" +
                                           model::tauplan_git_commit());
  return cache_folder() / (fs::path(spec_path).stem().string() + "-" + key + ".xml");
}

[[noreturn]] void cannot_write(const fs::path& path, const std::string& why) {
  throw InputError(path.string(), "platform",
                   "a writable folder for generated platforms (set TMPDIR)", why);
}

// Writes `text` to `file` through a name of this process and call, then a rename: concurrent
// writers of one spec each rename a whole file of the same bytes over the other's.
void write_whole(const fs::path& file, const std::string& text) {
  std::error_code error;
  fs::create_directories(file.parent_path(), error);
  if (error) cannot_write(file.parent_path(), error.message());
  static std::atomic<unsigned> calls{0};
  const fs::path tmp = file.string() + fmt::format(".tmp-{}-{}", getpid(), calls++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      fs::remove(tmp, error);
      cannot_write(file.parent_path(), "cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, file, error);
  if (error) {
    fs::remove(tmp, error);
    cannot_write(file, error.message());
  }
}

}  // namespace

std::string platform_xml_path(const std::string& path) {
  if (!mc::is_cluster_spec_path(path)) return path;
  const std::string bytes = model::yaml_util::read_file(path, "platform");
  const fs::path file = cache_file(path, bytes);
  std::error_code error;
  if (fs::is_regular_file(file, error)) return file.string();
  const mc::ClusterSpec spec = mc::parse_cluster_spec(bytes, path);
  write_whole(file, model::simgrid_xml::to_xml(mc::make_cluster_platform(spec, path)));
  return file.string();
}

model::Platform load_user_platform(const std::string& path, const sim::NetworkOptions& network) {
  if (!mc::is_cluster_spec_path(path)) return sim::load_platform(path, network);
  model::Platform platform = sim::load_platform(platform_xml_path(path), network);
  platform.source_file = path + " (generated)";
  return platform;
}

PlatformProvenance platform_provenance(const std::string& path, const model::Platform& platform) {
  if (!mc::is_cluster_spec_path(path)) return {path, platform.source_hash, {}};
  const std::string bytes = model::yaml_util::read_file(path, "platform");
  return {path,
          model::fnv1a_hex(bytes),
          {{"platform_xml", cache_file(path, bytes).string()},
           {"platform_xml_hash", platform.source_hash}}};
}

}  // namespace tauplan::study
