// recognize-activations. Each pattern is anchored at its gate g(x), the op that makes it
// distinctive, and read upward from there as coefficient * x * g(x) through the mul nodes (and
// divs by a constant) above the gate, in any order and association:
//   gelu (erf)   0.5 * x * (1 + erf(x / sqrt(2)))     (also x * 0.70710678 inside the erf)
//   gelu (tanh)  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (pow(x, 3) or x*x*x)
//   silu         x * sigmoid(x)
//   hard_swish   x * hard_sigmoid(x){alpha=1/6, beta=0.5}; x * clip(x + 3, 0, 6) / 6 (or * 1/6),
//                the clip optionally after a relu
// Constants match within kConstantTolerance where binary floating point cannot hold them, exactly
// otherwise. A gate that is not multiplied at all (a plain sigmoid, tanh, relu6) is left alone
// silently; an erf, or a gate inside a product that does not complete the pattern, is refused
// with the reason.
#include "passes/recognize_activations.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "passes/pattern_match.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

// What a gated product x * g(x) * coefficient is replaced by.
struct Activation {
  std::string op;
  AttributeMap attrs;
  double coefficient;
  double tolerance;  // relative, for the coefficient
};

// Reads coefficient * x * gate upward from `gate`: through its single-use mul users until the
// product holds `x`, then on through constant factors while the coefficient differs from the
// expected one. Adds the nodes read to `match` and makes the last its root; returns why the
// product does not match, or "".
std::string match_gated_product(const Graph& graph, Value* gate, Value* x,
                                const Activation& activation, Match& match) {
  Value* current = gate;
  bool has_x = false;
  double coefficient = 1;
  while (!has_x || !near(coefficient, activation.coefficient, activation.tolerance)) {
    const std::vector<Node*> users = graph.users(current);
    if (users.size() > 1 || (users.size() == 1 && graph.is_output(current))) {
      return "intermediate " + describe_value(current) + " has other users";
    }
    Node* user = users.empty() ? nullptr : users[0];
    Product other;
    if (user && user->op() == "mul" && user->operand(0) != user->operand(1)) {
      Value* operand = other_operand(*user, current);
      other = operand == x ? Product{1, {x}, {}} : read_product(graph, operand);
    } else if (user && user->op() == "div" && user->operand(0) == current &&
               splat_value(user->operand(1)).value_or(0) != 0) {
      other.coefficient = 1 / *splat_value(user->operand(1));
    } else {
      break;
    }
    const bool is_x = other.factors.size() == 1 && other.factors[0] == x;
    if (!other.factors.empty() && (has_x || !is_x)) break;  // a factor beyond the pattern
    has_x = has_x || is_x;
    coefficient *= other.coefficient;
    match.nodes.insert(match.nodes.end(), other.nodes.begin(), other.nodes.end());
    match.nodes.push_back(user);
    current = user->result();
  }
  if (!has_x) return describe_value(gate) + " is not multiplied by " + describe_value(x);
  if (!near(coefficient, activation.coefficient, activation.tolerance)) {
    return fmt::format("{} * {} is scaled by {}, not {}", describe_value(x), describe_value(gate),
                       coefficient, activation.coefficient);
  }
  match.root = current->producer();
  return "";
}

struct Walk {
  Graph& graph;
  PatternRewriter& rewriter;

  // Completes `match` (the gate's own nodes so far) with the product above `gate` and replaces
  // it by `activation` of `x`.
  void replace_gated(const Node& anchor, Match match, Value* gate, Value* x,
                     const Activation& activation) const {
    const std::string why = match_gated_product(graph, gate, x, activation, match);
    if (!why.empty()) return rewriter.refuse(anchor, why);
    rewriter.rewrite(anchor, match, activation.op, {x}, activation.attrs);
  }

  // Whether some node multiplies or divides `gate`: a gate used otherwise is no partial match.
  bool feeds_product(const Value* gate) const {
    const std::vector<Node*> users = graph.users(gate);
    return std::any_of(users.begin(), users.end(),
                       [](const Node* user) { return user->op() == "mul" || user->op() == "div"; });
  }

  // The add of 1 that is the only user of `value`, or null.
  Node* one_plus(const Value* value) const {
    Node* add = sole_user(graph, value);
    return add && add->op() == "add" && is_splat(other_operand(*add, value), 1) ? add : nullptr;
  }
};

const Activation kGeluErf{"gelu", {{"approximate", "none"}}, 0.5, 0};
const Activation kGeluTanh{"gelu", {{"approximate", "tanh"}}, 0.5, 0};
const Activation kSilu{"silu", {}, 1, 0};
const Activation kHardSwish{"hard_swish", {}, 1, 0};
const Activation kHardSwishOverSix{"hard_swish", {}, 1.0 / 6, kConstantTolerance};

