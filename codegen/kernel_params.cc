// KernelParams: the buffers a kernel takes.
#include "codegen/kernel_params.h"

#include <fmt/format.h>

#include "codegen/cuda_expr.h"
#include "ir/error.h"

namespace kiln::codegen {

const std::string& KernelParams::add_input(const Value* value) {
  auto [it, added] = input_index_.emplace(value, inputs_.size());
  if (added) {
    inputs_.push_back({.role = KernelParam::Role::kInput,
                       .value = value,
                       .name = "in" + std::to_string(inputs_.size())});
  }
  return inputs_[it->second].name;
}

const std::string& KernelParams::read(const Value* value) {
  if (auto it = input_index_.find(value); it != input_index_.end()) return inputs_[it->second].name;
  if (!value->is_constant()) {
    throw InternalError("kernel reads " + value->name() +
                        ", which is neither an input nor a constant");
  }
  auto [it, added] = constant_index_.emplace(value, constants_.size());
  if (added) {
    constants_.push_back({.role = KernelParam::Role::kConstant,
                          .value = value,
                          .name = "const" + std::to_string(constants_.size())});
  }
  return constants_[it->second].name;
}

const std::string& KernelParams::add_output(const Value* value,
                                            const std::optional<OutputPlacement>& placement) {
  const std::string name = "out" + std::to_string(outputs_.size());
  outputs_.push_back({.role = KernelParam::Role::kOutput, .value = value, .name = name});
  if (!placement) return outputs_.back().name;
  outputs_.back().placement = placement;
  outputs_.back().placed_name = name + "_placed";
  return outputs_.back().placed_name;
}

const std::string& KernelParams::add_workspace(int64_t floats) {
  if (!workspace_.empty()) throw InternalError("a kernel declares its workspace twice");
  workspace_.push_back({.role = KernelParam::Role::kWorkspace,
                        .value = nullptr,
                        .name = "workspace",
                        .workspace_floats = floats});
  return workspace_.back().name;
}

std::vector<KernelParam> KernelParams::all() const {
  std::vector<KernelParam> params = inputs_;
  params.insert(params.end(), constants_.begin(), constants_.end());
  params.insert(params.end(), outputs_.begin(), outputs_.end());
  params.insert(params.end(), workspace_.begin(), workspace_.end());
  return params;
}

std::string KernelParams::signature() const {
  std::string text;
  for (const KernelParam& param : all()) {
    if (!text.empty()) text += ", ";
    if (param.role == KernelParam::Role::kWorkspace) {
      text += "float* __restrict__ " + param.name;
      continue;
    }
    const bool writes = param.role == KernelParam::Role::kOutput;
    text += std::string(writes ? "" : "const ") +
            std::string(cuda_storage_type(param.value->type().dtype)) + "* __restrict__ " +
            param.name;
  }
  return text;
}

std::string KernelParams::placed_declarations() const {
  std::string text;
  for (const KernelParam& param : outputs_) {
    if (!param.placement) continue;
    const OutputPlacement& placement = *param.placement;
    // Indices into the concat's buffer, which may pass 2^31 where the output's own do not.
    const bool wide = placement.concat->type().num_elements() >= (int64_t{1} << 31);
    text += fmt::format("  const kiln_placed<{}, {}, {}, {}, {}> {}{{{}}};\n",
                        cuda_storage_type(param.value->type().dtype), wide ? "long long" : "int",
                        placement.block, placement.stride, placement.offset, param.placed_name,
                        param.name);
  }
  return text;
}

}  // namespace kiln::codegen
