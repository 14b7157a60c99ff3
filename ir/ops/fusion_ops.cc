// The fusion ops (fusion.loop, fusion.reduction, ...; see ir/fusion.h). A fusion node's results
// are its body's outputs; its operands must match the body's inputs. The reference interpreter
// runs the body, so these ops have no kernel of their own.
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_registry.h"
#include "ir/ops/all_ops.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_fusion(const Node& node) {
  const Graph* body = node.body();
  if (!body) throw InputError("has no body");
  const auto& params = body->inputs();
  if (params.size() != node.operands().size()) {
    throw InputError("has " + std::to_string(node.operands().size()) +
                     " operands but its body takes " + std::to_string(params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (node.operand(i)->type() != params[i]->type()) {
      throw InputError("operand " + std::to_string(i) + " is " +
                       type_to_string(node.operand(i)->type()) + " but the body takes " +
                       type_to_string(params[i]->type()));
    }
  }
  if (body->outputs().empty()) throw InputError("body yields nothing");
  std::vector<TensorType> types;
  for (const Value* output : body->outputs()) types.push_back(output->type());
  return types;
}

}  // namespace

void register_fusion_ops(OpRegistry& registry) {
  for (FusionKind kind : {FusionKind::kLoop, FusionKind::kReduction, FusionKind::kEpilogue,
                          FusionKind::kAttention, FusionKind::kMulti}) {
    registry.add({.name = fusion_op_name(kind),
                  .category = OpCategory::kOpaque,
                  .attrs = {},
                  .min_operands = 0,
                  .max_operands = OpInfo::kVariadic,
                  .num_results = OpInfo::kVariadic,
                  .infer = infer_fusion,
                  .reference = nullptr,
                  .has_body = true});
  }
}

}  // namespace kiln
