// compute_source.cpp: compute profiles of hosts and stage times from them (compute_source.hpp).
#include "model/ir/compute_source.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/compute/profile_file.hpp"
#include "model/inputs/catalog.hpp"
#include "model/ir/compute_shapes.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"

namespace tauplan::model {
namespace {

std::mutex& profiles_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// Profiles read so far, by catalog name or canonical path.
std::map<std::string, std::unique_ptr<ComputeProfile>>& profiles() {
  static std::map<std::string, std::unique_ptr<ComputeProfile>> loaded;
  return loaded;
}

/// Where each loaded profile came from, for errors.
std::map<const ComputeProfile*, std::string>& origins() {
  static std::map<const ComputeProfile*, std::string> where;
  return where;
}

const ComputeProfile* find_catalog_profile(const std::string& name) {
  std::lock_guard<std::mutex> lock(profiles_mutex());
  auto& loaded = profiles();
  const auto it = loaded.find("catalog:" + name);
  if (it != loaded.end()) return it->second.get();
  for (std::size_t i = 0; i < catalog::kProfileCount; ++i)
    if (name == catalog::kProfiles[i].name) {
      auto profile = std::make_unique<ComputeProfile>(parse_compute_profile(
          catalog::kProfiles[i].text, "model/catalog/profiles/" + name + ".json"));
      origins()[profile.get()] = "model/catalog/profiles/" + name + ".json";
      return (loaded["catalog:" + name] = std::move(profile)).get();
    }
  return nullptr;
}

const ComputeProfile& file_profile(const std::string& path) {
  std::error_code error;
  const std::string key = "file:" + std::filesystem::weakly_canonical(path, error).string();
  std::lock_guard<std::mutex> lock(profiles_mutex());
  auto& loaded = profiles();
  const auto it = loaded.find(key);
  if (it != loaded.end()) return *it->second;
  auto profile = std::make_unique<ComputeProfile>(read_compute_profile(path));
  origins()[profile.get()] = path;
  return *(loaded[key] = std::move(profile));
}

/// The `compute_profile` prop of a host, as a catalog name or a file next to the platform.
const ComputeProfile& prop_profile(const std::string& value, const Host& host,
                                   const Platform& platform) {
  if (const ComputeProfile* named = find_catalog_profile(value)) return *named;
  std::filesystem::path path(value);
  if (path.is_relative() && !platform.source_file.empty())
    path = std::filesystem::path(platform.source_file).parent_path() / path;
  if (!std::filesystem::exists(path)) {
    std::string names;
    for (const std::string& n : catalog_profile_names())
      names += (names.empty() ? "" : ", ") + n;
    throw InputError(platform.source_file, "host " + host.name + " prop compute_profile",
                     "a catalog profile (" + names + ") or a profile file", "'" + value + "'");
  }
  return file_profile(path.string());
}

}  // namespace

const ComputeProfile& catalog_compute_profile(const std::string& name, const std::string& file,
                                              const std::string& key) {
  if (const ComputeProfile* profile = find_catalog_profile(name)) return *profile;
  std::string names;
  for (const std::string& n : catalog_profile_names())
    names += (names.empty() ? "" : ", ") + n;
  throw InputError(file, key, "a compute profile of the catalog (" + names + ")", name);
}

std::vector<std::string> catalog_profile_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < catalog::kProfileCount; ++i)
    if (*catalog::kProfiles[i].name != '\0') names.emplace_back(catalog::kProfiles[i].name);
  return names;
}

const ComputeProfile* host_compute_profile(const Host& host, const Platform& platform) {
  const auto prop = host.properties.find("compute_profile");
  if (prop != host.properties.end()) return &prop_profile(prop->second, host, platform);
  if (host.gpu_model.empty()) return nullptr;
  const GpuSpec& gpu =
      gpu_spec(host.gpu_model, platform.source_file, "host " + host.name + " prop gpu_model");
  if (gpu.compute_profile.empty()) return nullptr;
  const ComputeProfile& profile = catalog_compute_profile(
      gpu.compute_profile, "model/catalog/gpus.yaml", gpu.model + " compute_profile");
  // The catalog's profile times its own precision: a host whose speed is based on another peak
  // (`precision` fp32 on a bf16 profile) is timed by flop / speed at that precision instead.
  const auto precision = host.properties.find("precision");
  if (precision != host.properties.end() && precision->second != profile.precision) return nullptr;
  return &profile;
}

