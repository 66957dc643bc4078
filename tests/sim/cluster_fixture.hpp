// cluster_fixture.hpp: a generated cluster (model/inputs/cluster_generator.hpp) written to a
// temporary SimGrid XML file for a test to load, named by the process and the caller's name.
#pragma once

#include <unistd.h>

#include <fstream>
#include <string>

#include "model/inputs/cluster_generator.hpp"

namespace tauplan::test {

inline std::string write_cluster_xml(const model::cluster::ClusterSpec& spec,
                                     const std::string& name) {
  const std::string path = "/tmp/tauplan-generated-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << model::simgrid_xml::to_xml(model::cluster::make_cluster_platform(spec));
  return path;
}

}  // namespace tauplan::test
