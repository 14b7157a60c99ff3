// Padding analysis (see the header): each value's row axes, op by op in graph order, with one
// rule per kind of op; anything else that reads rows refuses their class. What padded positions
// hold (passes/padding_values.h) is followed alongside, for the sums it makes harmless.
#include "passes/padding_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "passes/padding_values.h"

namespace kiln::passes {
namespace {

using Rows = std::vector<RowAxis>;

const Shape& shape_of(const Value* value) { return value->type().shape; }

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

class Analyzer {
 public:
  Analyzer(const Graph& graph, const std::vector<VaryingDim>& dims,
           const std::vector<ConstantRows>& constant_rows)
      : graph_(graph), dims_(dims) {
    for (size_t i = 0; i < dims.size(); ++i) {
      parent_.push_back(static_cast<int>(i));
      refusal_.emplace_back();
      const Value* input = graph.inputs().at(dims[i].input);
      rows_[input].push_back({dims[i].axis, 1, static_cast<int>(i)});
      padded_[{input, dims[i].axis}] = PaddedValue::exactly(0);  // the runtime pads with zeros
    }
    // A constant's rows hold its own values at the padded positions: ordinary, but for a
    // triangle (below).
    for (const ConstantRows& row : constant_rows) {
      if (row.constant >= graph.constants().size() || row.dim < 0 ||
          static_cast<size_t>(row.dim) >= dims.size()) {
        continue;
      }
      const Value* constant = graph.constants()[row.constant];
      const Shape& shape = shape_of(constant);
      if (row.axis < 0 || static_cast<size_t>(row.axis) >= shape.size() || row.inner < 1 ||
          shape[row.axis] % row.inner != 0) {
        continue;
      }
      rows_[constant].push_back({row.axis, row.inner, row.dim});
    }
    for (const auto& [value, rows] : rows_) {
      if (value->is_constant()) note_triangles(value, rows);
    }
  }

  // A constant with one class's rows on two axes a and b (a causal mask [1, 1, S, S]): where
  // every element past the diagonal along b (index along b above the one along a) is one value
  // v, a position padded along b and real along a holds v (its index along b is at least the
  // real size, above any real index along a), and likewise along a.
  void note_triangles(const Value* constant, const Rows& rows) {
    if (!constant->has_data()) return;
    for (const RowAxis& a : rows) {
      for (const RowAxis& b : rows) {
        if (a.axis == b.axis || a.dim_class != b.dim_class || a.inner != 1 || b.inner != 1 ||
            a.outer != 1 || b.outer != 1) {
          continue;
        }
        if (const std::optional<double> v = value_past_diagonal(constant, a.axis, b.axis)) {
          padded_[{constant, b.axis}] = PaddedValue::exactly(*v);
        }
      }
    }
  }

  // The one value of the elements whose index along `b` is above their index along `a`.
  static std::optional<double> value_past_diagonal(const Value* constant, int a, int b) {
    const Tensor& data = constant->data();
    const Shape& shape = data.shape();
    const std::vector<int64_t> strides = row_major_strides(shape);
    std::optional<double> found;
    for (int64_t i = 0; i < data.num_elements(); ++i) {
      if (i / strides[b] % shape[b] <= i / strides[a] % shape[a]) continue;
      const double v = data.get_double(i);
      if (found && !(*found == v)) return std::nullopt;  // (a NaN never matches)
      found = v;
    }
    return found;
  }

  PaddingAnalysis run() {
    for (const Node* node : graph_.nodes()) visit(*node);
    PaddingAnalysis analysis;
    std::map<int, int> dense;  // root class -> 0, 1, ...
    const auto class_of = [&](int c) {
      const int root = find(c);
      const auto [it, inserted] = dense.try_emplace(root, static_cast<int>(dense.size()));
      if (inserted) {
        analysis.refusal.push_back(refusal_[root]);
        analysis.relies_on.push_back(reliance_text(root));
      }
      return it->second;
    };
    for (size_t i = 0; i < parent_.size(); ++i) analysis.dim_class.push_back(class_of(int(i)));
    for (const Value* output : graph_.outputs()) {
      Rows rows = rows_of(output);
      std::set<int> seen;
      for (RowAxis& row : rows) {
        row.dim_class = class_of(row.dim_class);
        std::string& refusal = analysis.refusal[row.dim_class];
        if (!seen.insert(row.dim_class).second && refusal.empty()) {
          refusal = fmt::format("output '{}' has padded rows along two axes", output->name());
        }
        if (row.outer != 1 && refusal.empty()) {
          refusal = fmt::format("output '{}' has its padded rows inside a merged axis {}",
                                output->name(), row.axis);
        }
      }
      analysis.output_rows.push_back(std::move(rows));
    }
    for (const auto& [value, rows] : rows_) {
      std::vector<RowAxis>& dense_rows = analysis.value_rows[value];
      for (RowAxis row : rows) {
        row.dim_class = class_of(row.dim_class);
        dense_rows.push_back(row);
      }
    }
    return analysis;
  }

