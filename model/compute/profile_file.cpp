// profile_file.cpp: reading and writing compute profiles as JSON (profile_file.hpp).
//
// Strict: every key is known, every number finite and in range, a missing file or bad JSON is
// an InputError naming the file; nothing is defaulted silently but the documented optional keys
// (launch_overhead_s 0, default efficiencies 0 meaning "measured samples are used").
#include "model/compute/profile_file.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/base/error.hpp"

namespace tauplan::model {
namespace {

using nlohmann::json;

std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

double number(const json& object, const std::string& key, const std::string& origin,
              const std::string& where, bool positive) {
  const std::string path = where.empty() ? key : where + "." + key;
  if (!object.contains(key)) throw InputError(origin, path, "a number", "nothing");
  const json& value = object.at(key);
  if (!value.is_number()) throw InputError(origin, path, "a number", shown(value));
  const double x = value.get<double>();
  if (!std::isfinite(x) || (positive ? !(x > 0) : x < 0))
    throw InputError(origin, path, positive ? "a number > 0" : "a number >= 0", shown(value));
  return x;
}

std::string text(const json& object, const std::string& key, const std::string& origin,
                 bool required) {
  if (!object.contains(key)) {
    if (required) throw InputError(origin, key, "a string", "nothing");
    return {};
  }
  const json& value = object.at(key);
  if (!value.is_string() || value.get<std::string>().empty())
    throw InputError(origin, key, "a non-empty string", shown(value));
  return value.get<std::string>();
}

void refuse_unknown_keys(const json& object, const std::set<std::string>& known,
                         const std::string& origin, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!known.count(it.key())) {
      std::string list;
      for (const std::string& k : known)
        list += (list.empty() ? "" : ", ") + k;
      throw InputError(origin, where.empty() ? it.key() : where + "." + it.key(),
                       "one of the keys " + list, "an unknown key");
    }
}

GemmSample read_gemm(const json& row, const std::string& origin, size_t index) {
  const std::string where = "gemms[" + std::to_string(index) + "]";
  if (!row.is_array() || row.size() != 4)
    throw InputError(origin, where, "[m, n, k, seconds]", shown(row));
  double values[4];
  for (size_t i = 0; i < 4; ++i) {
    if (!row[i].is_number()) throw InputError(origin, where, "[m, n, k, seconds]", shown(row));
    values[i] = row[i].get<double>();
    if (!std::isfinite(values[i]) || !(values[i] > 0))
      throw InputError(origin, where, "four numbers > 0", shown(row));
  }
  return GemmSample{values[0], values[1], values[2], values[3]};
}

BatchedGemmSample read_batched_gemm(const json& row, const std::string& origin, size_t index) {
  const std::string where = "batched_gemms[" + std::to_string(index) + "]";
  const char* expected = "[count, m, n, k, seconds]";
  if (!row.is_array() || row.size() != 5) throw InputError(origin, where, expected, shown(row));
  double values[5];
  for (size_t i = 0; i < 5; ++i) {
    if (!row[i].is_number()) throw InputError(origin, where, expected, shown(row));
    values[i] = row[i].get<double>();
    if (!std::isfinite(values[i]) || !(values[i] > 0))
      throw InputError(origin, where, "five numbers > 0", shown(row));
  }
  return BatchedGemmSample{values[0], values[1], values[2], values[3], values[4]};
}

constexpr MemoryKernel kMemoryKernels[] = {
    MemoryKernel::Elementwise, MemoryKernel::Softmax, MemoryKernel::Norm,
    MemoryKernel::Activation,  MemoryKernel::RmsNorm, MemoryKernel::LayerNorm,
    MemoryKernel::Gelu,        MemoryKernel::SwiGlu,  MemoryKernel::Optimizer};
static_assert(sizeof kMemoryKernels / sizeof kMemoryKernels[0] == kMemoryKernelKinds,
              "every MemoryKernel kind is a memory_kernels key");

AttentionSample read_attention(const json& row, const std::string& origin, size_t index) {
  const std::string where = "attention[" + std::to_string(index) + "]";
  if (!row.is_object()) throw InputError(origin, where, "an object", shown(row));
  refuse_unknown_keys(row,
                      {"kernel", "phase", "heads", "sequence", "head_dim", "causal", "seconds"},
                      origin, where);
  AttentionSample sample;
  const std::string kernel = row.contains("kernel") && row["kernel"].is_string()
                                 ? row["kernel"].get<std::string>()
                                 : std::string();
  if (kernel != "flash" && kernel != "math")
    throw InputError(origin, where + ".kernel", "flash or math",
                     row.contains("kernel") ? shown(row["kernel"]) : "nothing");
  sample.kernel = kernel == "flash" ? AttentionKernel::Flash : AttentionKernel::Math;
  const std::string phase = row.contains("phase") && row["phase"].is_string()
                                ? row["phase"].get<std::string>()
                                : std::string();
  if (phase != "forward" && phase != "backward")
    throw InputError(origin, where + ".phase", "forward or backward",
                     row.contains("phase") ? shown(row["phase"]) : "nothing");
  sample.phase = phase == "forward" ? ComputePhase::Forward : ComputePhase::Backward;
  sample.heads = number(row, "heads", origin, where, true);
  sample.sequence = number(row, "sequence", origin, where, true);
  sample.head_dim = number(row, "head_dim", origin, where, true);
  sample.seconds = number(row, "seconds", origin, where, true);
  if (!row.contains("causal") || !row["causal"].is_boolean())
    throw InputError(origin, where + ".causal", "true or false",
                     row.contains("causal") ? shown(row["causal"]) : "nothing");
  sample.causal = row["causal"].get<bool>();
  return sample;
}

}  // namespace

