// The contraction emitter (see the header).
#include "codegen/contraction_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "codegen/contraction_view.h"
#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "codegen/library_gemm.h"
#include "codegen/mma_contraction_emitter.h"
#include "codegen/swapped_contraction_view.h"
#include "codegen/wgmma_contraction_emitter.h"
#include "ir/error.h"

namespace kiln::codegen {
namespace {

constexpr int kTile = 64;      // output rows and columns of a block
constexpr int kTileK = 16;     // depth staged per step
constexpr int kThreads = 256;  // 16 × 16 threads
constexpr int kPerThread = 4;  // outputs per thread along rows and along columns
constexpr int kThreadsPerSide = kTile / kPerThread;

// The SIMT kernel's tile and accumulator types for the contraction's element type: float for
// floats of 32 bits or fewer, double for f64, and for integers 64-bit tiles with unsigned 64-bit
// sums, which wrap as the reference's integer sums do (the stored result keeps their low bits).
struct SimtTypes {
  std::string tile, sum;
  bool integer = false;
};

SimtTypes simt_types(DType dtype) {
  if (dtype == DType::kF64) return {.tile = "double", .sum = "double"};
  if (is_float(dtype)) return {.tile = "float", .sum = "float"};
  return {.tile = "long long", .sum = "unsigned long long", .integer = true};
}

// The SIMT kernel (see the header).
KernelSpec emit_simt_contraction_kernel(const KernelBody& body, const Node* anchor,
                                        std::unique_ptr<ContractionView> view) {
  KernelSpec spec;
  const SimtTypes types = simt_types(anchor->operand(0)->type().dtype);
  const int64_t row_tiles = (view->rows + kTile - 1) / kTile;
  if (view->batch > 65535 || row_tiles > 65535) {
    throw UnsupportedError(anchor->describe() + ": too many rows or batches for one launch");
  }
  const std::vector<std::string> outputs =
      begin_spec(spec, body, kThreads,
                 {static_cast<uint32_t>((view->cols + kTile - 1) / kTile),
                  static_cast<uint32_t>(row_tiles), static_cast<uint32_t>(view->batch)});

  CodeWriter code(1);
  ElementEmitter e(code, spec.params, index_type_for(body, 0));
  const std::string& index = e.index_type();
  const std::string rows = std::to_string(view->rows), cols = std::to_string(view->cols),
                    depth = std::to_string(view->depth);
  code.line(fmt::format("__shared__ {} g_a_tile[{}][{}];", types.tile, kTileK, kTile + 1));
  code.line(fmt::format("__shared__ {} g_b_tile[{}][{}];", types.tile, kTileK, kTile + 1));
  code.line(fmt::format("const {} g_b = blockIdx.z;", index));
  code.line(fmt::format("const {} g_m0 = static_cast<{}>(blockIdx.y) * {};", index, index, kTile));
  code.line(fmt::format("const {} g_n0 = static_cast<{}>(blockIdx.x) * {};", index, index, kTile));
  code.line(fmt::format("const int g_tx = threadIdx.x % {}, g_ty = threadIdx.x / {};",
                        kThreadsPerSide, kThreadsPerSide));
  code.line(fmt::format("{} g_acc[{}][{}] = {{}};", types.sum, kPerThread, kPerThread));
  e.open_block(fmt::format("for ({} g_k0 = 0; g_k0 < {}; g_k0 += {})", index, depth, kTileK));

  // A tile: thread t loads (row t / kTileK, depth t % kTileK): consecutive threads, consecutive k.
  e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", kTile * kTileK / kThreads));
  code.line(fmt::format("const int g_t = threadIdx.x + g_l * {};", kThreads));
  code.line(fmt::format("const int g_kk = g_t % {}, g_row = g_t / {};", kTileK, kTileK));
  code.line(fmt::format("const {} g_m = g_m0 + g_row, g_k = g_k0 + g_kk;", index));
  code.line(fmt::format("{} g_v = 0;", types.tile));
  e.open_block(fmt::format("if (g_m < {} && g_k < {})", rows, depth));
  const std::string padding = view->a_padding(e, "g_b", "g_m", "g_k");
  if (!padding.empty()) e.open_block("if (" + padding + ")");
  code.line("g_v = " + view->a_element(e, "g_b", "g_m", "g_k") + ";");
  if (!padding.empty()) e.close_block();
  e.close_block();
  code.line("g_a_tile[g_kk][g_row] = g_v;");
  e.close_block();

  // B tile: thread t loads (depth t / kTile, column t % kTile): consecutive threads, consecutive n.
  e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", kTile * kTileK / kThreads));
  code.line(fmt::format("const int g_t = threadIdx.x + g_l * {};", kThreads));
  code.line(fmt::format("const int g_kk = g_t / {}, g_col = g_t % {};", kTile, kTile));
  code.line(fmt::format("const {} g_k = g_k0 + g_kk, g_n = g_n0 + g_col;", index));
  code.line(fmt::format("{} g_v = 0;", types.tile));
  e.open_block(fmt::format("if (g_k < {} && g_n < {})", depth, cols));
  code.line("g_v = " + view->b_element(e, "g_b", "g_k", "g_n") + ";");
  e.close_block();
  code.line("g_b_tile[g_kk][g_col] = g_v;");
  e.close_block();
  code.line("__syncthreads();");

  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", kTileK));
  code.line(fmt::format("{} g_a[{}], g_w[{}];", types.tile, kPerThread, kPerThread));
  code.line("#pragma unroll");
  code.line(
      fmt::format("for (int g_i = 0; g_i < {}; ++g_i) g_a[g_i] = g_a_tile[g_kk][g_ty + {} * g_i];",
                  kPerThread, kThreadsPerSide));
  code.line("#pragma unroll");
  code.line(
      fmt::format("for (int g_j = 0; g_j < {}; ++g_j) g_w[g_j] = g_b_tile[g_kk][g_tx + {} * g_j];",
                  kPerThread, kThreadsPerSide));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", kPerThread));
  code.line("#pragma unroll");
  code.line(fmt::format("for (int g_j = 0; g_j < {}; ++g_j) g_acc[g_i][g_j] += {};", kPerThread,
                        types.integer ? fmt::format("static_cast<{0}>(g_a[g_i]) * "
                                                    "static_cast<{0}>(g_w[g_j])",
                                                    types.sum)
                                      : "g_a[g_i] * g_w[g_j]"));
  e.close_block();
  e.close_block();
  code.line("__syncthreads();");
  e.close_block();

  // The epilogue: each result element through the fusion's ops after the contraction.
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", kPerThread));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", kPerThread));
  code.line(fmt::format("const {} g_m = g_m0 + g_ty + {} * g_i, g_n = g_n0 + g_tx + {} * g_j;",
                        index, kThreadsPerSide, kThreadsPerSide));
  e.open_block(fmt::format("if (g_m < {} && g_n < {})", rows, cols));
  // An integer sum is the result's type's wrap of the 64-bit one, before the epilogue sees it.
  const DType result_dtype = anchor->result()->type().dtype;
  emit_contraction_result(e, body, *anchor, *view, outputs, "g_b", "g_m", "g_n",
                          types.integer ? fmt::format("static_cast<{}>(g_acc[g_i][g_j])",
                                                      cuda_compute_type(result_dtype))
                                        : "g_acc[g_i][g_j]");
  e.close_block();
  e.close_block();
  e.close_block();
  spec.body = code.text();
  spec.tactic = fmt::format("SIMT {}x{}x{} tile, {} threads, {}x{} outputs a thread", kTile, kTile,
                            kTileK, kThreads, kPerThread, kPerThread);
  spec.flops = 2 * view->batch * view->rows * view->cols * view->depth;
  return spec;
}