 private:
  int find(int c) { return parent_[c] == c ? c : parent_[c] = find(parent_[c]); }

  // Notes that class c's padding relies on `kind` at `node` (counted, the first named).
  void rely(int c, const std::string& kind, const Node& node) {
    Reliance& reliance = reliances_[{c, kind}];
    if (reliance.count++ == 0) reliance.first = node.describe();
  }

  // Class `root`'s reliances, joined ("" for none): each kind with its count and a node.
  std::string reliance_text(int root) {
    std::map<std::string, Reliance> merged;
    for (const auto& [key, reliance] : reliances_) {
      if (find(key.first) != root) continue;
      Reliance& into = merged[key.second];
      if (into.count == 0) into.first = reliance.first;
      into.count += reliance.count;
    }
    std::string text;
    for (const auto& [kind, reliance] : merged) {
      text += fmt::format("{}{} × {} (the first: node {})", text.empty() ? "" : "; ",
                          reliance.count, kind, reliance.first);
    }
    return text;
  }

  void unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (refusal_[a].empty()) refusal_[a] = refusal_[b];
    parent_[b] = a;
  }

  void refuse(int c, const Node& node, const std::string& why) {
    std::string& refusal = refusal_[find(c)];
    if (refusal.empty()) refusal = "node " + node.describe() + " " + why;
  }

  void refuse_all(const Rows& rows, const Node& node, const std::string& why) {
    for (const RowAxis& row : rows) refuse(row.dim_class, node, why);
  }

  const Rows& rows_of(const Value* value) const {
    static const Rows kNone;
    const auto it = rows_.find(value);
    return it == rows_.end() ? kNone : it->second;
  }

  // Adds `row` to `result`'s rows. Rows of two classes lying alike on one axis make them one
  // class; rows of two classes in separate digits of a merged axis stay apart.
  void add_row(const Node& node, const Value* result, RowAxis row) {
    Rows& rows = rows_[result];
    const int64_t size = shape_of(result)[row.axis];
    // The span of the digit's indices: [inner, inner · rows).
    const auto span = [&](const RowAxis& r) { return size / r.outer; };
    for (RowAxis& existing : rows) {
      if (existing.axis != row.axis) continue;
      if (existing.inner == row.inner && existing.outer == row.outer) {
        unite(existing.dim_class, row.dim_class);
        return;
      }
      const bool apart = span(existing) <= row.inner || span(row) <= existing.inner;
      if (!apart || find(existing.dim_class) == find(row.dim_class)) {
        refuse(row.dim_class, node,
               fmt::format("meets rows of {} and {} elements along axis {}", existing.inner,
                           row.inner, row.axis));
        return;
      }
    }
    rows.push_back(row);
  }

  // What `value` holds at positions padded along `axis` (ordinary unless known).
  PaddedValue padded_value(const Value* value, int64_t axis) const {
    const auto found = padded_.find({value, static_cast<int>(axis)});
    return found == padded_.end() ? PaddedValue::ordinary() : found->second;
  }

  // Records it for a value with one row digit on `axis` (on a merged axis, where two classes'
  // digits lie, "padded along the axis" would not say along which).
  void set_padded_value(const Value* value, int axis, PaddedValue padded) {
    if (row_on(value, axis) && padded.kind != PaddedValue::Kind::kOrdinary) {
      padded_[{value, axis}] = padded;
    }
  }

  // The row of `value` on `axis` (nullptr if none, or several). Rows of a class at size 1 are
  // not counted: one row is never padded.
  const RowAxis* row_on(const Value* value, int64_t axis) const {
    const int64_t size = shape_of(value)[axis];
    const RowAxis* found = nullptr;
    for (const RowAxis& row : rows_of(value)) {
      if (row.axis != axis || size == row.inner * row.outer) continue;
      if (found) return nullptr;
      found = &row;
    }
    return found;
  }