void match_gelu_erf(const Walk& walk, Node& erf) {
  const Product argument = read_product(walk.graph, erf.operand(0));
  if (argument.factors.size() != 1 ||
      !near(argument.coefficient, std::numbers::sqrt2 / 2, kConstantTolerance)) {
    return walk.rewriter.refuse(
        erf, "its argument is " + describe_product(argument) + ", not x / sqrt(2)");
  }
  Node* add = walk.one_plus(erf.result());
  if (!add) return walk.rewriter.refuse(erf, "its result is not used by one add of 1");
  Match match{nullptr, argument.nodes};
  match.nodes.insert(match.nodes.end(), {&erf, add});
  walk.replace_gated(erf, match, add->result(), argument.factors[0], kGeluErf);
}

void match_gelu_tanh(const Walk& walk, Node& tanh) {
  Node* add = walk.one_plus(tanh.result());
  if (!add) return;  // a plain tanh
  const Product argument = read_product(walk.graph, tanh.operand(0));
  Node* sum = argument.factors.size() == 1 ? producer_of(argument.factors[0], "add") : nullptr;
  Value* x = nullptr;
  Product cube;
  if (sum && near(argument.coefficient, std::sqrt(2 / std::numbers::pi), kConstantTolerance)) {
    match_either_order(*sum, [&](Value* a, Value* b) {
      cube = read_product(walk.graph, b);
      if (cube.factors == std::vector<Value*>{a, a, a} &&
          near(cube.coefficient, 0.044715, kConstantTolerance)) {
        x = a;
      }
      return x != nullptr;
    });
  }
  if (!x) {
    return walk.rewriter.refuse(tanh, "its argument is " + describe_product(argument) +
                                          ", not sqrt(2/pi) * (x + 0.044715 * x^3)");
  }
  Match match{nullptr, argument.nodes};
  match.nodes.insert(match.nodes.end(), cube.nodes.begin(), cube.nodes.end());
  match.nodes.insert(match.nodes.end(), {sum, &tanh, add});
  walk.replace_gated(tanh, match, add->result(), x, kGeluTanh);
}

void match_silu(const Walk& walk, Node& sigmoid) {
  if (!walk.feeds_product(sigmoid.result())) return;
  walk.replace_gated(sigmoid, {nullptr, {&sigmoid}}, sigmoid.result(), sigmoid.operand(0), kSilu);
}

void match_hard_swish(const Walk& walk, Node& hard_sigmoid) {
  if (!near(hard_sigmoid.float_attr("alpha"), 1.0 / 6, kConstantTolerance) ||
      hard_sigmoid.float_attr("beta") != 0.5 || !walk.feeds_product(hard_sigmoid.result())) {
    return;
  }
  walk.replace_gated(hard_sigmoid, {nullptr, {&hard_sigmoid}}, hard_sigmoid.result(),
                     hard_sigmoid.operand(0), kHardSwish);
}

// x * clip(x + 3, 0, 6) / 6, clip being relu6 (PyTorch exports F.relu6 as clip(relu(..))).
void match_hard_swish_of_clip(const Walk& walk, Node& clip) {
  Match match{nullptr, {&clip}};
  Value* shifted = clip.operand(0);
  if (Node* relu = producer_of(shifted, "relu")) {
    match.nodes.push_back(relu);
    shifted = relu->operand(0);
  }
  Node* add = producer_of(shifted, "add");
  if (clip.float_attr("min") != 0 || clip.float_attr("max") != 6 || !add ||
      !is_float(clip.result()->type().dtype) || !walk.feeds_product(clip.result())) {
    return;
  }
  Value* x = nullptr;
  match_either_order(*add, [&](Value* a, Value* b) {
    if (is_splat(b, 3)) x = a;
    return x != nullptr;
  });
  if (!x) return;  // relu6 of something else
  match.nodes.push_back(add);
  walk.replace_gated(clip, match, clip.result(), x, kHardSwishOverSix);
}

const std::map<std::string, void (*)(const Walk&, Node&)> kMatcherByGate = {
    {"erf", match_gelu_erf},
    {"tanh", match_gelu_tanh},
    {"sigmoid", match_silu},
    {"hard_sigmoid", match_hard_swish},
    {"clip", match_hard_swish_of_clip},
};

}  // namespace

bool RecognizeActivations::run(Graph& graph, PassContext& context) {
  PatternRewriter rewriter(graph, context, kName);
  const Walk walk{graph, rewriter};
  rewriter.walk([&](Node& node) {
    if (auto matcher = kMatcherByGate.find(node.op()); matcher != kMatcherByGate.end()) {
      matcher->second(walk, node);
    }
  });
  return rewriter.finish();
}

}  // namespace kiln::passes