// One way to compute a tensor-core contraction: the wgmma kernel with a tiling, or the mma.sync
// kernel with one.
struct ContractionTactic {
  bool wgmma = false;
  WgmmaTiling wgmma_tiling;
  MmaTiling mma_tiling;
  // wgmma: TMA copies the operands it can (wgmma_contraction_emitter.h); named " tma", and the
  // tactic without it " cp.async", where TMA applies.
  bool tma = false;
  bool tma_applies = false;
  // cuBLASLt (library_gemm.h), with the kernel of tactic `fallback` (one that needs no second
  // kernel) where it cannot run.
  std::optional<LibraryGemm> library = std::nullopt;
  int fallback = -1;

  int splits() const { return wgmma ? wgmma_tiling.splits : mma_tiling.splits; }
  // Whether a second kernel adds split-K's slices (else none, or they meet in a cluster).
  bool sums_slices() const { return splits() > 1 && !(wgmma && wgmma_tiling.cluster); }
  // "wgmma 128x192 4 stages", "wgmma 128x128 4 stages split 2 cluster tma", "mma.sync 64x64
  // split 4": names it among its contraction's.
  std::string describe() const {
    if (library) return kLibraryGemmTactic;
    std::string split = splits() > 1 ? fmt::format(" split {}", splits()) : "";
    if (wgmma && wgmma_tiling.cluster) split += " cluster";
    if (wgmma) {
      return fmt::format("wgmma {}x{} {} stages{}{}{}", wgmma_tiling.block_m, wgmma_tiling.block_n,
                         wgmma_tiling.stages, split,
                         !tma_applies ? ""
                         : tma        ? " tma"
                                      : " cp.async",
                         wgmma_tiling.persistent_blocks > 0 ? " warp-specialized"
                         : wgmma_tiling.swapped             ? " swapped"
                                                            : "");
    }
    return fmt::format("mma.sync {}x{}{}", mma_tiling.block_m, mma_tiling.block_n, split);
  }
};