  // Whether rows `a` and `b` are one class's, alike (the same padded indices).
  bool same_rows(const RowAxis& a, const RowAxis& b) {
    return a.inner == b.inner && a.outer == b.outer && find(a.dim_class) == find(b.dim_class);
  }

  // The smallest size a run of class c may have: indices below it are never padded.
  int64_t smallest_size(int c) {
    int64_t smallest = 1;
    for (size_t d = 0; d < dims_.size(); ++d) {
      if (find(static_cast<int>(d)) == find(c)) smallest = std::max(smallest, dims_[d].min);
    }
    return smallest;
  }

  bool operand_has_rows(const Node& node) const {
    for (const Value* operand : node.operands()) {
      if (!rows_of(operand).empty()) return true;
    }
    return false;
  }

  void visit(const Node& node) {
    if (!operand_has_rows(node)) return;
    const std::string& op = node.op();
    const OpCategory category = node.info().category;
    if (op == "batch_normalization") {
      // Per-channel parameters (operands 1..4), aligned with X's axis 1, not numpy's last.
      for (size_t i = 1; i < node.operands().size(); ++i) {
        refuse_all(rows_of(node.operand(i)), node, fmt::format("has rows in operand {}", i));
      }
      for (const RowAxis& row : rows_of(node.operand(0))) add_row(node, node.result(0), row);
    } else if (category == OpCategory::kElementwise || category == OpCategory::kBroadcast ||
               op == "expand") {
      broadcast(node, 0, node.operands().size());
      elementwise_padded_values(node);
    } else if (category == OpCategory::kReduction) {
      reduction(node);
    } else if (op == "conv" || op == "conv_transpose" || op == "depth_to_space" ||
               op == "space_to_depth") {
      batch_only(node);
    } else if (op == "matmul") {
      matmul(node);
    } else if (op == "gemm") {
      gemm(node);
    } else if (op == "transpose") {
      transpose(node);
    } else if (op == "reshape") {
      reshape(node);
    } else if (op == "slice") {
      slice(node);
    } else if (op == "concat" || op == "cum_sum" || op == "cum_prod" || op == "top_k" ||
               op == "gather_elements") {
      along_axis(node);
    } else if (op == "gather") {
      gather(node);
    } else if (op == "gather_nd") {
      gather_nd(node);
    } else if (op == "pad" || op == "tile" || op == "resize" || op == "trilu") {
      same_size_axes(node);
    } else {
      refuse_all(rows_of_operands(node), node, "is not known to keep rows apart");
    }
  }

  Rows rows_of_operands(const Node& node) const {
    Rows all;
    for (const Value* operand : node.operands()) {
      const Rows& rows = rows_of(operand);
      all.insert(all.end(), rows.begin(), rows.end());
    }
    return all;
  }

  // Operands [first, last) broadcast to result 0 (numpy rules, aligned at the last axis): each
  // row axis carries over; an operand without rows on a result row axis must have size 1 there.
  void broadcast(const Node& node, size_t first, size_t last) {
    broadcast_to(node, node.result(0), first, last);
  }

  void broadcast_to(const Node& node, const Value* result, size_t first, size_t last) {
    const int64_t rank = result->type().rank();
    for (size_t i = first; i < last; ++i) {
      const int64_t offset = rank - node.operand(i)->type().rank();
      for (RowAxis row : rows_of(node.operand(i))) {
        row.axis += static_cast<int>(offset);
        add_row(node, result, row);
      }
    }
    check_aligned(node, result, first, last);
  }

  // An elementwise op's padded values, per row axis of its result: from each operand's where it
  // has the same rows, a one-element constant's element, else ordinary (real values broadcast).
  void elementwise_padded_values(const Node& node) {
    const Value* result = node.result(0);
    const int64_t rank = result->type().rank();
    for (const RowAxis& row : rows_of(result)) {
      if (row_on(result, row.axis) == nullptr) continue;
      std::vector<PaddedValue> operands;
      for (const Value* operand : node.operands()) {
        const int64_t axis = row.axis - (rank - operand->type().rank());
        const RowAxis* own = axis >= 0 ? row_on(operand, axis) : nullptr;
        if (own && same_rows(*own, row)) {
          operands.push_back(padded_value(operand, axis));
        } else if (operand->is_constant() && operand->has_data() &&
                   operand->type().num_elements() == 1) {
          operands.push_back(PaddedValue::exactly(operand->data().get_double(0)));
        } else {
          operands.push_back(PaddedValue::ordinary());
        }
      }
      set_padded_value(result, row.axis, elementwise_padded_value(node, operands));
    }
  }

