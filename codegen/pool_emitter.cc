// The pooling emitter (see the header).
#include "codegen/pool_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "codegen/grid_stride.h"
#include "codegen/vector_access.h"
#include "ir/error.h"
#include "ir/ops/nn_kernel_util.h"

namespace kiln::codegen {
namespace {

bool is_windowed_pool(const Node& node) {
  return node.op() == "max_pool" || node.op() == "max_pool_with_indices" ||
         node.op() == "average_pool";
}

const Node* pool_of(const KernelBody& body) {
  for (const Node* node : body.nodes) {
    if (is_windowed_pool(*node)) return node;
  }
  return nullptr;
}

// A pool's window geometry, with the attributes' defaults filled in.
struct PoolWindow {
  bool channels_last = false;  // X [N, D..., C], Y [N, D'..., C]
  int64_t channels = 1;
  Shape in_spatial, out_spatial, kernel;
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
};

PoolWindow pool_window(const Node& pool) {
  const Shape& x = pool.operand(0)->type().shape;
  const Shape& y = pool.result(0)->type().shape;
  const size_t rank = x.size() - 2;
  PoolWindow w;
  w.channels_last = pool.op() != "max_pool_with_indices" && pool.int_attr("channels_last") != 0;
  const size_t first = w.channels_last ? 1 : 2;
  w.channels = w.channels_last ? x.back() : x[1];
  w.in_spatial.assign(x.begin() + first, x.begin() + first + rank);
  w.out_spatial.assign(y.begin() + first, y.begin() + first + rank);
  w.kernel = pool.ints_attr("kernel_shape");
  w.strides = nn::ints_attr_or_fill(pool, "strides", rank, 1);
  w.dilations = nn::ints_attr_or_fill(pool, "dilations", rank, 1);
  const std::vector<int64_t> pads = nn::ints_attr_or_fill(pool, "pads", 2 * rank, 0);
  w.pads_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(rank));
  w.pads_end.assign(pads.begin() + static_cast<int64_t>(rank), pads.end());
  return w;
}

// `term` times `factor`, as an expression.
std::string scaled(const std::string& term, int64_t factor) {
  return factor == 1 ? term : fmt::format("{} * {}", term, factor);
}

// The pool's results at one output element: its value, and (max_pool_with_indices) the flat
// input index of the chosen tap.
struct PooledElement {
  std::string value;
  std::string argmax;
};

// A tap of the window: its row-major spatial index in the input image, and its column-major one.
struct Tap {
  std::string within;
  std::string column_major;
};

// Opens a loop per spatial axis over the window of the output pixel at `out_coordinates` and,
// inside the input, calls `visit` for the tap; counts the taps that count in `taps`.
void walk_window(ElementEmitter& e, const PoolWindow& w, bool count_pad,
                 const std::vector<std::string>& out_coordinates, const std::string& taps,
                 const std::function<void(const Tap&)>& visit) {
  const size_t rank = w.kernel.size();
  std::string inside, in_padded, row_major, column_major;
  int64_t row_stride = num_elements(w.in_spatial), column_stride = 1;
  const auto join = [](std::string& list, const std::string& term, const char* separator) {
    list += (list.empty() ? "" : separator) + term;
  };
  for (size_t d = 0; d < rank; ++d) {
    const std::string k = e.fresh_name('k');
    e.open_block(fmt::format("for (int {} = 0; {} < {}; ++{})", k, k, w.kernel[d], k));
    std::string start = scaled(out_coordinates[d], w.strides[d]);
    if (w.pads_begin[d] != 0) start += " - " + std::to_string(w.pads_begin[d]);
    const std::string t = e.index_temp(start + " + " + scaled(k, w.dilations[d]));
    join(inside, fmt::format("{} >= 0 && {} < {}", t, t, w.in_spatial[d]), " && ");
    join(in_padded, fmt::format("{} < {}", t, w.in_spatial[d] + w.pads_end[d]), " && ");
    row_stride /= w.in_spatial[d];
    join(row_major, scaled(t, row_stride), " + ");
    join(column_major, scaled(t, column_stride), " + ");
    column_stride *= w.in_spatial[d];
  }
  if (count_pad) e.code().line(fmt::format("if ({}) ++{};", in_padded, taps));
  e.open_block(fmt::format("if ({})", inside));
  visit(Tap{e.index_temp(row_major), column_major});
  if (!count_pad) e.code().line(fmt::format("++{};", taps));
  e.close_block();
  for (size_t d = 0; d < rank; ++d) e.close_block();
}

bool counts_pad(const Node& pool) {
  return pool.op() == "average_pool" && pool.int_attr("count_include_pad") != 0;
}

// Emits the walk over the window of output element `index`.
PooledElement emit_window(ElementEmitter& e, const Node& pool, const PoolWindow& w,
                          const std::string& index) {
  CodeWriter& code = e.code();
  const Value* x = pool.operand(0);
  const Shape& y_shape = pool.result(0)->type().shape;
  const bool is_max = pool.op() != "average_pool";
  const bool with_indices = pool.results().size() == 2;
  const std::string type(cuda_compute_type(pool.result(0)->type().dtype));
  const int64_t in_size = num_elements(w.in_spatial);

  const std::string at = e.index_temp(index);
  // The window's taps lie at base + (spatial offset) · step: channels-first, in the plane of
  // (image, channel); channels-last, every C elements from the image's channel.
  std::string base;
  const int64_t step = w.channels_last ? w.channels : 1;
  if (w.channels_last) {
    const std::string image =
        e.index_temp(fmt::format("{} / {}", at, num_elements(w.out_spatial) * w.channels));
    base = e.index_temp(fmt::format("{} * {} + {} % {}", image, in_size * w.channels, at, w.channels));
  } else {
    const std::string plane = e.index_temp(fmt::format("{} / {}", at, num_elements(w.out_spatial)));
    base = e.index_temp(fmt::format("{} * {}", plane, in_size));
  }
  std::vector<std::string> out_coordinates;
  for (size_t d = 0; d < w.kernel.size(); ++d) {
    out_coordinates.push_back(e.coordinate(at, y_shape, d + (w.channels_last ? 1 : 2)));
  }

  const std::string acc = e.fresh_name('p');
  const std::string taps = e.fresh_name('n');
  code.line(fmt::format("{} {} = 0;", type, acc));
  code.line(fmt::format("int {} = 0;", taps));
  const std::string best = e.fresh_name('b');
  if (with_indices) code.line(fmt::format("long long {} = -1;", best));

  walk_window(e, w, counts_pad(pool), out_coordinates, taps, [&](const Tap& t) {
    const std::string tap =
        e.element(x, e.index_temp(fmt::format("{} + {}", base, scaled(t.within, step))));
    if (!is_max) {
      code.line(fmt::format("{} += {};", acc, tap));
      return;
    }
    e.open_block(fmt::format("if ({} == 0 || {} > {})", taps, tap, acc));
    code.line(fmt::format("{} = {};", acc, tap));
    if (with_indices) {
      const bool column_order = pool.int_attr("storage_order") != 0;
      code.line(fmt::format("{} = static_cast<long long>({}) + ({});", best, base,
                            column_order ? t.column_major : t.within));
    }
    e.close_block();
  });

  PooledElement result{acc, with_indices ? best : ""};
  if (!is_max) {
    result.value = e.temp(type, fmt::format("{} / static_cast<{}>({})", acc, type, taps));
  }
  return result;
}

// The lanes of a channels-last pool's vector form: W neighbouring channels of one output pixel
// per thread, each tap one 16-byte load of the pooled input (a kernel input, so that it lies in
// memory as it is) and each output one 16-byte store; 1 when the pool does not take it
// (channels-first, a prologue computing the input, channels not a multiple of W).
int channel_lanes(const KernelBody& body, const Node& pool, const PoolWindow& w) {
  const Value* x = pool.operand(0);
  if (!w.channels_last || pool.results().size() != 1 ||
      std::find(body.inputs.begin(), body.inputs.end(), x) == body.inputs.end()) {
    return 1;
  }
  size_t widest = dtype_size(x->type().dtype);
  for (const Value* output : body.outputs) widest = std::max(widest, dtype_size(output->type().dtype));
  const int width = vector_width_for(widest);
  return width >= 2 && w.channels > 0 && w.channels % width == 0 ? width : 1;
}

// The vector form's loop: thread `first` handles vectors j = first, first + stride, ..., each
// the `width` channels from (j % groups) · width of one output pixel.
void emit_channel_vector_loop(ElementEmitter& e, const KernelBody& body, const Node& pool,
                              const PoolWindow& w, int width,
                              const std::vector<std::string>& outputs) {
  CodeWriter& code = e.code();
  const Value* x = pool.operand(0);
  const DType x_dtype = x->type().dtype;
  const std::string type(cuda_compute_type(pool.result(0)->type().dtype));
  const int64_t groups = w.channels / width;
  const int64_t vectors = pool.result(0)->type().num_elements() / width;
  Shape pixels = pool.result(0)->type().shape;  // [N, D'..., C / W]: a vector per element
  pixels.back() = groups;

  declare_grid_stride(e);
  e.open_block(fmt::format("for ({} j = first; j < {}; j += stride)", e.index_type(), vectors));
  std::vector<std::string> out_coordinates;
  for (size_t d = 0; d < w.kernel.size(); ++d) out_coordinates.push_back(e.coordinate("j", pixels, d + 1));
  // The image's vector of these channels; its taps every `groups` vectors from there.
  std::string base;
  if (const std::string image = e.coordinate("j", pixels, 0); image != "0") {
    base = scaled(image, num_elements(w.in_spatial) * groups);
  }
  if (const std::string group = e.coordinate("j", pixels, pixels.size() - 1); group != "0") {
    base += (base.empty() ? "" : " + ") + group;
  }
  base = base.empty() ? "0" : e.index_temp(base);
  const std::string acc = e.fresh_name('p');
  const std::string taps = e.fresh_name('n');
  code.line(fmt::format("{} {}[{}] = {{}};", type, acc, width));
  code.line(fmt::format("int {} = 0;", taps));
  const std::string x_vector = vector_type(x_dtype, width);
  walk_window(e, w, counts_pad(pool), out_coordinates, taps, [&](const Tap& t) {
    const std::string tap = e.fresh_name('a');
    const std::string offset = scaled(t.within, groups);
    code.line(fmt::format("const {} {} = reinterpret_cast<const {}*>({})[{}];", x_vector, tap,
                          x_vector, e.params().read(x),
                          base == "0" ? offset : base + " + " + offset));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int k = 0; k < {}; ++k)", width));
    const std::string lane = e.temp(type, widened(x_dtype, tap + ".v[k]"));
    if (pool.op() == "average_pool") {
      code.line(fmt::format("{}[k] += {};", acc, lane));
    } else {
      code.line(fmt::format("if ({} == 0 || {} > {}[k]) {}[k] = {};", taps, lane, acc, acc, lane));
    }
    e.close_block();
  });