// The contraction of `body`: its anchor, view and, for tensor cores, the tactics measurement
// may choose from, the heuristic's first: wgmma tilings where the wgmma kernel takes it (then
// the mma.sync kernel's heuristic tiling last; on a small grid, the wgmma kernel's small-grid
// tilings, then every mma.sync tiling), else mma.sync tilings. SIMT: none.
struct Contraction {
  const Node* anchor = nullptr;
  std::unique_ptr<ContractionView> view;
  bool tensor_cores = false;
  std::vector<ContractionTactic> tactics;
};

Contraction contraction_of(const KernelBody& body, const Target& target) {
  Contraction contraction;
  contraction.anchor = contraction_anchor(body);
  if (!contraction.anchor) {
    throw InternalError("contraction emitter: no gemm, matmul or conv in the body");
  }
  contraction.view = contraction_view_of(*contraction.anchor);
  contraction.tensor_cores = uses_tensor_cores(*contraction.anchor);
  if (!contraction.tensor_cores) return contraction;
  const ContractionView& view = *contraction.view;
  bool small_grid = false;
  if (takes_wgmma_contraction(body, *contraction.anchor, view, target)) {
    std::vector<WgmmaTiling> tilings =
        wgmma_tiling_candidates(view.batch, view.rows, view.cols, view.depth, target);
    if (tilings.empty()) {
      tilings = wgmma_small_grid_candidates(view.batch, view.rows, view.cols, view.depth, target);
      small_grid = true;
    }
    // Where the heuristic's tiling does not fit, the mma.sync kernel computes it.
    if (!tilings.empty() && wgmma_tiling_fits(view, tilings.front(), target)) {
      for (const WgmmaTiling& tiling : tilings) {
        if ((tiling.persistent_blocks > 0 && !wgmma_warp_specialized_applies(body, view, tiling)) ||
            (tiling.block_m != kWgmmaBlockM && !wgmma_tall_applies(body, view, tiling)) ||
            (tiling.cluster && !wgmma_cluster_applies(body, *contraction.anchor, view, tiling))) {
          continue;
        }
        if (wgmma_tiling_fits(view, tiling, target)) {
          const bool tma = wgmma_tma_applies(body, view, tiling);
          contraction.tactics.push_back({.wgmma = true,
                                         .wgmma_tiling = tiling,
                                         .mma_tiling = {},
                                         .tma = tma,
                                         .tma_applies = tma});
        }
      }
      // TMA in every tiling where it applies; the heuristic's tiling also with cp.async copies
      // alone, for measurement to weigh (and --tactic cp.async to force).
      if (contraction.tactics.front().tma_applies) {
        ContractionTactic copies = contraction.tactics.front();
        copies.tma = false;
        contraction.tactics.push_back(copies);
      }
      // The contraction swapped, where its rows quantize badly into 128-row tiles.
      for (const WgmmaTiling& tiling :
           wgmma_swapped_candidates(view.batch, view.rows, view.cols, view.depth, target)) {
        if (wgmma_swapped_applies(body, *contraction.anchor, *contraction.view, tiling) &&
            wgmma_tiling_fits(SwappedContractionView(*contraction.view), tiling, target)) {
          contraction.tactics.push_back({.wgmma = true,
                                         .wgmma_tiling = tiling,
                                         .mma_tiling = {},
                                         .tma = true,
                                         .tma_applies = true});
        }
      }
    }
  }
  const bool wgmma = !contraction.tactics.empty();
  for (const MmaTiling& tiling :
       mma_tiling_candidates(view.batch, view.rows, view.cols, view.depth, target)) {
    contraction.tactics.push_back({.wgmma = false,
                                   .wgmma_tiling = {},
                                   .mma_tiling = tiling,
                                   .tma = false,
                                   .tma_applies = false});
    if (wgmma && !small_grid) break;  // the heuristic's mma.sync tiling only
  }
  // cuBLASLt last, where its epilogue expresses the body's and a tactic of one kernel can stand
  // in for it.
  const auto one_kernel = std::find_if(contraction.tactics.begin(), contraction.tactics.end(),
                                       [](const ContractionTactic& t) { return !t.sums_slices(); });
  if (one_kernel != contraction.tactics.end()) {
    LibraryGemmMatch match = library_gemm_of(body, *contraction.anchor, view);
    if (match.gemm) {
      ContractionTactic library = *one_kernel;
      library.library = std::move(match.gemm);
      library.fallback = static_cast<int>(one_kernel - contraction.tactics.begin());
      contraction.tactics.push_back(std::move(library));
    }
  }
  return contraction;
}

}  // namespace