  // Every operand in [first, last) covering a row axis of `result` has rows there, size 1, or
  // is a constant (prefix-stable: the caller compares the graph at two sizes, header).
  void check_aligned(const Node& node, const Value* result, size_t first, size_t last) {
    const int64_t rank = result->type().rank();
    for (const RowAxis& row : rows_of(result)) {
      for (size_t i = first; i < last; ++i) {
        const Value* operand = node.operand(i);
        const int64_t axis = row.axis - (rank - operand->type().rank());
        if (axis < 0 || shape_of(operand)[axis] == 1 || operand->is_constant()) continue;
        const Rows& rows = rows_of(operand);
        const bool padded =
            std::any_of(rows.begin(), rows.end(), [&](const RowAxis& r) { return r.axis == axis; });
        if (!padded) {
          refuse(row.dim_class, node,
                 fmt::format("reads operand {} ({}), whose axis {} has the padded size but "
                             "is not an input's padded rows",
                             i, node.operand(i)->name(), axis));
        }
      }
    }
  }

  // Rows of operand 0 may lie only on axis 0 (a batch of images); other operands have none.
  void batch_only(const Node& node) {
    for (size_t i = 1; i < node.operands().size(); ++i) {
      refuse_all(rows_of(node.operand(i)), node, fmt::format("has rows in operand {}", i));
    }
    for (const RowAxis& row : rows_of(node.operand(0))) {
      if (row.axis != 0) {
        refuse(row.dim_class, node, fmt::format("mixes along axis {}", row.axis));
        continue;
      }
      for (const Value* result : node.results()) add_row(node, result, row);
    }
  }

  // The axes of operand 0 whose elements a reduction combines (ReducedAxes in op_registry.h).
  std::set<int64_t> combined_axes(const Node& node) const {
    const int64_t rank = node.operand(0)->type().rank();
    std::set<int64_t> axes;
    const auto from = [&](int64_t first) {
      for (int64_t a = first; a < rank; ++a) axes.insert(a);
    };
    switch (node.info().reduced_axes) {
      case ReducedAxes::kAxesOrAll:
      case ReducedAxes::kAxes: {
        const std::vector<int64_t>& listed = node.ints_attr("axes");
        for (const int64_t axis : listed) axes.insert(normalize_axis(axis, rank));
        const bool noop =
            node.has_attr("noop_with_empty_axes") && node.int_attr("noop_with_empty_axes") != 0;
        if (listed.empty() && node.info().reduced_axes == ReducedAxes::kAxesOrAll && !noop) {
          from(0);
        }
        break;
      }
      case ReducedAxes::kAxis:
        axes.insert(normalize_axis(node.int_attr("axis"), rank));
        break;
      case ReducedAxes::kFromAxis:
        from(normalize_axis(node.int_attr("axis"), rank));
        break;
      case ReducedAxes::kSpatial:
        from(2);
        break;
      case ReducedAxes::kWithinGroups:
      case ReducedAxes::kNone:  // windows over spatial axes, lrn over channels
        from(1);
        break;
    }
    return axes;
  }

  void reduction(const Node& node) {
    for (size_t i = 1; i < node.operands().size(); ++i) {
      refuse_all(rows_of(node.operand(i)), node, fmt::format("has rows in operand {}", i));
    }
    const std::set<int64_t> combined = combined_axes(node);
    const Shape& in = shape_of(node.operand(0));
    const Value* x = node.operand(0);
    for (const RowAxis& row : rows_of(x)) {
      if (combined.count(row.axis)) {
        combine_padded(node, row, combined);
        continue;
      }
      for (const Value* result : node.results()) {
        const Shape& out = shape_of(result);
        int64_t axis = row.axis;
        if (out.size() != in.size()) {  // keepdims = 0: the combined axes are gone
          axis -= std::count_if(combined.begin(), combined.end(),
                                [&](int64_t a) { return a < row.axis; });
        }
        if (axis >= static_cast<int64_t>(out.size()) || out[axis] != in[row.axis]) {
          refuse(row.dim_class, node, "changes the size of the padded axis");
          continue;
        }
        add_row(node, result, {static_cast<int>(axis), row.inner, row.dim_class, row.outer});
      }
    }
  }

