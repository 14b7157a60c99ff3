// hoist-narrowing-casts (see the header). Each cast climbs while its operand is the result of a
// data-movement op that nothing else uses; the two nodes swap places by rewiring (the cast now
// reads the movement's operand, the movement reads the cast), so both keep their provenance.
// A movement op with other users stays below the cast, and the refusal says so: hoisting would
// leave its f32 result for them and a second, 16-bit copy for the cast. A hoisted cast that meets
// a cast of the same value to the same dtype (mixed precision's, for another consumer) gives way
// to it: two casts would be two kernel outputs with the same bytes.
#include "passes/hoist_narrowing_casts.h"

#include <set>
#include <string>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

const std::set<std::string>& data_movement_ops() {
  static const std::set<std::string> ops = {"reshape", "transpose",      "expand",
                                            "tile",    "depth_to_space", "space_to_depth"};
  return ops;
}

bool is_narrowing_cast(const Node& node) {
  if (node.op() != "cast") return false;
  const DType from = node.operand(0)->type().dtype, to = node.result()->type().dtype;
  return is_float(from) && is_float(to) && dtype_size(to) < dtype_size(from);
}

class Hoister {
 public:
  Hoister(Graph& graph, PassContext& context) : graph_(graph), context_(context) {}

  bool changed() const { return changed_; }

  void hoist(Node& cast) {
    while (Node* movement = cast.operand(0)->producer()) {
      if (!data_movement_ops().count(movement->op())) return;
      if (const std::string why = refusal(*movement); !why.empty()) {
        context_.refusals.push_back(std::string(HoistNarrowingCasts::kName) + ": " +
                                    cast.describe() + ": stays below " + movement->describe() +
                                    ": " + why);
        return;
      }
      swap(cast, *movement);
      if (Node* twin = twin_cast(cast)) {
        movement->set_operand(0, twin->result());
        graph_.erase_node(&cast);
        return;
      }
    }
  }

 private:
  std::string refusal(const Node& movement) const {
    if (graph_.users(movement.result()).size() > 1) return "its result has other users";
    if (graph_.is_output(movement.result())) return "its result is a graph output";
    return "";
  }

  // Another cast of the cast's operand to the same dtype, or null.
  Node* twin_cast(const Node& cast) const {
    for (Node* user : graph_.users(cast.operand(0))) {
      if (user != &cast && user->op() == "cast" &&
          user->result()->type().dtype == cast.result()->type().dtype) {
        return user;
      }
    }
    return nullptr;
  }

  // movement(x) -> cast  becomes  cast(x) -> movement, the movement's result in the cast's
  // place (and name, when that names a graph output).
  void swap(Node& cast, Node& movement) {
    Value* moved = movement.result();
    Value* narrowed = cast.result();
    const bool names_output = graph_.is_output(narrowed);
    graph_.replace_all_uses(narrowed, moved);
    cast.set_operand(0, movement.operand(0));
    narrowed->set_type(infer_result_types(cast).at(0));
    movement.set_operand(0, narrowed);
    moved->set_type(infer_result_types(movement).at(0));
    if (names_output) {
      std::string name = narrowed->name();
      narrowed->set_name(moved->name());
      moved->set_name(std::move(name));
    }
    changed_ = true;
  }

  Graph& graph_;
  PassContext& context_;
  bool changed_ = false;
};

}  // namespace

bool HoistNarrowingCasts::run(Graph& graph, PassContext& context) {
  Hoister hoister(graph, context);
  for (Node* node : graph.nodes()) {
    if (is_narrowing_cast(*node)) hoister.hoist(*node);
  }
  if (hoister.changed()) graph.sort_topologically();
  return hoister.changed();
}

}  // namespace kiln::passes
