// Dynamic programs (see the header): their file, choosing a variant for a run's shapes, and
// padding inputs to it and cutting outputs back.
#include "runtime/dynamic_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "ir/error.h"
#include "runtime/byte_reader.h"
#include "runtime/byte_writer.h"
#include "runtime/fnv1a.h"
#include "runtime/program_io.h"
#include "runtime/program_validation.h"

namespace kiln {
namespace {

constexpr std::string_view kMagic = "KILR";
// 2: weight sets stored as pieces, each distinct piece once; 3: a class's relies_on.
constexpr uint32_t kVersion = 3;

void write_shape(ByteWriter& out, const Shape& shape) {
  out.u32(static_cast<uint32_t>(shape.size()));
  for (const int64_t dim : shape) out.i64(dim);
}

Shape read_shape(ByteReader& in, const std::string& what) {
  Shape shape(in.count("dims of " + what, 8));
  for (int64_t& dim : shape) dim = in.i64("a dim of " + what);
  return shape;
}

// The index of `weights` among `sets`, added when new.
uint32_t weight_set(std::vector<const WeightBytes*>& sets, const WeightBytes& weights) {
  for (size_t i = 0; i < sets.size(); ++i) {
    if (*sets[i] == weights) return static_cast<uint32_t>(i);
  }
  sets.push_back(&weights);
  return static_cast<uint32_t>(sets.size() - 1);
}

// The offsets splitting `program`'s weight bytes into pieces: 0, every weight buffer's start and
// end, and the end.
std::vector<uint64_t> piece_boundaries(const Program& program) {
  const uint64_t size = program.weights.size();
  std::set<uint64_t> cuts = {0, size};
  for (const ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind != ProgramBuffer::Kind::kWeight || buffer.offset < 0) continue;
    const uint64_t start = static_cast<uint64_t>(buffer.offset);
    cuts.insert(std::min(start, size));
    cuts.insert(std::min(start + buffer.type.num_bytes(), size));
  }
  return {cuts.begin(), cuts.end()};
}

// Weight sets written as pieces (a set's bytes split at its weights' boundaries), each distinct
// piece once: variants whose sets differ in a few constants (a sequence class's position
// embeddings) store the other weights once in the file.
class PieceWriter {
 public:
  // Adds the set of `program`; returns its (offset, piece index) list.
  std::vector<std::pair<uint64_t, uint32_t>> add(const Program& program) {
    const std::vector<uint64_t> cuts = piece_boundaries(program);
    std::vector<std::pair<uint64_t, uint32_t>> layout;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const std::span<const uint8_t> bytes(program.weights.data() + cuts[i], cuts[i + 1] - cuts[i]);
      layout.emplace_back(cuts[i], piece_index(bytes));
    }
    return layout;
  }
  const std::vector<std::span<const uint8_t>>& pieces() const { return pieces_; }

 private:
  uint32_t piece_index(std::span<const uint8_t> bytes) {
    std::vector<uint32_t>& same_hash = by_hash_[{bytes.size(), fnv1a_64(bytes)}];
    for (const uint32_t index : same_hash) {
      if (std::equal(bytes.begin(), bytes.end(), pieces_[index].begin())) return index;
    }
    pieces_.push_back(bytes);
    same_hash.push_back(static_cast<uint32_t>(pieces_.size() - 1));
    return same_hash.back();
  }

  std::vector<std::span<const uint8_t>> pieces_;
  std::map<std::pair<size_t, uint64_t>, std::vector<uint32_t>> by_hash_;
};

std::string describe_dim(const VaryingDim& dim) {
  return fmt::format("input {} dim {}", dim.input, dim.axis);
}

// Whether `a` and `b` (the signature buffers of two variants) agree on names, dtypes and ranks.
bool same_signature(const Program& a, const std::vector<int>& as, const Program& b,
                    const std::vector<int>& bs) {
  if (as.size() != bs.size()) return false;
  for (size_t i = 0; i < as.size(); ++i) {
    const ProgramBuffer& x = a.buffers[as[i]];
    const ProgramBuffer& y = b.buffers[bs[i]];
    if (x.name != y.name || x.type.dtype != y.type.dtype || x.type.rank() != y.type.rank()) {
      return false;
    }
  }
  return true;
}

}  // namespace

