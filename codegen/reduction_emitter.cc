// The reduction emitter (see the header).
#include "codegen/reduction_emitter.h"

#include <fmt/format.h>

#include <set>

#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "codegen/lrn_emitter.h"
#include "codegen/reduction_ops.h"
#include "codegen/vector_access.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kMaxCachedPerThread = 32;
constexpr int64_t kTargetPerThread = 32;
constexpr int64_t kSerialBlock = 256;
constexpr int64_t kWarpRowsPerBlock = 4;
// A thread's float sum of more than this many terms adds them in chunks of at most this many,
// each into a partial of its own, and the partials likewise, level upon level: no running sum
// takes more than this many additions, where a single running sum stops growing once it is
// 2^24 times its terms (issue 15: 4.1e10 ones summed to 2^34).
constexpr int64_t kChunkTerms = 1024;
// A vector of a per-column operand (scale, bias) that is a constant may span two 16-byte
// accesses, not more: constants lie in the weights, aligned to 256 bytes. Any other buffer may be
// a graph input, whose device pointer run_device requires only 16-byte aligned
// (kDevicePointerAlignment), so its vectors stay within 16 bytes.
constexpr size_t kMaxConstantColumnVectorBytes = 2 * kVectorBytes;

// X as rows × columns: adjacent axes that are both kept (or both reduced) merge into one group;
// axes of one element are left out. Each group has its size and its stride in X.
struct RowGeometry {
  Shape kept_sizes, kept_strides;
  Shape reduced_sizes, reduced_strides;
  int64_t rows = 1;
  int64_t columns = 1;
  bool columns_contiguous = false;  // the innermost axis of X (of more than one element) is reduced
};

RowGeometry row_geometry(const Shape& shape, const std::vector<bool>& reduced) {
  RowGeometry g;
  const std::vector<int64_t> strides = row_major_strides(shape);
  int last_kind = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const int kind = reduced[d] ? 1 : 0;
    Shape& sizes = kind ? g.reduced_sizes : g.kept_sizes;
    Shape& group_strides = kind ? g.reduced_strides : g.kept_strides;
    if (kind == last_kind) {
      sizes.back() *= shape[d];
      group_strides.back() = strides[d];
    } else {
      sizes.push_back(shape[d]);
      group_strides.push_back(strides[d]);
    }
    (kind ? g.columns : g.rows) *= shape[d];
    last_kind = kind;
  }
  g.columns_contiguous = last_kind == 1;
  return g;
}

// Strided rows (their columns apart in memory, a kept axis innermost): the fewest columns that
// take the strided schedule, the fewest threads a block, and how many blocks keep every SM busy
// (below that, blocks take more threads while each still has this many columns).
constexpr int64_t kMinStridedColumns = 16;
constexpr int64_t kMinStridedBlock = 128;
constexpr int64_t kMaxBlock = 1024;
constexpr int64_t kBusyBlocks = 264;
constexpr int64_t kMinStridedPerThread = 8;

// How threads share the rows.
struct Schedule {
  int64_t threads_per_row = 1;  // 1, a warp, or the whole block; strided: the phases
  int64_t block = kSerialBlock;
  int64_t rows_per_block = kSerialBlock;
  int64_t per_thread = 0;  // columns each thread takes
  bool cached = false;     // the first pass keeps them in registers
  int vector_width = 1;    // columns a thread takes at a time (1: scalar accesses)
  int64_t vectors_per_thread = 0;
  // Strided rows: thread t of a block takes row t % rows_per_block (adjacent rows are adjacent
  // elements) and columns t / rows_per_block, + threads_per_row, ...
  bool strided = false;
};

