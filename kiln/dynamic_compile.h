// Compiling a model for ranges of input shapes (kiln compile --input-shape x=1..16x3x224x224):
// a DynamicProgram (runtime/dynamic_program.h) of variants, each compiled by compile()
// (compiler.h) for concrete shapes.
//
//   1. The model is loaded at the largest shapes and canonicalized; the padding analysis
//      (passes/padding_analysis.h) groups the varying dims into classes (dims the model combines,
//      and dims sharing an ONNX dim_param, must take one size) and says which may be padded.
//   2. A class that may be padded is checked at each size it would compile, against the smallest
//      size that one serves (8 serves 5..8): the analysis again at that size, then the model
//      loaded at both sizes and compared — every value may change size only along that class's
//      row axes, by the rows' inner size per step; attributes only where those axes are (a
//      reshape's or expand's shape, resize's sizes, slice bounds taking the axis whole); every
//      constant of the smaller graph the leading corner of the larger one's. A size function the
//      analysis cannot see (a mean over the batch written as a division by the folded batch
//      size, a column picked by the batch size) differs, and the class is not padded.
//   3. Sizes: a padded class takes the powers of two in its range, its maximum and the
//      --opt-shape size; one that is not takes every size in its range (at most
//      kMaxExactSizes, else an InputError saying why it could not be padded).
//   4. One variant per combination of the classes' sizes (at most kMaxVariants), each analyzed
//      again (where its outputs' rows lie) and, with several classes, compared as in 2 at the
//      other classes' sizes there; a padded class that fails either (its rows meeting another
//      class's, a constant of both sizes) is not padded after all and the plan is made again.
//      Then each is compiled.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/compiler.h"
#include "runtime/dynamic_program.h"

namespace kiln {

struct DimRange {
  int64_t min = 1;
  int64_t max = 1;
};
// Per input name, a range per dim (min == max for a fixed one).
using InputRanges = std::map<std::string, std::vector<DimRange>>;

inline constexpr int64_t kMaxExactSizes = 16;
inline constexpr size_t kMaxVariants = 64;

// Whether any dim of `ranges` varies.
bool has_varying_dims(const InputRanges& ranges);

struct CompiledDynamicModel {
  DynamicProgram program;
  std::vector<CompiledModel> variants;  // what compile() reported per variant (programs moved out)
};

// Imports the model with its inputs bound to `shapes` (an ONNX import: constants folded at those
// shapes), filling `dim_params` with each input's dims' dim_param (ImportOptions::symbolic_dims).
using ModelLoader = std::function<std::unique_ptr<Graph>(
    const std::map<std::string, Shape>& shapes,
    std::map<std::string, std::vector<std::string>>& dim_params)>;

// The loader of an .onnx file (an InputError for anything else: a .kir file has its shapes
// written in it); `on_defaulted_dims` as CompileOptions's.
ModelLoader onnx_file_loader(const std::string& path,
                             const std::function<void(const std::string&)>& on_defaulted_dims);

// `opt_shapes` (--opt-shape) adds each named input's sizes to its classes' sizes. `on_variant`
// is called before each variant's compilation with its index, the count and its shapes
// ("x=4x3x224x224").
CompiledDynamicModel compile_dynamic(
    const ModelLoader& load, const CompileOptions& options, const InputRanges& ranges,
    const std::map<std::string, Shape>& opt_shapes = {},
    const std::function<void(size_t, size_t, const std::string&)>& on_variant = {});
// The same for the .onnx file at `model_path`.
CompiledDynamicModel compile_dynamic(
    const std::string& model_path, const CompileOptions& options, const InputRanges& ranges,
    const std::map<std::string, Shape>& opt_shapes = {},
    const std::function<void(size_t, size_t, const std::string&)>& on_variant = {});

}  // namespace kiln