ComputeProfile parse_compute_profile(const std::string& text_in, const std::string& origin) {
  json root;
  try {
    root = json::parse(text_in);
  } catch (const json::parse_error& e) {
    throw InputError(origin, "", "a JSON compute profile",
                     std::string("bad JSON (") + e.what() + ")");
  }
  if (!root.is_object()) throw InputError(origin, "", "a JSON object", shown(root));
  refuse_unknown_keys(
      root,
      {"format", "device", "precision", "source", "date", "commit", "peak_flops",
       "peak_flops_source", "memory_bandwidth_Bps", "launch_overhead_s", "default_gemm_efficiency",
       "default_attention_efficiency", "gemms", "attention", "batched_gemms", "memory_kernels"},
      origin, "");
  if (text(root, "format", origin, true) != kComputeProfileFormat)
    throw InputError(origin, "format", kComputeProfileFormat, shown(root["format"]));
  ComputeProfile profile;
  profile.device = text(root, "device", origin, true);
  profile.precision = text(root, "precision", origin, true);
  profile.source = text(root, "source", origin, true);
  profile.peak_flops_source = text(root, "peak_flops_source", origin, true);
  text(root, "date", origin, false);
  text(root, "commit", origin, false);
  profile.peak_flops = number(root, "peak_flops", origin, "", true);
  profile.memory_bandwidth_Bps = number(root, "memory_bandwidth_Bps", origin, "", true);
  if (root.contains("launch_overhead_s"))
    profile.launch_overhead_s = number(root, "launch_overhead_s", origin, "", false);
  if (root.contains("default_gemm_efficiency"))
    profile.default_gemm_efficiency = number(root, "default_gemm_efficiency", origin, "", true);
  if (root.contains("default_attention_efficiency"))
    profile.default_attention_efficiency =
        number(root, "default_attention_efficiency", origin, "", true);
  if (root.contains("gemms")) {
    if (!root["gemms"].is_array())
      throw InputError(origin, "gemms", "a list of [m, n, k, seconds]", shown(root["gemms"]));
    for (size_t i = 0; i < root["gemms"].size(); ++i)
      profile.gemms.push_back(read_gemm(root["gemms"][i], origin, i));
  }
  if (root.contains("attention")) {
    if (!root["attention"].is_array())
      throw InputError(origin, "attention", "a list of attention samples",
                       shown(root["attention"]));
    for (size_t i = 0; i < root["attention"].size(); ++i)
      profile.attention.push_back(read_attention(root["attention"][i], origin, i));
  }
  if (root.contains("batched_gemms")) {
    if (!root["batched_gemms"].is_array())
      throw InputError(origin, "batched_gemms", "a list of [count, m, n, k, seconds]",
                       shown(root["batched_gemms"]));
    for (size_t i = 0; i < root["batched_gemms"].size(); ++i)
      profile.batched_gemms.push_back(read_batched_gemm(root["batched_gemms"][i], origin, i));
  }
  if (root.contains("memory_kernels")) {
    const json& kernels = root["memory_kernels"];
    if (!kernels.is_object())
      throw InputError(origin, "memory_kernels",
                       "an object of bytes per second by kernel kind (elementwise, softmax, norm, "
                       "activation, rms_norm, layer_norm, gelu, swiglu, optimizer)",
                       shown(kernels));
    std::set<std::string> known;
    for (MemoryKernel kind : kMemoryKernels)
      known.insert(to_string(kind));
    refuse_unknown_keys(kernels, known, origin, "memory_kernels");
    for (MemoryKernel kind : kMemoryKernels)
      if (kernels.contains(to_string(kind)))
        profile.memory_kernel_Bps[static_cast<int>(kind)] =
            number(kernels, to_string(kind), origin, "memory_kernels", true);
  }
  const std::string problem = profile.problem();
  if (!problem.empty()) throw InputError(origin, "gemms, attention", problem, "a profile without");
  return profile;
}

