// cpu_replica.cpp: host copies for the CPU replica and its factory.
#include "exec/cpu_replica.hpp"

#include <cstring>

namespace tauplan::exec {

void CpuReplica::set_parameters_from_host(const float* host) {
  std::memcpy(mlp_.parameters(), host, mlp_.parameter_count() * sizeof(float));
}

void CpuReplica::get_parameters_to_host(float* host) const {
  std::memcpy(host, mlp_.parameters(), mlp_.parameter_count() * sizeof(float));
}

void CpuReplica::get_gradients_to_host(float* host) const {
  std::memcpy(host, mlp_.gradients(), mlp_.parameter_count() * sizeof(float));
}

ReplicaFactory cpu_replica_factory() {
  return [](const MlpShape& shape, int /*worker*/) -> std::unique_ptr<Replica> {
    return std::make_unique<CpuReplica>(shape);
  };
}

}  // namespace tauplan::exec
