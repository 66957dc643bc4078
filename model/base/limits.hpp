// limits.hpp: the stated limits on what tauplan reads, in one place.
//
// Every reader refuses a value outside these limits with an InputError that states the limit.
// They are far beyond any real cluster or model (a million workers, a quadrillion parameters,
// a yottaflop host), and low enough that every product the engines form from them (steps x
// rounds x batch x flop / speed ...) stays a finite double, so that no result is inf or
// negative. What it leaves out: limits that only one reader needs (they sit beside it).
#pragma once

#include <cstddef>

namespace tauplan::model {

/// Names (hosts, node types, workloads, keys' words): at most this many characters.
constexpr std::size_t kMaxNameLength = 256;
/// File paths: at most this many characters (Linux's PATH_MAX).
constexpr std::size_t kMaxPathLength = 4096;
/// Input files (jobs, workloads, inventories, tables, platforms): at most this many bytes.
constexpr std::size_t kMaxInputFileBytes = 64u << 20;
/// YAML documents: at most this many values (scalars, lists and maps) in all.
constexpr std::size_t kMaxYamlNodes = 1000000;
/// Whole numbers are kept exactly in a double: at most 2^53.
constexpr double kLargestWholeNumber = 9007199254740992.0;

/// Steps or rounds to reach the target: at most 1e15.
constexpr double kMaxConvergenceSteps = 1e15;
/// Critical batch of the critical-batch model, in samples.
constexpr double kMaxCriticalBatch = 1e12;

/// Host speed (effective flop/s): from 1 flop/s to 1e24 flop/s (SimGrid's largest prefix, Yf).
constexpr double kMinSpeedFlops = 1;
constexpr double kMaxSpeedFlops = 1e24;
/// Link bandwidth: from 1 B/s to 1e18 B/s.
constexpr double kMinBandwidthBps = 1;
constexpr double kMaxBandwidthBps = 1e18;
/// Link latency: from 0 to 1e6 s (11.6 days).
constexpr double kMaxLatencySeconds = 1e6;
/// GPU memory of a host: at most 1e18 bytes.
constexpr double kMaxMemoryBytes = 1e18;

/// Workload sizes.
constexpr double kMaxParameters = 1e15;
constexpr double kMaxBytesPerParameter = 1e3;
constexpr double kMaxFlopPerSample = 1e21;
constexpr double kMaxActivationBytesPerSample = 1e18;
constexpr double kMaxUpdateFlopPerParameter = 1e6;
/// Features of one layer of an MLP workload (`widths`): at most 1e7.
constexpr double kMaxMlpWidth = 1e7;

/// Ops of one Plan a layout (strategy mesh) may lower to: its ops grow with micro-batches x
/// stages x replicas (x tensor ranks squared without sequence parallelism), and each costs
/// about kMeshPlanBytesPerOp of memory while the Plan is evaluated, so 2e7 ops is about 20 GB,
/// the most a 24 GiB machine holds; the layout is also refused when this machine has less
/// memory available (model/base/machine_memory.hpp). `tauplan layout` evaluates larger layouts in
/// closed form.
constexpr double kMaxMeshPlanOps = 2e7;
/// Memory per op of a layout's Plan while predict or simulate evaluates it: 830-850 bytes
/// measured on 2026-11-26 (maximum resident set of GPT-3 t8 p8 d6 with 32 and 96 micro-batches,
/// 52k and 156k ops: +86 MB for predict, +85 MB for simulate), rounded up.
constexpr double kMeshPlanBytesPerOp = 1000;

}  // namespace tauplan::model