ComputeProfile read_compute_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "a readable compute profile (JSON)", "no such file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_compute_profile(buffer.str(), path);
}

std::string compute_profile_json(const ComputeProfile& profile) {
  json root;
  root["format"] = kComputeProfileFormat;
  root["device"] = profile.device;
  root["precision"] = profile.precision;
  root["source"] = profile.source;
  root["peak_flops"] = profile.peak_flops;
  root["peak_flops_source"] = profile.peak_flops_source;
  root["memory_bandwidth_Bps"] = profile.memory_bandwidth_Bps;
  root["launch_overhead_s"] = profile.launch_overhead_s;
  if (profile.default_gemm_efficiency > 0)
    root["default_gemm_efficiency"] = profile.default_gemm_efficiency;
  if (profile.default_attention_efficiency > 0)
    root["default_attention_efficiency"] = profile.default_attention_efficiency;
  root["gemms"] = json::array();
  for (const GemmSample& g : profile.gemms)
    root["gemms"].push_back({g.m, g.n, g.k, g.seconds});
  root["attention"] = json::array();
  for (const AttentionSample& a : profile.attention)
    root["attention"].push_back({{"kernel", to_string(a.kernel)},
                                 {"phase", to_string(a.phase)},
                                 {"heads", a.heads},
                                 {"sequence", a.sequence},
                                 {"head_dim", a.head_dim},
                                 {"causal", a.causal},
                                 {"seconds", a.seconds}});
  if (!profile.batched_gemms.empty()) {
    root["batched_gemms"] = json::array();
    for (const BatchedGemmSample& g : profile.batched_gemms)
      root["batched_gemms"].push_back({g.count, g.m, g.n, g.k, g.seconds});
  }
  json kernels = json::object();
  for (MemoryKernel kind : kMemoryKernels)
    if (profile.memory_kernel_Bps[static_cast<int>(kind)] > 0)
      kernels[to_string(kind)] = profile.memory_kernel_Bps[static_cast<int>(kind)];
  if (!kernels.empty()) root["memory_kernels"] = kernels;
  return root.dump(1) + "\n";
}

}  // namespace tauplan::model
