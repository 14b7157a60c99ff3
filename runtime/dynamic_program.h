// A program for a range of input shapes (kiln compile --input-shape x=1..16x3x224x224): one
// Program per variant, each compiled for concrete shapes, and what the runtime needs to serve any
// shape in the range with one of them.
//
//   dims      the input dims that vary, each with its range and class: dims of one class take
//             the same size in every run (the model combines them, as x's and mask's batch)
//   classes   per class, whether it is padded: a run of size n uses the variant of the smallest
//             size >= n, its inputs padded with zeros and its outputs cut back to n rows, which the
//             padding analysis (passes/padding_analysis.h) proved leaves every real row exact;
//             otherwise (and where the note says why) every size has a variant of its own
//   variants  the sizes each class takes, the shapes compiled for, where each output's rows lie
//             (to cut them back), and the program
//
// The file (program_io.h's bytes for each variant's program without its weights): "KILR" u32
// version (3), dims, classes (padded, note, relies_on), variants (each naming its weight set), the
// weight pieces (each distinct piece of the sets' bytes, split at every weight's start and end,
// once), the weight sets (size, then (offset, piece) in order), u64 FNV-1a checksum. Sets that
// differ in a few constants (a sequence size's position embeddings) store the weights they share
// once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln {

struct VaryingDim {
  int input = 0;  // position in the programs' inputs
  int axis = 0;
  int64_t min = 1;
  int64_t max = 1;
  int dim_class = 0;
};

struct DimClass {
  bool padded = false;
  std::string note;  // why not padded, or empty
  // A padded class: what its exactness relies on beyond rows kept apart (softmaxes over masked
  // padded keys, reads of the first rows; passes::PaddingAnalysis::relies_on), or empty.
  std::string relies_on;
};

// Along `axis` of an output, index = row · inner + r: a run of n rows keeps n · inner.
struct OutputRows {
  int axis = 0;
  int64_t inner = 1;
  int dim_class = 0;
  bool operator==(const OutputRows&) const = default;
};

struct ProgramVariant {
  std::vector<int64_t> sizes;       // per class
  std::vector<bool> padded;         // per class: whether smaller sizes may run here
  std::vector<Shape> input_shapes;  // per program input
  std::vector<std::vector<OutputRows>> output_rows;  // per program output
  Program program;
};

struct DynamicProgram {
  std::vector<VaryingDim> dims;
  std::vector<DimClass> classes;
  std::vector<ProgramVariant> variants;
};

// Checks what the fields mean: classes and dims in range, each variant's sizes in its classes'
// ranges and shown by its input shapes, each output's rows fitting it; InputError naming the
// variant.
void validate_dynamic_program(const DynamicProgram& program);

// Whether the file at `path` (or `bytes`) is a dynamic program ("KILR") rather than a Program.
bool is_dynamic_program_file(const std::string& path);

std::vector<uint8_t> dynamic_program_to_bytes(const DynamicProgram& program);
// Checks the structure, the checksum, each variant's program (validate_program) and the
// fields' meaning (classes, shapes and sizes agreeing); InputError starting with `source`.
DynamicProgram dynamic_program_from_bytes(std::span<const uint8_t> bytes,
                                          const std::string& source);
void write_dynamic_program(const DynamicProgram& program, const std::string& path);
DynamicProgram read_dynamic_program(const std::string& path);

// The variant a run with `shapes` (one per input) takes: each class's size the same across its
// dims, in range, and the smallest variant size that is equal or (padded) larger. InputError
// naming the input and dim that is out of range or disagrees.
size_t choose_variant(const DynamicProgram& program, const std::vector<Shape>& shapes);

// The sizes of each class in a run with these input shapes (checked as choose_variant does).
std::vector<int64_t> class_sizes(const DynamicProgram& program, const std::vector<Shape>& shapes);

// `input` placed in the leading corner of a zero tensor of `shape` (each dim >= the input's).
Tensor pad_to(const Tensor& input, const Shape& shape);
// The leading corner of `output` of `shape` (each dim <= the output's).
Tensor cut_to(const Tensor& output, const Shape& shape);
// The real shape of an output of `variant` in a run whose classes have `sizes`.
Shape real_output_shape(const ProgramVariant& variant, size_t output,
                        const std::vector<int64_t>& sizes);

}  // namespace kiln
