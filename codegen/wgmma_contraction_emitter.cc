// The Hopper contraction kernel (see the header).
#include "codegen/wgmma_contraction_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/mma_contraction_emitter.h"
#include "codegen/strided_view.h"
#include "codegen/swapped_contraction_view.h"
#include "codegen/vector_access.h"
#include "codegen/wgmma_tensor_maps.h"
#include "ir/error.h"
#include "ir/integer_math.h"
#include "runtime/kernel_header.h"

namespace kiln::codegen {
namespace {

// The most runs of 8 result columns a thread finishes in an unrolled loop (results_through_shared).
constexpr int kMaxUnrolledRuns = 8;

constexpr int kRowBytes = 128;                 // a swizzled row: 64 16-bit values
constexpr int kAtomBytes = 8 * kRowBytes;      // 8 rows, the swizzle's period
constexpr int kBlockBytes = 64 * kRowBytes;    // 64 rows: a warpgroup's A, or 64 columns of B
constexpr int kVector = 8;                     // 16-bit values a cp.async moves
constexpr int kWarpgroupRows = 64;
constexpr int kWarpgroupThreads = 128;
// Floats a transposed staged row (a swapped tiling's) is longer than the tile: rows 4 floats
// apart in banks, so that a warp's scalar stores (8 rows of a staged column, the 4 columns' pairs
// 2 staged rows apart) hit 32 banks.
constexpr int kSwappedStagedRowPad = 4;
// setmaxnreg's registers a thread for the warp-specialized kernel's producer and consumers:
// 128 · 72 + 256 · 216 of the SM's 65536 (session 9's cp.async producer spilled below 72; the
// TMA producer needs fewer, but a consumer 128 wide holds 128 accumulators and its epilogue).
constexpr int kProducerRegisters = 72;
constexpr int kConsumerRegisters = 216;

// Whether A is a buffer read as it lies in runs of whole 16-byte vectors (else, where the kernel
// takes it, a gathered one: a channels-last convolution's input).
bool reads_a_as_it_lies(const KernelParams& params, const ContractionView& view) {
  return async_vector_width(params, view.a_operand(), view.a_contiguous_run(), 2) == kVector;
}

// A as a flat strided view of a kernel input whose 8-value chunks along k (A lying along k in
// rows of whole chunks) are 16-byte-aligned runs of that input: the innermost digit of the view
// has stride 1 and whole chunks, every other stride and the offset are whole chunks. BERT's
// attention output read as [batch · seq, heads · head] by the output projection, ViT's
// sequence-first transpose of its tokens.
std::optional<FlatStridedView> a_chunk_view(const KernelParams& params,
                                            const ContractionView& view) {
  const Value* a = view.a_operand();
  if (params.is_input(a) || view.a_contiguous_along_m() || view.a_contiguous_run() % kVector != 0) {
    return std::nullopt;
  }
  std::optional<FlatStridedView> flat =
      flat_strided_view(a, [&](const Value* value) { return params.is_input(value); });
  if (!flat || flat->digits.empty() || flat->source->type().dtype != a->type().dtype ||
      flat->offset % kVector != 0) {
    return std::nullopt;
  }
  const FlatStridedView::Digit& last = flat->digits.back();
  if (last.stride != 1 || last.size % kVector != 0) return std::nullopt;
  for (const FlatStridedView::Digit& digit : flat->digits) {
    if (digit.stride % kVector != 0 && &digit != &last) return std::nullopt;
  }
  return flat;
}

// The index in the view's source of A's element at flat index `at` (below A's size, so the
// outermost digit needs no modulo).
std::string source_index(ElementEmitter& e, const FlatStridedView& view, const std::string& at) {
  std::string sum = std::to_string(view.offset);
  for (size_t j = 0; j < view.digits.size(); ++j) {
    const FlatStridedView::Digit& digit = view.digits[j];
    if (digit.stride == 0) continue;
    std::string place = digit.inner == 1 ? at : fmt::format("{} / {}", at, digit.inner);
    if (j > 0) place = fmt::format("({}) % {}", place, digit.size);
    sum += fmt::format(" + ({}) * {}", place, digit.stride);
  }
  return e.index_temp(sum);
}

// Whether A can be gathered in 16-byte chunks: a kernel input lying along k in runs of whole
// chunks at one m (a_gather_run), each wholly inside the operand or in its padding.
bool gathers_a(const KernelParams& params, const ContractionView& view) {
  return params.is_input(view.a_operand()) && !view.a_contiguous_along_m() &&
         view.a_gather_run() % kVector == 0;
}

// Bytes after the stages: one 8-byte mbarrier a stage, which the TMA copies complete on; the
// warp-specialized kernel also one a stage that its consumers free and four that hand the main
// loop and the staged tile from one consumer to the other (after its staged tile).
int64_t barrier_bytes(const WgmmaTiling& tiling) {
  return tiling.persistent_blocks > 0 ? 8 * (2 * int64_t{tiling.stages} + 4)
                                      : 8 * int64_t{tiling.stages};
}

// The warp-specialized kernel's staged tile (0 for the other kernel, which stages its results in
// the stages' bytes).
int64_t staged_tile_bytes(const WgmmaTiling& tiling) {
  return tiling.persistent_blocks > 0 ? wgmma_staged_tile_bytes(tiling.block_n) : 0;
}

// One operand's tile of a K step in shared memory (see the header for the layout).
struct SwizzledTile {
  char name = 'a';
  bool k_major = true;
  int extent = 0;          // rows of A (128) or columns of B (block_n) the tile covers
  int64_t offset = 0;      // bytes from the start of a stage
  std::string parameter;   // the buffer the copies read
  bool gathered = false;   // A read in runs of whole chunks (a_gather_run), zero where padded
  // A computed by data movement alone from the buffer `parameter` (a_chunk_view): copies read
  // the buffer's elements that A's elements are.
  std::optional<FlatStridedView> view;
  // Copied by TMA (one thread's cp.async.bulk.tensor per box) through kernel parameter
  // g_map{map_index}, rather than by every thread's cp.async.
  std::optional<KernelTensorMap> map;
  int map_index = 0;
  // For a view's map (view_tensor_map), each dimension's coordinate; empty for a plain one.
  std::vector<ViewMapCoordinate> view_coordinates;

