// layout.cpp: layouts from job keys, their labels and their checks.
#include "model/layout.hpp"

#include <cmath>

#include <fmt/format.h>

#include "model/error.hpp"

namespace tauplan::model {

const char* to_string(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

std::vector<MeshDimension> Layout::mesh() const {
  return {{"data", data, "data_parallel"},
          {"tensor", tensor, "tensor_parallel"},
          {"pipeline", pipeline, "pipeline_parallel"}};
}

std::vector<LayoutRule> Layout::rules() const {
  std::vector<LayoutRule> rules = {{"batch", "data"},
                                   {"heads", "tensor"},
                                   {"ffn_hidden", "tensor"},
                                   {"vocabulary", "tensor"},
                                   {"layers", "pipeline"}};
  if (sequence_parallel) rules.push_back({"sequence (outside attention and MLP)", "tensor"});
  return rules;
}

std::string Layout::label() const {
  std::string label = fmt::format("d{}", data);
  if (tensor > 1) label += fmt::format(" t{}", tensor);
  if (pipeline > 1) label += fmt::format(" p{}", pipeline);
  if (micro_batches > 1) label += fmt::format(" m{}", micro_batches);
  if (pipeline > 1) label += std::string(" ") + to_string(schedule);
  if (virtual_stages > 1) label += fmt::format(" v{}", virtual_stages);
  if (zero_stage > 0) label += fmt::format(" zero{}", zero_stage);
  if (recompute != Recompute::None) label += std::string(" ") + to_string(recompute);
  if (sequence_parallel) label += " sp";
  if (rank_order != RankOrder::TensorDataPipeline)
    label += std::string(" ") + to_string(rank_order);
  return label;
}

const char* to_string(RankOrder order) {
  return order == RankOrder::TensorPipelineData ? "tp-pp-dp" : "tp-dp-pp";
}

std::vector<KeySpec> layout_job_keys() {
  std::vector<KeySpec> keys;
  auto add = [&keys](const char* name, KeyType type, const char* value, const char* help) {
    KeySpec spec;
    spec.name = name;
    spec.type = type;
    spec.default_value = value;
    spec.help = help;
    keys.push_back(spec);
    return &keys.back();
  };
  add("tensor_parallel", KeyType::Integer, "1",
      "layout: t, ranks that split every layer's heads and feed-forward columns (Megatron)")
      ->min_value = 1;
  add("pipeline_parallel", KeyType::Integer, "1",
      "layout: p, pipeline stages (consecutive layers each)")
      ->min_value = 1;
  add("data_parallel", KeyType::Integer, "",
      "layout: d, replicas on slices of the batch (default workers / (t p))")
      ->min_value = 1;
  add("micro_batches", KeyType::Integer, "1", "layout: m, micro-batches per replica and step")
      ->min_value = 1;
  add("pipeline_schedule", KeyType::Text, "1f1b", "layout: pipeline schedule")->choices = {"gpipe",
                                                                                           "1f1b"};
  add("virtual_stages", KeyType::Integer, "1",
      "layout: v, interleaved chunks of layers per stage (1f1b only; 1 = not interleaved)")
      ->min_value = 1;
  KeySpec* zero = add("zero_stage", KeyType::Integer, "0",
                      "layout: ZeRO stage over the data dimension (3 = FSDP full shard)");
  zero->min_value = 0;
  zero->max_value = 3;
  add("recompute", KeyType::Text, "none", "layout: activation recomputation")->choices = {
      "none", "selective", "full"};
  add("sequence_parallel", KeyType::Boolean, "false",
      "layout: split norms and dropout by sequence over the tensor ranks (Korthikanti 2022)");
  add("rank_order", KeyType::Text, "tp-dp-pp",
      "layout: how ranks are numbered, fastest first (Megatron-Core's default tp-dp-pp; tp-pp-dp "
      "is its --use-tp-pp-dp-mapping: stages on adjacent ranks, replicas strided)")
      ->choices = {"tp-dp-pp", "tp-pp-dp"};
  return keys;
}

std::string layout_key_set(const Job& job) {
  bool declared = false;
  for (const KeySpec& spec : job.specs)
    declared = declared || spec.name == "tensor_parallel";
  if (!declared) return "";
  for (const KeySpec& spec : layout_job_keys()) {
    if (spec.name == "micro_batches" || !job.has(spec.name)) continue;
    if (spec.default_value.empty()) return spec.name;  // data_parallel, given at all
    const bool differs = spec.type == KeyType::Integer
                             ? job.integer(spec.name) != std::stoll(spec.default_value)
                             : job.text(spec.name) != spec.default_value;
    if (differs) return spec.name;
  }
  return "";
}

Layout layout_from_job(const Job& job) {
  Layout layout;
  layout.tensor = static_cast<int>(job.integer("tensor_parallel"));
  layout.pipeline = static_cast<int>(job.integer("pipeline_parallel"));
  layout.micro_batches = static_cast<int>(job.integer("micro_batches"));
  layout.schedule = job.text("pipeline_schedule") == "gpipe" ? PipelineSchedule::GPipe
                                                             : PipelineSchedule::OneFOneB;
  layout.virtual_stages = static_cast<int>(job.integer("virtual_stages"));
  layout.zero_stage = static_cast<int>(job.integer("zero_stage"));
  const std::string recompute = job.text("recompute");
  layout.recompute = recompute == "full"        ? Recompute::Full
                     : recompute == "selective" ? Recompute::Selective
                                                : Recompute::None;
  layout.sequence_parallel = job.boolean("sequence_parallel");
  layout.rank_order = job.text("rank_order") == "tp-pp-dp" ? RankOrder::TensorPipelineData
                                                           : RankOrder::TensorDataPipeline;
  const long long workers = job.integer("workers");
  const long long model_parallel = static_cast<long long>(layout.tensor) * layout.pipeline;
  if (job.has("data_parallel")) {
    layout.data = static_cast<int>(job.integer("data_parallel"));
    if (layout.data * model_parallel != workers)
      throw InputError(job.file, "data_parallel",
                       fmt::format("data_parallel x tensor_parallel x pipeline_parallel = workers "
                                   "({})",
                                   workers),
                       fmt::format("{} x {} x {} = {}", layout.data, layout.tensor, layout.pipeline,
                                   layout.data * model_parallel));
  } else {
    if (workers % model_parallel != 0)
      throw InputError(job.file, "workers",
                       fmt::format("a multiple of tensor_parallel x pipeline_parallel ({} x {} = "
                                   "{}), the data-parallel size being workers / (t p)",
                                   layout.tensor, layout.pipeline, model_parallel),
                       std::to_string(workers));
    layout.data = static_cast<int>(workers / model_parallel);
  }
  return layout;
}

void check_layout(const Layout& layout, const Workload& workload, double batch, int workers,
                  const std::string& file) {
  if (!workload.transformer)
    throw InputError(file, "workload",
                     "a transformer workload (its YAML has a transformer: map) for a layout",
                     "'" + workload.name + "'");
  const Transformer& shape = *workload.transformer;
  const std::string& name = workload.name;
  const int t = layout.tensor, p = layout.pipeline, d = layout.data;
  check_layout_workers(layout, workers, file);
  // Mesh-TF: a dimension cannot be split more ways than it has elements; heads and the
  // feed-forward width must split evenly (Megatron's column split).
  if (t > shape.heads)
    throw InputError(file, "tensor_parallel",
                     fmt::format("at most the {} heads of {} (a dimension is not split more ways "
                                 "than it has elements)",
                                 shape.heads, name),
                     std::to_string(t));
  if (shape.heads % t != 0)
    throw InputError(file, "tensor_parallel",
                     fmt::format("a divisor of the {} heads of {} (heads are split over the "
                                 "tensor dimension)",
                                 shape.heads, name),
                     std::to_string(t));
  if (shape.kv_heads % t != 0 && t % shape.kv_heads != 0)
    throw InputError(file, "tensor_parallel",
                     fmt::format("a divisor or a multiple of the {} key/value heads of {}",
                                 shape.kv_heads, name),
                     std::to_string(t));
  if (shape.ffn_hidden % t != 0)
    throw InputError(
        file, "tensor_parallel",
        fmt::format("a divisor of the feed-forward width {} of {}", shape.ffn_hidden, name),
        std::to_string(t));
  if (p > shape.layers)
    throw InputError(file, "pipeline_parallel",
                     fmt::format("at most the {} layers of {} (every stage holds at least one "
                                 "layer)",
                                 shape.layers, name),
                     std::to_string(p));
  if (batch < d)
    throw InputError(file, "batch",
                     fmt::format("at least data_parallel ({}) sequences: the batch is split over "
                                 "the data dimension",
                                 d),
                     fmt::format("{:g}", batch));
  const double per_replica = batch / d;
  if (per_replica != std::floor(per_replica))
    throw InputError(file, "batch",
                     fmt::format("a multiple of data_parallel ({}): every replica takes an equal "
                                 "slice",
                                 d),
                     fmt::format("{:g}", batch));
  const long long replica_batch = static_cast<long long>(per_replica);
  if (replica_batch % layout.micro_batches != 0)
    throw InputError(file, "micro_batches",
                     fmt::format("a divisor of the {} sequences each data-parallel replica takes "
                                 "(batch {:g} / data_parallel {})",
                                 replica_batch, batch, d),
                     std::to_string(layout.micro_batches));
  const int v = layout.virtual_stages;
  if (v > 1) {
    if (p == 1)
      throw InputError(file, "virtual_stages", "1 without pipeline stages (pipeline_parallel 1)",
                       std::to_string(v));
    if (layout.schedule != PipelineSchedule::OneFOneB)
      throw InputError(file, "pipeline_schedule", "1f1b with virtual_stages > 1 (interleaving)",
                       to_string(layout.schedule));
    if (shape.layers % (p * v) != 0)
      throw InputError(file, "virtual_stages",
                       fmt::format("a number that splits the {} layers of {} into "
                                   "pipeline_parallel x virtual_stages equal chunks",
                                   shape.layers, name),
                       fmt::format("{} ({} x {} chunks)", v, p, v));
    if (layout.micro_batches % p != 0)
      throw InputError(file, "micro_batches",
                       fmt::format("a multiple of pipeline_parallel ({}) with interleaving", p),
                       std::to_string(layout.micro_batches));
  }
}

void check_layout_workers(const Layout& layout, int workers, const std::string& file) {
  if (layout.workers() != workers)
    throw InputError(file, "data_parallel",
                     fmt::format("data_parallel x tensor_parallel x pipeline_parallel = workers "
                                 "({})",
                                 workers),
                     fmt::format("{} x {} x {} = {}", layout.data, layout.tensor, layout.pipeline,
                                 layout.workers()));
}

std::vector<int> stage_layers(int layers, int pipeline) {
  std::vector<int> counts(static_cast<size_t>(pipeline), layers / pipeline);
  for (int r = 0; r < layers % pipeline; ++r)
    ++counts[static_cast<size_t>(r)];
  return counts;
}

}  // namespace tauplan::model