  declare_result_vectors(code, body.outputs, width);
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int k = 0; k < {}; ++k)", width));
  // The body's epilogue ops read their operands (inputs, inlined constants, the pool's own input)
  // at the lane's flat index i, whose coordinates are the vector's with channel group · W + k.
  code.line(fmt::format("const {} i = j * {} + k;", e.index_type(), width));
  std::vector<std::string> coordinates{e.coordinate("j", pixels, 0)};
  coordinates.insert(coordinates.end(), out_coordinates.begin(), out_coordinates.end());
  const std::string group = e.coordinate("j", pixels, pixels.size() - 1);
  coordinates.push_back(group == "0" ? "k" : e.index_temp(fmt::format("{} * {} + k", group, width)));
  e.set_coordinates("i", pool.result(0)->type().shape, std::move(coordinates));
  const std::string pooled = acc + "[k]";
  e.bind(pool.result(0), "i",
         pool.op() == "average_pool"
             ? e.temp(type, fmt::format("{} / static_cast<{}>({})", pooled, type, taps))
             : pooled);
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    code.line(fmt::format("r{}.v[k] = {};", k, e.stored(body.outputs[k], "i")));
  }
  e.close_block();
  store_result_vectors(code, body.outputs, outputs, width, "j");
  e.close_block();
}

