// profile_file.hpp: a compute profile on disk, as JSON (which is also YAML), so that the GPU
// machine, which has none of our YAML packages, writes and reads the same file.
//
// {
//   "format": "tauplan-compute-profile-1",
//   "device": "NVIDIA H100 80GB HBM3", "precision": "bf16",
//   "source": "measured by exec/cuda/gpu_check.sh, commit ..., 2026-11-26",
//   "peak_flops": 989.5e12, "peak_flops_source": "NVIDIA H100 datasheet, SXM, dense BF16",
//   "memory_bandwidth_Bps": 3.0e12, "launch_overhead_s": 4e-6,
//   "default_gemm_efficiency": 0.7,            (only when "gemms" is empty or absent)
//   "default_attention_efficiency": 0.5,       (only when "attention" is empty or absent)
//   "gemms": [[m, n, k, seconds], ...],        (one bf16 GEMM [m x k] x [k x n] each)
//   "attention": [{"kernel": "flash"|"math", "phase": "forward"|"backward", "heads": B*H,
//                  "sequence": s, "head_dim": d, "causal": true, "seconds": t}, ...],
//   "batched_gemms": [[count, m, n, k, seconds], ...],   (optional: `count` products
//                    [m x k] x [k x n] run as the device runs a batched GEMM, seconds for all
//                    of them; when present, batched ops are timed from these, else as the
//                    stacked GEMM [count m x k] x [k x n])
//   "memory_kernels": {"softmax": Bps, "norm": Bps, "activation": Bps, "elementwise": Bps}
//                    (optional, each key optional: bytes per second, bytes as layer_ops.hpp
//                    counts them, that memory-bound kernels of that kind reach; a kind absent
//                    takes memory_bandwidth_Bps)
// }
// Any other key is refused (a misspelt key must not be silently ignored). Errors are
// InputError: the file, the key and what was expected.
#pragma once

#include <string>

#include "model/compute/compute_profile.hpp"

namespace tauplan::model {

inline constexpr const char* kComputeProfileFormat = "tauplan-compute-profile-1";

/// Reads and checks a profile; InputError on a missing file, bad JSON, a missing or unknown
/// key, a non-positive number, or a profile without a way to time GEMMs or attention.
ComputeProfile read_compute_profile(const std::string& path);
/// Parses a profile from text; `origin` names it in errors.
ComputeProfile parse_compute_profile(const std::string& text, const std::string& origin);
/// The JSON text of a profile (read_compute_profile reads it back unchanged).
std::string compute_profile_json(const ComputeProfile& profile);

}  // namespace tauplan::model
