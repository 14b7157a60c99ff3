// Compiling for ranges of input shapes (see the header).
#include "kiln/dynamic_compile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "passes/padding_analysis.h"

namespace kiln {
namespace {

// The attributes that may differ between two sizes of one model: the shape-like lists the
// importer folded from the inputs' shapes (the padding analysis checks what they do).
const std::set<std::string> kShapeAttributes = {"shape", "starts", "ends", "sizes", "repeats"};

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

// Why `small` (the model at a smaller size) is not `large` cut down, or empty.
// `rows`: the outputs' rows at the large size; an output changing shape elsewhere is a
// difference too.
std::string difference(const Graph& large, const Graph& small, int64_t large_size,
                       int64_t small_size, const std::vector<std::vector<passes::RowAxis>>& rows) {
  const std::string sizes = fmt::format("at sizes {} and {}", large_size, small_size);
  for (size_t o = 0; o < large.outputs().size(); ++o) {
    const Shape& a = large.outputs()[o]->type().shape;
    const Shape& b = small.outputs().at(o)->type().shape;
    for (size_t axis = 0; axis < a.size() && a.size() == b.size(); ++axis) {
      const bool rows_here = std::any_of(rows[o].begin(), rows[o].end(), [&](const auto& row) {
        return row.axis == static_cast<int>(axis);
      });
      if (a[axis] != b[axis] && !rows_here) {
        return fmt::format("output %{} changes size along axis {}, where it has no rows, {}",
                           large.outputs()[o]->name(), axis, sizes);
      }
    }
    if (a.size() != b.size())
      return fmt::format("output %{} changes rank {}", large.outputs()[o]->name(), sizes);
  }
  const std::vector<Node*> a = large.nodes();
  const std::vector<Node*> b = small.nodes();
  if (a.size() != b.size()) {
    return fmt::format("the model has {} and {} nodes {}", a.size(), b.size(), sizes);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]->op() != b[i]->op() || a[i]->attrs().size() != b[i]->attrs().size()) {
      return fmt::format("node {} differs {}", a[i]->describe(), sizes);
    }
    for (const auto& [name, attribute] : a[i]->attrs()) {
      if (kShapeAttributes.count(name)) continue;
      if (!b[i]->has_attr(name) || !(b[i]->attr(name) == attribute)) {
        return fmt::format("node {}: attribute {} differs {}", a[i]->describe(), name, sizes);
      }
    }
  }
  const std::vector<Value*>& ca = large.constants();
  const std::vector<Value*>& cb = small.constants();
  if (ca.size() != cb.size()) {
    return fmt::format("the model has {} and {} constants {}", ca.size(), cb.size(), sizes);
  }
  for (size_t i = 0; i < ca.size(); ++i) {
    const Value* x = ca[i];
    const Value* y = cb[i];
    if (x->type().dtype != y->type().dtype || x->type().rank() != y->type().rank()) {
      return fmt::format("constant %{} differs {}", x->name(), sizes);
    }
    if (!x->has_data() || !y->has_data()) continue;
    Shape corner = y->type().shape;
    for (size_t d = 0; d < corner.size(); ++d) corner[d] = std::min(corner[d], x->type().shape[d]);
    const Tensor cx = cut_to(x->data(), corner);
    const Tensor cy = cut_to(y->data(), corner);
    if (cx.num_bytes() != 0 && std::memcmp(cx.bytes(), cy.bytes(), cx.num_bytes()) != 0) {
      return fmt::format("constant %{} is computed from the size: its values differ {}", x->name(),
                         sizes);
    }
  }
  return {};
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

// The model at `shapes`, canonicalized (the stage the padding analysis reads).
std::unique_ptr<Graph> load_optimized(const ModelLoader& load, const CompileOptions& options,
                                      const std::map<std::string, Shape>& shapes,
                                      std::map<std::string, std::vector<std::string>>& dim_params) {
  std::unique_ptr<Graph> graph = load(shapes, dim_params);
  optimize(*graph, Stage::kOptimized, options.pipeline);
  return graph;
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
      root[ra] = rb;
    }
  }
  std::map<int, int> dense;
  std::vector<std::string> refusal;
  const auto renumber = [&](int c) {
    const auto [it, inserted] = dense.try_emplace(find(c), static_cast<int>(dense.size()));
    if (inserted) refusal.push_back(analysis.refusal[find(c)]);
    return it->second;
  };
  for (int& c : analysis.dim_class) c = renumber(c);
  for (std::vector<passes::RowAxis>& rows : analysis.output_rows) {
    for (passes::RowAxis& row : rows) row.dim_class = renumber(row.dim_class);
  }
  analysis.refusal = std::move(refusal);
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
      varying.push_back({static_cast<int>(i), static_cast<int>(axis)});
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
  passes::PaddingAnalysis analysis = passes::analyze_padding(*largest, varying);
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
  for (size_t c = 0; c < program.classes.size(); ++c) {
    DimClass& dim_class = program.classes[c];
    dim_class.note = analysis.refusal[c];
    if (dim_class.note.empty()) {
      std::map<std::string, Shape> smaller = max_shapes;
      for (const VaryingDim& dim : program.dims) {
        if (dim.dim_class == static_cast<int>(c)) {
          smaller[largest->inputs()[dim.input]->name()][dim.axis] = dim.max - 1;
        }
      }
      std::map<std::string, std::vector<std::string>> unused;
      dim_class.note = difference(*largest, *load_optimized(load, options, smaller, unused),
                                  class_range[c].max, class_range[c].max - 1, analysis.output_rows);
    }
    dim_class.padded = dim_class.note.empty();
  }

  // Every combination of the classes' sizes.
  std::vector<std::vector<int64_t>> sizes_per_class;
  size_t count = 1;
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
  CompiledDynamicModel compiled;
  for (size_t v = 0; v < count; ++v) {
    ProgramVariant variant;
    std::map<std::string, Shape> shapes = max_shapes;
    for (size_t c = 0, rest = v; c < sizes_per_class.size(); ++c) {
      variant.sizes.push_back(sizes_per_class[c][rest % sizes_per_class[c].size()]);
      rest /= sizes_per_class[c].size();
    }
    for (const VaryingDim& dim : program.dims) {
      shapes[largest->inputs()[dim.input]->name()][dim.axis] = variant.sizes[dim.dim_class];
    }
    if (on_variant) on_variant(v, count, shapes_text(*largest, shapes));
    std::map<std::string, std::vector<std::string>> unused;
    std::unique_ptr<Graph> graph = load_optimized(load, options, shapes, unused);
    // Where the outputs' rows lie at these sizes; a class this variant cannot pad runs only at
    // its own size here.
    passes::PaddingAnalysis rows = passes::analyze_padding(*graph, varying);
    merge_named_classes(rows, dim_param_names);
    std::vector<int> global_class(rows.refusal.size(), -1);
    for (size_t d = 0; d < program.dims.size(); ++d) {
      global_class[rows.dim_class[d]] = program.dims[d].dim_class;
    }
    for (size_t c = 0; c < program.classes.size(); ++c) {
      bool padded = program.classes[c].padded && variant.sizes[c] > class_range[c].min;
      for (size_t d = 0; d < program.dims.size(); ++d) {
        if (program.dims[d].dim_class == static_cast<int>(c) &&
            !rows.refusal[rows.dim_class[d]].empty()) {
          padded = false;
        }
      }
      variant.padded.push_back(padded);
    }
    // Only a padded class's rows are cut back; another's size is the run's (and rows of size 1,
    // or of a class the analysis refused, need not lie where it found them).
    for (const std::vector<passes::RowAxis>& output : rows.output_rows) {
      std::vector<OutputRows> mapped;
      for (const passes::RowAxis& row : output) {
        const int dim_class = global_class[row.dim_class];
        if (variant.padded[dim_class]) mapped.push_back({row.axis, row.inner, dim_class});
      }
      variant.output_rows.push_back(std::move(mapped));
    }
    for (const Value* input : graph->inputs()) variant.input_shapes.push_back(input->type().shape);
    CompiledModel model = compile(*graph, options);
    variant.program = std::move(model.program);
    for (size_t i = 0; i < variant.program.inputs.size(); ++i) {
      if (variant.program.buffers[variant.program.inputs[i]].name != graph->inputs()[i]->name()) {
        throw InternalError("a variant's program inputs are not the graph's, in order");
      }
    }
    program.variants.push_back(std::move(variant));
    compiled.variants.push_back(std::move(model));
  }
  validate_dynamic_program(program);
  compiled.program = std::move(program);
  return compiled;
}

}  // namespace kiln
