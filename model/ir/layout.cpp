// layout.cpp: layouts from job keys, their labels and their checks.
#include "model/ir/layout.hpp"

#include <cmath>

#include <fmt/format.h>

#include "model/base/error.hpp"

namespace tauplan::model {

const char* to_string(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

std::vector<MeshDimension> Layout::mesh() const {
  std::vector<MeshDimension> dimensions = {{"data", data, "data_parallel"},
                                           {"tensor", tensor, "tensor_parallel"},
                                           {"pipeline", pipeline, "pipeline_parallel"}};
  if (context > 1) dimensions.push_back({"context", context, "context_parallel"});
  if (expert > 1) dimensions.push_back({"expert", expert, "expert_parallel"});
  return dimensions;
}

std::vector<LayoutRule> Layout::rules() const {
  std::vector<LayoutRule> rules = {{"batch", "data"},
                                   {"heads", "tensor"},
                                   {"ffn_hidden", "tensor"},
                                   {"vocabulary", "tensor"},
                                   {"layers", "pipeline"}};
  if (sequence_parallel) rules.push_back({"sequence (outside attention and MLP)", "tensor"});
  if (context > 1) rules.push_back({"sequence", "context"});
  if (expert > 1) rules.push_back({"experts", "expert"});
  return rules;
}

std::string Layout::label() const {
  std::string label = fmt::format("d{}", data);
  if (tensor > 1) label += fmt::format(" t{}", tensor);
  if (pipeline > 1) label += fmt::format(" p{}", pipeline);
  if (context > 1) label += fmt::format(" c{}", context);
  if (expert > 1) label += fmt::format(" e{}", expert);
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
  add("context_parallel", KeyType::Integer, "1",
      "layout: c, ranks that split every sequence (ring attention; weights replicated, gradients "
      "reduced over data x context)")
      ->min_value = 1;
  add("expert_parallel", KeyType::Integer, "1",
      "layout: e, ranks the routed experts of each MoE layer are split over (a divisor of t x c x "
      "d; two all-to-alls per MoE layer each way)")
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
  layout.context = static_cast<int>(job.integer("context_parallel"));
  layout.expert = static_cast<int>(job.integer("expert_parallel"));
  layout.rank_order = job.text("rank_order") == "tp-pp-dp" ? RankOrder::TensorPipelineData
                                                           : RankOrder::TensorDataPipeline;
  const long long workers = job.integer("workers");
  const long long model_parallel =
      static_cast<long long>(layout.tensor) * layout.pipeline * layout.context;
  if (job.has("data_parallel")) {
    layout.data = static_cast<int>(job.integer("data_parallel"));
    if (layout.data * model_parallel != workers) {
      Layout shown = layout;
      check_layout_workers(shown, static_cast<int>(workers), job.origins());
    }
  } else {
    if (workers % model_parallel != 0 && layout.context == 1)
      throw InputError(job.origin_of("workers"),
                       fmt::format("a multiple of tensor_parallel x pipeline_parallel ({} x {} = "
                                   "{}), the data-parallel size being workers / (t p)",
                                   layout.tensor, layout.pipeline, model_parallel),
                       std::to_string(workers));
    if (workers % model_parallel != 0)
      throw InputError(job.origin_of("workers"),
                       fmt::format("a multiple of tensor_parallel x pipeline_parallel x "
                                   "context_parallel ({} x {} x {} = {}), the data-parallel size "
                                   "being workers / (t p c)",
                                   layout.tensor, layout.pipeline, layout.context, model_parallel),
                       std::to_string(workers));
    layout.data = static_cast<int>(workers / model_parallel);
  }
  return layout;
}

namespace {

/// Context parallelism splits each sequence into 2c chunks (Megatron-Core's load-balanced causal
/// split, two chunks per rank); expert parallelism splits a MoE layer's routed experts over ranks
/// of the data x context dimension, and with tensor parallelism each tensor rank dispatches its
/// own sequence shard (Megatron-Core requires sequence parallelism with MoE and t > 1); the
/// expert ranks are carved out of a stage's tensor x context x data ranks (Megatron-Core's MoE
/// parallel folding with expert tensor parallelism 1).
void check_context_and_experts(const Layout& layout, const Transformer& shape,
                               const std::string& name, const KeyOrigins& origins) {
  const int c = layout.context, e = layout.expert;
  if (c > 1 && shape.sequence % (2 * c) != 0)
    throw InputError(origins.of("context_parallel"),
                     fmt::format("a size whose 2 x context_parallel chunks split the sequence of "
                                 "{} tokens of {} evenly (load-balanced causal split)",
                                 shape.sequence, name),
                     std::to_string(c));
  if (shape.is_moe() && layout.tensor > 1 && !layout.sequence_parallel)
    throw InputError(origins.of("sequence_parallel"),
                     fmt::format("true for {}, a mixture of experts with tensor_parallel {} (each "
                                 "tensor rank dispatches its own sequence shard to the experts, "
                                 "as Megatron-Core requires)",
                                 name, layout.tensor),
                     "false");
  if (e == 1) return;
  if (!shape.is_moe())
    throw InputError(origins.of("expert_parallel"),
                     fmt::format("1 for {}, a model without experts (its transformer has no moe "
                                 "map)",
                                 name),
                     std::to_string(e));
  if (shape.moe.experts % e != 0)
    throw InputError(
        origins.of("expert_parallel"),
        fmt::format("a divisor of the {} routed experts of {}", shape.moe.experts, name),
        std::to_string(e));
  if ((static_cast<long long>(layout.tensor) * c * layout.data) % e != 0)
    throw InputError(origins.of("expert_parallel"),
                     fmt::format("a divisor of tensor_parallel x context_parallel x data_parallel "
                                 "({} x {} x {}): expert groups are carved out of a stage's ranks",
                                 layout.tensor, c, layout.data),
                     std::to_string(e));
}

}  // namespace

void check_layout(const Layout& layout, const Workload& workload, double batch, int workers,
                  const KeyOrigins& origins) {
  if (!workload.transformer)
    throw InputError(origins.of("workload"),
                     "a transformer workload (its YAML has a transformer: map) for a layout",
                     "'" + workload.name + "'");
  const Transformer& shape = *workload.transformer;
  const std::string& name = workload.name;
  const int t = layout.tensor, p = layout.pipeline, d = layout.data;
  check_layout_workers(layout, workers, origins);
  // Mesh-TF: a dimension cannot be split more ways than it has elements; heads and the
  // feed-forward width must split evenly (Megatron's column split).
  if (t > shape.heads)
    throw InputError(origins.of("tensor_parallel"),
                     fmt::format("at most the {} heads of {} (a dimension is not split more ways "
                                 "than it has elements)",
                                 shape.heads, name),
                     std::to_string(t));
  if (shape.heads % t != 0)
    throw InputError(origins.of("tensor_parallel"),
                     fmt::format("a divisor of the {} heads of {} (heads are split over the "
                                 "tensor dimension)",
                                 shape.heads, name),
                     std::to_string(t));
  if (shape.kv_heads % t != 0 && t % shape.kv_heads != 0)
    throw InputError(origins.of("tensor_parallel"),
                     fmt::format("a divisor or a multiple of the {} key/value heads of {}",
                                 shape.kv_heads, name),
                     std::to_string(t));
  if (shape.ffn_hidden % t != 0)
    throw InputError(
        origins.of("tensor_parallel"),
        fmt::format("a divisor of the feed-forward width {} of {}", shape.ffn_hidden, name),
        std::to_string(t));
  if (p > shape.layers)
    throw InputError(origins.of("pipeline_parallel"),
                     fmt::format("at most the {} layers of {} (every stage holds at least one "
                                 "layer)",
                                 shape.layers, name),
                     std::to_string(p));
  if (batch < d)
    throw InputError(origins.of("batch"),
                     fmt::format("at least data_parallel ({}) sequences: the batch is split over "
                                 "the data dimension",
                                 d),
                     fmt::format("{:g}", batch));
  const double per_replica = batch / d;
  if (per_replica != std::floor(per_replica))
    throw InputError(origins.of("batch"),
                     fmt::format("a multiple of data_parallel ({}): every replica takes an equal "
                                 "slice",
                                 d),
                     fmt::format("{:g}", batch));
  const long long replica_batch = static_cast<long long>(per_replica);
  if (replica_batch % layout.micro_batches != 0)
    throw InputError(origins.of("micro_batches"),
                     fmt::format("a divisor of the {} sequences each data-parallel replica takes "
                                 "(batch {:g} / data_parallel {})",
                                 replica_batch, batch, d),
                     std::to_string(layout.micro_batches));
  check_context_and_experts(layout, shape, name, origins);
  const int v = layout.virtual_stages;
  if (v > 1) {
    if (p == 1)
      throw InputError(origins.of("virtual_stages"),
                       "1 without pipeline stages (pipeline_parallel 1)", std::to_string(v));
    if (layout.schedule != PipelineSchedule::OneFOneB)
      throw InputError(origins.of("pipeline_schedule"),
                       "1f1b with virtual_stages > 1 (interleaving)", to_string(layout.schedule));
    // Megatron-LM's equal chunks, or Llama 3's balanced schedule: the first and the last chunk
    // one layer short, for the embedding and the output (Dubey et al. 2024, arXiv 2407.21783,
    // Section 3.3.2: "we reduce one Transformer layer each from the first and the last stages").
    const bool equal = shape.layers % (p * v) == 0;
    const bool balanced = (shape.layers + 2) % (p * v) == 0 && shape.layers + 2 >= p * v;
    if (!equal && !balanced)
      throw InputError(origins.of("virtual_stages"),
                       fmt::format("a number that splits the {} layers of {} into "
                                   "pipeline_parallel x virtual_stages equal chunks (or such "
                                   "chunks with the first and the last one layer short)",
                                   shape.layers, name),
                       fmt::format("{} ({} x {} chunks)", v, p, v));
    if (layout.micro_batches % p != 0)
      throw InputError(origins.of("micro_batches"),
                       fmt::format("a multiple of pipeline_parallel ({}) with interleaving", p),
                       std::to_string(layout.micro_batches));
  }
}

void check_layout_workers(const Layout& layout, int workers, const KeyOrigins& origins) {
  if (layout.workers() == workers) return;
  if (layout.context == 1)
    throw InputError(origins.of("data_parallel"),
                     fmt::format("data_parallel x tensor_parallel x pipeline_parallel = workers "
                                 "({})",
                                 workers),
                     fmt::format("{} x {} x {} = {}", layout.data, layout.tensor, layout.pipeline,
                                 layout.workers()));
  throw InputError(origins.of("data_parallel"),
                   fmt::format("data_parallel x tensor_parallel x pipeline_parallel x "
                               "context_parallel = workers ({})",
                               workers),
                   fmt::format("{} x {} x {} x {} = {}", layout.data, layout.tensor,
                               layout.pipeline, layout.context, layout.workers()));
}

std::vector<int> stage_layers(int layers, int pipeline) {
  std::vector<int> counts(static_cast<size_t>(pipeline), layers / pipeline);
  for (int r = 0; r < layers % pipeline; ++r)
    ++counts[static_cast<size_t>(r)];
  return counts;
}

}  // namespace tauplan::model