void validate_dynamic_program(const DynamicProgram& program) {
  if (program.variants.empty()) throw InputError("no variants");
  const size_t classes = program.classes.size();
  const Program& first = program.variants[0].program;
  std::vector<bool> class_has_dim(classes, false);
  for (size_t d = 0; d < program.dims.size(); ++d) {
    const VaryingDim& dim = program.dims[d];
    if (dim.input < 0 || static_cast<size_t>(dim.input) >= first.inputs.size()) {
      throw InputError(describe_dim(dim) + ": the program has " +
                       std::to_string(first.inputs.size()) + " inputs");
    }
    if (dim.dim_class < 0 || static_cast<size_t>(dim.dim_class) >= classes) {
      throw InputError(describe_dim(dim) + ": class out of range");
    }
    class_has_dim[dim.dim_class] = true;
    for (size_t other = 0; other < d; ++other) {
      if (program.dims[other].input == dim.input && program.dims[other].axis == dim.axis) {
        throw InputError(describe_dim(dim) + " is listed twice");
      }
    }
    if (dim.min < 1 || dim.min > dim.max) {
      throw InputError(
          fmt::format("{}: range {}..{} is not valid", describe_dim(dim), dim.min, dim.max));
    }
  }
  for (size_t c = 0; c < classes; ++c) {
    if (!class_has_dim[c]) throw InputError(fmt::format("class {} has no varying dim", c));
  }
  for (size_t v = 0; v < program.variants.size(); ++v) {
    const ProgramVariant& variant = program.variants[v];
    const Program& p = variant.program;
    const std::string what = fmt::format("variant {}", v);
    if (!same_signature(p, p.inputs, first, first.inputs) ||
        !same_signature(p, p.outputs, first, first.outputs)) {
      throw InputError(what +
                       ": its inputs or outputs differ from variant 0's in name, dtype "
                       "or rank");
    }
    if (variant.sizes.size() != classes || variant.padded.size() != classes ||
        variant.input_shapes.size() != p.inputs.size() ||
        variant.output_rows.size() != p.outputs.size()) {
      throw InputError(what + ": its sizes, shapes or output rows do not match the program");
    }
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const Shape& shape = p.buffers[p.inputs[i]].type.shape;
      if (shape != variant.input_shapes[i]) {
        throw InputError(fmt::format("{}: input {} is not of the shape recorded", what, i));
      }
      for (size_t axis = 0; axis < shape.size(); ++axis) {
        const bool varies = std::any_of(program.dims.begin(), program.dims.end(), [&](auto& dim) {
          return dim.input == static_cast<int>(i) && dim.axis == static_cast<int>(axis);
        });
        if (!varies && shape[axis] != first.buffers[first.inputs[i]].type.shape[axis]) {
          throw InputError(
              fmt::format("{}: input {} dim {} differs from variant 0's and does not "
                          "vary",
                          what, i, axis));
        }
      }
    }
    for (const VaryingDim& dim : program.dims) {
      const Shape& shape = variant.input_shapes.at(dim.input);
      const int64_t size = variant.sizes[dim.dim_class];
      if (dim.axis < 0 || static_cast<size_t>(dim.axis) >= shape.size() ||
          shape[dim.axis] != size || size < dim.min || size > dim.max) {
        throw InputError(fmt::format("{}: {} does not have the variant's size {}", what,
                                     describe_dim(dim), size));
      }
    }
    for (size_t o = 0; o < variant.output_rows.size(); ++o) {
      const Shape& shape = p.buffers[p.outputs[o]].type.shape;
      for (const OutputRows& rows : variant.output_rows[o]) {
        if (rows.axis < 0 || static_cast<size_t>(rows.axis) >= shape.size() || rows.dim_class < 0 ||
            static_cast<size_t>(rows.dim_class) >= classes || rows.inner < 1 ||
            shape[rows.axis] % rows.inner != 0 ||
            shape[rows.axis] / rows.inner != variant.sizes[rows.dim_class]) {
          throw InputError(fmt::format("{}: the rows of output {} do not fit it", what, o));
        }
      }
    }
  }
}