  // A reduction along the padded rows: a softmax of masked scores along them alone gives exactly
  // 0 there (the rows carry over); a sum of exact zeros is the sum of the real rows (the rows are
  // gone). Anything else mixes padded elements into real ones.
  void combine_padded(const Node& node, const RowAxis& row, const std::set<int64_t>& combined) {
    const Value* x = node.operand(0);
    const bool alone = combined.size() == 1 && row_on(x, row.axis) != nullptr;
    const PaddedValue padded = alone ? padded_value(x, row.axis) : PaddedValue::ordinary();
    if (node.op() == "softmax" && padded.masks()) {
      rely(row.dim_class, "a softmax over padded elements masked by -1e4 or less", node);
      add_row(node, node.result(0), row);
      set_padded_value(node.result(0), row.axis, PaddedValue::exactly(0));
      return;
    }
    if (node.op() == "reduce_sum" && padded.is_exactly(0)) {
      rely(row.dim_class, "a sum whose padded elements are 0", node);
      return;
    }
    std::string why = fmt::format("combines elements along axis {}", row.axis);
    if (node.op() == "softmax") {
      why +=
          " (its padded elements are not masked: no additive mask of -1e4 or less, padded "
          "with zeros, reaches them)";
    }
    refuse(row.dim_class, node, why);
  }

  // A [..., M, K] × B [..., K, N]: rows along M or N or the batch axes carry over; along K they
  // would be summed.
  void matmul(const Node& node) {
    const Value* a = node.operand(0);
    const Value* b = node.operand(1);
    const Value* result = node.result(0);
    const int rank = static_cast<int>(result->type().rank());
    const int rank_a = static_cast<int>(a->type().rank());
    const int rank_b = static_cast<int>(b->type().rank());
    if (rank_a == 1 || rank_b == 1) {
      refuse_all(rows_of_operands(node), node, "is a matrix-vector product (not analyzed)");
      return;
    }
    const bool zeros_along_k = contracts_padded_zeros(a, rank_a - 1, b, rank_b - 2);
    for (const RowAxis& row : rows_of(a)) {
      if (row.axis == rank_a - 1) {
        if (!zeros_along_k) {
          refuse(row.dim_class, node, "sums along the padded axis (K of operand A)");
        }
      } else if (row.axis == rank_a - 2) {
        add_row(node, result, {rank - 2, row.inner, row.dim_class, row.outer});
      } else {
        add_row(node, result, {row.axis + rank - rank_a, row.inner, row.dim_class, row.outer});
      }
    }
    for (const RowAxis& row : rows_of(b)) {
      if (row.axis == rank_b - 2) {
        if (!zeros_along_k) {
          refuse(row.dim_class, node, "sums along the padded axis (K of operand B)");
        }
      } else if (row.axis == rank_b - 1) {
        add_row(node, result, {rank - 1, row.inner, row.dim_class, row.outer});
      } else {
        add_row(node, result, {row.axis + rank - rank_b, row.inner, row.dim_class, row.outer});
      }
    }
    // The batch axes broadcast as elementwise operands do.
    for (const RowAxis& row : rows_of(result)) {
      if (row.axis >= rank - 2) continue;
      for (const Value* operand : {a, b}) {
        const int axis = row.axis - (rank - static_cast<int>(operand->type().rank()));
        const Rows& rows = rows_of(operand);
        if (axis < 0 || shape_of(operand)[axis] == 1 || operand->is_constant() ||
            std::any_of(rows.begin(), rows.end(),
                        [&](const RowAxis& r) { return r.axis == axis; })) {
          continue;
        }
        refuse(row.dim_class, node, "reads an operand with the padded size but no rows");
      }
    }
  }

