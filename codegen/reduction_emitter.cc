// The reduction emitter (see the header).
#include "codegen/reduction_emitter.h"

#include <fmt/format.h>

#include "codegen/element_emitter.h"
#include "codegen/reduction_ops.h"
#include "ir/cuda_expr.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kMaxCachedPerThread = 32;
constexpr int64_t kTargetPerThread = 32;
constexpr int64_t kSerialBlock = 256;
constexpr int64_t kWarpRowsPerBlock = 4;

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

// How threads share the rows.
struct Schedule {
  int64_t threads_per_row = 1;  // 1, a warp, or the whole block
  int64_t block = kSerialBlock;
  int64_t rows_per_block = kSerialBlock;
  int64_t per_thread = 0;  // columns each thread takes
  bool cached = false;     // the first pass keeps them in registers
};

Schedule choose_schedule(const RowGeometry& g) {
  Schedule s;
  if (!g.columns_contiguous || g.columns < kWarpSize) {
    s.per_thread = g.columns;
    s.cached = g.columns <= kMaxCachedPerThread;
    return s;
  }
  s.threads_per_row = 1024;
  for (int64_t threads : {int64_t{32}, int64_t{128}, int64_t{256}, int64_t{512}}) {
    if ((g.columns + threads - 1) / threads <= kTargetPerThread) {
      s.threads_per_row = threads;
      break;
    }
  }
  s.block = s.threads_per_row == kWarpSize ? kWarpSize * kWarpRowsPerBlock : s.threads_per_row;
  s.rows_per_block = s.threads_per_row == kWarpSize ? kWarpRowsPerBlock : 1;
  s.per_thread = (g.columns + s.threads_per_row - 1) / s.threads_per_row;
  s.cached = s.per_thread <= kMaxCachedPerThread;
  return s;
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
        geometry_(row_geometry(input_->type().shape, reduced_axes(reduction_))),
        schedule_(choose_schedule(geometry_)),
        outputs_(plan_outputs(body, geometry_)),
        plan_(plan_reduction(reduction_, geometry_.columns)),
        spec_(spec),
        code_(1),
        e_(code_, spec.params, index_type_for(body, schedule_.block)) {}

  void write() {
    for (const Value* input : body_.inputs) spec_.params.add_input(input);
    for (const Value* output : body_.outputs)
      output_names_.push_back(spec_.params.add_output(output));
    write_row_and_lane();
    if (schedule_.cached) {
      code_.line(fmt::format("{} xs[{}];", cuda_compute_type(input_->type().dtype),
                             std::max<int64_t>(schedule_.per_thread, 1)));
    }
    for (size_t p = 0; p < plan_.passes.size(); ++p) write_pass(plan_.passes[p], p == 0);
    plan_.install_results(e_);
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
  }

 private:
  void write_row_and_lane() {
    const std::string& index = e_.index_type();
    const int64_t threads = schedule_.threads_per_row;
    if (threads == 1) {
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

  // Runs `visit(x_index, column, slot)` for each column this thread takes: `slot` is the
  // register holding that element of X when the schedule caches, else ""; `x_index` is X's
  // flat index of the element and `column` its column, both "" when !needs_index (then the
  // caller reads only `slot`).
  void for_each_column(bool needs_index,
                       const std::function<void(const std::string&, const std::string&,
                                                const std::string&)>& visit) {
    const int64_t threads = schedule_.threads_per_row;
    std::string column;
    int guards = 0;
    if (schedule_.cached) {
      code_.line("#pragma unroll");
      e_.open_block(fmt::format("for (int k = 0; k < {}; ++k)", schedule_.per_thread));
      const bool guarded = schedule_.per_thread * threads != geometry_.columns;
      if (guarded || needs_index) {
        column = threads == 1 ? "k" : e_.index_temp(lane_ + " + k * " + std::to_string(threads));
      }
      if (guarded) {
        e_.open_block(fmt::format("if ({} < {})", column, geometry_.columns));
        ++guards;
      }
    } else {
      column = "col";
      e_.open_block(fmt::format("for ({} col = {}; col < {}; col += {})", e_.index_type(), lane_,
                                geometry_.columns, threads));
    }
    visit(needs_index ? x_index(column) : "", column, schedule_.cached ? "xs[k]" : "");
    for (int g = 0; g < guards; ++g) e_.close_block();
    e_.close_block();
  }

  // X's flat index of this row's element at `column`.
  std::string x_index(const std::string& column) {
    const std::string offset =
        linear_offset(column, geometry_.reduced_sizes, geometry_.reduced_strides);
    if (row_base_ == "0") return offset;
    return offset == "0" ? row_base_ : e_.index_temp(row_base_ + " + " + offset);
  }

  void write_pass(const ReductionPass& pass, bool first) {
    const bool arg = pass.combine == Combine::kArgMax || pass.combine == Combine::kArgMin;
    const std::string& acc = pass.accumulator;
    code_.line(fmt::format("{} {} = {};", pass.type, acc, pass.initial));
    if (arg) code_.line(fmt::format("long long {}_index = -1;", acc));
    const std::string x_type(cuda_compute_type(input_->type().dtype));
    const bool reads_x = first || !schedule_.cached;
    for_each_column(reads_x || arg, [&](const std::string& index, const std::string& column,
                                        const std::string& slot) {
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
      const std::string term = pass.term(converted);
      switch (pass.combine) {
        case Combine::kSum:
          code_.line(acc + " += " + term + ";");
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
    });
    write_combine(pass, arg);
    for (const std::string& line : pass.finish) code_.line(line);
  }

  // Combines the accumulators of the threads sharing a row.
  void write_combine(const ReductionPass& pass, bool arg) {
    const int64_t threads = schedule_.threads_per_row;
    if (threads == 1) return;
    const std::string& acc = pass.accumulator;
    const bool warp = threads == kWarpSize;
    if (arg) {
      const std::string flags =
          fmt::format("{}, {}", pass.combine == Combine::kArgMax, plan_.select_last);
      if (warp) {
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
    if (warp) {
      code_.line(fmt::format("{0} = kiln_warp_reduce({0}, {1});", acc, op));
    } else {
      code_.line(fmt::format("__shared__ {} {}_partials[32];", pass.type, acc));
      code_.line(fmt::format("{0} = kiln_block_reduce({0}, {1}, {0}_partials);", acc, op));
    }
  }

  void write_outputs() {
    if (!outputs_.per_element.empty()) {
      for_each_column(true,
                      [&](const std::string& index, const std::string&, const std::string& slot) {
                        if (!slot.empty()) e_.bind(input_, index, slot);
                        for (size_t k : outputs_.per_element) write_output(k, index);
                      });
    }
    if (outputs_.per_row.empty()) return;
    const bool guarded = schedule_.threads_per_row > 1;
    if (guarded) e_.open_block("if (lane == 0)");
    for (size_t k : outputs_.per_row) write_output(k, "row");
    if (guarded) e_.close_block();
  }

  void write_output(size_t k, const std::string& index) {
    const Value* output = body_.outputs[k];
    code_.line(fmt::format("{}[{}] = {};", output_names_[k], index,
                           store_expression(output->type().dtype, e_.element(output, index))));
  }

  const KernelBody& body_;
  const Node& reduction_;
  const Value* input_;
  RowGeometry geometry_;
  Schedule schedule_;
  OutputPlan outputs_;
  ReductionPlan plan_;
  KernelSpec& spec_;
  CodeWriter code_;
  ElementEmitter e_;
  std::vector<std::string> output_names_;
  std::string lane_;
  std::string row_base_;
};

}  // namespace

KernelSpec emit_reduction_kernel(const KernelBody& body) {
  KernelSpec spec;
  spec.kind = body.kind;
  spec.ops = distinct_ops(body);
  ReductionWriter(body, spec).write();
  return spec;
}

}  // namespace kiln::codegen