namespace {

DynamicProgram decode(std::span<const uint8_t> bytes, const std::string& source) {
  ByteReader in(bytes);
  const std::span<const uint8_t> magic = in.bytes(kMagic.size(), "the magic \"KILR\"");
  if (!std::equal(magic.begin(), magic.end(), kMagic.begin())) {
    throw InputError("not a dynamic .kiln file (it does not start with \"KILR\")");
  }
  if (const uint32_t version = in.u32("the format version"); version != kVersion) {
    throw InputError(fmt::format(
        "dynamic format version {}; this kiln reads version {} (compile the model again)", version,
        kVersion));
  }
  DynamicProgram program;
  program.dims.resize(in.count("varying dims", 4 + 4 + 8 + 8 + 4));
  for (VaryingDim& dim : program.dims) {
    dim.input = static_cast<int>(in.u32("a varying dim's input"));
    dim.axis = static_cast<int>(in.u32("a varying dim's axis"));
    dim.min = in.i64("a varying dim's minimum");
    dim.max = in.i64("a varying dim's maximum");
    dim.dim_class = static_cast<int>(in.u32("a varying dim's class"));
  }
  program.classes.resize(in.count("classes", 1 + 4 + 4));
  for (DimClass& dim_class : program.classes) {
    dim_class.padded = in.u8("whether a class is padded") != 0;
    dim_class.note = in.string("a class's note");
    dim_class.relies_on = in.string("what a class's padding relies on");
  }
  std::vector<uint32_t> weight_index(in.count("variants", 4 * 5 + 8));
  program.variants.resize(weight_index.size());
  for (size_t v = 0; v < program.variants.size(); ++v) {
    ProgramVariant& variant = program.variants[v];
    const std::string what = fmt::format("variant {}", v);
    variant.sizes.resize(in.count("sizes of " + what, 9));
    for (size_t c = 0; c < variant.sizes.size(); ++c) {
      variant.sizes[c] = in.i64("a size of " + what);
      variant.padded.push_back(in.u8("a padded flag of " + what) != 0);
    }
    variant.input_shapes.resize(in.count("input shapes of " + what, 4));
    for (Shape& shape : variant.input_shapes) shape = read_shape(in, "an input of " + what);
    variant.output_rows.resize(in.count("outputs of " + what, 4));
    for (std::vector<OutputRows>& rows : variant.output_rows) {
      rows.resize(in.count("output rows of " + what, 16));
      for (OutputRows& row : rows) {
        row.axis = static_cast<int>(in.u32("an output row axis of " + what));
        row.inner = in.i64("an output row size of " + what);
        row.dim_class = static_cast<int>(in.u32("an output row class of " + what));
      }
    }
    weight_index[v] = in.u32("the weight set of " + what);
    const std::vector<uint8_t> program_bytes = in.blob("the program of " + what);
    variant.program = unvalidated_program_from_bytes(program_bytes, what);
  }
  // Each set once in memory too: the variants holding it share it (WeightBytes).
  std::vector<std::span<const uint8_t>> pieces(in.count("weight pieces", 8));
  for (std::span<const uint8_t>& piece : pieces) {
    piece = in.bytes(in.u64("a weight piece's size"), "a weight piece");
  }
  std::vector<WeightBytes> weights(in.count("weight sets", 8 + 4));
  for (size_t w = 0; w < weights.size(); ++w) {
    const std::string what = fmt::format("weight set {}", w);
    const uint64_t size = in.u64("the size of " + what);
    std::vector<uint8_t> bytes;  // grown piece by piece: a corrupt size allocates nothing
    for (uint32_t n = in.count("the pieces of " + what, 12); n > 0; --n) {
      const uint64_t offset = in.u64("a piece offset of " + what);
      const uint32_t index = in.u32("a piece of " + what);
      if (offset != bytes.size() || index >= pieces.size() ||
          pieces[index].size() > size - bytes.size()) {
        throw InputError(
            fmt::format("{}: piece {} at offset {} does not continue it", what, index, offset));
      }
      bytes.insert(bytes.end(), pieces[index].begin(), pieces[index].end());
    }
    if (bytes.size() != size) {
      throw InputError(
          fmt::format("{}: its pieces hold {} of its {} bytes", what, bytes.size(), size));
    }
    weights[w] = WeightBytes(std::move(bytes));
  }
  const size_t checksum_offset = in.offset();
  const uint64_t stored = in.u64("the checksum");
  if (stored != fnv1a_64(bytes.first(checksum_offset)) || in.remaining() != 0) {
    throw InputError("checksum mismatch or trailing bytes (the file is corrupted)");
  }
  for (size_t v = 0; v < program.variants.size(); ++v) {
    if (weight_index[v] >= weights.size()) {
      throw InputError(fmt::format("variant {}: weight set {} out of range", v, weight_index[v]));
    }
    program.variants[v].program.weights = weights[weight_index[v]];
    try {
      validate_program(program.variants[v].program);
    } catch (const InputError& error) {
      error.rethrow_prefixed(fmt::format("variant {}: ", v));
    }
  }
  validate_dynamic_program(program);
  return program;
}

// Copies the leading corner common to `from` and `to` (same dtype and rank): whole rows of the
// innermost dims the two agree on at a time.
void copy_corner(const Tensor& from, Tensor& to) {
  const Shape& a = from.shape();
  const Shape& b = to.shape();
  const size_t rank = a.size();
  Shape corner(rank);
  for (size_t i = 0; i < rank; ++i) corner[i] = std::min(a[i], b[i]);
  if (num_elements(corner) == 0) return;
  size_t inner_axis = rank;  // axes [inner_axis, rank) are whole in both
  size_t block = dtype_size(from.dtype());
  while (inner_axis > 0 && a[inner_axis - 1] == b[inner_axis - 1]) {
    block *= static_cast<size_t>(a[--inner_axis]);
  }
  // The innermost axis that differs contributes its corner length to each copy.
  if (inner_axis > 0) block *= static_cast<size_t>(corner[--inner_axis]);
  const std::vector<int64_t> from_strides = row_major_strides(a);
  const std::vector<int64_t> to_strides = row_major_strides(b);
  std::vector<int64_t> index(inner_axis, 0);
  const size_t element = dtype_size(from.dtype());
  while (true) {
    int64_t from_offset = 0, to_offset = 0;
    for (size_t i = 0; i < inner_axis; ++i) {
      from_offset += index[i] * from_strides[i];
      to_offset += index[i] * to_strides[i];
    }
    std::memcpy(to.bytes() + to_offset * element, from.bytes() + from_offset * element, block);
    size_t axis = inner_axis;
    while (axis > 0 && ++index[axis - 1] == corner[axis - 1]) index[--axis] = 0;
    if (axis == 0) break;
  }
}

}  // namespace