std::string host_compute_source(const Host& host, const Platform& platform) {
  if (const ComputeProfile* profile = host_compute_profile(host, platform)) {
    const auto prop = host.properties.find("compute_profile");
    const std::string name = prop != host.properties.end()
                                 ? prop->second
                                 : gpu_spec(host.gpu_model).compute_profile + " (catalog)";
    // The source's first clause (who measured it, when); the profile file holds the rest.
    return fmt::format("compute profile {} of {}, {}: {}", name, profile->device,
                       profile->precision, profile->source.substr(0, profile->source.find(';')));
  }
  const auto efficiency = host.properties.find("efficiency");
  const auto source = host.properties.find("compute_source");
  std::string line = fmt::format("flop / host speed {:.4g} flop/s", host.speed_flops);
  if (efficiency != host.properties.end()) line += ", efficiency " + efficiency->second;
  if (source != host.properties.end()) line += " (" + source->second + ")";
  return line;
}

void check_profile_covers(const ComputeProfile& profile, const std::vector<ComputeOp>& ops) {
  const double limit = std::log(kMaxProfileExtrapolation);
  auto distance = [](double a1, double a2, double a3, double b1, double b2, double b3) {
    const double d1 = std::log(a1 / b1), d2 = std::log(a2 / b2), d3 = std::log(a3 / b3);
    return std::sqrt(d1 * d1 + d2 * d2 + d3 * d3);
  };
  std::string origin;
  {
    std::lock_guard<std::mutex> lock(profiles_mutex());
    const auto it = origins().find(&profile);
    origin = it != origins().end() ? it->second : profile.device + " profile";
  }
  for (const ComputeOp& op : ops) {
    const bool batched =
        op.kind == ComputeOpKind::Gemm && op.count > 1 && !profile.batched_gemms.empty();
    if (batched) {
      // Looked up per member among the batched samples (compute_profile.hpp), in log(count)
      // too.
      double nearest = std::numeric_limits<double>::infinity();
      for (const BatchedGemmSample& g : profile.batched_gemms) {
        const double dc = std::log(op.count / g.count);
        const double d = distance(op.m, op.n, op.k, g.m, g.n, g.k);
        nearest = std::min(nearest, std::sqrt(d * d + dc * dc));
      }
      if (nearest > limit)
        throw InputError(
            origin, "batched_gemms",
            fmt::format("a measured batched GEMM within a factor {:g} of {} ({:g} x "
                        "[{:g} x {:g}] x [{:g} x {:g}])",
                        kMaxProfileExtrapolation, op.name, op.count, op.m, op.k, op.k, op.n),
            fmt::format("the nearest a factor {:.3g} away", std::exp(nearest)));
    } else if (op.kind == ComputeOpKind::Gemm && !profile.gemms.empty()) {
      const double m = op.m * op.count;  // the stacked shape a batched GEMM is looked up as
      double nearest = std::numeric_limits<double>::infinity();
      for (const GemmSample& g : profile.gemms)
        nearest = std::min(nearest, distance(m, op.n, op.k, g.m, g.n, g.k));
      if (nearest > limit)
        throw InputError(origin, "gemms",
                         fmt::format("a measured GEMM within a factor {:g} of {} [{:g} x {:g}] x "
                                     "[{:g} x {:g}] (measure it: exec/cuda/gpu_check.sh, or "
                                     "tauplan calibrate --compute)",
                                     kMaxProfileExtrapolation, op.name, m, op.k, op.k, op.n),
                         fmt::format("the nearest a factor {:.3g} away", std::exp(nearest)));
    }
    if (op.kind == ComputeOpKind::Attention) {
      double nearest = std::numeric_limits<double>::infinity();
      for (const AttentionSample& a : profile.attention)
        if (a.kernel == AttentionKernel::Flash)
          nearest =
              std::min(nearest, distance(op.count, op.m, op.k, a.heads, a.sequence, a.head_dim));
      if (profile.default_attention_efficiency > 0 && profile.attention.empty()) continue;
      if (nearest > limit)
        throw InputError(origin, "attention",
                         fmt::format("a flash attention sample within a factor {:g} of {:g} heads "
                                     "x sequence {:g} x head width {:g}",
                                     kMaxProfileExtrapolation, op.count, op.m, op.k),
                         fmt::format("the nearest a factor {:.3g} away", std::exp(nearest)));
    }
  }
}

namespace {

/// What a profile's times depend on, cheaply: the same address may later hold another profile
/// (a test's local), so the key holds the profile's scalars and sample counts beside it.
std::string profile_fingerprint(const ComputeProfile& p) {
  std::string f = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<const void*>(&p), p.device, p.precision,
      p.peak_flops, p.memory_bandwidth_Bps, p.launch_overhead_s, p.default_gemm_efficiency,
      p.default_attention_efficiency, p.gemms.size(), p.batched_gemms.size());
  f += fmt::format("|{}|{}|{}", p.attention.size(), p.gemms.empty() ? 0.0 : p.gemms.front().seconds,
                   p.gemms.empty() ? 0.0 : p.gemms.back().seconds);
  for (double bps : p.memory_kernel_Bps)
    f += fmt::format("|{}", bps);
  return f;
}