  int rows() const { return k_major ? extent : kWgmmaTileK; }
  int chunks_per_row() const { return k_major ? kRowBytes / 16 : extent / kVector; }
  int64_t bytes() const { return int64_t{extent} * kWgmmaTileK * 2; }
  // Bytes a k16 step moves the descriptor's start: 16 values along a row, or 16 rows.
  int k16_advance() const { return k_major ? 32 : 16 * kRowBytes; }
  // The descriptor's leading byte offset: unused by K-major 128-byte swizzle (1 by convention,
  // in 16-byte units: 16 bytes); the 64-column blocks' distance for MN-major.
  int leading_bytes() const { return k_major ? 16 : kBlockBytes; }
};

// The wgmma instruction for one k16 step of a warpgroup, as a function of the kernel's own
// (its shape, types and transposes are the kernel's): d += A · B with the descriptors `a`, `b`.
std::string wgmma_function(int block_n, DType dtype, bool a_k_major, bool b_k_major) {
  const int registers = block_n / 2;
  std::string outputs, list;
  for (int i = 0; i < registers; ++i) {
    list += fmt::format("{}%{}", i ? ", " : "", i);
    outputs += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  const char* type = dtype == DType::kBF16 ? "bf16" : "f16";
  return fmt::format(
      "__device__ __forceinline__ void wgmma_m64n{0}k16(float* d, unsigned long long a, "
      "unsigned long long b) {{\n"
      "  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{1}, 0;\\n\"\n"
      "               \"wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{2}.{2} {{{3}}}, %{4}, %{5}, "
      "p, 1, 1, {6}, {7};\\n}}\\n\"\n"
      "               : {8}\n"
      "               : \"l\"(a), \"l\"(b), \"r\"(1));\n"
      "}}\n",
      block_n, registers + 2, type, list, registers, registers + 1, a_k_major ? 0 : 1,
      b_k_major ? 0 : 1, outputs);
}

// Who finishes a tile through the staged f32 tile (results_through_shared), and where it lies.
struct Staging {
  std::string thread;        // the thread's index among them
  int threads = 0;           // how many
  std::string tile;          // the tile's shared memory (a generic pointer)
  std::string barrier;       // the statement waiting for all of them (their stores to the tile)
  bool both_halves = false;  // a thread holds both 64-row halves (else its warpgroup's)
};

class WgmmaKernelWriter {
 public:
  // `result_view` is the view whose results the staged epilogue finishes: `view`, or where the
  // tiling is swapped the base view that `view` swaps.
  WgmmaKernelWriter(const KernelBody& body, const Node& anchor, ContractionView& view,
                    ContractionView& result_view, const WgmmaTiling& tiling, bool tma,
                    KernelSpec& spec, ElementEmitter& e)
      : body_(body),
        anchor_(anchor),
        view_(view),
        result_view_(result_view),
        tiling_(tiling),
        spec_(spec),
        e_(e),
        code_(e.code()),
        index_(e.index_type()) {
    a_.name = 'a';
    a_.k_major = !view.a_contiguous_along_m();
    a_.extent = tiling_.block_m;
    a_.view = a_chunk_view(e.params(), view);
    a_.parameter = e.params().read(a_.view ? a_.view->source : view.a_operand());
    a_.gathered = !a_.view && !reads_a_as_it_lies(e.params(), view);
    b_.name = 'b';
    b_.k_major = view.b_contiguous_along_k();
    b_.extent = tiling.block_n;
    b_.offset = a_.bytes();
    b_.parameter = e.params().read(view.b_operand());
    stage_bytes_ = a_.bytes() + b_.bytes();
    if (tma) {
      if (a_.view) {
        if (auto viewed = view_tensor_map(view, tiling, *a_.view)) {
          a_.map = viewed->first;
          a_.view_coordinates = viewed->second;
        }
      } else if (!a_.gathered) {
        a_.map = operand_tensor_map(view, tiling, true, a_.k_major, a_.extent, view.a_strides());
      }
      b_.map = operand_tensor_map(view, tiling, false, b_.k_major, b_.extent, view.b_strides());
      for (SwizzledTile* tile : {&a_, &b_}) {
        if (!tile->map) continue;
        tile->map_index = static_cast<int>(spec.tensor_maps.size());
        spec.tensor_maps.push_back({tile->parameter, *tile->map});
      }
    }
  }

  void write(const std::vector<std::string>& outputs) {
    const DType dtype = anchor_.operand(0)->type().dtype;
    spec_.definitions = wgmma_function(tiling_.block_n, dtype, a_.k_major, b_.k_major);
    // The swizzle repeats every 1024 bytes of shared address: the stages start 1024-aligned.
    spec_.shared_bytes =
        static_cast<uint32_t>(tiling_.stages * stage_bytes_ + staged_tile_bytes(tiling_) +
                              kAtomBytes + (tma() ? barrier_bytes(tiling_) : 0));
    if (tiling_.cluster) spec_.cluster_blocks = static_cast<uint32_t>(tiling_.splits);
    if (persistent()) {
      write_warp_specialized(outputs);
    } else {
      declarations();
      main_loop();
      results(outputs);
    }
    const char* a_source = a_.view       ? "copied through a strided view"
                           : a_.gathered ? "gathered (channels-last conv)"
                                         : "read as it lies";
    const char* by_tma = a_.map && b_.map ? ", A and B by TMA"
                         : a_.map         ? ", A by TMA"
                         : b_.map         ? ", B by TMA"
                                          : "";
    spec_.tactic = fmt::format("wgmma {}x{}x{} tile, {} stages, A {}-major {}, B {}-major{}{}",
                               tiling_.block_m, tiling_.block_n, kWgmmaTileK, tiling_.stages,
                               a_.k_major ? "K" : "MN", a_source, b_.k_major ? "K" : "MN", by_tma,
                               tiling_.splits > 1
                                   ? fmt::format(", split-K into {} slices{}", tiling_.splits,
                                                 tiling_.cluster ? " of one cluster, added through "
                                                                   "distributed shared memory"
                                                                 : "")
                                   : "");
    if (tiling_.swapped) {
      spec_.tactic += fmt::format(", swapped (rows are the {} columns, sums staged transposed)",
                                  result_view_.cols);
    }
    if (persistent()) {
      spec_.tactic += fmt::format(
          ", warp-specialized (a TMA producer, two consumers of {}x{} tiles in turn{}), "
          "persistent over {} blocks",
          tiling_.block_m, tiling_.block_n, staged_persistent() ? ", epilogues staged in turn" : "",
          tiling_.persistent_blocks);
    }
    spec_.flops = 2 * view_.batch * view_.rows * view_.cols * view_.depth;
  }

 private:
  bool persistent() const { return tiling_.persistent_blocks > 0; }

  // g_smem (the stages' shared address, 1024-aligned) and g_shared (its generic pointer).
  void shared_stages() {
    code_.line("extern __shared__ __align__(1024) unsigned char g_shared_bytes[];");
    code_.line(
        fmt::format("const unsigned g_smem = (static_cast<unsigned>(__cvta_generic_to_shared("
                    "g_shared_bytes)) + {0}) / {1} * {1};",
                    kAtomBytes - 1, kAtomBytes));
    code_.line(
        "unsigned char* const g_shared = g_shared_bytes + (g_smem - "
        "static_cast<unsigned>(__cvta_generic_to_shared(g_shared_bytes)));");
  }

  void declarations() {
    shared_stages();
    // Split-K: blockIdx.z = slice · batch + b (in a cluster b · slices + slice, a cluster's
    // blocks being consecutive along z), the slice's depth [g_kbegin, g_kend).
    const bool cluster = tiling_.cluster;
    code_.line(fmt::format("const {} g_b = blockIdx.z {} {};", index_, cluster ? "/" : "%",
                           cluster ? tiling_.splits : view_.batch));
    code_.line(fmt::format("const {} g_m0 = static_cast<{}>(blockIdx.y) * {};", index_, index_,
                           tiling_.block_m));
    code_.line(fmt::format("const {} g_n0 = static_cast<{}>(blockIdx.x) * {};", index_, index_,
                           tiling_.block_n));
    code_.line(fmt::format("const {} g_kbegin = static_cast<{}>(blockIdx.z {} {}) * {};", index_,
                           index_, cluster ? "%" : "/", cluster ? tiling_.splits : view_.batch,
                           tiling_.split_depth));
    code_.line(fmt::format("const {} g_kend = min(static_cast<{}>({}), g_kbegin + {});", index_,
                           index_, view_.depth, tiling_.split_depth));
    code_.line(fmt::format("const int g_warpgroup = threadIdx.x / {}, g_warp = threadIdx.x / 32 % 4, "
                           "g_lane = threadIdx.x % 32;",
                           kWarpgroupRows * 2));
    code_.line(fmt::format("float g_acc[{}];", tiling_.block_n / 2));
    code_.line("#pragma unroll");
    code_.line(fmt::format("for (int g_i = 0; g_i < {}; ++g_i) g_acc[g_i] = 0.0f;",
                           tiling_.block_n / 2));
  }

  bool tma() const { return a_.map || b_.map; }

  // A comment naming each operand TMA copies, its parameter and its map.
  void name_tma_operands() {
    for (const SwizzledTile* tile : {&a_, &b_}) {
      if (!tile->map) continue;
      const std::string map = format_tensor_maps({*tile->map});
      code_.line(fmt::format("// {} by TMA through g_map{} of {}: {}",
                             tile->name == 'a' ? 'A' : 'B', tile->map_index, tile->parameter,
                             map.substr(map.find(' ') + 1)));
    }
  }
  bool copies() const { return !a_.map || !b_.map; }  // cp.async for at least one operand

  void main_loop() {
    const int stages = tiling_.stages;
    const std::string steps =
        fmt::format("const int g_steps = static_cast<int>((g_kend - g_kbegin + {}) / {});",
                    kWgmmaTileK - 1, kWgmmaTileK);
    if (tma()) {
      name_tma_operands();
      // One mbarrier a stage after the stages, completed by its TMA copies' bytes.
      code_.line(
          fmt::format("const unsigned g_full = g_smem + {};", tiling_.stages * stage_bytes_));
      e_.open_block("if (threadIdx.x == 0)");
      code_.line(fmt::format(
          "for (int g_s = 0; g_s < {}; ++g_s) kiln_mbarrier_init(g_full + g_s * 8, 1);", stages));
      code_.line("kiln_fence_mbarrier_init();");
      e_.close_block();
      code_.line("__syncthreads();");
      code_.line(steps);
    }
    hoist_gathered_rows();
    for (int ahead = 0; ahead < stages - 2; ++ahead) {
      load_step(ahead == 0 ? "g_kbegin" : fmt::format("g_kbegin + {}", ahead * kWgmmaTileK),
                std::to_string(ahead), std::to_string(ahead));
    }
    if (!tma()) code_.line(steps);
    e_.open_block("for (int g_step = 0; g_step < g_steps; ++g_step)");
    if (copies()) code_.line(fmt::format("kiln_cp_async_wait<{}>();", stages - 3));
    if (tma()) {
      code_.line(fmt::format("kiln_mbarrier_wait(g_full + g_step % {} * 8, g_step / {} & 1);",
                             stages, stages));
    }
    if (copies()) code_.line("kiln_fence_proxy_async();");
    code_.line("__syncthreads();");
    code_.line(fmt::format("const {} g_kahead = g_kbegin + static_cast<{}>(g_step + {}) * {};",
                           index_, index_, stages - 2, kWgmmaTileK));
    load_step("g_kahead", fmt::format("(g_step + {}) % {}", stages - 2, stages),
              fmt::format("g_step + {}", stages - 2));
    code_.line(fmt::format("const unsigned g_stage = g_smem + g_step % {} * {};", stages,
                           stage_bytes_));
    code_.line(fmt::format("const unsigned g_a_tile = g_stage + {} + g_warpgroup * {};",
                           a_.offset, kBlockBytes));
    code_.line(fmt::format("const unsigned g_b_tile = g_stage + {};", b_.offset));
    code_.line("kiln_wgmma_fence();");
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", kWgmmaTileK / 16));
    code_.line(fmt::format(
        "wgmma_m64n{}k16(g_acc, kiln_wgmma_descriptor(g_a_tile + g_kk * {}, {}, {}), "
        "kiln_wgmma_descriptor(g_b_tile + g_kk * {}, {}, {}));",
        tiling_.block_n, a_.k16_advance(), a_.leading_bytes(), kAtomBytes, b_.k16_advance(),
        b_.leading_bytes(), kAtomBytes));
    e_.close_block();
    code_.line("kiln_wgmma_commit();");
    code_.line("kiln_wgmma_wait<1>();");
    e_.close_block();
    code_.line("kiln_wgmma_wait<0>();");
    // The copies issued past the last step (zero-fills) must land before the block ends. TMA
    // copies are issued only for steps the loop waits for.
    if (copies()) code_.line("kiln_cp_async_wait<0>();");
  }

  // The warp-specialized persistent kernel (see the header): warpgroup 0's thread 0 copies by
  // TMA; warpgroups 1 and 2 multiply and finish the block's tiles blockIdx.x + i · gridDim.x,
  // consumer c those of i mod 2 = c. The stages form one ring over the block's tiles in order:
  // step s of the block's i-th tile is position p = i · steps + s, in stage p mod S, its phase
  // (p / S) mod 2. full[stage] completes when its copies' bytes have landed; empty[stage] when
  // the consuming warpgroup's 128 threads have seen its wgmmas finish. A wait names a phase by
  // its parity only, so no consumer may run two phases ahead: one starts tile i only after the
  // other has waited for tile i - 1's last stage (handoff[c] completes when consumer 1 - c has),
  // so the consumers' main loops take turns, each one's epilogue beside the other's multiplies.
  // The staged tile is taken in the same turns: a consumer stages tile i once the other has
  // finished reading tile i - 1's (staged[c]).
  void write_warp_specialized(const std::vector<std::string>& outputs) {
    const int stages = tiling_.stages;
    const int64_t col_tiles = ceil_div(view_.cols, tiling_.block_n);
    const int64_t row_tiles = ceil_div(view_.rows, tiling_.block_m);
    const int64_t tiles = col_tiles * row_tiles * view_.batch;
    const int64_t staged_tile = stages * stage_bytes_;
    spec_.min_blocks = 1;  // registers capped at a block's share, as setmaxnreg needs
    shared_stages();
    name_tma_operands();
    code_.line(fmt::format(
        "const unsigned g_full = g_smem + {}, g_empty = g_full + {}, g_handoff = g_empty + {}, "
        "g_staged = g_handoff + 16;",
        staged_tile + staged_tile_bytes(tiling_), 8 * stages, 8 * stages));
    e_.open_block("if (threadIdx.x == 0)");
    e_.open_block(fmt::format("for (int g_s = 0; g_s < {}; ++g_s)", stages));
    code_.line("kiln_mbarrier_init(g_full + g_s * 8, 1);");
    code_.line(fmt::format("kiln_mbarrier_init(g_empty + g_s * 8, {});", kWarpgroupThreads));
    e_.close_block();
    e_.open_block("for (int g_c = 0; g_c < 2; ++g_c)");
    code_.line(fmt::format("kiln_mbarrier_init(g_handoff + g_c * 8, {});", kWarpgroupThreads));
    code_.line(fmt::format("kiln_mbarrier_init(g_staged + g_c * 8, {});", kWarpgroupThreads));
    e_.close_block();
    code_.line("kiln_fence_mbarrier_init();");
    e_.close_block();
    code_.line("__syncthreads();");
    code_.line(fmt::format("const int g_steps = {};", ceil_div(view_.depth, kWgmmaTileK)));
    const auto tile_origin = [&] {
      code_.line(fmt::format("const {} g_b = g_tile_index / {};", index_, col_tiles * row_tiles));
      code_.line(fmt::format("const {} g_m0 = static_cast<{}>(g_tile_index / {} % {}) * {};",
                             index_, index_, col_tiles, row_tiles, tiling_.block_m));
      code_.line(fmt::format("const {} g_n0 = static_cast<{}>(g_tile_index % {}) * {};", index_,
                             index_, col_tiles, tiling_.block_n));
    };

    // The producer: one thread issues every stage's boxes once the stage is free.
    e_.open_block(fmt::format("if (threadIdx.x < {})", kWarpgroupThreads));
    code_.line(fmt::format("kiln_setmaxnreg_dec<{}>();", kProducerRegisters));
    e_.open_block("if (threadIdx.x == 0)");
    code_.line("int g_position = 0;");
    e_.open_block(fmt::format(
        "for (int g_tile_index = blockIdx.x; g_tile_index < {}; g_tile_index += gridDim.x)",
        tiles));
    tile_origin();
    e_.open_block("for (int g_step = 0; g_step < g_steps; ++g_step, ++g_position)");
    code_.line(fmt::format("const int g_slot = g_position % {};", stages));
    code_.line(fmt::format("kiln_mbarrier_wait(g_empty + g_slot * 8, (g_position / {} & 1) ^ 1);",
                           stages));
    code_.line(fmt::format(
        "const unsigned g_bar = g_full + g_slot * 8, g_dst = g_smem + g_slot * {};", stage_bytes_));
    code_.line(fmt::format("kiln_mbarrier_expect_tx(g_bar, {});", stage_bytes_));
    const std::string k0 = fmt::format("g_step * {}", kWgmmaTileK);
    copy_tile(a_, k0, "g_m0");
    copy_tile(b_, k0, "g_n0");
    e_.close_block();
    e_.close_block();
    e_.close_block();

    // The consumers.
    e_.reopen_block("else");
    code_.line(fmt::format("kiln_setmaxnreg_inc<{}>();", kConsumerRegisters));
    code_.line(
        fmt::format("const int g_consumer = threadIdx.x / {} - 1, g_warp = threadIdx.x / 32 "
                    "% 4, g_lane = threadIdx.x % 32;",
                    kWarpgroupThreads));
    const int half = tiling_.block_n / 2;  // a 64-row half's accumulators a thread
    code_.line(fmt::format("float g_acc[{}];", 2 * half));
    e_.open_block("for (int g_round = g_consumer;; g_round += 2)");
    code_.line("const int g_tile_index = blockIdx.x + g_round * gridDim.x;");
    code_.line(fmt::format("if (g_tile_index >= {}) break;", tiles));
    tile_origin();
    // Tile g_round - 1's last stage waited for: handoff's ((g_round - 1) / 2)-th phase.
    code_.line(
        "if (g_round > 0) kiln_mbarrier_wait(g_handoff + g_consumer * 8, (g_round - 1) / 2 & 1);");
    code_.line("#pragma unroll");
    code_.line(fmt::format("for (int g_i = 0; g_i < {}; ++g_i) g_acc[g_i] = 0.0f;", 2 * half));
    e_.open_block("for (int g_step = 0; g_step < g_steps; ++g_step)");
    code_.line("const int g_position = g_round * g_steps + g_step;");
    code_.line(fmt::format("kiln_mbarrier_wait(g_full + g_position % {} * 8, g_position / {} & 1);",
                           stages, stages));
    code_.line(fmt::format("const unsigned g_stage = g_smem + g_position % {} * {};", stages,
                           stage_bytes_));
    code_.line("kiln_wgmma_fence();");
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", kWgmmaTileK / 16));
    const std::string b = fmt::format("kiln_wgmma_descriptor(g_stage + {} + g_kk * {}, {}, {})",
                                      b_.offset, b_.k16_advance(), b_.leading_bytes(), kAtomBytes);
    for (int h = 0; h < 2; ++h) {
      code_.line(fmt::format(
          "wgmma_m64n{}k16(g_acc + {}, kiln_wgmma_descriptor(g_stage + {} + g_kk * {}, {}, {}), "
          "{});",
          tiling_.block_n, h * half, a_.offset + h * kBlockBytes, a_.k16_advance(),
          a_.leading_bytes(), kAtomBytes, b));
    }
    e_.close_block();
    code_.line("kiln_wgmma_commit();");
    // The previous step's wgmmas have finished: its stage is free.
    code_.line("kiln_wgmma_wait<1>();");
    code_.line(fmt::format(
        "if (g_step > 0) kiln_mbarrier_arrive(g_empty + (g_position - 1) % {} * 8);", stages));
    e_.close_block();
    code_.line("kiln_mbarrier_arrive(g_handoff + (1 - g_consumer) * 8);");
    code_.line("kiln_wgmma_wait<0>();");
    code_.line(fmt::format(
        "kiln_mbarrier_arrive(g_empty + (g_round * g_steps + g_steps - 1) % {} * 8);", stages));
    if (staged_persistent()) {
      // Tile g_round - 1's staged tile read: staged's ((g_round - 1) / 2)-th phase.
      code_.line(
          "if (g_round > 0) kiln_mbarrier_wait(g_staged + g_consumer * 8, (g_round - 1) / 2 & 1);");
      results_through_shared(
          outputs, {.thread = fmt::format("threadIdx.x % {}", kWarpgroupThreads),
                    .threads = kWarpgroupThreads,
                    .tile = fmt::format("g_shared + {}", staged_tile),
                    .barrier = fmt::format("kiln_bar_sync(1 + g_consumer, {});", kWarpgroupThreads),
                    .both_halves = true});
      code_.line("kiln_mbarrier_arrive(g_staged + (1 - g_consumer) * 8);");
    } else {
      code_.line("#pragma unroll");
      e_.open_block("for (int g_h = 0; g_h < 2; ++g_h)");
      fragment_results(outputs,
                       fmt::format("g_m0 + g_h * {} + g_warp * 16 + g_lane / 4", kWarpgroupRows),
                       fmt::format("g_acc[g_h * {} + g_j * 4 + g_r", half));
      e_.close_block();
    }
    e_.close_block();
    e_.close_block();
  }

  // Both tiles of step `step` (at depth `k0`) into stage `stage`: the cp.async ones as one
  // group, the TMA ones by thread 0 on the stage's mbarrier, for steps before the last only.
  void load_step(const std::string& k0, const std::string& stage, const std::string& step) {
    if (!a_.map) {
      load_tile(
          a_, k0, stage, "g_m0", view_.rows,
          [&](const std::string& m, const std::string& k) {
            const std::string at = view_.a_index(e_, "g_b", m, k);
            return a_.view ? source_index(e_, *a_.view, at) : at;
          },
          [&](const std::string& m, const std::string& k) {
            return view_.a_padding(e_, "g_b", m, k);
          });
    }
    if (!b_.map) {
      load_tile(
          b_, k0, stage, "g_n0", view_.cols,
          [&](const std::string& n, const std::string& k) {
            return view_.b_index(e_, "g_b", k, n);
          },
          [](const std::string&, const std::string&) { return std::string(); });
    }
    if (copies()) code_.line("kiln_cp_async_commit();");
    if (!tma()) return;
    e_.open_block(fmt::format("if (threadIdx.x == 0 && {} < g_steps)", step));
    code_.line(fmt::format("const unsigned g_bar = g_full + ({}) * 8, g_dst = g_smem + ({}) * {};",
                           stage, stage, stage_bytes_));
    int64_t bytes = 0;
    for (const SwizzledTile* tile : {&a_, &b_}) {
      if (tile->map) bytes += tile->bytes();
    }
    code_.line(fmt::format("kiln_mbarrier_expect_tx(g_bar, {});", bytes));
    for (const SwizzledTile* tile : {&a_, &b_}) {
      if (tile->map) copy_tile(*tile, k0, tile->name == 'a' ? "g_m0" : "g_n0");
    }
    e_.close_block();
  }

  // A TMA tile: K-major one box at (k0, other0), MN-major a box at (other0 + 64 j, k0) for each
  // 64 rows j, 8 KiB apart; the batch index third where the map has three dimensions.
  void copy_tile(const SwizzledTile& tile, const std::string& k0, const std::string& other0) {
    if (!tile.view_coordinates.empty()) {
      std::string coordinates;
      for (const ViewMapCoordinate& c : tile.view_coordinates) {
        std::string at = c.along_k ? k0 : other0;
        if (c.divisor != 1) at = fmt::format("({}) / {}", at, c.divisor);
        if (c.size != 0) at = fmt::format("({}) % {}", at, c.size);
        coordinates += fmt::format(", static_cast<int>({})", at);
      }
      code_.line(fmt::format("kiln_tma_load_{}d(g_dst + {}, &g_map{}{}, g_bar);",
                             tile.view_coordinates.size(), tile.offset, tile.map_index,
                             coordinates));
      return;
    }
    const bool batched = tile.map->dims.size() == 3;
    const int boxes = tile.k_major ? 1 : tile.extent / 64;
    for (int j = 0; j < boxes; ++j) {
      const std::string other = j == 0 ? fmt::format("static_cast<int>({})", other0)
                                       : fmt::format("static_cast<int>({}) + {}", other0, 64 * j);
      const std::string k = fmt::format("static_cast<int>({})", k0);
      code_.line(fmt::format("kiln_tma_load_{}d(g_dst + {}, &g_map{}, {}, {}{}, g_bar);",
                             batched ? 3 : 2, tile.offset + j * kBlockBytes, tile.map_index,
                             tile.k_major ? k : other, tile.k_major ? other : k,
                             batched ? ", static_cast<int>(g_b)" : ""));
    }
  }

  // A gathered K-major A tile (a channels-last conv's input) whose rows' chunks divide the
  // threads: a thread copies the same chunk of rows r, r + T/C, ... at every step, so its rows
  // (g_o<p>), their shared-memory offsets (g_at<p>) and the row terms of A's index (the image
  // and output pixel: divisions) are computed once before the k loop, not at every step (SASS
  // of ResNet-50's 3x3 convs: about 100 of a step's 225 instructions a thread re-derived them).
  void hoist_gathered_rows() {
    const int per_row = a_.chunks_per_row();
    if (a_.map || !a_.gathered || !a_.k_major || tiling_.threads() % per_row != 0) return;
    hoisted_rows_ = a_.rows() * per_row / tiling_.threads();
    code_.line(fmt::format("const int g_chunk = threadIdx.x % {};", per_row));
    for (int p = 0; p < hoisted_rows_; ++p) {
      code_.line(fmt::format("const int g_row{0} = threadIdx.x / {1} + {2};", p, per_row,
                             p * tiling_.threads() / per_row));
      code_.line(fmt::format("const {0} g_o{1} = g_m0 + g_row{1};", index_, p));
      code_.line(fmt::format(
          "const int g_at{0} = g_row{0} * {1} + ((g_chunk ^ (g_row{0} & 7)) << 4);", p, kRowBytes));
      view_.a_row_terms(e_, fmt::format("g_o{}", p));
    }
  }

  // Chunk q = threadIdx.x + p · threads of the tile (row q / C, chunk q mod C of C a row), so
  // consecutive threads copy consecutive 16 bytes of the operand. A gathered tile's chunks are
  // copied where `padding` (of the chunk's first element) holds and zero-filled elsewhere, their
  // index clamped to 0 there (an index into the padding may lie outside the buffer).
  template <typename Index, typename Padding>
  void load_tile(const SwizzledTile& tile, const std::string& k0, const std::string& stage,
                 const std::string& other0, int64_t other_size, const Index& index,
                 const Padding& padding) {
    const int chunks = tile.rows() * tile.chunks_per_row();
    if (chunks % tiling_.threads() != 0) {
      throw InternalError(fmt::format("wgmma contraction: {} chunks of tile {} over {} threads",
                                      chunks, tile.name, tiling_.threads()));
    }
    if (&tile == &a_ && hoisted_rows_ > 0) {
      load_hoisted_rows(k0, stage, other_size, index, padding);
      return;
    }
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_p = 0; g_p < {}; ++g_p)", chunks / tiling_.threads()));
    code_.line(fmt::format("const int g_q = threadIdx.x + g_p * {};", tiling_.threads()));
    code_.line(fmt::format("const int g_row = g_q / {}, g_chunk = g_q % {};",
                           tile.chunks_per_row(), tile.chunks_per_row()));
    if (tile.k_major) {
      code_.line(fmt::format("const {} g_k = {} + g_chunk * {}, g_o = {} + g_row;", index_, k0,
                             kVector, other0));
      code_.line(fmt::format("const int g_at = g_row * {} + ((g_chunk ^ (g_row & 7)) << 4);",
                             kRowBytes));
    } else {
      code_.line(fmt::format("const {} g_k = {} + g_row, g_o = {} + g_chunk * {};", index_, k0,
                             other0, kVector));
      code_.line(
          fmt::format("const int g_at = (g_chunk / 8 * {} + g_row) * {} + ((g_chunk % 8 ^ (g_row "
                      "& 7)) << 4);",
                      kWgmmaTileK, kRowBytes));
    }
    std::string valid = fmt::format("g_k < g_kend && g_o < {}", other_size);
    std::string at = index("g_o", "g_k");
    if (tile.gathered) {
      const std::string inside = padding("g_o", "g_k");
      if (!inside.empty()) valid = fmt::format("{} && {}", valid, inside);
      valid = e_.temp("bool", valid);
      at = fmt::format("({} ? {} : 0)", valid, at);
    }
    code_.line(fmt::format("kiln_cp_async_16(g_shared + ({}) * {} + {} + g_at, {} + {}, {});",
                           stage, stage_bytes_, tile.offset, tile.parameter, at, valid));
    e_.close_block();
  }

  // load_tile of A with hoisted_gathered_rows(): the step's k of the thread's chunk and the
  // index terms of k alone once (shared temps), then each row's copy with its hoisted terms.
  template <typename Index, typename Padding>
  void load_hoisted_rows(const std::string& k0, const std::string& stage, int64_t other_size,
                         const Index& index, const Padding& padding) {
    e_.open_block("");
    code_.line(fmt::format("const {} g_k = {} + g_chunk * {};", index_, k0, kVector));
    for (int p = 0; p < hoisted_rows_; ++p) {
      const std::string row = fmt::format("g_o{}", p);
      std::string valid = fmt::format("g_k < g_kend && {} < {}", row, other_size);
      const std::string inside = padding(row, "g_k");
      if (!inside.empty()) valid = fmt::format("{} && {}", valid, inside);
      valid = e_.temp("bool", valid);
      code_.line(fmt::format(
          "kiln_cp_async_16(g_shared + ({}) * {} + {} + g_at{}, {} + ({} ? {} : "
          "0), {});",
          stage, stage_bytes_, a_.offset, p, a_.parameter, valid, index(row, "g_k"), valid));
    }
    e_.close_block();
  }

  // Register 4j + r: row g_m0 + 64 · warpgroup + 16 · warp + lane / 4 + 8 · (r / 2), column
  // g_n0 + 8j + 2 · (lane mod 4) + r mod 2.
  void results(const std::vector<std::string>& outputs) {
    if (tiling_.cluster) return cluster_results(outputs);
    if (stages_results() &&
        int64_t{staged_rows()} * staged_row() * 4 <= tiling_.stages * stage_bytes_) {
      code_.line("__syncthreads();");
      return results_through_shared(outputs, {.thread = "threadIdx.x",
                                              .threads = tiling_.threads(),
                                              .tile = "g_shared",
                                              .barrier = "__syncthreads();",
                                              .both_halves = false});
    }
    fragment_results(
        outputs, fmt::format("g_m0 + g_warpgroup * {} + g_warp * 16 + g_lane / 4", kWarpgroupRows),
        "g_acc[g_j * 4 + g_r");
  }

  // Split-K in a cluster (WgmmaTiling::cluster): each slice stages its sums as the unsplit kernel
  // does; once every slice of the tile has, the block of cluster rank r adds rows [r · share,
  // (r + 1) · share) of every slice's staged tile, slice 0 first, into its own (reading each
  // through distributed shared memory), and once every block has read what it needs, finishes
  // those rows. The second cluster barrier also keeps each block's shared memory alive until the
  // others have read it.
  void cluster_results(const std::vector<std::string>& outputs) {
    const Staging staging{.thread = "threadIdx.x",
                          .threads = tiling_.threads(),
                          .tile = "g_shared",
                          .barrier = "__syncthreads();",
                          .both_halves = false};
    const int share = static_cast<int>(ceil_div(tiling_.block_m, tiling_.splits));
    const int chunks_per_row = tiling_.block_n / 4;
    code_.line("__syncthreads();");
    stage_accumulators(staging);
    code_.line("kiln_cluster_sync();");
    code_.line(
        fmt::format("const int g_first_row = static_cast<int>(kiln_cluster_rank()) * {};", share));
    e_.open_block(fmt::format("for (int g_c = threadIdx.x; g_c < {}; g_c += {})",
                              share * chunks_per_row, tiling_.threads()));
    code_.line(fmt::format("const int g_row = g_first_row + g_c / {};", chunks_per_row));
    const bool ragged = tiling_.block_m % tiling_.splits != 0;
    if (ragged) e_.open_block(fmt::format("if (g_row < {})", tiling_.block_m));
    code_.line(
        fmt::format("const int g_at = g_row * {} + g_c % {} * 4;", staged_row(), chunks_per_row));
    code_.line("const unsigned g_address = g_smem + g_at * 4;");
    code_.line(
        "float4 g_sum = kiln_cluster_load_float4(kiln_cluster_shared_address(g_address, 0));");
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (unsigned g_s = 1; g_s < {}; ++g_s)", tiling_.splits));
    code_.line(
        "const float4 g_slice = kiln_cluster_load_float4(kiln_cluster_shared_address(g_address, "
        "g_s));");
    code_.line("g_sum.x += g_slice.x;");
    code_.line("g_sum.y += g_slice.y;");
    code_.line("g_sum.z += g_slice.z;");
    code_.line("g_sum.w += g_slice.w;");
    e_.close_block();
    code_.line("*reinterpret_cast<float4*>(&g_tile[g_at]) = g_sum;");
    if (ragged) e_.close_block();
    e_.close_block();
    code_.line("kiln_cluster_sync();");
    finish_staged_runs(outputs, staging, "g_first_row", share);
  }

  // The accumulators as they lie in the registers: each through emit_contraction_result (pairs
  // through emit_paired_results, split-K slices to the workspace). `row` is the row of a
  // thread's registers 0 and 1, `accumulator` the accumulator array's name and index up to
  // "g_j * 4 + g_r" (closed here, with " + 1" for a pair's second).
  void fragment_results(const std::vector<std::string>& outputs, const std::string& row,
                        const std::string& accumulator) {
    const bool split = tiling_.splits > 1;
    const bool paired = !split && stores_result_runs(body_, anchor_, view_, 2);
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", tiling_.block_n / 8));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_r = 0; g_r < 4; g_r += {})", paired ? 2 : 1));
    code_.line(fmt::format("const {} g_m = {} + g_r / 2 * 8, g_n = g_n0 + g_j * 8 + g_lane % 4 * 2{};",
                           index_, row, paired ? "" : " + g_r % 2"));
    e_.open_block(fmt::format("if (g_m < {} && g_n < {})", view_.rows, view_.cols));
    const std::string element = accumulator + "]";
    if (split) {
      emit_split_k_store(e_, spec_.params, view_, tiling_.splits, "g_m", "g_n", element);
    } else if (paired) {
      emit_paired_results(e_, body_, anchor_, view_, outputs, "g_b", "g_m", "g_n", element,
                          accumulator + " + 1]");
    } else {
      emit_contraction_result(e_, body_, anchor_, view_, outputs, "g_b", "g_m", "g_n", element);
    }
    e_.close_block();
    e_.close_block();
    e_.close_block();
  }