bool is_dynamic_program_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  file.read(magic, 4);
  return file && std::string_view(magic, 4) == kMagic;
}

std::vector<uint8_t> dynamic_program_to_bytes(const DynamicProgram& program) {
  ByteWriter out;
  out.raw({reinterpret_cast<const uint8_t*>(kMagic.data()), kMagic.size()});
  out.u32(kVersion);
  out.u32(static_cast<uint32_t>(program.dims.size()));
  for (const VaryingDim& dim : program.dims) {
    out.u32(static_cast<uint32_t>(dim.input));
    out.u32(static_cast<uint32_t>(dim.axis));
    out.i64(dim.min);
    out.i64(dim.max);
    out.u32(static_cast<uint32_t>(dim.dim_class));
  }
  out.u32(static_cast<uint32_t>(program.classes.size()));
  for (const DimClass& dim_class : program.classes) {
    out.u8(dim_class.padded ? 1 : 0);
    out.string(dim_class.note);
    out.string(dim_class.relies_on);
  }
  std::vector<const WeightBytes*> weight_sets;
  std::vector<const Program*> set_programs;  // a program holding each set
  out.u32(static_cast<uint32_t>(program.variants.size()));
  for (const ProgramVariant& variant : program.variants) {
    out.u32(static_cast<uint32_t>(variant.sizes.size()));
    for (size_t c = 0; c < variant.sizes.size(); ++c) {
      out.i64(variant.sizes[c]);
      out.u8(variant.padded.at(c) ? 1 : 0);
    }
    out.u32(static_cast<uint32_t>(variant.input_shapes.size()));
    for (const Shape& shape : variant.input_shapes) write_shape(out, shape);
    out.u32(static_cast<uint32_t>(variant.output_rows.size()));
    for (const std::vector<OutputRows>& rows : variant.output_rows) {
      out.u32(static_cast<uint32_t>(rows.size()));
      for (const OutputRows& row : rows) {
        out.u32(static_cast<uint32_t>(row.axis));
        out.i64(row.inner);
        out.u32(static_cast<uint32_t>(row.dim_class));
      }
    }
    const uint32_t set = weight_set(weight_sets, variant.program.weights);
    if (set == set_programs.size()) set_programs.push_back(&variant.program);
    out.u32(set);
    Program without_weights = variant.program;
    without_weights.weights.clear();
    out.blob(program_to_bytes(without_weights));
  }
  PieceWriter pieces;
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> layouts;
  for (const Program* holder : set_programs) layouts.push_back(pieces.add(*holder));
  out.u32(static_cast<uint32_t>(pieces.pieces().size()));
  for (const std::span<const uint8_t> piece : pieces.pieces()) out.blob(piece);
  out.u32(static_cast<uint32_t>(weight_sets.size()));
  for (size_t w = 0; w < weight_sets.size(); ++w) {
    out.u64(weight_sets[w]->size());
    out.u32(static_cast<uint32_t>(layouts[w].size()));
    for (const auto& [offset, index] : layouts[w]) {
      out.u64(offset);
      out.u32(index);
    }
  }
  out.u64(fnv1a_64(out.bytes()));
  return out.release();
}