std::string shape_key(const LayerShape& s) {
  std::string key =
      fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {}", s.hidden, s.heads, s.kv_heads,
                  s.ffn_hidden, s.swiglu, s.layer_norm, s.sequence, s.micro_batch, s.tensor,
                  s.sequence_parallel, static_cast<int>(s.attention), s.element_bytes, s.dropout);
  key += fmt::format(" moe {} {} {} {} {} {} {} c{}", s.moe_layer, s.experts, s.experts_per_token,
                     s.expert_ffn_hidden, s.shared_experts, s.capacity_factor, s.expert_parallel,
                     s.context);
  key += fmt::format(" mla {} {} {} {} {}", s.q_lora_rank, s.kv_lora_rank, s.qk_nope_head_dim,
                     s.qk_rope_head_dim, s.v_head_dim);
  return key;
}

/// One pass of `ops` on `profile` (each op timed once), after the coverage check.
PassSeconds pass_seconds(const std::vector<ComputeOp>& ops, const ComputeProfile& profile) {
  check_profile_covers(profile, ops);
  PassSeconds seconds;
  for (const ComputeOp& op : ops) {
    const OpsTime one = ops_seconds({op}, profile);
    (op.phase == ComputePhase::Forward ? seconds.forward : seconds.backward) += one.total();
    seconds.split.gemm_s += one.gemm_s;
    seconds.split.attention_s += one.attention_s;
    seconds.split.memory_s += one.memory_s;
    seconds.split.launch_s += one.launch_s;
  }
  return seconds;
}

/// A layer's (or the logits') pass, memoised: a planner times the same layer shape on the same
/// profile for many layouts. Refusals (check_profile_covers) are not memoised: they throw again.
PassSeconds memoised_pass(const std::string& key,
                          const std::function<std::vector<ComputeOp>()>& make_ops,
                          const ComputeProfile& profile) {
  static std::mutex mutex;
  static std::map<std::string, PassSeconds> passes;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = passes.find(key);
    if (it != passes.end()) return it->second;
  }
  const PassSeconds seconds = pass_seconds(make_ops(), profile);
  std::lock_guard<std::mutex> lock(mutex);
  if (passes.size() > 100000) passes.clear();  // a bound, far above any search's shapes
  return passes[key] = seconds;
}

void add_scaled(PassSeconds& to, const PassSeconds& pass, double times) {
  to.forward += pass.forward * times;
  to.backward += pass.backward * times;
  to.split.gemm_s += pass.split.gemm_s * times;
  to.split.attention_s += pass.split.attention_s * times;
  to.split.memory_s += pass.split.memory_s * times;
  to.split.launch_s += pass.split.launch_s * times;
}

}  // namespace

PassSeconds stage_pass_seconds(const Workload& workload, const Layout& layout, double batch,
                               int stage, const ComputeProfile& profile) {
  const Transformer& shape = *workload.transformer;
  const double b = layout.micro_batch(batch);
  const StageLayerKinds kinds = stage_layer_kinds(shape, layout.pipeline, stage);
  PassSeconds seconds;
  std::string key;
  for (LayerKind kind : {LayerKind::Dense, LayerKind::Moe}) {
    const int n = kind == LayerKind::Dense ? kinds.dense : kinds.moe;
    if (n == 0) continue;
    LayerShape layer = layer_shape(shape, b, layout.tensor, layout.sequence_parallel, kind,
                                   layout.context, layout.expert);
    layer.element_bytes = workload.bytes_per_parameter;
    key = profile_fingerprint(profile) + "|" + shape_key(layer);
    add_scaled(seconds,
               memoised_pass(
                   key + fmt::format("|layer {}", static_cast<int>(layout.recompute)),
                   [&] { return layer_ops(layer, layout.recompute); }, profile),
               n);
  }
  if (stage == layout.pipeline - 1) {
    LayerShape layer = layer_shape(shape, b, layout.tensor, layout.sequence_parallel,
                                   LayerKind::Dense, layout.context, layout.expert);
    layer.element_bytes = workload.bytes_per_parameter;
    key = profile_fingerprint(profile) + "|" + shape_key(layer);
    add_scaled(seconds,
               memoised_pass(
                   key + fmt::format("|logits {}", shape.vocabulary),
                   [&] { return logits_ops(layer, shape.vocabulary); }, profile),
               1);
  }
  return seconds;
}

}  // namespace tauplan::model
