// Kernel code, names and sources (see the header).
#include "codegen/kernel_spec.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/device_functions.h"
#include "ir/error.h"
#include "runtime/kernel_header.h"

namespace kiln::codegen {
namespace {

// FNV-1a, 32 bits: a short, stable tag for kernel names (not for the disk cache).
uint32_t fnv1a(const std::string& text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) hash = (hash ^ c) * 16777619u;
  return hash;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace

std::string kernel_code(const KernelSpec& spec, const std::string& name) {
  std::string signature = spec.params.signature();
  for (size_t i = 0; i < spec.tensor_maps.size(); ++i) {
    signature += fmt::format(", const __grid_constant__ kiln_tensor_map g_map{}", i);
  }
  const std::string bounds = spec.min_blocks > 0
                                 ? fmt::format("{}, {}", spec.max_threads, spec.min_blocks)
                                 : std::to_string(spec.max_threads);
  // Every kernel first waits for the kernels it depends on (kiln_wait_for_prior_grids): the
  // session may launch it early, while they finish (kernel_header.h: kEarlyLaunchLine).
  const std::string cluster = spec.cluster_blocks > 0
                                  ? fmt::format(" __cluster_dims__(1, 1, {})", spec.cluster_blocks)
                                  : "";
  std::string function = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}){} {}({}) {{\n"
      "  kiln_wait_for_prior_grids();\n{}{}}}\n",
      bounds, cluster, name, signature, spec.params.placed_declarations(), spec.body);
  std::string code = device_functions_for(spec.definitions + function);
  if (!spec.definitions.empty()) code += spec.definitions + "\n";
  return code + function;
}

std::string kernel_name(const KernelSpec& spec) {
  std::vector<std::string> ops(spec.ops.begin(),
                               spec.ops.begin() + std::min<size_t>(spec.ops.size(), 3));
  std::string name = spec.kind;
  for (const std::string& op : ops) {
    if (op != spec.kind) name += "_" + op;
  }
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return fmt::format("{}_{:08x}", name, fnv1a(kernel_code(spec, "")));
}

std::string kernel_source(const KernelSpec& spec, const std::string& name,
                          const std::vector<std::vector<std::string>>& provenance_of_steps) {
  std::string text =
      fmt::format("// kiln kernel {}: {} ({})\n", name, spec.kind, joined(spec.ops, ", "));
  if (!spec.tactic.empty()) text += std::string(kTacticLine) + spec.tactic + "\n";
  if (spec.flops > 0) text += fmt::format("{}{}\n", kFlopsLine, spec.flops);
  for (const std::vector<std::string>& provenance : provenance_of_steps) {
    if (provenance.empty()) continue;
    std::string line = joined(provenance, ", ");
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    text += "// ONNX nodes: " + line + "\n";
  }
  const std::vector<KernelParam> params = spec.params.all();
  text += fmt::format("{}{}\n", kParametersLine, params.size());
  std::vector<std::string> written;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].role == KernelParam::Role::kOutput ||
        params[i].role == KernelParam::Role::kWorkspace) {
      written.push_back(std::to_string(i));
    }
  }
  if (!written.empty()) text += std::string(kWrittenParametersLine) + joined(written, ", ") + "\n";
  std::vector<std::string> regions;
  for (size_t i = 0; i < params.size(); ++i) {
    if (const std::optional<OutputPlacement>& placement = params[i].placement) {
      regions.push_back(format_output_region(
          {static_cast<int>(i), placement->block, placement->stride, placement->offset}));
    }
  }
  if (!regions.empty()) text += std::string(kOutputRegionsLine) + joined(regions, "; ") + "\n";
  if (!spec.tensor_maps.empty()) {
    std::vector<KernelTensorMap> maps;
    for (const KernelSpec::TensorMap& tensor_map : spec.tensor_maps) {
      maps.push_back(tensor_map.map);
      const auto param = std::find_if(params.begin(), params.end(), [&](const KernelParam& p) {
        return p.name == tensor_map.parameter;
      });
      if (param == params.end()) {
        throw InternalError("kernel " + name + ": a tensor map of no parameter " +
                            tensor_map.parameter);
      }
      maps.back().parameter = static_cast<int>(param - params.begin());
    }
    text += std::string(kTensorMapsLine) + format_tensor_maps(maps) + "\n";
  }
  text += std::string(kEarlyLaunchLine) + "\n";
  return text + "\n" + kernel_code(spec, name);
}

void begin_spec_reading(KernelSpec& spec, const KernelBody& body, uint32_t threads,
                        std::array<uint32_t, 3> grid) {
  spec.kind = body.kind;
  spec.ops = distinct_ops(body);
  spec.max_threads = threads;
  spec.block = {threads, 1, 1};
  spec.grid = grid;
  for (const Value* input : body.inputs) spec.params.add_input(input);
}

std::vector<std::string> begin_spec(KernelSpec& spec, const KernelBody& body, uint32_t threads,
                                    std::array<uint32_t, 3> grid) {
  begin_spec_reading(spec, body, threads, grid);
  std::vector<std::string> outputs;
  for (const Value* output : body.outputs) {
    const auto placed = body.placements.find(output);
    outputs.push_back(spec.params.add_output(
        output, placed == body.placements.end() ? std::nullopt
                                                : std::optional<OutputPlacement>(placed->second)));
  }
  return outputs;
}

}  // namespace kiln::codegen
