// The fusion planner (see passes/fusion_planner.h for the rules).
#include "passes/fusion_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/fusion.h"
#include "ir/op_registry.h"
#include "passes/fusion_outliner.h"

namespace kiln::passes {
namespace {

enum class Role { kLight, kReduction, kContraction, kOpaque };

// Pools over windows, which read each input element once per window holding it.
bool is_window_pool(const Node& node) {
  return node.op() == "max_pool" || node.op() == "average_pool" || node.op() == "lp_pool";
}

Role role_of(const Node& node) {
  switch (node.info().category) {
    case OpCategory::kElementwise:
    case OpCategory::kBroadcast:
    case OpCategory::kInjective:
      return Role::kLight;
    case OpCategory::kReduction:
      return Role::kReduction;
    case OpCategory::kOutElementwiseFusable:
      return Role::kContraction;
    case OpCategory::kOpaque:
      return Role::kOpaque;
  }
  return Role::kOpaque;
}

// Whether a broadcast op reads a tensor that is not the shape of its result and not a constant
// small enough to become a literal (a scale by a scalar is as cheap as an elementwise op).
bool reads_broadcast_tensor(const Node& node) {
  for (const Value* operand : node.operands()) {
    const bool literal = operand->is_constant() && operand->has_data() &&
                         operand->type().num_elements() <= kMaxInlinedConstantElements;
    if (!literal && operand->type().shape != node.result(0)->type().shape) return true;
  }
  return false;
}

// The most nodes a producer group may have for the cost model to recompute it in a consumer.
constexpr size_t kMaxRecomputedNodes = 8;

// Whether `node` moves data without computing (a reshape, transpose or slice; a gather of one
// constant index) or computes elementwise with one-element constants beside its one operand (a
// scale): a chain of these from a buffer is what the attention kernel copies as a strided view.
bool is_view_or_scalar_op(const Node& node) {
  const std::string& op = node.op();
  if (op == "reshape" || op == "transpose" || op == "slice") return true;
  if (op == "gather") {
    const Value* indices = node.operand(1);
    return indices->is_constant() && indices->type().num_elements() == 1;
  }
  const OpCategory category = node.info().category;
  if (category != OpCategory::kElementwise && category != OpCategory::kBroadcast) return false;
  int tensors = 0;
  for (const Value* operand : node.operands()) {
    tensors += !(operand->is_constant() && operand->type().num_elements() == 1);
  }
  return tensors == 1;
}

std::string shape_text(const Value* value) { return type_to_string(value->type()); }

bool is_widening_cast(const Node& node) {
  if (node.op() != "cast") return false;
  const DType from = node.operand(0)->type().dtype, to = node.result()->type().dtype;
  return is_float(from) && is_float(to) && dtype_size(to) > dtype_size(from);
}

class Planner {
 public:
  Planner(Graph& graph, PassContext& context, const char* pass_name)
      : graph_(graph), context_(context), pass_name_(pass_name) {}

  std::vector<FusionGroup> run() {
    const std::vector<Node*> order = graph_.nodes();
    for (Node* node : order) add_to_new_group(node, position_.size());
    for (const Value* output : graph_.outputs()) outputs_.insert(output);
    for (Node* consumer : order) merge_with_producers(consumer);
    drop_overtaken_refusals();
    for (Node* node : order) {
      const Group& group = groups_[group_of_.at(node)];
      if (group.alive && group.anchor == node && node->op() == "softmax") try_attention(node);
    }
    return collect();
  }

 private:
  struct Group {
    std::vector<Node*> nodes;
    Node* anchor = nullptr;
    bool opaque = false;
    bool attention = false;
    bool alive = true;
  };

  // --- Bookkeeping ---------------------------------------------------------------------------

