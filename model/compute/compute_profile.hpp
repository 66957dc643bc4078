// compute_profile.hpp: how fast one GPU (or CPU) runs the operations of layer_ops.hpp, from
// measurements of that device or, where none was taken, from a cited public figure.
//
// A profile holds the device's dense peak (the datasheet's, for the precision), GEMM timings
// at measured shapes, attention timings (flash and math) at measured shapes, the memory
// bandwidth memory-bound kernels reach, and a per-kernel launch overhead. A GEMM at an
// unmeasured shape takes the efficiency (flop / time / peak) of the measured shapes nearest it
// in log(m), log(n), log(k), weighted by inverse distance; attention likewise in log(b heads),
// log(s), log(d). A batched GEMM (count > 1: the math path's attention products) is looked up as
// the one stacked GEMM [count m x k] x [k x n] (one batched kernel, as a GPU library runs it),
// unless the profile carries `batched_gemms`: timings of the batched form as the device's code
// runs it (on a CPU, a loop of `count` small products), whose per-member efficiency is then
// interpolated in log(count), log(m), log(n), log(k). A memory-bound op takes the bandwidth its
// kernel kind reached (`memory_kernels`, layer_ops.hpp's MemoryKernel: softmax, norm,
// activation, elementwise) when the profile measured that kind, else `memory_bandwidth_Bps`
// (a streaming pass, which on a CPU core overstates kernels with exp, tanh or sqrt in them); a
// variant (rms_norm, layer_norm, gelu, swiglu) the profile did not measure takes its family's
// figure (norm, activation) when that was measured.
// A profile without measurements of a kind says so, and the time of that kind
// then uses its `default_*_efficiency` with the source written beside it in the file. Every
// time says where it came from (the profile's `source`). Dependency-free: built on the GPU
// machine too. What it leaves out: clocks falling under sustained power (measured profiles
// include what the card did then), GEMMs of different precisions in one profile (one profile,
// one precision), overlap between kernels (a framework's streams: none assumed).
#pragma once

#include <string>
#include <vector>

#include "model/compute/layer_ops.hpp"

namespace tauplan::model {

struct GemmSample {
  double m = 0, n = 0, k = 0;
  double seconds = 0;  ///< one GEMM
};

/// `count` products [m x k] x [k x n] run as the batched form (all of them: `seconds`).
struct BatchedGemmSample {
  double count = 0, m = 0, n = 0, k = 0;
  double seconds = 0;  ///< all `count` of them
};

struct AttentionSample {
  AttentionKernel kernel = AttentionKernel::Flash;
  ComputePhase phase = ComputePhase::Forward;  ///< Forward or Backward
  double heads = 0;                            ///< batch x heads
  double sequence = 0;
  double head_dim = 0;
  bool causal = true;
  double seconds = 0;
};

struct ComputeProfile {
  std::string device;                       ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string precision;                    ///< "bf16", "fp32"
  std::string source;                       ///< who measured it, when, with what (or the citation)
  double peak_flops = 0;                    ///< dense peak of `precision`, flop/s (datasheet)
  std::string peak_flops_source;            ///< the datasheet it comes from
  double memory_bandwidth_Bps = 0;          ///< what memory-bound kernels reach (measured or cited)
  double launch_overhead_s = 0;             ///< per kernel, added to every op
  double default_gemm_efficiency = 0;       ///< used only when `gemms` is empty
  double default_attention_efficiency = 0;  ///< used only when `attention` is empty
  std::vector<GemmSample> gemms;
  std::vector<AttentionSample> attention;
  std::vector<BatchedGemmSample> batched_gemms;  ///< optional: empty = the stacked rule
  /// Optional bytes per second (bytes as layer_ops counts them) reached by memory-bound kernels
  /// of each kind, indexed by MemoryKernel; 0 = not measured (the kind's family, else
  /// memory_bandwidth_Bps, is used).
  double memory_kernel_Bps[kMemoryKernelKinds] = {};
  /// Empty when usable, else what is missing.
  std::string problem() const;
};

/// Time of one op (all `count` of it) on the profiled device.
double op_seconds(const ComputeOp& op, const ComputeProfile& profile);
/// Efficiency (flop / time / peak) of one [m x k] x [k x n] GEMM.
double gemm_efficiency(const ComputeProfile& profile, double m, double n, double k);
/// Efficiency of one member of `count` [m x k] x [k x n] products run as the batched form
/// (from batched_gemms; the stacked GEMM's when the profile has none).
double batched_gemm_efficiency(const ComputeProfile& profile, double count, double m, double n,
                               double k);
/// Bytes per second a memory-bound op of this kind reaches on the profiled device: the kind's
/// measured figure, else its family's (memory_kernel_family), else memory_bandwidth_Bps.
double memory_kernel_bandwidth(const ComputeProfile& profile, MemoryKernel kernel);

/// The time of a list of ops, split by kind.
struct OpsTime {
  double gemm_s = 0, attention_s = 0, memory_s = 0, launch_s = 0;
  double total() const { return gemm_s + attention_s + memory_s + launch_s; }
};
OpsTime ops_seconds(const std::vector<ComputeOp>& ops, const ComputeProfile& profile);

}  // namespace tauplan::model
