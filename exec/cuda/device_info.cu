// device_info.cu: whether a GPU is usable here, and what it is. No driver API, so that the
// binaries load on machines without a driver (notes §5.3); "no driver" (error 35) and "no
// device" (100) both mean 0 devices.
#include <cuda_runtime.h>

#include <string>

#include "exec/cuda/cuda_backend.hpp"

namespace tauplan::exec::cuda {

int usable_devices(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device";
  return count;
}

std::string device_description(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "device " + std::to_string(device);
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs, " + std::to_string(p.totalGlobalMem >> 30) +
         " GiB)";
}

}  // namespace tauplan::exec::cuda
