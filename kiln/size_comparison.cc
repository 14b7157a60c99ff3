// Comparing a model at two sizes (see the header).
#include "kiln/size_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/dynamic_program.h"

namespace kiln {
namespace {

// The comparison of size_difference (see the header), one part of the graphs at a time.
class SizeComparison {
 public:
  SizeComparison(const passes::PaddingAnalysis& rows, int dim_class, int64_t large_size,
                 int64_t small_size)
      : rows_(rows),
        dim_class_(dim_class),
        step_(large_size - small_size),
        sizes_(fmt::format("at sizes {} and {}", large_size, small_size)) {}

  std::string difference(const Graph& large, const Graph& small) const {
    for (size_t i = 0; i < large.inputs().size(); ++i) {
      if (std::string why = value_difference(large.inputs()[i], small.inputs().at(i));
          !why.empty()) {
        return why;
      }
    }
    const std::vector<Node*> a = large.nodes();
    const std::vector<Node*> b = small.nodes();
    if (a.size() != b.size()) {
      return fmt::format("the model has {} and {} nodes {}", a.size(), b.size(), sizes_);
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::string why = node_difference(*a[i], *b[i]); !why.empty()) return why;
    }
    return constants_difference(large, small);
  }

 private:
  // The row of the class being compared on `axis` of `value` at the large size, if any.
  const passes::RowAxis* row_on(const Value* value, int64_t axis) const {
    const auto found = rows_.value_rows.find(value);
    if (found == rows_.value_rows.end()) return nullptr;
    for (const passes::RowAxis& row : found->second) {
      if (row.axis == axis && row.dim_class == dim_class_) return &row;
    }
    return nullptr;
  }

  // Whether `large` and `small` sizes of `axis` of `value` differ as its rows would.
  bool rows_explain(const Value* value, int64_t axis, int64_t large, int64_t small) const {
    if (large == small) return true;
    const passes::RowAxis* row = row_on(value, axis);
    return row && large - small == step_ * row->inner * row->outer;
  }

  std::string value_difference(const Value* large, const Value* small) const {
    const Shape& a = large->type().shape;
    const Shape& b = small->type().shape;
    if (a.size() != b.size() || large->type().dtype != small->type().dtype) {
      return fmt::format("%{} changes type {}", large->name(), sizes_);
    }
    for (size_t axis = 0; axis < a.size(); ++axis) {
      if (!rows_explain(large, static_cast<int64_t>(axis), a[axis], b[axis])) {
        return fmt::format("%{} changes size along axis {} ({} and {}), off the padded rows, {}",
                           large->name(), axis, a[axis], b[axis], sizes_);
      }
    }
    return {};
  }

  // Whether shape-list attribute `name` (reshape's and expand's shape, resize's sizes: the
  // result's dims, aligned at the last) differs only where the result's rows do.
  bool result_dims_explained(const Node& large, const Node& small, const std::string& name) const {
    const std::vector<int64_t>& a = large.ints_attr(name);
    const std::vector<int64_t>& b = small.ints_attr(name);
    if (a.size() != b.size()) return false;
    const int64_t offset = large.result()->type().rank() - static_cast<int64_t>(a.size());
    for (size_t j = 0; j < a.size(); ++j) {
      if (!rows_explain(large.result(), offset + static_cast<int64_t>(j), a[j], b[j])) {
        return false;
      }
    }
    return true;
  }

  // Whether slice bounds differ only on row axes of its operand that both sizes take whole.
  bool slice_explained(const Node& large, const Node& small) const {
    const Shape& a_in = large.operand(0)->type().shape;
    const Shape& b_in = small.operand(0)->type().shape;
    const std::vector<int64_t>& axes = large.ints_attr("axes");
    for (size_t j = 0; j < axes.size(); ++j) {
      const int64_t a_start = large.ints_attr("starts")[j], b_start = small.ints_attr("starts")[j];
      const int64_t a_end = large.ints_attr("ends")[j], b_end = small.ints_attr("ends")[j];
      if (a_start == b_start && a_end == b_end) continue;
      const int64_t axis = axes[j] < 0 ? axes[j] + static_cast<int64_t>(a_in.size()) : axes[j];
      const bool whole = a_start == 0 && b_start == 0 && large.ints_attr("steps")[j] == 1 &&
                         a_end >= a_in[axis] && b_end >= b_in[axis];
      if (!whole || !row_on(large.operand(0), axis)) return false;
    }
    return true;
  }

  std::string node_difference(const Node& a, const Node& b) const {
    if (a.op() != b.op() || a.attrs().size() != b.attrs().size() ||
        a.operands().size() != b.operands().size() || a.results().size() != b.results().size()) {
      return fmt::format("node {} differs {}", a.describe(), sizes_);
    }
    for (const auto& [name, attribute] : a.attrs()) {
      if (b.has_attr(name) && b.attr(name) == attribute) continue;
      bool explained = false;
      if (!b.has_attr(name)) {
        explained = false;
      } else if (((a.op() == "reshape" || a.op() == "expand") && name == "shape") ||
                 (a.op() == "resize" && name == "sizes")) {
        explained = result_dims_explained(a, b, name);
      } else if (a.op() == "slice" && (name == "starts" || name == "ends")) {
        explained = slice_explained(a, b);
      }
      if (!explained) {
        return fmt::format("node {}: attribute {} differs {}, off the padded rows", a.describe(),
                           name, sizes_);
      }
    }
    for (size_t r = 0; r < a.results().size(); ++r) {
      if (std::string why = value_difference(a.result(r), b.result(r)); !why.empty()) return why;
    }
    return {};
  }

  std::string constants_difference(const Graph& large, const Graph& small) const {
    const std::vector<Value*>& ca = large.constants();
    const std::vector<Value*>& cb = small.constants();
    if (ca.size() != cb.size()) {
      return fmt::format("the model has {} and {} constants {}", ca.size(), cb.size(), sizes_);
    }
    for (size_t i = 0; i < ca.size(); ++i) {
      const Value* x = ca[i];
      const Value* y = cb[i];
      if (x->type().dtype != y->type().dtype || x->type().rank() != y->type().rank()) {
        return fmt::format("constant %{} differs {}", x->name(), sizes_);
      }
      if (!x->has_data() || !y->has_data()) continue;
      Shape corner = y->type().shape;
      for (size_t d = 0; d < corner.size(); ++d) {
        corner[d] = std::min(corner[d], x->type().shape[d]);
      }
      const Tensor cx = cut_to(x->data(), corner);
      const Tensor cy = cut_to(y->data(), corner);
      if (cx.num_bytes() != 0 && std::memcmp(cx.bytes(), cy.bytes(), cx.num_bytes()) != 0) {
        return fmt::format("constant %{} is computed from the size: its values differ {}",
                           x->name(), sizes_);
      }
    }
    return {};
  }

  const passes::PaddingAnalysis& rows_;
  int dim_class_;
  int64_t step_;
  std::string sizes_;
};

}  // namespace

std::string size_difference(const passes::PaddingAnalysis& rows, int dim_class, int64_t large_size,
                            int64_t small_size, const Graph& large, const Graph& small) {
  return SizeComparison(rows, dim_class, large_size, small_size).difference(large, small);
}

}  // namespace kiln