std::string channel_vector_definitions(const KernelBody& body, const Node& pool, int width) {
  std::set<DType> dtypes{pool.operand(0)->type().dtype};
  for (const Value* output : body.outputs) dtypes.insert(output->type().dtype);
  return vector_definitions(dtypes, width);
}

// The scalar loop: a thread per output element.
void emit_element_loop(ElementEmitter& e, const KernelBody& body, int64_t count,
                       const std::vector<std::string>& outputs) {
  CodeWriter& code = e.code();
  const std::string& index_type = e.index_type();
  const std::string cast = "static_cast<" + index_type + ">";
  code.line(fmt::format("const {} stride = {}(gridDim.x) * blockDim.x;", index_type, cast));
  e.open_block(
      fmt::format("for ({} i = {}(blockIdx.x) * blockDim.x + threadIdx.x; i < {}; "
                  "i += stride)",
                  index_type, cast, count));
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    const DType dtype = body.outputs[k]->type().dtype;
    code.line(fmt::format("{}[i] = {};", outputs[k],
                          store_expression(dtype, e.element(body.outputs[k], "i"))));
  }
  e.close_block();
}

}  // namespace

bool is_pool_body(const KernelBody& body) { return pool_of(body) != nullptr; }

KernelSpec emit_pool_kernel(const KernelBody& body) {
  const Node* pool = pool_of(body);
  if (!pool) throw InternalError("emit_pool_kernel: no windowed pool in the body");
  const int64_t count = pool->result(0)->type().num_elements();
  for (const Value* output : body.outputs) {
    if (output->type().num_elements() != count) {
      throw UnsupportedError(pool->describe() + ": a pooling kernel writes values of " +
                             std::to_string(count) + " elements, not " + output->name() + " of " +
                             std::to_string(output->type().num_elements()));
    }
  }
  const PoolWindow window = pool_window(*pool);
  const int lanes = channel_lanes(body, *pool, window);
  KernelSpec spec;
  const std::vector<std::string> outputs = begin_grid_stride_frame(spec, body, count / lanes);

  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  // Either result at an index walks the window once and binds both there.
  for (size_t r = 0; r < pool->results().size(); ++r) {
    e.set_override(pool->result(r), [&e, pool, window, r](const std::string& index) {
      const PooledElement pooled = emit_window(e, *pool, window, index);
      e.bind(pool->result(0), index, pooled.value);
      if (!pooled.argmax.empty()) e.bind(pool->result(1), index, pooled.argmax);
      return r == 0 ? pooled.value : pooled.argmax;
    });
  }
  if (lanes > 1) {
    spec.definitions = channel_vector_definitions(body, *pool, lanes);
    emit_channel_vector_loop(e, body, *pool, window, lanes, outputs);
  } else {
    emit_element_loop(e, body, count, outputs);
  }
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
