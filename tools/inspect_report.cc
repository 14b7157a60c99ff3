// The `kiln inspect` report (inspect_report.h): one table each for kernels, steps and buffers,
// then the step graph's figures, the memory plan's and the weights.
#include "tools/inspect_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "runtime/kernel_header.h"
#include "runtime/memory_plan.h"
#include "runtime/step_dependencies.h"

namespace kiln::tools {
namespace {

using Table = std::vector<std::vector<std::string>>;

// Rows with each column padded to its widest cell, two spaces before each.
std::string render_table(const Table& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += "  " + (i + 1 < row.size() ? fmt::format("{:<{}}", row[i], widths[i]) : row[i]);
    }
    text += line + "\n";
  }
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string dims(const std::array<uint32_t, 3>& xyz) {
  return fmt::format("{}x{}x{}", xyz[0], xyz[1], xyz[2]);
}

const char* kind_name(ProgramBuffer::Kind kind) {
  switch (kind) {
    case ProgramBuffer::Kind::kInput:
      return "input";
    case ProgramBuffer::Kind::kOutput:
      return "output";
    case ProgramBuffer::Kind::kWeight:
      return "weight";
    case ProgramBuffer::Kind::kIntermediate:
      return "intermediate";
  }
  return "?";
}

std::string kernels_table(const Program& program) {
  Table rows = {{"#", "name", "CUBINs", "PTX", "source", "GFLOP", "tactic", "provenance"}};
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const ProgramKernel& kernel = program.kernels[i];
    std::vector<std::string> binaries;
    for (const KernelBinary& binary : kernel.binaries) {
      binaries.push_back(binary.arch + " " + format_bytes(std::ssize(binary.cubin)));
    }
    const int64_t flops = kernel_flops(kernel);
    const std::string tactic = kernel_tactic(kernel);
    rows.push_back({std::to_string(i), kernel.name, binaries.empty() ? "-" : join(binaries),
                    kernel.ptx.empty() ? "-" : format_bytes(std::ssize(kernel.ptx)),
                    format_bytes(std::ssize(kernel.source)),
                    flops ? fmt::format("{:.3f}", flops / 1e9) : "-", tactic.empty() ? "-" : tactic,
                    join(kernel.provenance)});
  }
  return render_table(rows);
}

std::string library_call_summary(const ProgramLibraryGemm& call) {
  std::string summary = fmt::format("cuBLASLt {}x{}x{}", call.m, call.n, call.k);
  if (call.batch > 1) summary += fmt::format(" batch {}", call.batch);
  if (call.c >= 0) summary += " +C";
  if (call.bias >= 0) summary += " +bias";
  if (call.relu) summary += " relu";
  return summary;
}

std::string steps_table(const Program& program, const StepGraph& graph) {
  Table rows = {{"#", "kernel", "grid", "block", "shared", "after", "arguments"}};
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    // A placed output (a concat's operand written into its slice) shows its region:
    // "cat[64 of every 128 from 64]".
    std::vector<KernelOutputRegion> regions = kernel_output_regions(program.kernels[step.kernel])
                                                  .value_or(std::vector<KernelOutputRegion>());
    std::vector<std::string> args;
    for (size_t position = 0; position < step.args.size(); ++position) {
      std::string arg = program.buffers[step.args[position]].name;
      for (const KernelOutputRegion& region : regions) {
        if (region.parameter != static_cast<int>(position)) continue;
        arg += fmt::format("[{} of every {} from {}]", region.block, region.stride, region.offset);
      }
      args.push_back(std::move(arg));
    }
    std::vector<std::string> after;
    for (const int before : graph.predecessors[i]) after.push_back(std::to_string(before));
    // A library call names its product: "cuBLASLt 512x1568x2048 +bias relu, else <kernel>".
    std::string kernel = program.kernels[step.kernel].name;
    if (step.library) kernel = library_call_summary(*step.library) + ", else " + kernel;
    rows.push_back({std::to_string(i), kernel, dims(step.grid), dims(step.block),
                    format_bytes(step.shared_bytes), after.empty() ? "-" : join(after),
                    join(args)});
  }
  return render_table(rows);
}

std::string step_graph_table(const StepGraph& graph) {
  const std::vector<int> levels = step_levels(graph);
  const int level_count = levels.empty() ? 0 : *std::max_element(levels.begin(), levels.end()) + 1;
  return render_table({
      {"edges", std::to_string(graph.edge_count()),
       "read after write, write after read, write after write; none implied by others"},
      {"levels", std::to_string(level_count),
       "the longest chain of steps that wait for each other"},
      {"widest level", std::to_string(widest_level(graph)), "steps that may run at once"},
  });
}

std::string placement(const ProgramBuffer& buffer, const LiveRange& range) {
  switch (buffer.kind) {
    case ProgramBuffer::Kind::kInput:
      return fmt::format("input {}", buffer.offset);
    case ProgramBuffer::Kind::kOutput:
      return fmt::format("output {}", buffer.offset);
    case ProgramBuffer::Kind::kWeight:
      return fmt::format("weights +{}", buffer.offset);
    case ProgramBuffer::Kind::kIntermediate:
      return range.used() ? fmt::format("arena +{}, live at steps {}-{}", buffer.offset,
                                        range.first_step, range.last_step)
                          : fmt::format("arena +{}, used by no step", buffer.offset);
  }
  return "?";
}

