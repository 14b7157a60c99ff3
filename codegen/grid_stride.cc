// Grid-stride kernels of one output element per thread (see the header).
#include "codegen/grid_stride.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"

namespace kiln::codegen {
namespace {

constexpr uint32_t kBlockSize = 256;
constexpr int64_t kMaxBlocks = 65535;

}  // namespace

std::vector<std::string> begin_grid_stride_spec(KernelSpec& spec, const KernelBody& body,
                                                const Node& anchor, int64_t count,
                                                int64_t output_elements) {
  for (const Value* output : body.outputs) {
    if (output->type().num_elements() != output_elements) {
      throw UnsupportedError(anchor.describe() + ": its kernel writes outputs of " +
                             std::to_string(output_elements) + " elements, " + output->name() +
                             " has " + std::to_string(output->type().num_elements()));
    }
  }
  return begin_grid_stride_frame(spec, body, count);
}

std::vector<std::string> begin_grid_stride_frame(KernelSpec& spec, const KernelBody& body,
                                                 int64_t threads) {
  const int64_t blocks =
      std::clamp<int64_t>((threads + kBlockSize - 1) / kBlockSize, 1, kMaxBlocks);
  return begin_spec(spec, body, kBlockSize, {static_cast<uint32_t>(blocks), 1, 1});
}

std::string grid_stride_index_type(const KernelBody& body) {
  return index_type_for(body, kMaxBlocks * kBlockSize);
}

void declare_grid_stride(ElementEmitter& e) {
  const std::string& index = e.index_type();
  const std::string cast = "static_cast<" + index + ">";
  e.code().line(fmt::format("const {} stride = {}(gridDim.x) * blockDim.x;", index, cast));
  e.code().line(
      fmt::format("const {} first = {}(blockIdx.x) * blockDim.x + threadIdx.x;", index, cast));
}

void open_grid_stride_loop(ElementEmitter& e, int64_t count) {
  declare_grid_stride(e);
  e.open_block(fmt::format("for ({} i = first; i < {}; i += stride)", e.index_type(), count));
}

void close_grid_stride_loop(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                            const std::string& result, const std::vector<std::string>& outputs) {
  e.bind(anchor.result(), "i", result);
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    e.code().line(fmt::format("{}[i] = {};", outputs[k], e.stored(body.outputs[k], "i")));
  }
  e.close_block();
}

}  // namespace kiln::codegen