  // Whether the results can go through a staged f32 tile (runs of 8 columns in a row, unsplit).
  bool stages_results() const {
    return (tiling_.splits == 1 || tiling_.cluster) &&
           stores_result_runs(body_, anchor_, result_view_, kVector, /*f32_outputs=*/true);
  }
  bool staged_persistent() const { return persistent() && stages_results(); }

  // The staged tile's rows and columns: the tiling's, transposed where it is swapped (rows and
  // columns of the result view), and the floats a row takes.
  int staged_rows() const { return tiling_.swapped ? tiling_.block_n : tiling_.block_m; }
  int staged_cols() const { return tiling_.swapped ? tiling_.block_m : tiling_.block_n; }
  int staged_row() const {
    return staged_cols() + (tiling_.swapped ? kSwappedStagedRowPad : kWgmmaStagedRowPad);
  }
  // The result view's tile origins.
  const char* result_m0() const { return tiling_.swapped ? "g_n0" : "g_m0"; }
  const char* result_n0() const { return tiling_.swapped ? "g_m0" : "g_n0"; }

  // The sums through shared memory (the pipeline's, free after the last step) as a 128 ×
  // (block_n + 8) f32 tile, so that each thread then finishes runs of 8 neighbouring columns of
  // a row, consecutive threads consecutive runs: per run one 16-byte store per 16-bit output
  // (two per f32 one) and one 16-byte load per 16-bit input read where the result lies (a
  // residual), where the registers' fragment layout would give 2- to 8-byte stores and 2-byte
  // loads, rows 8 apart in a warp.
  void results_through_shared(const std::vector<std::string>& outputs, const Staging& staging) {
    stage_accumulators(staging);
    code_.line(staging.barrier);
    finish_staged_runs(outputs, staging, "", staged_rows());
  }