DynamicProgram dynamic_program_from_bytes(std::span<const uint8_t> bytes,
                                          const std::string& source) {
  try {
    return decode(bytes, source);
  } catch (const InputError& error) {
    error.rethrow_prefixed(source + ": ");
  }
}

void write_dynamic_program(const DynamicProgram& program, const std::string& path) {
  const std::vector<uint8_t> bytes = dynamic_program_to_bytes(program);
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) throw InputError(path + ": cannot write the .kiln file");
}

DynamicProgram read_dynamic_program(const std::string& path) {
  return dynamic_program_from_bytes(read_kiln_file(path), path);
}

std::vector<int64_t> class_sizes(const DynamicProgram& program, const std::vector<Shape>& shapes) {
  const Program& first = program.variants.at(0).program;
  if (shapes.size() != first.inputs.size()) {
    throw InputError(
        fmt::format("the program takes {} inputs, got {}", first.inputs.size(), shapes.size()));
  }
  std::vector<int64_t> sizes(program.classes.size(), -1);
  std::vector<std::string> size_from(program.classes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ProgramBuffer& input = first.buffers[first.inputs[i]];
    const Shape& shape = shapes[i];
    const std::string name = "input '" + input.name + "'";
    if (shape.size() != input.type.shape.size()) {
      throw InputError(fmt::format("{}: rank {}, the program takes rank {}", name, shape.size(),
                                   input.type.shape.size()));
    }
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      const VaryingDim* varying = nullptr;
      for (const VaryingDim& dim : program.dims) {
        if (dim.input == static_cast<int>(i) && dim.axis == static_cast<int>(axis)) varying = &dim;
      }
      if (!varying) {
        if (shape[axis] != input.type.shape[axis]) {
          throw InputError(fmt::format("{}: dim {} is {}; the program takes {} there", name, axis,
                                       shape[axis], input.type.shape[axis]));
        }
        continue;
      }
      if (shape[axis] < varying->min || shape[axis] > varying->max) {
        throw InputError(fmt::format("{}: dim {} is {}, outside the compiled range {}..{}", name,
                                     axis, shape[axis], varying->min, varying->max));
      }
      int64_t& size = sizes[varying->dim_class];
      const std::string here = fmt::format("{} dim {}", name, axis);
      if (size != -1 && size != shape[axis]) {
        throw InputError(
            fmt::format("{} is {} but {} is {}: the model combines them, so they "
                        "must be equal",
                        here, shape[axis], size_from[varying->dim_class], size));
      }
      size = shape[axis];
      size_from[varying->dim_class] = here;
    }
  }
  return sizes;
}

size_t choose_variant(const DynamicProgram& program, const std::vector<Shape>& shapes) {
  const std::vector<int64_t> sizes = class_sizes(program, shapes);
  size_t best = program.variants.size();
  double best_cost = 0;
  for (size_t v = 0; v < program.variants.size(); ++v) {
    const ProgramVariant& variant = program.variants[v];
    bool fits = true;
    double cost = 1;
    for (size_t c = 0; c < sizes.size(); ++c) {
      fits = fits &&
             (variant.sizes[c] == sizes[c] || (variant.padded[c] && variant.sizes[c] > sizes[c]));
      cost *= static_cast<double>(variant.sizes[c]);
    }
    if (fits && (best == program.variants.size() || cost < best_cost)) best = v, best_cost = cost;
  }
  if (best == program.variants.size()) {
    std::string wanted;
    for (size_t c = 0; c < sizes.size(); ++c) wanted += fmt::format(" {}", sizes[c]);
    throw InputError("no variant of the program serves sizes" + wanted);
  }
  return best;
}

Tensor pad_to(const Tensor& input, const Shape& shape) {
  Tensor padded(input.dtype(), shape);
  copy_corner(input, padded);
  return padded;
}

Tensor cut_to(const Tensor& output, const Shape& shape) {
  Tensor cut(output.dtype(), shape);
  copy_corner(output, cut);
  return cut;
}

Shape real_output_shape(const ProgramVariant& variant, size_t output,
                        const std::vector<int64_t>& sizes) {
  const Program& program = variant.program;
  Shape shape = program.buffers[program.outputs.at(output)].type.shape;
  for (const OutputRows& rows : variant.output_rows.at(output)) {
    shape[rows.axis] = sizes[rows.dim_class] * rows.inner;
  }
  return shape;
}

}  // namespace kiln