// The largest divisor of `n` that is at most `most`.
int64_t largest_divisor(int64_t n, int64_t most) {
  for (int64_t d = std::min(n, most); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// A channels-last global pool's rows (N·C) are adjacent in memory and each has H·W columns C
// elements apart: the serial schedule, a thread walking each row, runs a few hundred rows on a
// few hundred threads. Here a block takes up to 32 adjacent rows (a divisor of the innermost kept
// axis, so no block straddles two of its runs), a warp reading their neighbouring elements of
// one column at a time, and its other threads (the row's phases) the row's other columns.
Schedule strided_schedule(const RowGeometry& g) {
  Schedule s;
  s.strided = true;
  s.rows_per_block = largest_divisor(g.kept_sizes.back(), kWarpSize);
  int64_t phases = 1;
  while (phases * s.rows_per_block < kMinStridedBlock) phases *= 2;
  const auto fits = [&](int64_t p) { return p * s.rows_per_block <= kMaxBlock; };
  while ((g.columns + phases - 1) / phases > kMaxCachedPerThread && fits(phases * 2)) phases *= 2;
  while (g.rows / s.rows_per_block < kBusyBlocks && fits(phases * 2) &&
         g.columns / (phases * 2) >= kMinStridedPerThread) {
    phases *= 2;
  }
  s.threads_per_row = phases;
  s.block = phases * s.rows_per_block;
  s.per_thread = (g.columns + phases - 1) / phases;
  s.cached = s.per_thread <= kMaxCachedPerThread;
  return s;
}

Schedule choose_schedule(const RowGeometry& g, int vector_width) {
  Schedule s;
  if (!g.columns_contiguous && g.columns >= kMinStridedColumns && g.rows > 0) {
    return strided_schedule(g);
  }
  if (!g.columns_contiguous || g.columns < kWarpSize) {
    s.per_thread = g.columns;
    s.cached = g.columns <= kMaxCachedPerThread;
    return s;
  }
  const int64_t vectors = g.columns / vector_width;
  s.threads_per_row = 1024;
  for (int64_t threads : {int64_t{32}, int64_t{128}, int64_t{256}, int64_t{512}}) {
    if ((vectors + threads - 1) / threads * vector_width <= kTargetPerThread) {
      s.threads_per_row = threads;
      break;
    }
  }
  s.block = s.threads_per_row == kWarpSize ? kWarpSize * kWarpRowsPerBlock : s.threads_per_row;
  s.rows_per_block = s.threads_per_row == kWarpSize ? kWarpRowsPerBlock : 1;
  s.vector_width = vector_width;
  s.vectors_per_thread = (vectors + s.threads_per_row - 1) / s.threads_per_row;
  s.per_thread = s.vectors_per_thread * vector_width;
  s.cached = s.per_thread <= kMaxCachedPerThread;
  return s;
}

// The items (columns, or vectors of them) a chunk of kChunkTerms terms holds.
int64_t chunk_items(const Schedule& s) { return kChunkTerms / s.vector_width; }

// The levels of chunk partials a float sum over a thread's items needs: none when it takes at
// most chunk_items(s) (or the schedule caches them: at most kMaxCachedPerThread).
int chunk_levels(const Schedule& s) {
  int levels = 0;
  if (s.cached) return levels;
  for (int64_t items = s.per_thread / s.vector_width; items > chunk_items(s);
       items = (items + chunk_items(s) - 1) / chunk_items(s)) {
    ++levels;
  }
  return levels;
}

// How far past the end of a row a thread's loop variables may step: a block (the last items'
// stride), or the span of the outermost chunks.
int64_t loop_overshoot(const Schedule& s) {
  int64_t span = s.threads_per_row;
  for (int l = chunk_levels(s); l > 0; --l) span *= chunk_items(s);
  return std::max(s.block, span);
}

// Where each body output is written: once per row, or once per element of X.
struct OutputPlan {
  std::vector<size_t> per_row, per_element;  // indices into body.outputs
};

OutputPlan plan_outputs(const KernelBody& body, const RowGeometry& g) {
  OutputPlan plan;
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    const int64_t count = body.outputs[k]->type().num_elements();
    if (count == g.rows * g.columns) {
      plan.per_element.push_back(k);
    } else if (count == g.rows) {
      plan.per_row.push_back(k);
    } else {
      throw UnsupportedError("reduction kernel output " + body.outputs[k]->name() + " has " +
                             std::to_string(count) + " elements, neither one per row (" +
                             std::to_string(g.rows) + ") nor one per reduced element (" +
                             std::to_string(g.rows * g.columns) + ")");
    }
  }
  return plan;
}

// Whether `shape` broadcast to `x_shape` (numpy rules) has one element per column of a row
// that is X's innermost `columns` elements: its dims, leading 1s left out, are X's last ones.
bool broadcasts_along_rows(const Shape& shape, const Shape& x_shape, int64_t columns) {
  size_t first = 0;
  while (first < shape.size() && shape[first] == 1) ++first;
  const size_t rank = shape.size() - first;
  if (rank > x_shape.size() || num_elements(shape) != columns) return false;
  return std::equal(shape.begin() + first, shape.end(), x_shape.end() - rank);
}

// Vector accesses to the rows. When a row is one contiguous run of X (the reduced axes are X's
// innermost ones), each thread moves `width` neighbouring columns at a time: 16 bytes of the
// widest buffer streamed per element of X (inputs and constants of X's size, per-element
// outputs), which every pass then reads or writes as vectors at the row's offset. Buffers of
// one element per column (layer norm's scale and bias) are read as vectors at the column.
struct RowVectors {
  int width = 1;
  std::set<const Value*> per_element;  // read at X's flat index
  std::set<const Value*> per_column;   // read at the column
};

RowVectors plan_row_vectors(const KernelBody& body, const RowGeometry& g, const Shape& x_shape,
                            const OutputPlan& outputs) {
  if (!g.columns_contiguous || g.reduced_sizes.size() != 1) return {};
  RowVectors plan;
  std::set<const Value*> buffers(body.inputs.begin(), body.inputs.end());
  for (const Node* node : body.nodes) {
    for (const Value* operand : node->operands()) {
      if (operand->is_constant() && operand->type().num_elements() > 1) buffers.insert(operand);
    }
  }
  size_t widest = 0;
  for (const Value* buffer : buffers) {
    if (buffer->type().num_elements() == g.rows * g.columns) {
      plan.per_element.insert(buffer);
      widest = std::max(widest, dtype_size(buffer->type().dtype));
    } else if (broadcasts_along_rows(buffer->type().shape, x_shape, g.columns)) {
      plan.per_column.insert(buffer);
    }
  }
  for (size_t k : outputs.per_element) {
    widest = std::max(widest, dtype_size(body.outputs[k]->type().dtype));
  }
  if (widest == 0) return {};
  plan.width = vector_width_for(widest);
  if (plan.width < 2 || g.columns % plan.width != 0 || g.columns / plan.width < kWarpSize) {
    return {};
  }
  std::erase_if(plan.per_column, [&](const Value* buffer) {
    const bool weight = buffer->is_constant() || body.weight_inputs.count(buffer);
    const size_t most = weight ? kMaxConstantColumnVectorBytes : kVectorBytes;
    return dtype_size(buffer->type().dtype) * plan.width > most;
  });
  return plan;
}

const Node& find_reduction(const KernelBody& body) {
  const Node* found = nullptr;
  for (const Node* node : body.nodes) {
    if (node->info().category != OpCategory::kReduction) continue;
    if (found) {
      throw UnsupportedError("a reduction kernel computes one reduction, this one has " +
                             found->describe() + " and " + node->describe());
    }
    found = node;
  }
  if (!found) throw InternalError("reduction kernel without a reduction op");
  return *found;
}

class ReductionWriter {
 public:
  ReductionWriter(const KernelBody& body, KernelSpec& spec)
      : body_(body),
        reduction_(find_reduction(body)),
        input_(reduction_.operand(0)),
        geometry_(row_geometry(reduction_view(reduction_), reduced_axes(reduction_))),
        outputs_(plan_outputs(body, geometry_)),
        vectors_(plan_row_vectors(body, geometry_, input_->type().shape, outputs_)),
        schedule_(choose_schedule(geometry_, vectors_.width)),
        plan_(plan_reduction(reduction_, geometry_.columns)),
        spec_(spec),
        code_(1),
        e_(code_, spec.params, index_type_for(body, loop_overshoot(schedule_))),
        keeps_terms_(keeps_terms()) {}

  void write() {
    for (const Value* input : body_.inputs) spec_.params.add_input(input);
    for (const Value* output : body_.outputs)
      output_names_.push_back(spec_.params.add_output(output));
    write_row_and_lane();
    write_vector_definitions();
    if (schedule_.cached) {
      code_.line(fmt::format("{} xs[{}];", cuda_compute_type(input_->type().dtype),
                             std::max<int64_t>(schedule_.per_thread, 1)));
    }
    for (size_t p = 0; p < plan_.passes.size(); ++p) {
      write_pass(plan_.passes[p], p == 0, keeps_terms_ && p + 1 == plan_.passes.size());
    }
    (keeps_terms_ ? plan_.install_results_from_terms : plan_.install_results)(e_);
    write_outputs();
    spec_.body = code_.text();
    const int64_t blocks =
        (geometry_.rows + schedule_.rows_per_block - 1) / schedule_.rows_per_block;
    if (blocks > INT32_MAX) {
      throw UnsupportedError(reduction_.describe() + ": " + std::to_string(geometry_.rows) +
                             " rows need more blocks than a grid holds");
    }
    spec_.grid = {static_cast<uint32_t>(std::max<int64_t>(blocks, 1)), 1, 1};
    spec_.block = {static_cast<uint32_t>(schedule_.block), 1, 1};
    spec_.max_threads = static_cast<uint32_t>(schedule_.block);
    spec_.tactic = tactic();
  }

 private:
  void write_row_and_lane() {
    const std::string& index = e_.index_type();
    const int64_t threads = schedule_.threads_per_row;
    if (schedule_.strided) {
      const int64_t rows = schedule_.rows_per_block;
      code_.line(fmt::format("const {} row = static_cast<{}>(blockIdx.x) * {} + threadIdx.x % {};",
                             index, index, rows, rows));
      code_.line(fmt::format("const int lane = threadIdx.x / {};", rows));
      lane_ = "lane";
    } else if (threads == 1) {
      code_.line(fmt::format(
          "const {} row = static_cast<{}>(blockIdx.x) * blockDim.x + threadIdx.x;", index, index));
      lane_ = "0";
    } else if (threads == kWarpSize) {
      code_.line(fmt::format("const {} row = static_cast<{}>(blockIdx.x) * {} + threadIdx.x / 32;",
                             index, index, kWarpRowsPerBlock));
      code_.line("const int lane = threadIdx.x % 32;");
      lane_ = "lane";
    } else {
      code_.line(fmt::format("const {} row = blockIdx.x;", index));
      code_.line("const int lane = threadIdx.x;");
      lane_ = "lane";
    }
    if (geometry_.rows % schedule_.rows_per_block != 0 || geometry_.rows == 0) {
      code_.line(fmt::format("if (row >= {}) return;", geometry_.rows));
    }
    row_base_ = linear_offset("row", geometry_.kept_sizes, geometry_.kept_strides);
  }

  // The schedule in words, for kiln inspect and kiln bench --profile: "strided: 32 adjacent rows a
  // block, 32 threads a row, 25 columns a thread in registers".
  std::string tactic() const {
    const Schedule& s = schedule_;
    std::string text;
    if (s.strided) {
      text = fmt::format("strided: {} adjacent rows a block, {} threads a row", s.rows_per_block,
                         s.threads_per_row);
    } else if (s.threads_per_row == 1) {
      text = "a thread a row";
    } else if (s.threads_per_row == kWarpSize) {
      text = fmt::format("a warp a row, {} rows a block", s.rows_per_block);
    } else {
      text = fmt::format("a block of {} threads a row", s.threads_per_row);
    }
    if (s.vector_width > 1) text += fmt::format(", vectors of {}", s.vector_width);
    text += fmt::format(", {} column{} a thread{}", s.per_thread, s.per_thread == 1 ? "" : "s",
                        s.cached ? " in registers" : "");
    return text;
  }

  // Σ coordinate_g(index) · stride_g over the groups of `sizes`.
  std::string linear_offset(const std::string& index, const Shape& sizes, const Shape& strides) {
    std::string sum;
    for (size_t g = 0; g < sizes.size(); ++g) {
      const std::string coordinate = e_.coordinate(index, sizes, g);
      if (coordinate == "0") continue;
      if (!sum.empty()) sum += " + ";
      sum += strides[g] == 1 ? coordinate : coordinate + " * " + std::to_string(strides[g]);
    }
    return sum.empty() ? "0" : e_.index_temp(sum);
  }

  // A sum whose uncached walk adds its terms into partials of `levels` levels (kChunkTerms):
  // level 1 takes the terms, each level's partial is added into the next one's, the last into
  // the accumulator.
  struct ChunkedSum {
    int levels = 0;  // 0: the terms go straight into the accumulator
    std::string type, initial, accumulator;

    std::string partial(int level) const { return accumulator + "_" + std::to_string(level); }
    // What the walk adds its terms to.
    std::string target() const { return levels ? partial(1) : accumulator; }
  };

  // The chunk levels of this float sum (chunk_levels(schedule_)), none for other passes.
  int sum_chunk_levels(const ReductionPass& pass) const {
    const bool float_sum =
        pass.combine == Combine::kSum && pass.type == cuda_compute_type(DType::kF32);
    return float_sum ? chunk_levels(schedule_) : 0;
  }

  // What a walk over this thread's columns does (for_each_column).
  struct ColumnVisit {
    // Whether visit() needs X's flat index and the column (else it reads only the slot).
    bool needs_index = false;
    // Buffers read as vectors (vector schedules only), bound for the element machinery.
    std::vector<const Value*> loads = {};
    // visit(x_index, column, slot) for each column: `slot` is the register holding that
    // element of X when the schedule caches, else ""; `x_index` is X's flat index of the
    // element and `column` its column, both "" when !needs_index.
    std::function<void(const std::string&, const std::string&, const std::string&)> visit = {};
    // Vector schedules: before and after the columns of each vector (given its index in the
    // row, in vectors).
    std::function<void()> before_vector = {};
    std::function<void(const std::string&)> after_vector = {};
    // The float sum that visit() adds to (write_pass), chunked in uncached walks (kChunkTerms).
    ChunkedSum sum = {};
  };

  void for_each_column(const ColumnVisit& walk) {
    if (schedule_.vector_width > 1) {
      for_each_vector(walk);
      return;
    }
    const int64_t threads = schedule_.threads_per_row;
    std::string column;
    int guards = 0;
    if (schedule_.cached) {
      code_.line("#pragma unroll");
      e_.open_block(fmt::format("for (int k = 0; k < {}; ++k)", schedule_.per_thread));
      const bool guarded = schedule_.per_thread * threads != geometry_.columns;
      if (guarded || walk.needs_index) {
        column = threads == 1 ? "k" : e_.index_temp(lane_ + " + k * " + std::to_string(threads));
      }
      if (guarded) {
        e_.open_block(fmt::format("if ({} < {})", column, geometry_.columns));
        ++guards;
      }
    } else {
      column = "col";
      open_thread_loop(column, geometry_.columns, walk.sum);
    }
    walk.visit(walk.needs_index ? x_index(column) : "", column, schedule_.cached ? "xs[k]" : "");
    for (int g = 0; g < guards; ++g) e_.close_block();
    close_thread_loop(walk.sum);
  }

  // An uncached walk's loop over this thread's `count` items: `item` = lane, lane + threads,
  // ... With chunk levels, one loop a level around it: level l's loop steps over spans of
  // threads · chunk_items^l items, and each span's partial starts at zero.
  void open_thread_loop(const std::string& item, int64_t count, const ChunkedSum& sum) {
    const std::string& index = e_.index_type();
    const int64_t threads = schedule_.threads_per_row;
    std::string start = lane_, end = std::to_string(count);
    int64_t span = threads;
    for (int l = 1; l <= sum.levels; ++l) span *= chunk_items(schedule_);
    for (int l = sum.levels; l >= 1; --l) {
      const std::string chunk = fmt::format("{}_chunk{}", item, l);
      e_.open_block(fmt::format("for ({0} {1} = {2}; {1} < {3}; {1} += {4})", index, chunk, start,
                                end, span));
      code_.line(fmt::format("{} {} = {};", sum.type, sum.partial(l), sum.initial));
      span /= chunk_items(schedule_);
      const std::string chunk_end = fmt::format("{}_end{}", item, l);
      code_.line(fmt::format("const {0} {1} = {2} - {3} > {4} ? {3} + {4} : {2};", index,
                             chunk_end, end, chunk, span * chunk_items(schedule_)));
      start = chunk;
      end = chunk_end;
    }
    e_.open_block(fmt::format("for ({0} {1} = {2}; {1} < {3}; {1} += {4})", index, item, start,
                              end, threads));
  }

  // Closes open_thread_loop's loops, adding each level's partial into the next level's.
  void close_thread_loop(const ChunkedSum& sum) {
    e_.close_block();
    for (int l = 1; l <= sum.levels; ++l) {
      const std::string into = l == sum.levels ? sum.accumulator : sum.partial(l + 1);
      code_.line(fmt::format("{} += {};", into, sum.partial(l)));
      e_.close_block();
    }
  }

  // The vector schedule's walk: vector `vec` of the row holds columns vec·W to vec·W + W − 1;
  // the thread takes vectors lane, lane + threads, ...; slot xs[j·W + k] holds column k of its
  // j-th vector.
  void for_each_vector(const ColumnVisit& walk) {
    const int64_t threads = schedule_.threads_per_row;
    const int width = schedule_.vector_width;
    const int64_t vectors = geometry_.columns / width;
    const bool addressed = walk.needs_index || !walk.loads.empty() || walk.after_vector;
    std::string vec;
    int guards = 0;
    if (schedule_.cached) {
      code_.line("#pragma unroll");
      e_.open_block(fmt::format("for (int j = 0; j < {}; ++j)", schedule_.vectors_per_thread));
      const bool guarded = schedule_.vectors_per_thread * threads != vectors;
      if (guarded || addressed) vec = e_.index_temp(lane_ + " + j * " + std::to_string(threads));
      if (guarded) {
        e_.open_block(fmt::format("if ({} < {})", vec, vectors));
        ++guards;
      }
    } else {
      vec = "vec";
      open_thread_loop(vec, vectors, walk.sum);
    }
    std::vector<std::string> loaded;
    for (const Value* buffer : walk.loads) {
      const std::string type = vector_type(buffer->type().dtype, width);
      loaded.push_back(e_.fresh_name('a'));
      code_.line(fmt::format("const {} {} = reinterpret_cast<const {}*>({})[{}];", type,
                             loaded.back(), type, row_pointer(buffer), vec));
    }
    if (walk.before_vector) walk.before_vector();
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int k = 0; k < {}; ++k)", width));
    std::string index, column;
    if (addressed) {
      column = e_.index_temp(vec + " * " + std::to_string(width) + " + k");
      index = x_index(column);
    }
    for (size_t b = 0; b < walk.loads.size(); ++b) {
      const Value* buffer = walk.loads[b];
      const DType dtype = buffer->type().dtype;
      const std::string buffer_index =
          vectors_.per_element.count(buffer)
              ? index
              : e_.broadcast_index(index, input_->type().shape, buffer->type().shape);
      e_.bind(buffer, buffer_index,
              e_.temp(cuda_compute_type(dtype), widened(dtype, loaded[b] + ".v[k]")));
    }
    walk.visit(index, column,
               schedule_.cached ? fmt::format("xs[j * {} + k]", width) : std::string());
    e_.close_block();
    if (walk.after_vector) walk.after_vector(vec);
    for (int g = 0; g < guards; ++g) e_.close_block();
    close_thread_loop(walk.sum);
  }

  // Where a buffer's vectors for this row start: at the row's offset for one of X's size, at
  // the buffer's start for one of a row's size.
  std::string row_pointer(const Value* buffer) {
    const std::string name = e_.params().is_input(buffer) || buffer->is_constant()
                                 ? e_.params().read(buffer)
                                 : output_name(buffer);
    if (vectors_.per_column.count(buffer) || row_base_ == "0") return name;
    return name + " + " + row_base_;
  }

  const std::string& output_name(const Value* output) {
    for (size_t k = 0; k < body_.outputs.size(); ++k) {
      if (body_.outputs[k] == output) return output_names_[k];
    }
    throw InternalError("reduction kernel: " + output->name() + " is not an output");
  }

  // The buffers that computing `roots` reads as vectors, through the body's ops, not past
  // `stop` (X when the schedule holds it in registers).
  std::vector<const Value*> vector_loads(const std::vector<const Value*>& roots,
                                         const Value* stop) {
    std::vector<const Value*> found;
    if (schedule_.vector_width == 1) return found;
    std::set<const Value*> seen;
    const std::set<const Node*> nodes(body_.nodes.begin(), body_.nodes.end());
    std::function<void(const Value*)> visit = [&](const Value* value) {
      if (value == stop || !seen.insert(value).second) return;
      if (vectors_.per_element.count(value) || vectors_.per_column.count(value)) {
        found.push_back(value);
        return;
      }
      const Node* producer = value->producer();
      if (!producer || !nodes.count(producer)) return;
      for (const Value* operand : producer->operands()) visit(operand);
    };
    for (const Value* root : roots) visit(root);
    return found;
  }

  void write_vector_definitions() {
    if (schedule_.vector_width == 1) return;
    std::set<DType> dtypes;
    for (const Value* buffer : vectors_.per_element) dtypes.insert(buffer->type().dtype);
    for (const Value* buffer : vectors_.per_column) dtypes.insert(buffer->type().dtype);
    bool packs = false;
    for (size_t k : outputs_.per_element) {
      const Value* output = body_.outputs[k];
      if (packed(output)) {
        packs = true;
      } else {
        dtypes.insert(output->type().dtype);
      }
    }
    spec_.definitions += vector_definitions(dtypes, schedule_.vector_width);
    if (packs) spec_.definitions += packed_f16_vector_definition(schedule_.vector_width);
  }

  // X's flat index of this row's element at `column`.
  std::string x_index(const std::string& column) {
    const std::string offset =
        linear_offset(column, geometry_.reduced_sizes, geometry_.reduced_strides);
    if (row_base_ == "0") return offset;
    return offset == "0" ? row_base_ : e_.index_temp(row_base_ + " + " + offset);
  }

  // Whether the last pass may leave its terms in the registers that hold X (reduction_ops.h):
  // X is held there, is not written, and only the reduction reads it.
  bool keeps_terms() const {
    if (!schedule_.cached || !plan_.install_results_from_terms || plan_.passes.size() < 2 ||
        plan_.passes.back().type != cuda_compute_type(input_->type().dtype)) {
      return false;
    }
    for (const Value* output : body_.outputs) {
      if (output == input_) return false;
    }
    for (const Node* node : body_.nodes) {
      if (node == &reduction_) continue;
      for (const Value* operand : node->operands()) {
        if (operand == input_) return false;
      }
    }
    return true;
  }

  // `keep_terms`: the pass replaces each register holding an element of X with its term.
  void write_pass(const ReductionPass& pass, bool first, bool keep_terms) {
    const bool arg = pass.combine == Combine::kArgMax || pass.combine == Combine::kArgMin;
    const std::string& acc = pass.accumulator;
    code_.line(fmt::format("{} {} = {};", pass.type, acc, pass.initial));
    if (arg) code_.line(fmt::format("long long {}_index = -1;", acc));
    const std::string x_type(cuda_compute_type(input_->type().dtype));
    const bool reads_x = first || !schedule_.cached;
    ColumnVisit walk{
        .needs_index = reads_x || arg,
        .loads = reads_x ? vector_loads({input_}, nullptr) : std::vector<const Value*>{},
        .sum = {.levels = sum_chunk_levels(pass),
                .type = pass.type,
                .initial = pass.initial,
                .accumulator = acc}};
    walk.visit = [&](const std::string& index, const std::string& column, const std::string& slot) {
      std::string x;
      if (reads_x) {
        x = e_.element(input_, index);
        if (!slot.empty()) code_.line(slot + " = " + x + ";");
      } else {
        x = slot;
      }
      if (arg) {
        code_.line(fmt::format(
            "if ({0}_index < 0 || kiln_arg_better({1}, {2}, {0}, {0}_index, {3}, {4})) {{", acc, x,
            column, pass.combine == Combine::kArgMax, plan_.select_last));
        code_.line(fmt::format("  {} = {};", acc, x));
        code_.line(fmt::format("  {}_index = {};", acc, column));
        code_.line("}");
        return;
      }
      const std::string converted =
          pass.type == x_type ? x : e_.temp(pass.type, "static_cast<" + pass.type + ">(" + x + ")");
      std::string term = pass.term(converted);
      if (keep_terms) {
        code_.line(slot + " = " + term + ";");
        term = slot;
      }
      switch (pass.combine) {
        case Combine::kSum:
          code_.line(walk.sum.target() + " += " + term + ";");
          break;
        case Combine::kProd:
          code_.line(acc + " *= " + term + ";");
          break;
        case Combine::kMax:
          code_.line(fmt::format("{0} = kiln_max({1}, {0});", acc, term));
          break;
        default:
          code_.line(fmt::format("{0} = kiln_min({1}, {0});", acc, term));
          break;
      }
    };
    for_each_column(walk);
    write_combine(pass, arg);
    for (const std::string& line : pass.finish) code_.line(line);
  }

  // Combines the accumulators of the threads sharing a row.
  void write_combine(const ReductionPass& pass, bool arg) {
    const int64_t threads = schedule_.threads_per_row;
    if (threads == 1) return;
    const std::string& acc = pass.accumulator;
    const bool warp = threads == kWarpSize && !schedule_.strided;
    if (schedule_.strided) {
      code_.line(fmt::format("__shared__ {} {}_partials[{}];", pass.type, acc, schedule_.block));
    }
    if (arg) {
      const std::string flags =
          fmt::format("{}, {}", pass.combine == Combine::kArgMax, plan_.select_last);
      if (schedule_.strided) {
        code_.line(
            fmt::format("__shared__ long long {}_partial_indices[{}];", acc, schedule_.block));
        code_.line(
            fmt::format("kiln_strided_arg_reduce({0}, {0}_index, {1}, {0}_partials, "
                        "{0}_partial_indices, {2});",
                        acc, flags, schedule_.rows_per_block));
      } else if (warp) {
        code_.line(fmt::format("kiln_warp_arg_reduce({0}, {0}_index, {1});", acc, flags));
      } else {
        code_.line(fmt::format("__shared__ {} {}_partials[32];", pass.type, acc));
        code_.line(fmt::format("__shared__ long long {}_partial_indices[32];", acc));
        code_.line(fmt::format(
            "kiln_block_arg_reduce({0}, {0}_index, {1}, {0}_partials, {0}_partial_indices);", acc,
            flags));
      }
      return;
    }
    const char* op = pass.combine == Combine::kSum    ? "kiln_sum_op()"
                     : pass.combine == Combine::kProd ? "kiln_prod_op()"
                     : pass.combine == Combine::kMax  ? "kiln_max_op()"
                                                      : "kiln_min_op()";
    if (schedule_.strided) {
      code_.line(fmt::format("{0} = kiln_strided_reduce({0}, {1}, {0}_partials, {2});", acc, op,
                             schedule_.rows_per_block));
    } else if (warp) {
      code_.line(fmt::format("{0} = kiln_warp_reduce({0}, {1});", acc, op));
    } else {
      code_.line(fmt::format("__shared__ {} {}_partials[32];", pass.type, acc));
      code_.line(fmt::format("{0} = kiln_block_reduce({0}, {1}, {0}_partials);", acc, op));
    }
  }

  void write_outputs() {
    if (!outputs_.per_element.empty()) write_element_outputs();
    if (outputs_.per_row.empty()) return;
    const bool guarded = schedule_.threads_per_row > 1;
    if (guarded) e_.open_block("if (lane == 0)");
    for (size_t k : outputs_.per_row) write_output(k, "row");
    if (guarded) e_.close_block();
  }

  // Whether `output` is an f16 output of a vector schedule: computed into floats and rounded
  // two lanes at a time.
  bool packed(const Value* output) const {
    return schedule_.vector_width > 1 && output->type().dtype == DType::kF16;
  }

  // The last pass over the row: X's elements from registers (or read again), the per-element
  // outputs written one element (or, in vector schedules, one vector) at a time.
  void write_element_outputs() {
    std::vector<const Value*> roots;
    for (size_t k : outputs_.per_element) roots.push_back(body_.outputs[k]);
    ColumnVisit walk{.needs_index = true,
                     .loads = vector_loads(roots, schedule_.cached ? input_ : nullptr)};
    const int width = schedule_.vector_width;
    walk.visit = [&](const std::string& index, const std::string&, const std::string& slot) {
      if (!slot.empty()) e_.bind(input_, index, slot);
      for (size_t k : outputs_.per_element) {
        const Value* output = body_.outputs[k];
        if (packed(output)) {
          code_.line(fmt::format("r{}[k] = {};", k, e_.stored_value(output, index)));
        } else if (width > 1) {
          code_.line(fmt::format("r{}.v[k] = {};", k, e_.stored(output, index)));
        } else {
          code_.line(
              fmt::format("{}[{}] = {};", output_names_[k], index, e_.stored(output, index)));
        }
      }
    };
    walk.before_vector = [&] {
      for (size_t k : outputs_.per_element) {
        const Value* output = body_.outputs[k];
        code_.line(packed(output)
                       ? fmt::format("float r{}[{}];", k, width)
                       : fmt::format("{} r{};", vector_type(output->type().dtype, width), k));
      }
    };
    walk.after_vector = [&](const std::string& vec) {
      for (size_t k : outputs_.per_element) {
        const Value* output = body_.outputs[k];
        std::string type = vector_type(output->type().dtype, width), stored = fmt::format("r{}", k);
        if (packed(output)) {
          type = packed_f16_vector_type(width);
          stored = fmt::format("p{}", k);
          code_.line(fmt::format("{} {};", type, stored));
          code_.line("#pragma unroll");
          code_.line(
              fmt::format("for (int k = 0; k < {}; ++k) {}.v[k] = kiln_pack_f16x2(r{}[2 * k], "
                          "r{}[2 * k + 1]);",
                          width / 2, stored, k, k));
        }
        code_.line(fmt::format("reinterpret_cast<{}*>({})[{}] = {};", type, row_pointer(output),
                               vec, stored));
      }
    };
    for_each_column(walk);
  }

  void write_output(size_t k, const std::string& index) {
    const Value* output = body_.outputs[k];
    code_.line(fmt::format("{}[{}] = {};", output_names_[k], index, e_.stored(output, index)));
  }

  const KernelBody& body_;
  const Node& reduction_;
  const Value* input_;
  RowGeometry geometry_;
  OutputPlan outputs_;
  RowVectors vectors_;
  Schedule schedule_;
  ReductionPlan plan_;
  KernelSpec& spec_;
  CodeWriter code_;
  ElementEmitter e_;
  bool keeps_terms_;
  std::vector<std::string> output_names_;
  std::string lane_;
  std::string row_base_;
};

}  // namespace

KernelSpec emit_reduction_kernel(const KernelBody& body) {
  const Node& reduction = find_reduction(body);
  if (reduction.op() == "lrn") return emit_lrn_kernel(body, reduction);
  KernelSpec spec;
  spec.kind = body.kind;
  spec.ops = distinct_ops(body);
  ReductionWriter(body, spec).write();
  return spec;
}

}  // namespace kiln::codegen