  // Each thread's accumulators into the staged f32 tile g_tile (declared here) at `staging.tile`.
  void stage_accumulators(const Staging& staging) {
    code_.line(fmt::format("float* const g_tile = reinterpret_cast<float*>({});", staging.tile));
    // The 64-row half of a thread's registers: its warpgroup's, or each in turn.
    const int half = tiling_.block_n / 2;
    if (staging.both_halves) {
      code_.line("#pragma unroll");
      e_.open_block("for (int g_h = 0; g_h < 2; ++g_h)");
    }
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", tiling_.block_n / 8));
    code_.line("#pragma unroll");
    e_.open_block("for (int g_r = 0; g_r < 4; g_r += 2)");
    code_.line(fmt::format("const int g_row = {} * {} + g_warp * 16 + g_lane / 4 + g_r / 2 * 8;",
                           staging.both_halves ? "g_h" : "g_warpgroup", kWarpgroupRows));
    const std::string acc = staging.both_halves
                                ? fmt::format("g_acc[g_h * {} + g_j * 4 + g_r", half)
                                : "g_acc[g_j * 4 + g_r";
    if (tiling_.swapped) {
      // Transposed: the register pair's two columns are two staged rows.
      code_.line("const int g_col = g_j * 8 + g_lane % 4 * 2;");
      code_.line(fmt::format("g_tile[g_col * {} + g_row] = {}];", staged_row(), acc));
      code_.line(fmt::format("g_tile[(g_col + 1) * {} + g_row] = {} + 1];", staged_row(), acc));
    } else {
      code_.line(
          fmt::format("*reinterpret_cast<float2*>(&g_tile[g_row * {} + g_j * 8 + g_lane % 4 "
                      "* 2]) = make_float2({}], {} + 1]);",
                      staged_row(), acc, acc));
    }
    e_.close_block();
    e_.close_block();
    if (staging.both_halves) e_.close_block();
  }