  // Whether a product contracting `a`'s axis `k_a` with `b`'s `k_b` adds only zeros from
  // padded rows: K is one class's rows in both (or a constant in one), and one holds exactly 0
  // at its padded elements (a softmax of masked scores), so each padded term is 0 · finite.
  // K's rows in both operands are one class whatever the answer (their sizes are equal): they
  // are united here.
  bool contracts_padded_zeros(const Value* a, int k_a, const Value* b, int k_b) {
    const RowAxis* row_a = row_on(a, k_a);
    const RowAxis* row_b = row_on(b, k_b);
    if (!row_a && !row_b) return false;
    if (row_a && row_b) {
      if (row_a->inner != row_b->inner || row_a->outer != row_b->outer) return false;
      unite(row_a->dim_class, row_b->dim_class);
    } else if (!(row_a ? b : a)->is_constant()) {
      return false;
    }
    const bool zeros = (row_a && padded_value(a, k_a).is_exactly(0)) ||
                       (row_b && padded_value(b, k_b).is_exactly(0));
    return zeros;
  }

  void gemm(const Node& node) {
    const Value* result = node.result(0);
    const bool trans_a = node.int_attr("transA") != 0;
    const bool trans_b = node.int_attr("transB") != 0;
    const bool zeros_along_k =
        contracts_padded_zeros(node.operand(0), trans_a ? 0 : 1, node.operand(1), trans_b ? 1 : 0);
    for (const RowAxis& row : rows_of(node.operand(0))) {
      if (row.axis == (trans_a ? 1 : 0)) {
        add_row(node, result, {0, row.inner, row.dim_class, row.outer});
      } else if (!zeros_along_k) {
        refuse(row.dim_class, node, "sums along the padded axis (K of operand A)");
      }
    }
    for (const RowAxis& row : rows_of(node.operand(1))) {
      if (row.axis == (trans_b ? 0 : 1)) {
        add_row(node, result, {1, row.inner, row.dim_class, row.outer});
      } else if (!zeros_along_k) {
        refuse(row.dim_class, node, "sums along the padded axis (K of operand B)");
      }
    }
    if (node.operands().size() > 2) broadcast(node, 2, 3);
  }

  void transpose(const Node& node) {
    const std::vector<int64_t>& perm = node.ints_attr("perm");
    for (RowAxis row : rows_of(node.operand(0))) {
      const int from = row.axis;
      row.axis = static_cast<int>(std::find(perm.begin(), perm.end(), row.axis) - perm.begin());
      add_row(node, node.result(0), row);
      carry_padded_value(node, from, row.axis);
    }
  }

  void carry_padded_value(const Node& node, int from, int to) {
    set_padded_value(node.result(0), to, padded_value(node.operand(0), from));
  }

  // The row digit of the flat index survives when it lies within one output axis: its indices
  // step by inner · (the elements after its axis) over [that, that · rows), and an output axis
  // covers [elements after it, elements from it on). (Rows of a class at size 1 take the
  // outermost axis that fits.)
  void reshape(const Node& node) {
    const Shape& in = shape_of(node.operand(0));
    const Shape& out = shape_of(node.result(0));
    for (const RowAxis& row : rows_of(node.operand(0))) {
      const int64_t rows = in[row.axis] / (row.inner * row.outer);
      const int64_t step = row.inner * product(in, row.axis + 1, in.size());
      const int64_t span = step * rows;
      bool placed = false;
      for (size_t b = 0; b < out.size() && !placed; ++b) {
        const int64_t out_step = product(out, b + 1, out.size());
        if (step % out_step != 0 || out_step * out[b] % span != 0) continue;
        add_row(node, node.result(0),
                {static_cast<int>(b), step / out_step, row.dim_class, out_step * out[b] / span});
        carry_padded_value(node, row.axis, static_cast<int>(b));
        placed = true;
      }
      if (!placed) refuse(row.dim_class, node, "merges the padded rows with another axis");
    }
  }

