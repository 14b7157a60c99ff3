// space-to-depth-stem (see the header).
#include "passes/space_to_depth_stem.h"

#include <cstring>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/layout_helpers.h"
#include "ir/ops/nn_conv_geometry.h"
#include "passes/channels_last.h"

namespace kiln::passes {
namespace {

// The space-to-depth block: the stride it replaces.
constexpr int64_t kBlock = 2;
// Input channels at most this many after space-to-depth (two 16-byte vectors of 16-bit values a
// tap).
constexpr int64_t kMaxChannels = 16;


// A kernel size after space-to-depth: ⌈k/2⌉.
int64_t half_kernel(int64_t kernel) { return (kernel + kBlock - 1) / kBlock; }

// Whether `value` is a graph input, or computed from one by elementwise and broadcasting ops
// whose other operands are constants (a cast, a normalization).
bool reads_graph_input(const Value* value) {
  while (value->kind() != Value::Kind::kInput) {
    const Node* producer = value->producer();
    if (producer == nullptr) return false;
    const OpCategory category = producer->info().category;
    if (category != OpCategory::kElementwise && category != OpCategory::kBroadcast) return false;
    const Value* computed = nullptr;
    for (const Value* operand : producer->operands()) {
      if (operand->is_constant()) continue;
      if (computed != nullptr) return false;
      computed = operand;
    }
    if (computed == nullptr) return false;
    value = computed;
  }
  return true;
}

// One spatial axis of the rewrite.
struct AxisRewrite {
  int64_t pad_end;  // the input's end pad before space-to-depth; -1 crops a row no output reads
  int64_t kernel;   // the new kernel size, ⌈k/2⌉
};

// The axis whose conv reads `size` positions padded by `pad_begin`, through `kernel`, giving
// `out`: the padded size 2·(out + ⌈k/2⌉ − 1) makes the new conv's output size out, and holds every
// position the old conv reads.
AxisRewrite rewrite_axis(int64_t size, int64_t pad_begin, int64_t kernel, int64_t out) {
  const int64_t half = half_kernel(kernel);
  return {kBlock * (out + half - 1) - size - pad_begin, half};
}

// W [M, C, kh, kw] as W' [M, 4C, kh', kw']: W'[o, (dy·2+dx)·C + c, a, b] = W[o, c, 2a+dy, 2b+dx],
// zero where 2a+dy or 2b+dx lies past the kernel.
Tensor space_to_depth_weights(const Tensor& weights, int64_t kernel_h, int64_t kernel_w) {
  const Shape& shape = weights.shape();
  const int64_t outputs = shape[0], channels = shape[1], kh = shape[2], kw = shape[3];
  const int64_t depth_channels = kBlock * kBlock * channels;
  const size_t size = dtype_size(weights.dtype());
  Tensor repacked(weights.dtype(), Shape{outputs, depth_channels, kernel_h, kernel_w});
  for (int64_t o = 0; o < outputs; ++o) {
    for (int64_t q = 0; q < depth_channels; ++q) {
      const int64_t dy = q / (kBlock * channels), dx = q / channels % kBlock, c = q % channels;
      for (int64_t a = 0; a < kernel_h; ++a) {
        for (int64_t b = 0; b < kernel_w; ++b) {
          const int64_t y = kBlock * a + dy, x = kBlock * b + dx;
          if (y >= kh || x >= kw) continue;
          std::memcpy(
              repacked.bytes() + (((o * depth_channels + q) * kernel_h + a) * kernel_w + b) * size,
              weights.bytes() + (((o * channels + c) * kh + y) * kw + x) * size, size);
        }
      }
    }
  }
  return repacked;
}

// Why the stem `conv` keeps its form, or "".
std::string refusal(const Node& conv) {
  const TensorType& input = conv.operand(0)->type();
  if (conv.int_attr("channels_last") != 0) return "it is channels-last already";
  if (input.rank() != 4) return "it is not 2-D";
  if (!is_16_bit_float(input.dtype)) {
    return "its operands are " + std::string(dtype_name(input.dtype)) +
           ", not 16-bit (only the 16-bit convs run on the channels-last tensor-core path)";
  }
  if (!conv.operand(1)->is_constant() || !conv.operand(1)->has_data()) {
    return "its weights are not a constant, which would be repacked on every run";
  }
  const nn::ConvGeometry geometry = nn::conv_geometry(conv);
  if (geometry.group != 1) return "it has " + std::to_string(geometry.group) + " groups";
  if (geometry.strides != std::vector<int64_t>{kBlock, kBlock}) {
    return "its strides are " + ints_to_string(geometry.strides) + ", not [2,2]";
  }
  if (geometry.dilations != std::vector<int64_t>{1, 1}) {
    return "its dilations are " + ints_to_string(geometry.dilations) + ", not [1,1]";
  }
  const int64_t channels = kBlock * kBlock * geometry.in_channels;
  if (channels > kMaxChannels) {
    return "space-to-depth would give it " + std::to_string(channels) +
           " input channels, more than " + std::to_string(kMaxChannels);
  }
  const int64_t kh = geometry.kernel[0], kw = geometry.kernel[1];
  const int64_t depth = kh * kw * padded_conv_channels(geometry.in_channels);
  const int64_t new_depth = half_kernel(kh) * half_kernel(kw) * padded_conv_channels(channels);
  if (new_depth >= depth) {
    return "its " + std::to_string(kh) + "x" + std::to_string(kw) +
           " kernel would not shrink: depth " + std::to_string(new_depth) +
           " after space-to-depth, " + std::to_string(depth) + " before";
  }
  return "";
}

// Replaces `conv` by a pad, a space_to_depth and a stride-1 conv computing the same result.
void rewrite(Graph& graph, Node& conv) {
  const nn::ConvGeometry geometry = nn::conv_geometry(conv);
  const AxisRewrite rows = rewrite_axis(geometry.in_spatial[0], geometry.pads_begin[0],
                                        geometry.kernel[0], geometry.out_spatial[0]);
  const AxisRewrite columns = rewrite_axis(geometry.in_spatial[1], geometry.pads_begin[1],
                                           geometry.kernel[1], geometry.out_spatial[1]);
  const std::vector<int64_t> pads = {0, 0, geometry.pads_begin[0], geometry.pads_begin[1],
                                     0, 0, rows.pad_end,           columns.pad_end};
  Value* padded =
      graph.add_node("pad", {conv.operand(0)}, {{"pads", pads}}, conv.provenance())->result();
  Value* moved = graph
                     .add_node("space_to_depth", {padded}, {{"blocksize", Attribute(kBlock)}},
                               conv.provenance())
                     ->result();
  const Value* weights = conv.operand(1);
  std::vector<Value*> operands = {
      moved,
      graph.add_constant(weights->name().empty() ? "" : weights->name() + ".s2d",
                         space_to_depth_weights(weights->data(), rows.kernel, columns.kernel))};
  if (conv.operands().size() > 2) operands.push_back(conv.operand(2));
  AttributeMap attrs = conv.attrs();
  attrs["strides"] = std::vector<int64_t>{1, 1};
  attrs["pads"] = std::vector<int64_t>{0, 0, 0, 0};
  Value* result =
      graph.add_node("conv", std::move(operands), std::move(attrs), conv.provenance())->result();
  Value* old_result = conv.result();
  if (result->type() != old_result->type()) {
    throw InternalError(std::string(SpaceToDepthStem::kName) + ": " + conv.describe() + " gives " +
                        type_to_string(result->type()) + " after the rewrite, " +
                        type_to_string(old_result->type()) + " before");
  }
  graph.replace_all_uses(old_result, result);
  result->set_name(old_result->name());
  graph.erase_node(&conv);
}

}  // namespace

bool SpaceToDepthStem::run(Graph& graph, PassContext& context) {
  if (context.precision != Precision::kFP16 && context.precision != Precision::kBF16) return false;
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->op() != "conv" || !reads_graph_input(node->operand(0))) continue;
    if (const std::string why = refusal(*node); !why.empty()) {
      context.refusals.push_back(std::string(kName) + ": " + node->describe() + ": " + why);
      continue;
    }
    rewrite(graph, *node);
    changed = true;
  }
  if (!changed) return false;
  graph.erase_unused_constants();
  graph.sort_topologically();
  return true;
}

}  // namespace kiln::passes