  // The epilogue of `rows` rows of the staged tile g_tile from tile row `first_row` (an
  // expression; "" for 0), in runs of 8 columns, consecutive threads consecutive runs of a row.
  void finish_staged_runs(const std::vector<std::string>& outputs, const Staging& staging,
                          const std::string& first_row, int rows) {
    const int runs_per_row = staged_cols() / kVector;
    // A share of rows that the threads' runs do not divide (a cluster's, rows / slices): the
    // last round's threads past it, or past the tile, do nothing.
    const bool partial_round = rows * runs_per_row % staging.threads != 0 ||
                               (!first_row.empty() && staged_rows() % rows != 0);
    const int runs = static_cast<int>(ceil_div(rows * runs_per_row, staging.threads));
    const std::vector<const Value*> result_shaped = result_shaped_inputs();
    // Where a row's runs divide the threads, a thread finishes the same run (8 columns) of every
    // row it takes: its per-column inputs (a bias) are read before the rows, a vector each,
    // instead of 8 scalar loads a row.
    const bool fixed_run = staging.threads % runs_per_row == 0;
    std::vector<std::pair<const Value*, std::string>> column_vectors;
    std::set<DType> vector_dtypes;
    if (fixed_run) {
      code_.line(fmt::format("const int g_run = {} % {};", staging.thread, runs_per_row));
      code_.line(fmt::format("const {} g_n = {} + g_run * {};", index_, result_n0(), kVector));
      for (const Value* input : column_inputs()) {
        const DType dtype = input->type().dtype;
        const std::string type = vector_type(dtype, kVector);
        column_vectors.emplace_back(input, e_.fresh_name('v'));
        const std::string& vector = column_vectors.back().second;
        code_.line(fmt::format("{} {}{{}};", type, vector));
        e_.open_block(fmt::format("if (g_n < {})", result_view_.cols));
        const size_t chunks = dtype_size(dtype) * kVector / 16;
        for (size_t h = 0; h < chunks; ++h) {
          code_.line(fmt::format(
              "reinterpret_cast<uint4*>(&{})[{}] = reinterpret_cast<const uint4*>(&{}[g_n])[{}];",
              vector, h, e_.params().read(input), h));
        }
        e_.close_block();
        vector_dtypes.insert(dtype);
      }
    }
    // At most 8 runs a thread: unrolled, so that the runs' loads (a residual's 16-byte vectors,
    // the staged sums) go out together instead of one run's at a time. Every staged epilogue
    // unrolled against none, H200: ResNet-50 b32 1.374 vs 1.399 ms (its tiles are 64 or 128
    // wide: 4 or 8 runs), ViT-B/16 3.948 vs 3.914 and BERT-base 2.220 vs 2.213 (192- and 256-wide
    // tiles: 12 and 16 runs, where unrolling cost more than it hid). The persistent kernel's
    // consumers (16 runs of a 128-wide tile) likewise: BERT's FFN up-projection with bias and GELU
    // 0.0443 ms not unrolled, 0.0492 unrolled.
    if (runs <= kMaxUnrolledRuns) code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_p = 0; g_p < {}; ++g_p)", runs));
    // The run's row among the finished rows (g_row when they start at the tile's first).
    const std::string row = first_row.empty() ? "g_row" : "g_share_row";
    if (fixed_run) {
      code_.line(fmt::format("const int {} = {} / {} + g_p * {};", row, staging.thread,
                             runs_per_row, staging.threads / runs_per_row));
    } else {
      code_.line(fmt::format("const int g_q = {} + g_p * {}, {} = g_q / {}, g_run = g_q % {};",
                             staging.thread, staging.threads, row, runs_per_row, runs_per_row));
    }
    if (!first_row.empty())
      code_.line(fmt::format("const int g_row = {} + g_share_row;", first_row));
    code_.line(
        fmt::format("const {} g_m = {} + g_row{};", index_, result_m0(),
                    fixed_run ? "" : fmt::format(", g_n = {} + g_run * {}", result_n0(), kVector)));
    e_.open_block(fmt::format(
        "if ({}g_m < {} && g_n < {})",
        partial_round ? fmt::format("{} < {} && g_row < {} && ", row, rows, staged_rows()) : "",
        result_view_.rows, result_view_.cols));
    // A quarter warp's 16-byte loads of consecutive runs lie 32 bytes apart, two of them on each
    // bank: threads whose run has bit 2 set load their second half first, so that each of the two
    // loads covers all 32 banks once.
    code_.line(fmt::format("const float* const g_run_sums = &g_tile[g_row * {} + g_run * {}];",
                           staged_row(), kVector));
    code_.line("const bool g_swap = (g_run >> 2 & 1) != 0;");
    code_.line(
        "const float4 g_load0 = *reinterpret_cast<const float4*>(g_run_sums + (g_swap ? 4 : 0));");
    code_.line(
        "const float4 g_load1 = *reinterpret_cast<const float4*>(g_run_sums + (g_swap ? 0 : 4));");
    code_.line(fmt::format("float g_sums[{}];", kVector));
    code_.line("*reinterpret_cast<float4*>(g_sums) = g_swap ? g_load1 : g_load0;");
    code_.line("*reinterpret_cast<float4*>(g_sums + 4) = g_swap ? g_load0 : g_load1;");
    const std::string first = result_view_.result_index(e_, "g_b", "g_m", "g_n");
    std::vector<std::pair<const Value*, std::string>> loaded;
    for (const Value* input : result_shaped) {
      const DType dtype = input->type().dtype;
      const std::string type = vector_type(dtype, kVector);
      loaded.emplace_back(input, e_.fresh_name('v'));
      code_.line(fmt::format("const {} {} = *reinterpret_cast<const {}*>(&{}[{}]);", type,
                             loaded.back().second, type, e_.params().read(input), first));
      vector_dtypes.insert(dtype);
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const DType dtype = body_.outputs[k]->type().dtype;
      code_.line(fmt::format("{} g_out{};", vector_type(dtype, kVector), k));
      vector_dtypes.insert(dtype);
    }
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", kVector));
    code_.line(fmt::format("const {} g_nc = g_n + g_c;", index_));
    const std::string at = result_view_.result_index(e_, "g_b", "g_m", "g_nc");
    // A per-column operand (a bias) reads at g_nc, not at the flat index modulo the columns.
    if (result_view_.result_index_ends_in_n()) {
      e_.set_inner_coordinate(at, result_view_.cols, "g_nc");
    }
    for (const auto& [input, vector] : loaded) {
      e_.bind(input, at, widened(input->type().dtype, vector + ".v[g_c]"));
    }
    for (const auto& [input, vector] : column_vectors) {
      e_.bind(input, "g_nc", widened(input->type().dtype, vector + ".v[g_c]"));
    }
    e_.bind(anchor_.result(), at, result_view_.result(e_, "g_b", "g_m", "g_nc", "g_sums[g_c]"));
    for (size_t k = 0; k < outputs.size(); ++k) {
      code_.line(fmt::format("g_out{}.v[g_c] = {};", k, e_.stored(body_.outputs[k], at)));
    }
    e_.close_block();
    bool f32_halves = false;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const DType dtype = body_.outputs[k]->type().dtype;
      if (dtype == DType::kF32) {
        // Two 16-byte stores: a caller's output buffer (run_device) is only promised 16-byte
        // alignment, not the 32 of a whole run of 8 floats.
        const std::string half = vector_type(DType::kF32, kVector / 2);
        for (int h = 0; h < 2; ++h) {
          code_.line(fmt::format("reinterpret_cast<{0}*>(&{1}[{2}])[{3}] = reinterpret_cast<const "
                                 "{0}*>(&g_out{4})[{3}];",
                                 half, outputs[k], first, h, k));
        }
        f32_halves = true;
        continue;
      }
      const std::string type = vector_type(dtype, kVector);
      code_.line(fmt::format("*reinterpret_cast<{}*>(&{}[{}]) = g_out{};", type, outputs[k],
                             first, k));
    }
    e_.close_block();
    e_.close_block();
    spec_.definitions += vector_definitions(vector_dtypes, kVector);
    if (f32_halves) spec_.definitions += vector_definition(DType::kF32, kVector / 2);
  }

  // The 16-bit kernel inputs other than the operands with as many elements as the result (a
  // residual): read as 16-byte vectors where the result lies.
  std::vector<const Value*> result_shaped_inputs() const {
    std::vector<const Value*> inputs;
    const int64_t elements = anchor_.result()->type().num_elements();
    for (const Value* input : body_.inputs) {
      if (input != anchor_.operand(0) && input != anchor_.operand(1) &&
          is_16_bit_float(input->type().dtype) && input->type().num_elements() == elements) {
        inputs.push_back(input);
      }
    }
    return inputs;
  }

  // The kernel inputs other than the operands that hold one element a result column (a bias of
  // `cols` elements, every other dim 1), in 16- or 32-bit floats: read as vectors of a run's
  // columns where the results are staged. Whether an op reads one at the column's index is the
  // element emitter's business: a binding that no op asks for costs one load.
  std::vector<const Value*> column_inputs() const {
    std::vector<const Value*> inputs;
    if (result_view_.cols % kVector != 0) return inputs;
    for (const Value* input : body_.inputs) {
      const Shape& shape = input->type().shape;
      const DType dtype = input->type().dtype;
      if (input == anchor_.operand(0) || input == anchor_.operand(1) || shape.empty() ||
          shape.back() != result_view_.cols || num_elements(shape) != result_view_.cols ||
          !(is_16_bit_float(dtype) || dtype == DType::kF32)) {
        continue;
      }
      inputs.push_back(input);
    }
    return inputs;
  }

  const KernelBody& body_;
  const Node& anchor_;
  ContractionView& view_;
  ContractionView& result_view_;
  const WgmmaTiling& tiling_;
  KernelSpec& spec_;
  ElementEmitter& e_;
  CodeWriter& code_;
  const std::string index_;
  SwizzledTile a_, b_;
  int64_t stage_bytes_ = 0;
  int hoisted_rows_ = 0;  // A's rows a thread copies, hoisted (hoist_gathered_rows)
};

}  // namespace

