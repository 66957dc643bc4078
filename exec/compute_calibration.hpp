// compute_calibration.hpp: this machine's CPU as a compute profile (model/compute/): fp32 GEMM
// timings at a grid of shapes, the memory bandwidth of a streaming pass, a tiny call's time,
// and the hand-over latency between two threads.
//
// Measured the way exec's trainer computes: products through exec/cpu_blas.hpp on one BLAS
// thread per caller (the trainer's setting: each worker thread is one BLAS thread), with
// `threads` threads doing the same work at once (the K workers of a run share the cores, the
// caches and the memory bus; a profile for K workers is measured with K threads). GEMMs: every
// [m x k] x [k x n] of m in `m_dims`, n and k in `nk_dims`; each thread times its own calls
// (wall clock, after one warm-up call), the threads start every shape together (a barrier), a
// shape's time is the mean over threads of each thread's median. Hold-out rule: every
// calibration dimension is 5 x 2^j (20, 40, ..., 2560), so no dimension of a workload whose sizes
// are 2^j or 3 x 2^j (the validation jobs: experiments/transformer/) is ever a calibrated one,
// let alone a whole shape; is_calibration_dimension says which sizes are. Memory bandwidth: a
// read-2-write-1 pass a[i] = b[i] + s c[i] over three arrays of `stream_floats` floats per
// thread (at the default, 3 x 32 MiB per thread, above the 32 MiB last-level cache of the
// machines we run on), bytes counted as 12 per element (the write-allocate read not counted,
// as memory-bound kernels' bytes are counted in layer_ops.hpp). Per-op overhead: the median time
// of a 1 x 1 x 1 product. Batched GEMMs: `count` products of [m x k] x [k x n], each on its
// own contiguous operands, called one after another (a CPU has no batched kernel: exec's block
// loops over b x heads), at counts and dims of the same 5 x 2^j rule (the profile's
// batched_gemms). Memory-bound kernels (the profile's memory_kernels, one figure per
// layer_ops.hpp MemoryKernel variant): the CPU block's own loops (block_kernels.hpp) for a
// causal softmax over [n x n] score tiles forward and backward (n 40, 80, 160), RMSNorm and
// LayerNorm forward and backward (width 160, 320, 640), GELU and SwiGLU forward and backward and
// a residual add (0.1 to 0.8 M elements), on values of order 1, each as counted bytes
// (layer_ops.hpp's count for the op) over the median time, the geometric mean over the kind's
// sizes; the block's Adam update as the optimizer kind. The thread transport: the trainer's
// all-reduce (peer_group.hpp) over the `threads` threads at 80 KB, 640 KB and 5 MB, fit as
// latency + bytes / bandwidth (for the validation platform's links). Peak: no datasheet figure
// exists for a virtual machine's vCPU, so peak_flops is the best GEMM rate measured here (said in
// peak_flops_source); efficiencies are relative to it. Device: the CPU model of /proc/cpuinfo. What
// it leaves out: attention kernels (the CPU block runs the math path as GEMMs, which the profile
// times by shape), other precisions, clock changes under sustained load beyond what the measurement
// saw, and the thread communicator (the hand-over latency is for the validation's platform links,
// not in the profile).
#pragma once

#include <string>
#include <vector>

#include "model/compute/compute_profile.hpp"

namespace tauplan::exec {

/// 20, 40, ..., 1280 (5 x 2^j): the n and k dimensions of the default grid.
std::vector<int> default_calibration_nk_dims();
/// 20, 40, ..., 2560: the m (tokens) dimensions of the default grid.
std::vector<int> default_calibration_m_dims();
/// True when d is 5 x 2^j (j >= 0): the only sizes the calibration measures.
bool is_calibration_dimension(long long d);

struct ComputeCalibrationRequest {
  std::vector<int> m_dims = default_calibration_m_dims();
  std::vector<int> nk_dims = default_calibration_nk_dims();
  int threads = 1;                    ///< threads working at once (the run's workers)
  double flop_per_shape = 3e8;        ///< calls per shape: about this many flop, 3 to 40 calls
  long long stream_floats = 8 << 20;  ///< per array, per thread
  int stream_passes = 5;
  /// Batched GEMMs (the math path's attention on a CPU: a loop of `count` small products),
  /// every count here by every [m x k] x [k x n] of these dims; an empty count list: none.
  std::vector<int> batched_counts = {10, 80};
  std::vector<int> batched_dims = {20, 40, 80, 160, 320};
  bool memory_kernels = true;  ///< time softmax, norm, activation and element-wise kernels
};

/// The thread transport's all-reduce, fit as latency + bytes / bandwidth (0, 0: one thread).
struct ThreadTransport {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};

/// One size of a threads' all-reduce: bytes per member, and the median over repeats of the
/// slowest member's time.
struct AllReducePoint {
  double bytes = 0;
  double seconds = 0;
};

/// peer_group.hpp's allreduce_sum over groups of `group` consecutive threads of `threads`, every
/// group at once (as a layout's tensor or data groups run it, and as the trainer's threads share
/// the cores): `repeats` all-reduces of each size in `floats` (per member) after one warm-up, each
/// started together (a barrier over all the threads; threads beyond the last whole group only
/// wait at it). Throws std::invalid_argument unless 2 <= group <= threads <= 64, repeats >= 1
/// and every size is >= 1.
std::vector<AllReducePoint> measure_thread_allreduce(int threads, int group,
                                                     const std::vector<std::size_t>& floats,
                                                     int repeats);

struct ComputeCalibration {
  model::ComputeProfile profile;
  double handoff_latency_s = 0;  ///< one thread waking another (condition variable), one way
  ThreadTransport transport;     ///< peer_group.hpp's allreduce_sum over the threads
  double seconds = 0;            ///< how long the calibration took
};

/// Measures the request; InputError (origin "<compute calibration>", the field) for an empty
/// or non-positive dimension list, a dimension that is not a calibration dimension, threads
/// outside [1, 64], or stream_floats below 1024.
ComputeCalibration measure_compute_calibration(const ComputeCalibrationRequest& request);

/// The CPU model of /proc/cpuinfo ("unknown CPU" when absent) and the number of cores.
std::string cpu_model_name();

}  // namespace tauplan::exec
