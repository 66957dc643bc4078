// catalog.hpp: the built-in catalog files, compiled into the binary from model/catalog/.
//
// The build embeds every model/catalog/workloads/*.yaml, model/catalog/profiles/*.json and
// model/catalog/gpus.yaml as text
// (see model/CMakeLists.txt), so the tauplan binary works from any folder.
#pragma once

#include <cstddef>

namespace tauplan::model::catalog {

struct EmbeddedFile {
  const char* name;  ///< file stem, e.g. "resnet-50"
  const char* text;
};

extern const EmbeddedFile kWorkloads[];
extern const std::size_t kWorkloadCount;
extern const char* const kGpuCatalogYaml;
/// Compute profiles (model/catalog/profiles/*.json, model/compute/profile_file.hpp).
extern const EmbeddedFile kProfiles[];
extern const std::size_t kProfileCount;

}  // namespace tauplan::model::catalog