  size_t add_to_new_group(Node* node, size_t position) {
    position_[node] = position;
    for (const Value* operand : node->operands()) {
      std::vector<Node*>& users = users_[operand];
      if (users.empty() || users.back() != node) users.push_back(node);
    }
    Group group;
    group.nodes.push_back(node);
    const Role role = role_of(*node);
    if (role == Role::kReduction || role == Role::kContraction) group.anchor = node;
    group.opaque = role == Role::kOpaque;
    groups_.push_back(group);
    group_of_[node] = groups_.size() - 1;
    return groups_.size() - 1;
  }

  bool in_groups(const Node* node, size_t a, size_t b) const {
    const size_t group = group_of_.at(node);
    return group == a || group == b;
  }

  // Values of group `a` that a node outside groups `a` and `b` (or the graph's outputs) uses.
  std::vector<const Value*> escaping_values(size_t a, size_t b) const {
    std::vector<const Value*> values;
    for (const Node* node : groups_[a].nodes) {
      for (const Value* result : node->results()) {
        bool escapes = outputs_.count(result) != 0;
        auto found = users_.find(result);
        if (found != users_.end()) {
          for (const Node* user : found->second) escapes = escapes || !in_groups(user, a, b);
        }
        if (escapes) values.push_back(result);
      }
    }
    return values;
  }

  void refuse(const Node& producer, const Node& consumer, const std::string& why) {
    merge_refusals_.push_back({context_.refusals.size(), &producer, &consumer});
    context_.refusals.push_back(fmt::format("{}: {}: not fused with its producer {}: {}",
                                            pass_name_, consumer.describe(), producer.describe(),
                                            why));
  }

  // Drops the logged refusals of pairs that later merges put in one group after all (a rotary
  // embedding's rotate-half slices, refused q's loop, join it through the add they feed).
  void drop_overtaken_refusals() {
    for (auto it = merge_refusals_.rbegin(); it != merge_refusals_.rend(); ++it) {
      if (group_of_.at(it->producer) == group_of_.at(it->consumer)) {
        context_.refusals.erase(context_.refusals.begin() + static_cast<ptrdiff_t>(it->index));
      }
    }
  }

  std::vector<Node*> sorted_nodes(size_t group) const {
    std::vector<Node*> nodes = groups_[group].nodes;
    std::stable_sort(nodes.begin(), nodes.end(), [&](const Node* a, const Node* b) {
      return position_.at(a) < position_.at(b);
    });
    return nodes;
  }

  // --- Merging -------------------------------------------------------------------------------

  // Tries to merge the group of each operand's producer into the consumer's. When a merge
  // succeeds after another operand was refused, the consumer's group has grown, so the refused
  // ones are tried again: a rotary embedding's add reads q * cos and the rotated half, whose
  // chain reads q's group, so q's group joins without a cycle only once the half's has. Only
  // the refusals that stand are logged.
  void merge_with_producers(Node* consumer) {
    std::vector<size_t> pending(consumer->operands().size());
    for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
    for (;;) {
      std::vector<std::pair<size_t, std::string>> refused;
      bool merged_after_refusal = false;
      for (size_t i : pending) {
        const Value* operand = consumer->operand(i);
        Node* producer = operand->producer();
        if (!producer || group_of_.at(producer) == group_of_.at(consumer)) continue;
        std::string why = try_merge(producer, consumer, operand);
        if (why.empty()) {
          merged_after_refusal = merged_after_refusal || !refused.empty();
        } else {
          refused.emplace_back(i, std::move(why));
        }
      }
      if (!merged_after_refusal) {
        for (const auto& [i, why] : refused)
          refuse(*consumer->operand(i)->producer(), *consumer, why);
        return;
      }
      pending.clear();
      for (const auto& [i, why] : refused) pending.push_back(i);
    }
  }