bool takes_wgmma_contraction(const KernelBody& body, const Node& anchor,
                             const ContractionView& view, const Target& target) {
  if (target.tensor_cores() != TensorCores::kWarpgroupMma) return false;
  const DType a = anchor.operand(0)->type().dtype, b = anchor.operand(1)->type().dtype;
  if (a != b || !is_16_bit_float(a) || view.batch > 65535) return false;
  KernelParams params;
  for (const Value* input : body.inputs) params.add_input(input);
  return (reads_a_as_it_lies(params, view) || gathers_a(params, view) ||
          a_chunk_view(params, view)) &&
         async_vector_width(params, view.b_operand(), view.b_contiguous_run(), 2) == kVector;
}

bool wgmma_tiling_fits(const ContractionView& view, const WgmmaTiling& tiling,
                       const Target& target) {
  if (tiling.block_n == 0 || ceil_div(view.rows, tiling.block_m) > 65535 ||
      view.batch * tiling.splits > 65535) {
    return false;
  }
  if (tiling.persistent_blocks > 0 &&
      (tiling.splits > 1 || tiling.block_n > 128 || tiling.block_m != kWgmmaBlockM ||
       ceil_div(view.rows, tiling.block_m) * ceil_div(view.cols, tiling.block_n) * view.batch >
           (int64_t{1} << 31) - 1)) {
    return false;
  }
  const int64_t stage = int64_t{tiling.block_m + tiling.block_n} * kWgmmaTileK * 2;
  return tiling.stages * stage + staged_tile_bytes(tiling) + kAtomBytes + barrier_bytes(tiling) <=
         std::min(kWgmmaSharedLimit, target.shared_memory_per_block);
}