  void slice(const Node& node) {
    const Shape& in = shape_of(node.operand(0));
    const std::vector<int64_t>& axes = node.ints_attr("axes");
    for (const RowAxis& row : rows_of(node.operand(0))) {
      bool whole = true;
      bool real = false;  // takes only rows every run has
      for (size_t i = 0; i < axes.size(); ++i) {
        if (normalize_axis(axes[i], static_cast<int64_t>(in.size())) != row.axis) continue;
        const int64_t start = node.ints_attr("starts")[i];
        const int64_t end = node.ints_attr("ends")[i];
        const int64_t step = node.ints_attr("steps")[i];
        whole = step == 1 && (start == 0 || start <= -in[row.axis]) && end >= in[row.axis];
        real = row.inner == 1 && row.outer == 1 && step > 0 && start >= 0 &&
               end <= smallest_size(row.dim_class);
      }
      if (real) {  // the result has no padded rows
        rely(row.dim_class, "a slice of rows below the range's minimum", node);
        continue;
      }
      if (!whole) {
        refuse(row.dim_class, node, fmt::format("slices the padded axis {}", row.axis));
        continue;
      }
      add_row(node, node.result(0), row);
      carry_padded_value(node, row.axis, row.axis);
    }
  }

  // Ops working along their `axis` attribute (concat, cumulative sum, top-k, gather_elements):
  // rows there are refused; elsewhere the operands line up elementwise.
  void along_axis(const Node& node) {
    const int64_t rank = node.operand(0)->type().rank();
    const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
    for (const Value* operand : node.operands()) {
      if (operand->type().rank() != rank) continue;  // top_k's k
      for (const RowAxis& row : rows_of(operand)) {
        if (row.axis == axis) {
          refuse(row.dim_class, node, fmt::format("works along the padded axis {}", axis));
          continue;
        }
        for (const Value* result : node.results()) add_row(node, result, row);
      }
    }
    for (const Value* result : node.results()) {
      for (const RowAxis& row : rows_of(result)) {
        for (size_t i = 0; i < node.operands().size(); ++i) {
          const Value* operand = node.operand(i);
          const Rows& rows = rows_of(operand);
          if (operand->type().rank() != rank || operand->is_constant() ||
              std::any_of(rows.begin(), rows.end(),
                          [&](const RowAxis& r) { return r.axis == row.axis; })) {
            continue;
          }
          refuse(row.dim_class, node,
                 fmt::format("reads operand {} ({}) without rows along axis {}", i, operand->name(),
                             row.axis));
        }
      }
    }
  }

  // gather(data, indices, axis): out = data[:axis] + indices + data[axis+1:].
  void gather(const Node& node) {
    const int64_t rank = node.operand(0)->type().rank();
    const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
    const int index_rank = static_cast<int>(node.operand(1)->type().rank());
    for (RowAxis row : rows_of(node.operand(0))) {
      if (row.axis == axis) {
        if (gathers_real_rows(node, row)) {
          rely(row.dim_class, "a gather of rows below the range's minimum", node);
        } else {
          refuse(row.dim_class, node, "gathers along the padded axis");
        }
        continue;
      }
      const int from = row.axis;
      if (row.axis > axis) row.axis += index_rank - 1;
      add_row(node, node.result(0), row);
      carry_padded_value(node, from, row.axis);
    }
    for (RowAxis row : rows_of(node.operand(1))) {
      row.axis += static_cast<int>(axis);
      add_row(node, node.result(0), row);
    }
  }

  // gather_nd(data, indices), batch_dims 0: out[p..., t...] = data[indices[p..., :], t...], the
  // data's first q axes indexed (q: the indices' last dim), the rest carried after the positions.
  // Rows on a carried axis carry over; rows on an indexed axis carry to the position axis whose
  // coordinate the constant indices repeat there (out[b, .., j] = data[b, j]: a view written as
  // gather_nd, as transformers exports mask[:, None, None, :]). Anything else is refused.
  void gather_nd(const Node& node) {
    const Value* indices = node.operand(1);
    const bool plain = !node.has_attr("batch_dims") || node.int_attr("batch_dims") == 0;
    const int positions = static_cast<int>(indices->type().rank()) - 1;
    const Rows& index_rows = rows_of(indices);
    const bool along_depth = std::any_of(index_rows.begin(), index_rows.end(),
                                         [&](const RowAxis& r) { return r.axis == positions; });
    if (!plain || (!index_rows.empty() && !indices->is_constant()) || along_depth) {
      refuse_all(rows_of_operands(node), node, "gathers rows by computed indices");
      return;
    }
    // Constant indices sized by a class (a mask's view at each sequence length): their rows lie
    // on position axes, which the result keeps.
    for (const RowAxis& row : index_rows) add_row(node, node.result(0), row);
    const int64_t depth = shape_of(indices).back();
    for (RowAxis row : rows_of(node.operand(0))) {
      const int from = row.axis;
      if (row.axis >= depth) {
        row.axis = positions + static_cast<int>(row.axis - depth);
      } else if (const int p = repeated_coordinate(node, row.axis);
                 p >= 0 && row.inner == 1 && row.outer == 1) {
        row.axis = p;
      } else {
        refuse(row.dim_class, node, "gathers along the padded axis");
        continue;
      }
      add_row(node, node.result(0), row);
      carry_padded_value(node, from, row.axis);
    }
  }