  // Merges the producer's group into the consumer's; returns why not, or "" when merged.
  std::string try_merge(Node* producer, Node* consumer, const Value* operand) {
    size_t from = group_of_.at(producer);
    const size_t into = group_of_.at(consumer);
    if (std::string why = kind_refusal(from, into, consumer, operand); !why.empty()) return why;
    if (std::string why = widening_cast_refusal(from, *consumer); !why.empty()) return why;
    if (std::string why = broadcast_recompute_refusal(from, *consumer, *operand); !why.empty()) {
      return why;
    }
    const std::vector<const Value*> escaping = escaping_values(from, into);
    if (!escaping.empty() && !can_keep_as_outputs(from, into, escaping)) {
      if (std::string why = recompute_refusal(from, into); !why.empty()) {
        return fmt::format("{} is also used outside the fusion and {}",
                           shape_text(escaping.front()), why);
      }
      from = clone_into(from, into);
    } else if (const Node* via = cycle_through(from, into)) {
      return "fusing them would make a cycle through " + via->describe() +
             ", which uses the producer's fusion and feeds the consumer's";
    }
    merge(from, into);
    return "";
  }

  // Why group `from` (holding the producer) may not join group `into` by the op categories, or
  // "" when it may. `operand` is the value that links them.
  std::string kind_refusal(size_t from, size_t into, const Node* consumer,
                           const Value* operand) const {
    const Group& producers = groups_[from];
    const Group& consumers = groups_[into];
    if (producers.opaque) {
      return producers.nodes[0]->op() + " is opaque (kiln fuses no op of that category)";
    }
    if (consumers.opaque) return consumer->op() + " is opaque (kiln fuses no op of that category)";
    const Node* heavy_producer = producers.anchor;
    const Node* heavy_consumer = consumers.anchor;
    if (heavy_producer && heavy_consumer) {
      return "both " + heavy_producer->op() + " and " + heavy_consumer->op() +
             " are heavy (reduction, GEMM or convolution); a kernel computes one";
    }
    if (heavy_consumer) return prologue_refusal(producers, *heavy_consumer, consumer, operand);
    if (heavy_producer) return epilogue_refusal(*heavy_producer, consumers);
    return "";
  }

  // A cast to a wider float type joins a heavy producer's kernel only where that saves bytes.
  // When every user is a reduction (a layer norm kept in f32 after a 16-bit GEMM's residual
  // add), the producer writes the narrower value and each reduction widens it as it loads:
  // half the bytes written and read, the same values. Softmax is left out: the attention
  // fusion takes the scores from the matmul's kernel.
  std::string widening_cast_refusal(size_t from, const Node& consumer) const {
    if (!groups_[from].anchor || !is_widening_cast(consumer)) return "";
    if (outputs_.count(consumer.result())) return "";
    auto found = users_.find(consumer.result());
    if (found == users_.end() || found->second.empty()) return "";
    for (const Node* user : found->second) {
      if (role_of(*user) != Role::kReduction || user->op() == "softmax") return "";
    }
    return fmt::format(
        "it widens {} to {} for reductions ({}), which widen in their loads: {}'s kernel writes "
        "the narrower value",
        dtype_name(consumer.operand(0)->type().dtype), dtype_name(consumer.result()->type().dtype),
        found->second.front()->op(), groups_[from].anchor->op());
  }

  // Light producers feeding a heavy consumer's group.
  std::string prologue_refusal(const Group& producers, const Node& heavy, const Node* consumer,
                               const Value* operand) const {
    if (is_window_pool(heavy) && consumer == &heavy) {
      for (const Node* node : producers.nodes) {
        if (node->op() == "concat") {
          return "prologue op concat would pick each of the " + heavy.op() +
                 "'s window elements' operand; the pool reads a stored concat as it lies";
        }
      }
    }
    if (role_of(heavy) != Role::kContraction || consumer != &heavy) return "";
    const bool is_conv = heavy.op() == "conv" || heavy.op() == "conv_transpose";
    const bool activation =
        heavy.operand(0) == operand || (!is_conv && heavy.operand(1) == operand);
    if (!activation) {
      return "it computes the " + heavy.op() + "'s bias, which kiln does not compute in a prologue";
    }
    // An attention kernel loads a block's Q tile once (K and V tiles once per query block): Q's
    // prologue may broadcast a tensor (a rotary embedding's cos and sin over the heads).
    const bool attention_query = heavy.operand(0) == operand && is_attention_scores(heavy);
    for (const Node* node : producers.nodes) {
      const OpCategory category = node->info().category;
      if (category == OpCategory::kBroadcast && reads_broadcast_tensor(*node) && !attention_query) {
        return "prologue op " + node->op() +
               " broadcasts a tensor, which a GEMM would reread on every tile load";
      }
      if (category == OpCategory::kInjective && is_conv) {
        return "prologue op " + node->op() + " moves elements, which a convolution's loads do not";
      }
    }
    return "";
  }