namespace {

// Whether TMA would copy A's tiles, and B's.
std::pair<bool, bool> tma_operands(const KernelBody& body, const ContractionView& view,
                                   const WgmmaTiling& tiling) {
  KernelParams params;
  for (const Value* input : body.inputs) params.add_input(input);
  const std::optional<FlatStridedView> a_view = a_chunk_view(params, view);
  const bool a_as_it_lies = !a_view && reads_a_as_it_lies(params, view);
  return {(a_view && view_tensor_map(view, tiling, *a_view).has_value()) ||
              (a_as_it_lies && operand_tensor_map(view, tiling, true, !view.a_contiguous_along_m(),
                                                  tiling.block_m, view.a_strides())
                                   .has_value()),
          params.reads_buffer(view.b_operand()) &&
              operand_tensor_map(view, tiling, false, view.b_contiguous_along_k(), tiling.block_n,
                                 view.b_strides())
                  .has_value()};
}

}  // namespace

bool wgmma_tma_applies(const KernelBody& body, const ContractionView& view,
                       const WgmmaTiling& tiling) {
  const auto [a, b] = tma_operands(body, view, tiling);
  return a || b;
}

bool wgmma_warp_specialized_applies(const KernelBody& body, const ContractionView& view,
                                    const WgmmaTiling& tiling) {
  const auto [a, b] = tma_operands(body, view, tiling);
  return tiling.persistent_blocks > 0 && a && b;
}