  // The position axis p of gather_nd's constant indices along which the index into data axis
  // `axis` is p's own coordinate everywhere (and p's size is that axis's), or -1.
  int repeated_coordinate(const Node& node, int axis) const {
    const Value* indices = node.operand(1);
    if (!indices->is_constant() || !indices->has_data()) return -1;
    const Shape& shape = shape_of(indices);
    const int64_t depth = shape.back();
    const std::vector<int64_t> index = indices->data().to_ints();
    const int64_t size = shape_of(node.operand(0))[axis];
    for (size_t p = 0; p + 1 < shape.size(); ++p) {
      if (shape[p] != size) continue;
      const int64_t inner = product(shape, p + 1, shape.size() - 1);  // positions after p
      bool repeated = true;
      for (int64_t f = 0; f < static_cast<int64_t>(index.size()) / depth && repeated; ++f) {
        repeated = index[f * depth + axis] == f / inner % size;
      }
      if (repeated) return static_cast<int>(p);
    }
    return -1;
  }

  // Whether a gather along `row`'s axis reads only rows every run has: constant indices, each
  // at least 0 and below the class's smallest size (BERT's pooler reads the first token).
  bool gathers_real_rows(const Node& node, const RowAxis& row) {
    const Value* indices = node.operand(1);
    if (!indices->is_constant() || !indices->has_data() || row.inner != 1 || row.outer != 1) {
      return false;
    }
    const std::vector<int64_t> values = indices->data().to_ints();
    const int64_t smallest = smallest_size(row.dim_class);
    return std::all_of(values.begin(), values.end(),
                       [&](int64_t i) { return i >= 0 && i < smallest; });
  }

  // Ops keeping each axis's size may keep rows on an axis they leave alone (pad, tile, resize,
  // trilu: only where the result's size equals the operand's; for trilu, off its last two; for
  // resize, not cropping).
  void same_size_axes(const Node& node) {
    const Shape& in = shape_of(node.operand(0));
    const Shape& out = shape_of(node.result(0));
    for (size_t i = 1; i < node.operands().size(); ++i) {
      refuse_all(rows_of(node.operand(i)), node, fmt::format("has rows in operand {}", i));
    }
    for (const RowAxis& row : rows_of(node.operand(0))) {
      bool kept = in.size() == out.size() && in[row.axis] == out[row.axis];
      if (node.op() == "trilu" && row.axis + 2 >= static_cast<int>(in.size())) kept = false;
      // tf_crop_and_resize reads rows through its region of interest even at scale 1.
      if (node.op() == "resize" &&
          node.string_attr("coordinate_transformation_mode") == "tf_crop_and_resize") {
        kept = false;
      }
      if (node.op() == "pad") {
        const std::vector<int64_t>& pads = node.ints_attr("pads");
        kept = kept && pads[row.axis] == 0 && pads[row.axis + in.size()] == 0;
      }
      if (!kept) {
        refuse(row.dim_class, node,
               fmt::format("moves elements along the padded axis {}", row.axis));
        continue;
      }
      add_row(node, node.result(0), row);
    }
  }

  const Graph& graph_;
  const std::vector<VaryingDim>& dims_;
  std::map<const Value*, Rows> rows_;
  std::map<std::pair<const Value*, int>, PaddedValue> padded_;  // by (value, axis)
  struct Reliance {
    int count = 0;
    std::string first;  // the first node's description
  };
  std::map<std::pair<int, std::string>, Reliance> reliances_;  // by (varying dim, kind)
  std::vector<int> parent_;
  std::vector<std::string> refusal_;
};

}  // namespace

PaddingAnalysis analyze_padding(const Graph& graph, const std::vector<VaryingDim>& dims,
                                const std::vector<ConstantRows>& constant_rows) {
  return Analyzer(graph, dims, constant_rows).run();
}

}  // namespace kiln::passes