  // Light consumers of a heavy producer's group: elementwise (or broadcast) over the heavy op's
  // output elements. A reshape keeps the elements' order, so it may sit in between.
  static std::string epilogue_refusal(const Node& heavy, const Group& consumers) {
    const TensorType& heavy_type = heavy.result(0)->type();
    for (const Node* node : consumers.nodes) {
      if (node->info().category == OpCategory::kInjective && !is_view_op(*node)) {
        return "epilogue op " + node->op() + " moves elements; an epilogue of " + heavy.op() +
               " is elementwise";
      }
      if (node->result(0)->type().num_elements() != heavy_type.num_elements()) {
        return "epilogue op " + node->op() + " has shape " + shape_text(node->result(0)) +
               ", not the " + std::to_string(heavy_type.num_elements()) + " elements of the " +
               heavy.op() + "'s " + type_to_string(heavy_type);
      }
    }
    return "";
  }

  // A fused producer runs once per element the consumer computes: when the consumer broadcasts
  // the operand (an attention mask added to every head's scores), a long producer chain would run
  // again for every read of each of its elements. Such a chain is refused and stored once.
  std::string broadcast_recompute_refusal(size_t from, const Node& consumer,
                                          const Value& operand) const {
    const Group& producers = groups_[from];
    if (producers.anchor || producers.nodes.size() <= kMaxRecomputedNodes) return "";
    // The scores of an attention read Q' and K' by tiles: a chain of views and scales of a
    // buffer (torchvision's packed QKV unbound, its batch and heads merged and split again) is
    // copied as a strided view there, its arithmetic once per copied element.
    if (is_attention_scores(consumer) &&
        std::all_of(producers.nodes.begin(), producers.nodes.end(),
                    [](const Node* node) { return is_view_or_scalar_op(*node); })) {
      return "";
    }
    // Its Q tile a block loads once: Q's chain (a rotary embedding) runs once per element.
    if (is_attention_scores(consumer) && consumer.operand(0) == &operand) return "";
    const int64_t read = operand.type().num_elements();
    const int64_t computed = consumer.result(0)->type().num_elements();
    if (read == 0 || computed <= read) return "";
    return fmt::format(
        "its fusion has {} ops, more than the {} the cost model recomputes, and {} reads each of "
        "its {} elements {} times (broadcast): it is stored once instead",
        producers.nodes.size(), kMaxRecomputedNodes, consumer.op(), read, computed / read);
  }

  // Whether `node` is a matmul whose result reaches a softmax through elementwise ops alone (one
  // user each): the scores of an attention.
  bool is_attention_scores(const Node& node) const {
    if (node.op() != "matmul") return false;
    const Value* value = node.result(0);
    for (int depth = 0; depth < 16; ++depth) {
      auto found = users_.find(value);
      if (found == users_.end() || found->second.size() != 1) return false;
      const Node* user = found->second.front();
      if (user->op() == "softmax") return true;
      const OpCategory category = user->info().category;
      if (category != OpCategory::kElementwise && category != OpCategory::kBroadcast) return false;
      value = user->result(0);
    }
    return false;
  }