bool is_contraction_body(const KernelBody& body) { return contraction_anchor(body) != nullptr; }

std::vector<std::string> contraction_tactics(const KernelBody& body, const Target& target) {
  std::vector<std::string> names;
  for (const ContractionTactic& tactic : contraction_of(body, target).tactics) {
    names.push_back(tactic.describe());
  }
  return names;
}

std::vector<KernelSpec> emit_contraction_kernels(const KernelBody& body, const Target& target,
                                                 int tactic) {
  Contraction contraction = contraction_of(body, target);
  std::vector<KernelSpec> kernels;
  if (!contraction.tensor_cores) {
    kernels.push_back(
        emit_simt_contraction_kernel(body, contraction.anchor, std::move(contraction.view)));
    return kernels;
  }
  if (tactic < 0 || static_cast<size_t>(tactic) >= contraction.tactics.size()) {
    throw InternalError(fmt::format("contraction emitter: tactic {} of {}", tactic,
                                    contraction.tactics.size()));
  }
  const ContractionTactic& chosen = contraction.tactics[static_cast<size_t>(tactic)];
  if (chosen.library) {
    std::vector<KernelSpec> fallback = emit_contraction_kernels(body, target, chosen.fallback);
    fallback.front().library = chosen.library;
    return fallback;
  }
  const Node& anchor = *contraction.anchor;
  ContractionView& view = *contraction.view;
  kernels.push_back(
      chosen.wgmma
          ? emit_wgmma_contraction_kernel(body, anchor, view, chosen.wgmma_tiling, chosen.tma)
          : emit_mma_contraction_kernel(body, anchor, view, chosen.mma_tiling));
  if (chosen.sums_slices()) {
    kernels.push_back(emit_split_k_sum_kernel(body, anchor, view, chosen.splits()));
  }
  return kernels;
}

}  // namespace kiln::codegen
