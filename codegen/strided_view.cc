// Strided views (see the header).
#include "codegen/strided_view.h"

#include "codegen/index_maps.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

struct Part {
  int64_t size, stride;
};
using Axis = std::vector<Part>;  // outermost part first; size-1 parts are dropped

// A view while it is composed: each axis as parts, and the offset.
struct PartedView {
  const Value* source = nullptr;
  std::vector<Axis> axes;
  int64_t offset = 0;
};

// Merges neighbouring parts that form one progression (outer stride = inner size × stride).
Axis merged(const Axis& parts) {
  Axis result;
  for (const Part& part : parts) {
    if (part.size == 1) continue;
    if (!result.empty() && result.back().stride == part.size * part.stride) {
      result.back() = {result.back().size * part.size, part.stride};
    } else {
      result.push_back(part);
    }
  }
  return result;
}

// The axis as one part (stride 0 for size 1), or nullopt when it is several.
std::optional<Part> single(const Axis& axis) {
  const Axis parts = merged(axis);
  if (parts.empty()) return Part{1, 0};
  if (parts.size() != 1) return std::nullopt;
  return parts[0];
}

// Regroups every part, in row-major order, into axes of the sizes `to`.
bool reshape(PartedView& view, const Shape& to) {
  Axis flat;
  for (const Axis& axis : view.axes) {
    for (const Part& part : axis) flat.push_back(part);
  }
  flat = merged(flat);
  size_t next = 0;
  std::vector<Axis> axes;
  for (const int64_t size : to) {
    Axis axis;
    int64_t need = size;
    while (need > 1) {
      if (next == flat.size()) return false;
      Part& front = flat[next];
      if (need % front.size == 0) {
        axis.push_back(front);
        need /= front.size;
        ++next;
      } else if (front.size % need == 0) {
        // The outer part of `front` completes this axis; its inner part stays for the next.
        axis.push_back({need, front.stride * (front.size / need)});
        front.size /= need;
        need = 1;
      } else {
        return false;
      }
    }
    axes.push_back(axis);
  }
  if (next != flat.size()) return false;
  view.axes = axes;
  return true;
}

// The one index a constant gather reads, or nullopt.
std::optional<int64_t> constant_index(const Value* indices) {
  if (!indices->is_constant() || !indices->has_data() || indices->type().num_elements() != 1) {
    return std::nullopt;
  }
  return indices->data().get_int(0);
}

bool through(const Node& node, PartedView& view) {
  const Shape& in = node.operand(0)->type().shape;
  const Shape& out = node.result(0)->type().shape;
  const std::string& op = node.op();
  if (op == "identity" ||
      (op == "cast" && node.result(0)->type().dtype == node.operand(0)->type().dtype)) {
    return true;
  }
  if (op == "reshape") return reshape(view, out);
  if (op == "transpose") {
    const std::vector<int64_t>& perm = node.ints_attr("perm");
    if (perm.size() != view.axes.size()) return false;
    std::vector<Axis> axes;
    for (const int64_t d : perm) axes.push_back(view.axes[d]);
    view.axes = axes;
    return true;
  }
  if (op == "slice") {
    const std::vector<int64_t>& axes = node.ints_attr("axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t axis = normalize_axis(axes[i], static_cast<int64_t>(in.size()));
      const auto [start, step] =
          slice_start_step(node.ints_attr("starts")[i], node.ints_attr("steps")[i], in[axis]);
      if (start == 0 && step == 1 && out[axis] == in[axis]) continue;
      const std::optional<Part> part = single(view.axes[axis]);
      if (!part) return false;
      view.offset += start * part->stride;
      view.axes[axis] = {{out[axis], part->stride * step}};
    }
    return true;
  }
  if (op == "gather") {
    const std::optional<int64_t> at = constant_index(node.operand(1));
    if (!at) return false;
    const size_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(in.size()));
    const int64_t index = *at < 0 ? *at + in[axis] : *at;
    const std::optional<Part> part = single(view.axes[axis]);
    if (index < 0 || index >= in[axis] || !part) return false;
    view.offset += index * part->stride;
    // The indices' axes (all of size 1) replace the gathered one.
    std::vector<Axis> axes(view.axes.begin(), view.axes.begin() + axis);
    axes.resize(axes.size() + node.operand(1)->type().shape.size());
    axes.insert(axes.end(), view.axes.begin() + axis + 1, view.axes.end());
    view.axes = axes;
    return true;
  }
  if (op == "expand") {
    // numpy broadcasting: axes aligned at the end; new or size-1 axes repeat (stride 0).
    if (out.size() < in.size()) return false;
    const size_t lead = out.size() - in.size();
    std::vector<Axis> axes(out.size());
    for (size_t d = 0; d < out.size(); ++d) {
      const bool kept = d >= lead && in[d - lead] == out[d];
      axes[d] = kept ? view.axes[d - lead] : Axis{{out[d], 0}};
    }
    view.axes = axes;
    return true;
  }
  return false;
}

std::optional<PartedView> parted_view(const Value* value,
                                      const std::function<bool(const Value*)>& is_source) {
  if (value->type().num_elements() == 0) return std::nullopt;
  if (is_source(value)) {
    PartedView view{value, {}, 0};
    int64_t stride = 1;
    const Shape& shape = value->type().shape;
    view.axes.resize(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      view.axes[d] = {{shape[d], stride}};
      stride *= shape[d];
    }
    return view;
  }
  const Node* node = value->producer();
  if (!node || node->body() || node->operands().empty() || node->results().size() != 1) {
    return std::nullopt;
  }
  std::optional<PartedView> view = parted_view(node->operand(0), is_source);
  if (!view || view->axes.size() != node->operand(0)->type().shape.size() ||
      !through(*node, *view) || view->axes.size() != value->type().shape.size()) {
    return std::nullopt;
  }
  return view;
}

}  // namespace

std::optional<StridedView> strided_view(const Value* value,
                                        const std::function<bool(const Value*)>& is_source) {
  const std::optional<PartedView> parted = parted_view(value, is_source);
  if (!parted) return std::nullopt;
  StridedView view{parted->source, value->type().shape, {}, parted->offset};
  for (const Axis& axis : parted->axes) {
    const std::optional<Part> part = single(axis);
    if (!part) return std::nullopt;
    view.strides.push_back(part->stride);
  }
  return view;
}

std::optional<FlatStridedView> flat_strided_view(
    const Value* value, const std::function<bool(const Value*)>& is_source) {
  const std::optional<PartedView> parted = parted_view(value, is_source);
  if (!parted) return std::nullopt;
  Axis flat;
  for (const Axis& axis : parted->axes) {
    for (const Part& part : axis) flat.push_back(part);
  }
  flat = merged(flat);
  FlatStridedView view{parted->source, {}, parted->offset};
  int64_t inner = 1;
  for (size_t j = flat.size(); j-- > 0;) {
    view.digits.insert(view.digits.begin(), {flat[j].size, flat[j].stride, inner});
    inner *= flat[j].size;
  }
  return view;
}

}  // namespace kiln::codegen