  // Whether the merged group can write the escaping values as extra outputs: they and every
  // other value it writes have as many elements (one iteration space: a thread computes element
  // i of each), and none is the prologue of a GEMM or convolution (whose loads revisit elements).
  bool can_keep_as_outputs(size_t from, size_t into,
                           const std::vector<const Value*>& escaping) const {
    const Node* heavy = groups_[into].anchor;
    if (heavy && role_of(*heavy) == Role::kContraction && !groups_[from].anchor) return false;
    std::vector<const Value*> written = escaping;
    for (const Value* value : escaping_values(into, from)) written.push_back(value);
    for (const Value* value : written) {
      if (value->type().num_elements() != written.front()->type().num_elements()) return false;
    }
    return true;
  }

  // The cost model: why recomputing group `from` inside group `into` is refused, or "" when
  // recomputing is cheaper than storing.
  std::string recompute_refusal(size_t from, size_t into) const {
    const Group& producers = groups_[from];
    if (producers.anchor) return "it is computed by a heavy op, which is never recomputed";
    if (producers.nodes.size() > kMaxRecomputedNodes) {
      return fmt::format("its fusion has {} ops, more than the {} the cost model recomputes",
                         producers.nodes.size(), kMaxRecomputedNodes);
    }
    int64_t read_to_recompute = 0;
    std::unordered_set<const Value*> counted;
    for (const Node* node : producers.nodes) {
      for (const Value* operand : node->operands()) {
        const Node* source = operand->producer();
        const bool inside = source && group_of_.at(source) == from;
        if (!inside && counted.insert(operand).second) {
          read_to_recompute += operand->type().num_bytes();
        }
      }
    }
    int64_t read_when_stored = 0;
    for (const Node* node : producers.nodes) {
      for (const Value* result : node->results()) {
        auto found = users_.find(result);
        if (found == users_.end()) continue;
        const bool read_by_consumer =
            std::any_of(found->second.begin(), found->second.end(),
                        [&](const Node* user) { return group_of_.at(user) == into; });
        if (read_by_consumer) read_when_stored += result->type().num_bytes();
      }
    }
    if (read_to_recompute > read_when_stored) {
      return fmt::format(
          "recomputing it would read {} bytes where its stored result is {} (cost model: keep it)",
          read_to_recompute, read_when_stored);
    }
    if (const Node* conv = conv_storing(from, into);
        conv && read_to_recompute == read_when_stored) {
      return fmt::format(
          "it is stored anyway for {}, which takes no element-moving prologue, and recomputing it "
          "would read as many bytes ({}) as its stored result (cost model: keep it)",
          conv->describe(), read_to_recompute);
    }
    return "";
  }

  // A convolution outside groups `from` and `into` whose activation is a result of `from` that
  // it cannot take as a prologue (`from` moves elements: a concat, a slice), so that the result
  // is stored whatever `into` does; nullptr where there is none. Such a stored concat costs its
  // producers no kernel either where they write their slices of it (codegen's concat views).
  const Node* conv_storing(size_t from, size_t into) const {
    const Group& producers = groups_[from];
    const bool moves_elements =
        std::any_of(producers.nodes.begin(), producers.nodes.end(), [](const Node* node) {
          return node->info().category == OpCategory::kInjective && !is_view_op(*node);
        });
    if (!moves_elements) return nullptr;
    for (const Node* node : producers.nodes) {
      for (const Value* result : node->results()) {
        const auto found = users_.find(result);
        if (found == users_.end()) continue;
        for (const Node* user : found->second) {
          if (in_groups(user, from, into)) continue;
          if ((user->op() == "conv" || user->op() == "conv_transpose") &&
              user->operand(0) == result) {
            return user;
          }
        }
      }
    }
    return nullptr;
  }

