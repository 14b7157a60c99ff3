// Compiling for ranges of input shapes (see the header).
#include "kiln/dynamic_compile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "kiln/size_comparison.h"
#include "kiln/weight_sharing.h"
#include "passes/padding_analysis.h"

namespace kiln {
namespace {

std::string shape_text(const Shape& shape) { return fmt::format("{}", fmt::join(shape, "x")); }

std::string shapes_text(const Graph& graph, const std::map<std::string, Shape>& shapes) {
  std::string text;
  for (const Value* input : graph.inputs()) {
    const auto found = shapes.find(input->name());
    if (found == shapes.end()) continue;
    text += (text.empty() ? "" : " ") + input->name() + "=" + shape_text(found->second);
  }
  return text;
}

// The sizes class `c` takes: see the header, step 3.
std::vector<int64_t> class_sizes_to_compile(const DimRange& range, const DimClass& dim_class,
                                            const std::set<int64_t>& opt_sizes,
                                            const std::string& dims) {
  std::set<int64_t> sizes(opt_sizes.begin(), opt_sizes.end());
  if (dim_class.padded) {
    for (int64_t p = 1; p < range.max; p *= 2) {
      if (p >= range.min) sizes.insert(p);
    }
    sizes.insert(range.max);
  } else {
    if (range.max - range.min + 1 > kMaxExactSizes) {
      throw InputError(fmt::format(
          "{} ({}..{}) cannot be padded — {} — so kiln would compile each of its {} sizes as a "
          "variant of its own, more than {}; give a narrower range",
          dims, range.min, range.max, dim_class.note, range.max - range.min + 1, kMaxExactSizes));
    }
    for (int64_t s = range.min; s <= range.max; ++s) sizes.insert(s);
  }
  return {sizes.begin(), sizes.end()};
}

// The model at `shapes`, canonicalized (the stage the padding analysis reads); an error says at
// which shapes ("at input_ids=32x512 attention_mask=32x512: ...": a range beyond what the model
// takes, as a sequence longer than its position table).
std::unique_ptr<Graph> load_optimized(const ModelLoader& load, const CompileOptions& options,
                                      const std::map<std::string, Shape>& shapes,
                                      std::map<std::string, std::vector<std::string>>& dim_params) {
  try {
    std::unique_ptr<Graph> graph = load(shapes, dim_params);
    optimize(*graph, Stage::kOptimized, options.pipeline);
    return graph;
  } catch (const InputError& error) {
    std::string at;
    for (const auto& [name, shape] : shapes) {
      at += (at.empty() ? "" : " ") + name + "=" + shape_text(shape);
    }
    error.rethrow_prefixed("at " + at + ": ");
  }
}

// The analysis's classes with those of dims sharing a dim_param (the model says they are equal)
// made one; a class keeps the first refusal among those it joins.
void merge_named_classes(passes::PaddingAnalysis& analysis, const std::vector<std::string>& names) {
  std::vector<int> root(analysis.refusal.size());
  for (size_t c = 0; c < root.size(); ++c) root[c] = static_cast<int>(c);
  const auto find = [&](int c) {
    while (root[c] != c) c = root[c];
    return c;
  };
  for (size_t a = 0; a < names.size(); ++a) {
    for (size_t b = 0; b < a; ++b) {
      if (names[a].empty() || names[a] != names[b]) continue;
      const int ra = find(analysis.dim_class[a]);
      const int rb = find(analysis.dim_class[b]);
      if (ra == rb) continue;
      if (analysis.refusal[rb].empty()) analysis.refusal[rb] = analysis.refusal[ra];
      std::string& relies_on = analysis.relies_on[rb];
      if (!analysis.relies_on[ra].empty()) {
        relies_on += (relies_on.empty() ? "" : "; ") + analysis.relies_on[ra];
      }
      root[ra] = rb;
    }
  }
  std::map<int, int> dense;
  std::vector<std::string> refusal;
  std::vector<std::string> relies_on;
  const auto renumber = [&](int c) {
    const auto [it, inserted] = dense.try_emplace(find(c), static_cast<int>(dense.size()));
    if (inserted) {
      refusal.push_back(analysis.refusal[find(c)]);
      relies_on.push_back(analysis.relies_on[find(c)]);
    }
    return it->second;
  };
  for (int& c : analysis.dim_class) c = renumber(c);
  for (std::vector<passes::RowAxis>& rows : analysis.output_rows) {
    for (passes::RowAxis& row : rows) row.dim_class = renumber(row.dim_class);
  }
  for (auto& [value, rows] : analysis.value_rows) {
    for (passes::RowAxis& row : rows) row.dim_class = renumber(row.dim_class);
  }
  analysis.refusal = std::move(refusal);
  analysis.relies_on = std::move(relies_on);
}

}  // namespace

ModelLoader onnx_file_loader(const std::string& path,
                             const std::function<void(const std::string&)>& on_defaulted_dims) {
  if (!path.ends_with(".onnx")) {
    throw InputError(path +
                     ": --input-shape ranges need an ONNX model (a .kir file has its "
                     "shapes written in it)");
  }
  return [path, on_defaulted_dims](const std::map<std::string, Shape>& shapes,
                                   std::map<std::string, std::vector<std::string>>& dim_params) {
    onnx_import::ImportOptions import_options;
    import_options.input_shapes = shapes;
    import_options.on_defaulted_dims = on_defaulted_dims;
    import_options.symbolic_dims = &dim_params;
    return onnx_import::import_onnx_file(path, import_options);
  };
}

CompiledDynamicModel compile_dynamic(
    const std::string& model_path, const CompileOptions& options, const InputRanges& ranges,
    const std::map<std::string, Shape>& opt_shapes,
    const std::function<void(size_t, size_t, const std::string&)>& on_variant) {
  return compile_dynamic(onnx_file_loader(model_path, options.on_defaulted_dims), options, ranges,
                         opt_shapes, on_variant);
}

namespace {

// The constants' row axes (passes::ConstantRows): each group of varying dims (those sharing a
// dim_param vary together; a dim without one alone) is loaded at a smaller size — the largest
// power of two below its maximum, or its minimum — with the others at their largest, and a
// constant whose size along an axis changes by a multiple of the group's step holds the group's
// rows there (a mask folded from the sequence length). Whether such a constant is the same at
// every size (its leading corner) is size_difference's to check, as for any constant.
std::vector<passes::ConstantRows> constant_rows(const ModelLoader& load,
                                                const CompileOptions& options,
                                                const std::map<std::string, Shape>& max_shapes,
                                                const Graph& largest,
                                                const std::vector<VaryingDim>& dims,
                                                const std::vector<std::string>& dim_params) {
  std::vector<passes::ConstantRows> found;
  std::vector<bool> done(dims.size(), false);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (done[d]) continue;
    std::vector<size_t> group;
    for (size_t e = d; e < dims.size(); ++e) {
      const bool same = e == d || (!dim_params[d].empty() && dim_params[e] == dim_params[d]);
      if (same && dims[e].min == dims[d].min && dims[e].max == dims[d].max) {
        group.push_back(e);
        done[e] = true;
      }
    }
    int64_t smaller = dims[d].min;
    for (int64_t p = 1; p < dims[d].max; p *= 2) smaller = std::max(smaller, p);
    if (smaller >= dims[d].max) continue;
    std::map<std::string, Shape> shapes = max_shapes;
    for (const size_t e : group) {
      shapes[largest.inputs()[dims[e].input]->name()][dims[e].axis] = smaller;
    }
    std::map<std::string, std::vector<std::string>> unused;
    std::unique_ptr<Graph> graph;
    try {
      graph = load_optimized(load, options, shapes, unused);
    } catch (const InputError&) {
      continue;  // the model does not load at that size: the padding checks will say why
    }
    const std::vector<Value*>& large = largest.constants();
    const std::vector<Value*>& small = graph->constants();
    if (large.size() != small.size()) continue;
    const int64_t step = dims[d].max - smaller;
    for (size_t c = 0; c < large.size(); ++c) {
      const Shape& a = large[c]->type().shape;
      const Shape& b = small[c]->type().shape;
      if (a.size() != b.size()) continue;
      for (size_t axis = 0; axis < a.size(); ++axis) {
        if (a[axis] == b[axis] || (a[axis] - b[axis]) % step != 0) continue;
        found.push_back(
            {c, static_cast<int>(axis), static_cast<int>(d), (a[axis] - b[axis]) / step});
      }
    }
  }
  return found;
}

}  // namespace

