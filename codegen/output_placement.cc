// Which concats become views, and where their operands lie (see the header).
#include "codegen/output_placement.h"

#include <algorithm>

#include "codegen/emitter_table.h"
#include "codegen/kernel_body.h"
#include "ir/dtype.h"
#include "ir/fusion.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

// Bytes that a placed operand's runs, gaps and first offset must be whole multiples of: a
// producer's widest vector store (16 bytes) then never straddles two runs or misaligns.
constexpr int64_t kPlacementBytes = 16;

// How a refusal names an operand: its position and its value or producer.
std::string operand_name(size_t position, const Value* value) {
  std::string text = "operand " + std::to_string(position);
  if (!value->name().empty()) return text + " (%" + value->name() + ")";
  return value->producer() ? text + " (of " + value->producer()->describe() + ")" : text;
}

// The kernel node result an operand shows through views (reshapes) that only it reads, or why
// there is none.
struct HeldOperand {
  const Value* value = nullptr;
  std::string why_not;
};

HeldOperand held_operand(const Graph& graph, const Value* operand) {
  const Value* value = operand;
  while (true) {
    if (graph.is_output(value)) return {nullptr, "is a graph output"};
    const std::vector<Node*> users = graph.users(value);
    if (users.size() != 1) {
      return {nullptr, "is read by " + std::to_string(users.size() - 1) + " other node" +
                           (users.size() == 2 ? "" : "s") + " too (first " +
                           (users[0]->op() == "concat" ? users[1] : users[0])->describe() + ")"};
    }
    const Node* producer = value->producer();
    if (!producer) return {nullptr, value->is_constant() ? "is a constant" : "is a graph input"};
    if (!is_view_op(*producer)) return {value, ""};
    value = producer->operand(0);
  }
}

}  // namespace

ConcatViews concat_views(const Graph& fused_graph) {
  ConcatViews views;
  for (const Node* node : fused_graph.nodes()) {
    if (node->op() != "concat" || fusion_kind(*node)) continue;
    const auto refuse = [&](const std::string& why) {
      views.refusals.push_back("concat-views: " + node->describe() + ": " + why);
    };
    const Value* result = node->result();
    if (fused_graph.is_output(result)) {
      refuse("its result is a graph output");
      continue;
    }
    const Shape& shape = result->type().shape;
    const int64_t axis = normalize_axis(node->int_attr("axis"), std::ssize(shape), "concat axis");
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t element_bytes = static_cast<int64_t>(dtype_size(result->type().dtype));
    const int64_t stride = shape[static_cast<size_t>(axis)] * inner;
    std::map<const Value*, OutputPlacement> placements;
    std::string why_not;
    int64_t before = 0;  // the earlier operands' extent along the axis
    for (size_t position = 0; position < node->operands().size(); ++position) {
      const Value* operand = node->operand(position);
      const int64_t extent = operand->type().shape[static_cast<size_t>(axis)];
      const OutputPlacement placement{result, extent * inner, stride, before * inner};
      before += extent;
      const HeldOperand held = held_operand(fused_graph, operand);
      if (!held.value) {
        why_not = operand_name(position, operand) + " " + held.why_not;
        break;
      }
      const std::string name = operand_name(position, held.value);
      const Node& producer = *held.value->producer();
      if (producer.op() == "concat" && views.concats.count(&producer)) {
        why_not = name + " is a concat that is a view itself";
        break;
      }
      const KernelBody producer_body = kernel_body_of(producer);
      if (const Emitter& emitter = emitter_for(producer_body); !emitter.places_outputs) {
        why_not = name + " comes from a " + std::string(emitter.kind) +
                  " kernel, which does not write its outputs through a placement";
        break;
      }
      if (placement.block == 0) {
        why_not = name + " has no elements";
        break;
      }
      if ((placement.block * element_bytes) % kPlacementBytes != 0 ||
          (placement.stride * element_bytes) % kPlacementBytes != 0 ||
          (placement.offset * element_bytes) % kPlacementBytes != 0) {
        why_not = name + ": its runs (" + std::to_string(placement.block) + " elements every " +
                  std::to_string(placement.stride) + ", from " + std::to_string(placement.offset) +
                  ") are not whole 16-byte vectors";
        break;
      }
      if (!placements.emplace(held.value, placement).second) {
        why_not = name + " appears twice";
        break;
      }
    }
    if (!why_not.empty()) {
      refuse(why_not);
      continue;
    }
    views.placements.insert(placements.begin(), placements.end());
    views.concats.insert(node);
  }
  return views;
}

}  // namespace kiln::codegen