bool wgmma_tall_applies(const KernelBody& body, const ContractionView& view,
                        const WgmmaTiling& tiling) {
  if (tiling.block_m == kWgmmaBlockM) return false;
  // A's tile is block_m · 8 chunks of 16 bytes either way round, B's block_n · 8: each operand
  // that cp.async copies must share its chunks evenly among the threads.
  const auto [a, b] = tma_operands(body, view, tiling);
  return (a || tiling.block_m * 8 % tiling.threads() == 0) &&
         (b || tiling.block_n * 8 % tiling.threads() == 0);
}

bool wgmma_cluster_applies(const KernelBody& body, const Node& anchor, const ContractionView& view,
                           const WgmmaTiling& tiling) {
  const int64_t stage_bytes = int64_t{tiling.block_m + tiling.block_n} * kWgmmaTileK * 2;
  return tiling.cluster && tiling.splits >= 2 && tiling.splits <= kWgmmaMaxClusterSlices &&
         (tiling.block_m == kWgmmaBlockM || wgmma_tall_applies(body, view, tiling)) &&
         tiling.persistent_blocks == 0 &&
         stores_result_runs(body, anchor, view, kVector, /*f32_outputs=*/true) &&
         int64_t{tiling.block_m} * (tiling.block_n + kWgmmaStagedRowPad) * 4 <=
             tiling.stages * stage_bytes;
}

bool wgmma_swapped_applies(const KernelBody& body, const Node& anchor, ContractionView& base,
                           const WgmmaTiling& tiling) {
  // The swapped kernel's A (the base's B) is read as it lies; its B (the base's A) must be a
  // buffer too, which tma_operands asks: a view computed in the body (ViT's out-projection reads
  // the attention's output reshaped) has strides but no buffer of its own to copy by TMA.
  KernelParams params;
  for (const Value* input : body.inputs) params.add_input(input);
  if (!tiling.swapped || tiling.splits != 1 || tiling.cluster || tiling.persistent_blocks > 0 ||
      !params.reads_buffer(base.b_operand()) || !swaps_contraction(base) ||
      !stores_result_runs(body, anchor, base, kVector, /*f32_outputs=*/true)) {
    return false;
  }
  SwappedContractionView swapped(base);
  const auto [a, b] = tma_operands(body, swapped, tiling);
  return a && b &&
         int64_t{tiling.block_n} * (tiling.block_m + kSwappedStagedRowPad) * 4 <=
             int64_t{tiling.stages} * (tiling.block_m + tiling.block_n) * kWgmmaTileK * 2;
}

KernelSpec emit_wgmma_contraction_kernel(const KernelBody& body, const Node& anchor,
                                         ContractionView& base, const WgmmaTiling& tiling,
                                         bool tma) {
  std::optional<SwappedContractionView> swapped;
  if (tiling.swapped) {
    if (!wgmma_swapped_applies(body, anchor, base, tiling)) {
      throw InternalError(
          "wgmma contraction: a swapped tiling needs plain operands by TMA, staged results, one "
          "slice and one tile a block");
    }
    if (!tma) throw InternalError("wgmma contraction: a swapped tiling copies by TMA");
    swapped.emplace(base);
  }
  ContractionView& view = swapped ? static_cast<ContractionView&>(*swapped) : base;
  const bool persistent = tiling.persistent_blocks > 0;
  if (persistent && !(tma && wgmma_warp_specialized_applies(body, view, tiling))) {
    throw InternalError(
        "wgmma contraction: the warp-specialized kernel needs both operands by TMA");
  }
  if (tiling.block_m != kWgmmaBlockM && !wgmma_tall_applies(body, view, tiling)) {
    throw InternalError(
        "wgmma contraction: a tall tile's cp.async chunks do not divide its threads");
  }
  const std::array<uint32_t, 3> grid =
      persistent
          ? std::array<uint32_t, 3>{static_cast<uint32_t>(tiling.persistent_blocks), 1, 1}
          : std::array<uint32_t, 3>{static_cast<uint32_t>(ceil_div(view.cols, tiling.block_n)),
                                    static_cast<uint32_t>(ceil_div(view.rows, tiling.block_m)),
                                    static_cast<uint32_t>(view.batch * tiling.splits)};
  const uint32_t threads = persistent ? kWgmmaPersistentThreads : tiling.threads();
  if (tiling.cluster && !wgmma_cluster_applies(body, anchor, view, tiling)) {
    throw InternalError(
        "wgmma contraction: split-K in a cluster needs staged results and at most 8 slices");
  }
  KernelSpec spec;
  std::vector<std::string> outputs;
  const bool workspace = tiling.splits > 1 && !tiling.cluster;
  if (workspace) {
    begin_spec_reading(spec, body, threads, grid);
  } else {
    outputs = begin_spec(spec, body, threads, grid);
  }
  CodeWriter code(1);
  ElementEmitter e(
      code, spec.params,
      index_type_for(body, workspace ? split_k_workspace_floats(view, tiling.splits) : 0));
  WgmmaKernelWriter(body, anchor, view, base, tiling, tma, spec, e).write(outputs);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