  // Clones the members of group `from` that group `into` needs, for `into` alone: the consumers
  // in `into` read the clones. Returns the clones' group.
  size_t clone_into(size_t from, size_t into) {
    std::unordered_map<const Value*, Value*> clone_of;
    // Only the members the consumers need, directly or through other members.
    std::unordered_set<const Node*> needed;
    for (const Node* consumer : groups_[into].nodes) {
      for (const Value* operand : consumer->operands()) {
        const Node* source = operand->producer();
        if (source && group_of_.at(source) == from) needed.insert(source);
      }
    }
    const std::vector<Node*> members = sorted_nodes(from);
    for (auto node = members.rbegin(); node != members.rend(); ++node) {
      if (!needed.count(*node)) continue;
      for (const Value* operand : (*node)->operands()) {
        const Node* source = operand->producer();
        if (source && group_of_.at(source) == from) needed.insert(source);
      }
    }
    std::optional<size_t> clones;
    for (Node* node : members) {
      if (!needed.count(node)) continue;
      std::vector<Value*> operands;
      for (Value* operand : node->operands()) {
        auto found = clone_of.find(operand);
        operands.push_back(found == clone_of.end() ? operand : found->second);
      }
      std::vector<TensorType> types;
      for (const Value* result : node->results()) types.push_back(result->type());
      Node* clone = graph_.add_node_with_types(node->op(), operands, node->attrs(), types,
                                               node->provenance());
      for (size_t r = 0; r < node->results().size(); ++r) {
        clone_of[node->result(r)] = clone->result(r);
      }
      const size_t group = add_to_new_group(clone, position_.at(node));
      if (clones) {
        merge(group, *clones);
      } else {
        clones = group;
      }
    }
    for (Node* consumer : groups_[into].nodes) {
      for (size_t i = 0; i < consumer->operands().size(); ++i) {
        auto found = clone_of.find(consumer->operand(i));
        if (found == clone_of.end()) continue;
        std::erase(users_[consumer->operand(i)], consumer);
        consumer->set_operand(i, found->second);
        std::vector<Node*>& users = users_[found->second];
        if (std::find(users.begin(), users.end(), consumer) == users.end()) {
          users.push_back(consumer);
        }
      }
    }
    return *clones;
  }

  // A node outside groups `from` and `into` on a path from one to the other, or null.
  const Node* cycle_through(size_t from, size_t into) const {
    size_t last = 0;
    for (size_t group : {from, into}) {
      for (const Node* node : groups_[group].nodes) last = std::max(last, position_.at(node));
    }
    std::vector<const Node*> stack;
    std::unordered_set<const Node*> seen;
    auto push_users = [&](const Node* node) {
      for (const Value* result : node->results()) {
        auto found = users_.find(result);
        if (found == users_.end()) continue;
        for (const Node* user : found->second) {
          if (seen.insert(user).second) stack.push_back(user);
        }
      }
    };
    for (size_t group : {from, into}) {
      for (const Node* node : groups_[group].nodes) push_users(node);
    }
    std::vector<const Node*> exits;
    while (!stack.empty()) {
      const Node* node = stack.back();
      stack.pop_back();
      if (in_groups(node, from, into)) continue;
      exits.push_back(node);
      if (position_.at(node) <= last) push_users(node);
    }
    // An outside node reached from the pair leads back into it when one of its users is inside.
    for (const Node* node : exits) {
      for (const Value* result : node->results()) {
        auto found = users_.find(result);
        if (found == users_.end()) continue;
        for (const Node* user : found->second) {
          if (in_groups(user, from, into)) return node;
        }
      }
    }
    return nullptr;
  }

  void merge(size_t from, size_t into) {
    Group& source = groups_[from];
    Group& target = groups_[into];
    for (Node* node : source.nodes) {
      group_of_[node] = into;
      target.nodes.push_back(node);
    }
    if (!target.anchor) target.anchor = source.anchor;
    target.attention = target.attention || source.attention;
    source.nodes.clear();
    source.alive = false;
  }

  // --- Attention -----------------------------------------------------------------------------