bool has_varying_dims(const InputRanges& ranges) {
  for (const auto& [name, dims] : ranges) {
    for (const DimRange& dim : dims) {
      if (dim.min != dim.max) return true;
    }
  }
  return false;
}

CompiledDynamicModel compile_dynamic(
    const ModelLoader& load, const CompileOptions& options, const InputRanges& ranges,
    const std::map<std::string, Shape>& opt_shapes,
    const std::function<void(size_t, size_t, const std::string&)>& on_variant) {
  check_pipeline_options(options.pipeline);
  std::map<std::string, Shape> max_shapes;
  for (const auto& [name, dims] : ranges) {
    for (const DimRange& dim : dims) {
      if (dim.min < 1 || dim.min > dim.max) {
        throw InputError(fmt::format("--input-shape {}: range {}..{} is empty or starts below 1",
                                     name, dim.min, dim.max));
      }
      max_shapes[name].push_back(dim.max);
    }
  }
  std::map<std::string, std::vector<std::string>> dim_params;
  const std::unique_ptr<Graph> largest = load_optimized(load, options, max_shapes, dim_params);

  // The varying dims, in input order, and their analysis at the largest shapes.
  DynamicProgram program;
  std::vector<passes::VaryingDim> varying;
  std::vector<std::string> dim_names;
  std::vector<std::string> dim_param_names;  // per varying dim: its dim_param, or ""

  for (size_t i = 0; i < largest->inputs().size(); ++i) {
    const auto found = ranges.find(largest->inputs()[i]->name());
    if (found == ranges.end()) continue;
    for (size_t axis = 0; axis < found->second.size(); ++axis) {
      const DimRange& range = found->second[axis];
      if (range.min == range.max) continue;
      varying.push_back({static_cast<int>(i), static_cast<int>(axis), range.min});
      program.dims.push_back({static_cast<int>(i), static_cast<int>(axis), range.min, range.max});
      dim_names.push_back(fmt::format("{} dim {}", found->first, axis));
      const std::vector<std::string>& params = dim_params[found->first];
      dim_param_names.push_back(axis < params.size() ? params[axis] : "");
    }
  }
  for (const auto& [name, shape] : opt_shapes) {
    if (!ranges.count(name)) {
      throw InputError("--opt-shape " + name + ": not an input given a range by --input-shape");
    }
  }
  const std::vector<passes::ConstantRows> constants_with_rows =
      constant_rows(load, options, max_shapes, *largest, program.dims, dim_param_names);
  passes::PaddingAnalysis analysis =
      passes::analyze_padding(*largest, varying, constants_with_rows);
  merge_named_classes(analysis, dim_param_names);
  program.classes.resize(analysis.refusal.size());
  std::vector<DimRange> class_range(program.classes.size());
  std::vector<std::string> class_dims(program.classes.size());
  std::vector<std::set<int64_t>> opt_sizes(program.classes.size());
  for (size_t d = 0; d < program.dims.size(); ++d) {
    VaryingDim& dim = program.dims[d];
    dim.dim_class = analysis.dim_class[d];
    std::string& names = class_dims[dim.dim_class];
    DimRange& range = class_range[dim.dim_class];
    if (!names.empty() && (range.min != dim.min || range.max != dim.max)) {
      throw InputError(fmt::format(
          "{} has range {}..{} but {} has {}..{}: the model combines them, so give them one range",
          dim_names[d], dim.min, dim.max, names, range.min, range.max));
    }
    names += (names.empty() ? "" : ", ") + dim_names[d];
    range = {dim.min, dim.max};
    const std::string& input = largest->inputs()[dim.input]->name();
    if (const auto opt = opt_shapes.find(input); opt != opt_shapes.end()) {
      if (opt->second.size() <= static_cast<size_t>(dim.axis) || opt->second[dim.axis] < dim.min ||
          opt->second[dim.axis] > dim.max) {
        throw InputError(fmt::format("--opt-shape {}: dim {} is not in the range {}..{}", input,
                                     dim.axis, dim.min, dim.max));
      }
      opt_sizes[dim.dim_class].insert(opt->second[dim.axis]);
    }
  }
  // The model with class c's dims at `size`, the others at their largest.
  const auto shapes_with = [&](size_t c, int64_t size) {
    std::map<std::string, Shape> shapes = max_shapes;
    for (const VaryingDim& dim : program.dims) {
      if (dim.dim_class == static_cast<int>(c)) {
        shapes[largest->inputs()[dim.input]->name()][dim.axis] = size;
      }
    }
    return shapes;
  };
  // Why class c cannot run sizes from `smallest` up padded to `size` (empty: it can): the
  // analysis at `size`, then the comparison with the model at `smallest`.
  const auto padding_note = [&](size_t c, int64_t size, int64_t smallest) -> std::string {
    std::map<std::string, std::vector<std::string>> unused;
    const std::unique_ptr<Graph> at_size =
        load_optimized(load, options, shapes_with(c, size), unused);
    passes::PaddingAnalysis rows = passes::analyze_padding(*at_size, varying, constants_with_rows);
    merge_named_classes(rows, dim_param_names);
    int local = -1;
    for (size_t d = 0; d < program.dims.size(); ++d) {
      if (program.dims[d].dim_class == static_cast<int>(c)) local = rows.dim_class[d];
    }
    if (!rows.refusal[local].empty())
      return rows.refusal[local] + fmt::format(" (at size {})", size);
    const std::unique_ptr<Graph> at_smallest =
        load_optimized(load, options, shapes_with(c, smallest), unused);
    return size_difference(rows, local, size, smallest, *at_size, *at_smallest);
  };
  // A class the analysis lets pad is checked at each size it would compile against the
  // smallest size that one serves.
  for (size_t c = 0; c < program.classes.size(); ++c) {
    DimClass& dim_class = program.classes[c];
    dim_class.note = analysis.refusal[c];
    dim_class.padded = dim_class.note.empty();
    dim_class.relies_on = analysis.relies_on[c];
    if (!dim_class.padded) continue;
    const std::vector<int64_t> sizes =
        class_sizes_to_compile(class_range[c], dim_class, opt_sizes[c], class_dims[c]);
    for (size_t k = 0; k < sizes.size() && dim_class.note.empty(); ++k) {
      const int64_t smallest = k == 0 ? class_range[c].min : sizes[k - 1] + 1;
      if (smallest < sizes[k]) dim_class.note = padding_note(c, sizes[k], smallest);
    }
    dim_class.padded = dim_class.note.empty();
  }

  // The variants: every combination of the classes' sizes. Each is analyzed first, for where its
  // outputs' rows lie; a padded class whose rows a variant mixes (its sizes meeting another
  // class's, say) is not padded after all, and the plan is made again.
  std::vector<std::vector<int64_t>> sizes_per_class;
  size_t count = 1;
  for (bool planned = false; !planned;) {
    sizes_per_class.clear();
    count = 1;
    for (size_t c = 0; c < program.classes.size(); ++c) {
      sizes_per_class.push_back(
          class_sizes_to_compile(class_range[c], program.classes[c], opt_sizes[c], class_dims[c]));
      count *= sizes_per_class.back().size();
    }
    if (count > kMaxVariants) {
      throw InputError(fmt::format(
          "the ranges need {} variants, more than {}: narrow them (or make fewer dims vary)", count,
          kMaxVariants));
    }
    program.variants.assign(count, {});
    planned = true;
    for (size_t v = 0; v < count && planned; ++v) {
      ProgramVariant& variant = program.variants[v];
      for (size_t c = 0, rest = v; c < sizes_per_class.size(); ++c) {
        variant.sizes.push_back(sizes_per_class[c][rest % sizes_per_class[c].size()]);
        rest /= sizes_per_class[c].size();
      }
      std::map<std::string, Shape> shapes = max_shapes;
      for (const VaryingDim& dim : program.dims) {
        shapes[largest->inputs()[dim.input]->name()][dim.axis] = variant.sizes[dim.dim_class];
      }
      std::map<std::string, std::vector<std::string>> unused;
      const std::unique_ptr<Graph> graph = load_optimized(load, options, shapes, unused);
      passes::PaddingAnalysis rows = passes::analyze_padding(*graph, varying, constants_with_rows);
      merge_named_classes(rows, dim_param_names);
      std::vector<int> global_class(rows.refusal.size(), -1);
      for (size_t d = 0; d < program.dims.size(); ++d) {
        global_class[rows.dim_class[d]] = program.dims[d].dim_class;
      }
      for (size_t c = 0; c < program.classes.size() && planned; ++c) {
        const std::vector<int64_t>& sizes = sizes_per_class[c];
        const size_t k = std::find(sizes.begin(), sizes.end(), variant.sizes[c]) - sizes.begin();
        const int64_t smallest = k == 0 ? class_range[c].min : sizes[k - 1] + 1;
        const bool padded = program.classes[c].padded && smallest < variant.sizes[c];
        variant.padded.push_back(padded);
        if (!padded) continue;
        int local = -1;
        for (size_t d = 0; d < program.dims.size(); ++d) {
          if (program.dims[d].dim_class == static_cast<int>(c)) local = rows.dim_class[d];
        }
        std::string note = rows.refusal[local];
        if (note.empty() && program.classes.size() > 1) {
          // The other classes at these sizes, not their largest as when checked before.
          std::map<std::string, Shape> smaller = shapes;
          for (const VaryingDim& dim : program.dims) {
            if (dim.dim_class == static_cast<int>(c)) {
              smaller[largest->inputs()[dim.input]->name()][dim.axis] = smallest;
            }
          }
          note = size_difference(rows, local, variant.sizes[c], smallest, *graph,
                                 *load_optimized(load, options, smaller, unused));
        }
        if (!note.empty()) {
          program.classes[c] = {
              false, fmt::format("{} (at sizes {})", note, fmt::join(variant.sizes, ",")), ""};
          planned = false;
        }
      }
      // Only a padded class's rows are cut back; another's size is the run's (and rows of size
      // 1, or of a class the analysis refused, need not lie where it found them).
      for (const std::vector<passes::RowAxis>& output : rows.output_rows) {
        std::vector<OutputRows> mapped;
        for (const passes::RowAxis& row : output) {
          const int dim_class = global_class[row.dim_class];
          if (planned && variant.padded[dim_class]) {
            mapped.push_back({row.axis, row.inner, dim_class});
          }
        }
        variant.output_rows.push_back(std::move(mapped));
      }
      for (const Value* input : graph->inputs())
        variant.input_shapes.push_back(input->type().shape);
    }
  }
  CompiledDynamicModel compiled;
  WeightSharing weights;  // one blob for all the variants, each distinct weight once
  for (size_t v = 0; v < count; ++v) {
    ProgramVariant& variant = program.variants[v];
    std::map<std::string, Shape> shapes = max_shapes;
    for (const VaryingDim& dim : program.dims) {
      shapes[largest->inputs()[dim.input]->name()][dim.axis] = variant.sizes[dim.dim_class];
    }
    if (on_variant) on_variant(v, count, shapes_text(*largest, shapes));
    std::map<std::string, std::vector<std::string>> unused;
    std::unique_ptr<Graph> graph = load_optimized(load, options, shapes, unused);
    CompiledModel model = compile(*graph, options);
    variant.program = std::move(model.program);
    weights.add(variant.program);
    for (size_t i = 0; i < variant.program.inputs.size(); ++i) {
      if (variant.program.buffers[variant.program.inputs[i]].name != graph->inputs()[i]->name()) {
        throw InternalError("a variant's program inputs are not the graph's, in order");
      }
    }
    compiled.variants.push_back(std::move(model));
  }
  weights.finish();
  validate_dynamic_program(program);
  compiled.program = std::move(program);
  return compiled;
}

}  // namespace kiln