std::string buffers_table(const Program& program) {
  const std::vector<LiveRange> ranges = live_ranges(program);
  Table rows = {{"#", "kind", "name", "type", "size", "placement"}};
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ProgramBuffer& buffer = program.buffers[i];
    rows.push_back({std::to_string(i), kind_name(buffer.kind), buffer.name,
                    type_to_string(buffer.type),
                    format_bytes(static_cast<int64_t>(buffer.type.num_bytes())),
                    placement(buffer, ranges[i])});
  }
  return render_table(rows);
}

std::string memory_plan_table(const Program& program) {
  const MemoryFigures figures = memory_figures(program);
  const auto share = [&](int64_t of) {
    return of == 0 ? std::string("-")
                   : fmt::format("{:.2f}x", static_cast<double>(figures.peak_bytes) / of);
  };
  return render_table({
      {"arena (peak)", format_bytes(figures.peak_bytes)},
      {"naive sum", format_bytes(figures.naive_bytes),
       "every intermediate in its own bytes; arena = " + share(figures.naive_bytes)},
      {"lower bound", format_bytes(figures.lower_bound_bytes),
       "the largest set live at one step; arena = " + share(figures.lower_bound_bytes)},
  });
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string inspect_report(const Program& program) {
  const StepGraph graph = step_dependencies(program, ArenaSharing::kOrdersSteps);
  const auto weights = std::count_if(
      program.buffers.begin(), program.buffers.end(),
      [](const ProgramBuffer& buffer) { return buffer.kind == ProgramBuffer::Kind::kWeight; });
  return fmt::format("program '{}' for {}: {} kernels, {} steps, {} buffers\n", program.name,
                     join(program.archs), program.kernels.size(), program.steps.size(),
                     program.buffers.size()) +
         "\nkernels\n" + kernels_table(program) + "\nsteps\n" + steps_table(program, graph) +
         "\nbuffers\n" + buffers_table(program) + "\nstep graph\n" + step_graph_table(graph) +
         "\nmemory plan\n" + memory_plan_table(program) +
         fmt::format("\nweights: {} in {} buffer{}\n", format_bytes(std::ssize(program.weights)),
                     weights, weights == 1 ? "" : "s");
}

std::string dynamic_inspect_report(const DynamicProgram& program) {
  const Program& first = program.variants.at(0).program;
  const auto input_name = [&](int input) { return first.buffers[first.inputs[input]].name; };
  std::string text = fmt::format("dynamic program: {} variants over these input ranges\n",
                                 program.variants.size());
  for (size_t c = 0; c < program.classes.size(); ++c) {
    std::string dims;
    for (const VaryingDim& dim : program.dims) {
      if (dim.dim_class != static_cast<int>(c)) continue;
      dims += fmt::format("{}{} dim {} {}..{}", dims.empty() ? "" : ", ", input_name(dim.input),
                          dim.axis, dim.min, dim.max);
    }
    const DimClass& dim_class = program.classes[c];
    text += fmt::format("  class {}: {}\n    {}\n", c, dims,
                        dim_class.padded
                            ? "padded: a run of size n takes the variant of the smallest size >= "
                              "n, inputs padded with zeros, outputs cut back to n"
                            : "not padded (" + dim_class.note + "): each size has its own variant");
    if (dim_class.padded && !dim_class.relies_on.empty()) {
      text += fmt::format("    its padding relies on (docs/DYNAMIC_SHAPES.md): {}\n",
                          dim_class.relies_on);
    }
  }
  text += "\nvariants\n";
  std::vector<const WeightBytes*> weight_sets;
  size_t largest = 0;
  for (size_t v = 0; v < program.variants.size(); ++v) {
    const ProgramVariant& variant = program.variants[v];
    size_t set = 0;
    while (set < weight_sets.size() && *weight_sets[set] != variant.program.weights) ++set;
    if (set == weight_sets.size()) weight_sets.push_back(&variant.program.weights);
    std::string shapes;
    for (size_t i = 0; i < variant.input_shapes.size(); ++i) {
      shapes += fmt::format("{}{}={}", i ? " " : "", input_name(static_cast<int>(i)),
                            fmt::join(variant.input_shapes[i], "x"));
    }
    text +=
        fmt::format("  {}: sizes {}  {}  {} kernels, {} steps, arena {}, weight set {}\n", v,
                    fmt::join(variant.sizes, ","), shapes, variant.program.kernels.size(),
                    variant.program.steps.size(), format_bytes(variant.program.arena_bytes), set);
    if (variant.program.arena_bytes >= program.variants[largest].program.arena_bytes) largest = v;
  }
  uint64_t set_bytes = 0;
  for (const WeightBytes* set : weight_sets) set_bytes += set->size();
  text += fmt::format(
      "weights: {} set{}, {} (the variants sharing a set share its copy on the GPU; the file "
      "holds each distinct weight once)\n",
      weight_sets.size(), weight_sets.size() == 1 ? "" : "s",
      format_bytes(static_cast<int64_t>(set_bytes)));
  return text + fmt::format("\nvariant {} (the largest arena)\n", largest) +
         inspect_report(program.variants[largest].program);
}

}  // namespace kiln::tools
