// The op table: registration, lookup and schema checks.
#include "ir/op_registry.h"

#include "ir/error.h"
#include "ir/ops/all_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {

std::string_view op_category_name(OpCategory category) {
  switch (category) {
    case OpCategory::kElementwise:
      return "elementwise";
    case OpCategory::kBroadcast:
      return "broadcast";
    case OpCategory::kInjective:
      return "injective";
    case OpCategory::kReduction:
      return "reduction";
    case OpCategory::kOutElementwiseFusable:
      return "out-elementwise-fusable";
    case OpCategory::kOpaque:
      return "opaque";
  }
  return "?";
}

const AttrSpec* OpInfo::find_attr(const std::string& attr_name) const {
  for (const AttrSpec& spec : attrs) {
    if (spec.name == attr_name) return &spec;
  }
  return nullptr;
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry built;
    register_all_ops(built);
    return built;
  }();
  return registry;
}

void OpRegistry::add(OpInfo info) {
  if (!info.infer || (!info.reference && !info.has_body)) {
    throw InternalError("op '" + info.name + "' registered without shape function or kernel");
  }
  std::string name = info.name;
  if (!ops_.emplace(name, std::move(info)).second) {
    throw InternalError("op '" + name + "' registered twice");
  }
}

const OpInfo* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpInfo*> OpRegistry::all() const {
  std::vector<const OpInfo*> infos;
  for (const auto& [name, info] : ops_) infos.push_back(&info);
  return infos;
}

std::vector<TensorType> infer_result_types(const Node& node) {
  std::vector<TensorType> types = node.info().infer(node);
  for (size_t i = 0; i < types.size(); ++i) {
    check_element_count(types[i].shape, "result " + std::to_string(i));
  }
  return types;
}

void check_node_against_schema(const Node& node) {
  const OpInfo& info = node.info();
  const int count = static_cast<int>(node.operands().size());
  if (count < info.min_operands || count > info.max_operands) {
    std::string expected = std::to_string(info.min_operands);
    if (info.max_operands == OpInfo::kVariadic) {
      expected += " or more";
    } else if (info.max_operands != info.min_operands) {
      expected += " to " + std::to_string(info.max_operands);
    }
    throw InputError(node.describe() + ": takes " + expected + " operands, got " +
                     std::to_string(count));
  }
  for (const auto& [name, value] : node.attrs()) {
    const AttrSpec* spec = info.find_attr(name);
    if (!spec) throw InputError(node.describe() + ": unknown attribute '" + name + "'");
    if (spec->kind != value.kind()) {
      throw InputError(node.describe() + ": attribute '" + name + "' must be " +
                       std::string(attr_kind_name(spec->kind)) + ", got " +
                       std::string(attr_kind_name(value.kind())));
    }
  }
  for (const AttrSpec& spec : info.attrs) {
    if (!spec.default_value && !node.has_attr(spec.name)) {
      throw InputError(node.describe() + ": missing required attribute '" + spec.name + "'");
    }
  }
}

}  // namespace kiln