  // matmul (+ elementwise) → softmax over the last axis (+ elementwise) → matmul reading the
  // probabilities as its first operand: one attention kernel.
  void try_attention(Node* softmax) {
    const size_t middle = group_of_.at(softmax);
    const int64_t rank = softmax->result()->type().rank();
    const int64_t axis = softmax->int_attr("axis");
    if (axis != -1 && axis != rank - 1) return;
    const Node* scores = softmax->operand(0)->producer();
    if (!scores) return;
    const size_t first = group_of_.at(scores);
    const Node* first_anchor = groups_[first].anchor;
    if (first == middle || !first_anchor || first_anchor->op() != "matmul") return;
    const auto refuse_attention = [&](const std::string& why) {
      context_.refusals.push_back(fmt::format("{}: {}: no attention fusion with {}: {}", pass_name_,
                                              softmax->describe(), first_anchor->describe(), why));
    };
    const std::vector<const Value*> scores_out = escaping_values(first, middle);
    if (!scores_out.empty()) {
      refuse_attention("the scores " + shape_text(scores_out.front()) + " are used elsewhere");
      return;
    }
    const std::vector<const Value*> probabilities = escaping_values(middle, first);
    if (probabilities.size() != 1 || outputs_.count(probabilities[0])) {
      refuse_attention("the probabilities are not one value read only by a matmul");
      return;
    }
    const std::vector<Node*>& readers = users_.at(probabilities[0]);
    const Node* second_anchor = groups_[group_of_.at(readers[0])].anchor;
    const bool one_reader = std::all_of(readers.begin(), readers.end(), [&](const Node* user) {
      return group_of_.at(user) == group_of_.at(readers[0]);
    });
    if (!one_reader || !second_anchor || second_anchor->op() != "matmul" ||
        second_anchor->operand(0) != probabilities[0]) {
      refuse_attention("the probabilities are not the first operand of one matmul");
      return;
    }
    // A reshape between the scores and the output rows (BLOOM flattens its heads into the batch
    // around the softmax) leaves the three to kernels of their own.
    const Value* scored = first_anchor->result();
    const Value* output = second_anchor->result();
    if (!attention_rows_agree(scored->type().shape, softmax->result()->type().shape,
                              probabilities[0]->type().shape, output->type().shape)) {
      refuse_attention(fmt::format(
          "the scores {}, the softmax {}, the probabilities read {} and the output {} differ in "
          "their rows' shape",
          shape_text(scored), shape_text(softmax->result()), shape_text(probabilities[0]),
          shape_text(output)));
      return;
    }
    const size_t last = group_of_.at(readers[0]);
    merge(first, middle);
    merge(last, middle);
    Group& group = groups_[middle];
    group.anchor = const_cast<Node*>(first_anchor);
    group.attention = true;
  }

  // --- Result --------------------------------------------------------------------------------

  std::vector<FusionGroup> collect() {
    std::vector<FusionGroup> result;
    for (size_t i = 0; i < groups_.size(); ++i) {
      const Group& group = groups_[i];
      if (!group.alive || group.nodes.size() < 2) continue;
      result.push_back({sorted_nodes(i), group.anchor, group.attention});
    }
    std::sort(result.begin(), result.end(), [&](const FusionGroup& a, const FusionGroup& b) {
      return position_.at(a.nodes.front()) < position_.at(b.nodes.front());
    });
    return result;
  }

  Graph& graph_;
  PassContext& context_;
  const char* pass_name_;
  std::vector<Group> groups_;
  std::unordered_map<const Node*, size_t> group_of_;
  // Topological position; a clone shares its original's, which keeps the order valid.
  std::unordered_map<const Node*, size_t> position_;
  std::unordered_map<const Value*, std::vector<Node*>> users_;
  std::unordered_set<const Value*> outputs_;
  // The merge refusals logged: where in context_.refusals, and the pair.
  struct LoggedRefusal {
    size_t index;
    const Node* producer;
    const Node* consumer;
  };
  std::vector<LoggedRefusal> merge_refusals_;
};

}  // namespace

std::vector<FusionGroup> plan_fusion(Graph& graph, PassContext& context, const char* pass_name) {
  return Planner(graph, context, pass_name).run();
}

}  // namespace kiln::passes
