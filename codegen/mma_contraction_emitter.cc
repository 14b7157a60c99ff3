// The tensor-core contraction kernel and split-K's sum kernel (see the header).
#include "codegen/mma_contraction_emitter.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/integer_math.h"

namespace kiln::codegen {
namespace {

constexpr int kSumThreads = 256;
constexpr int64_t kStaticSharedBytes = 48 * 1024;
constexpr int kAsyncStages = 4;

// What the tensor cores multiply: 16-bit operands with mma.m16n8k16, or f32 operands rounded to
// TF32 (cvt.rna, as the reference interpreter does) with mma.m16n8k8.
struct MmaFormat {
  bool tf32 = false;
  int element_bytes = 2;
  int k_step = kMmaTileK;  // a block's K step: 32, or 16 for TF32 (twice the bytes an element)
  int staged = 2;          // elements a register of a register-staged tile holds
  std::string shared_type = "unsigned short", register_type = "unsigned";
  std::string pack;  // packs two floats into a register ("" for TF32: a float each)
  std::string mma;
};

MmaFormat format_of(const Node& anchor) {
  MmaFormat format;
  const DType dtype = anchor.operand(0)->type().dtype;
  if (dtype == DType::kF32) {
    format.tf32 = true;
    format.element_bytes = 4;
    format.k_step = kMmaTileK / 2;
    format.staged = 1;
    format.shared_type = "float";
    format.register_type = "float";
    format.mma = "kiln_mma_tf32_1688";
    return format;
  }
  const bool bf16 = dtype == DType::kBF16;
  format.pack = bf16 ? "kiln_pack_bf16x2" : "kiln_pack_f16x2";
  format.mma = bf16 ? "kiln_mma_bf16_16816" : "kiln_mma_f16_16816";
  return format;
}

// One operand's tile in shared memory: `outer` rows of `inner` elements (16-bit, or f32 for
// TF32), the inner dimension being the one along which the operand is contiguous in memory. A
// tile is either register-staged (its elements computed through the element machinery, a
// register holding two 16-bit elements or one f32) or, when the operand is a plain buffer read as
// it lies, copied with cp.async `vector` elements at a time.
struct OperandTile {
  char name = 'a';
  bool inner_is_k = true;
  int outer = 0, inner = 0;
  int padding = 0;        // elements after each row
  int vector = 0;         // elements per cp.async; 0: register-staged
  int staged = 0;         // elements per register (register-staged)
  std::string parameter;  // the buffer cp.async reads
  int per_thread = 0;     // registers or vectors a thread moves a step

  std::string shared() const { return fmt::format("g_{}s", name); }
  std::string registers() const { return fmt::format("g_r{}", name); }
  int chunk() const { return vector ? vector : staged; }
};

// Rows are padded so the rows one fragment load reads fall in distinct banks: 16 bytes for
// ldmatrix; for TF32's 32-bit loads (lanes g = lane / 4, t = lane % 4 read row g, column t or
// row t, column g) a row stride of 4 (mod 32) words along k, 8 (mod 32) along m or n.
OperandTile operand_tile(char name, int rows_or_cols, bool inner_is_k, int vector, int threads,
                         const MmaFormat& format) {
  OperandTile tile;
  tile.name = name;
  tile.inner_is_k = inner_is_k;
  tile.outer = inner_is_k ? rows_or_cols : format.k_step;
  tile.inner = inner_is_k ? format.k_step : rows_or_cols;
  tile.padding = format.tf32 && inner_is_k ? 4 : 8;
  tile.vector = vector;
  tile.staged = format.staged;
  const int chunks = tile.outer * tile.inner / tile.chunk();
  if (chunks % threads != 0) {
    throw InternalError(
        fmt::format("operand tile {}: {} chunks of {} elements do not divide over {} "
                    "threads",
                    name, chunks, tile.chunk(), threads));
  }
  tile.per_thread = chunks / threads;
  return tile;
}

// The run of A's elements a cp.async may copy: along k, a gathered run (a channels-last
// convolution's C/g channels at one pixel and tap, wholly inside the image or in its padding);
// along m, the contiguous run.
int64_t a_copy_run(const ContractionView& view) {
  return view.a_contiguous_along_m() ? view.a_contiguous_run() : view.a_gather_run();
}

class MmaKernelWriter {
 public:
  MmaKernelWriter(const KernelBody& body, const Node& anchor, ContractionView& view,
                  const MmaTiling& tiling, KernelSpec& spec, ElementEmitter& e)
      : body_(body),
        anchor_(anchor),
        view_(view),
        tiling_(tiling),
        spec_(spec),
        e_(e),
        code_(e.code()),
        index_(e.index_type()),
        format_(format_of(anchor)),
        a_(operand_tile('a', tiling.block_m, !view.a_contiguous_along_m(),
                        async_vector_width(e.params(), view.a_operand(), a_copy_run(view),
                                           format_.element_bytes),
                        tiling.threads(), format_)),
        b_(operand_tile('b', tiling.block_n, view.b_contiguous_along_k(),
                        async_vector_width(e.params(), view.b_operand(), view.b_contiguous_run(),
                                           format_.element_bytes),
                        tiling.threads(), format_)) {}

  void write(const std::vector<std::string>& outputs) {
    for (OperandTile* tile : {&a_, &b_}) {
      if (tile->vector)
        tile->parameter = e_.params().read(tile == &a_ ? view_.a_operand() : view_.b_operand());
    }
    stages_ = pipeline_stages();
    declarations();
    if (stages_ > 2) {
      main_loop_async();
    } else {
      main_loop();
    }
    results(outputs);
    const auto how = [&](const OperandTile& tile) {
      const bool gathered = &tile == &a_ && a_gathered();
      return tile.vector ? fmt::format("{}by cp.async {} B", gathered ? "gathered " : "",
                                       tile.vector * format_.element_bytes)
                         : std::string("by registers");
    };
    spec_.tactic = fmt::format(
        "mma.sync{} {}x{}x{} tile, {} warps, {} stages, A {}, B {}{}", format_.tf32 ? " tf32" : "",
        tiling_.block_m, tiling_.block_n, format_.k_step, tiling_.threads() / 32, stages_, how(a_),
        how(b_), tiling_.splits > 1 ? fmt::format(", split-K into {} slices", tiling_.splits) : "");
    spec_.flops = 2 * view_.batch * view_.rows * view_.cols * view_.depth;
  }

 private:
  // Whether A's cp.async chunks are gathered (a_copy_run): runs shorter than the contiguous one's
  // (a channels-last convolution wider than 1×1), each inside the image or in its padding.
  bool a_gathered() const {
    return a_.vector && !view_.a_contiguous_along_m() &&
           view_.a_gather_run() != view_.a_contiguous_run();
  }

  int fragments_m() const { return tiling_.warp_m() / 16; }
  int fragments_n() const { return tiling_.warp_n() / 8; }

  int64_t stage_bytes(const OperandTile& tile) const {
    return int64_t{tile.outer} * (tile.inner + tile.padding) * format_.element_bytes;
  }

  // The tiles' buffers: static shared arrays, or views of the kernel's dynamic shared memory when
  // they need more than the 48 KiB of static shared memory (the launch asks for the bytes).
  void shared_tiles() {
    const int64_t bytes = stages_ * (stage_bytes(a_) + stage_bytes(b_));
    if (bytes <= kStaticSharedBytes) {
      for (const OperandTile* tile : {&a_, &b_}) {
        code_.line(fmt::format("__shared__ __align__(16) {} {}[{}][{}][{}];", format_.shared_type,
                               tile->shared(), stages_, tile->outer, tile->inner + tile->padding));
      }
      return;
    }
    code_.line("extern __shared__ __align__(16) unsigned char g_shared[];");
    int64_t offset = 0;
    for (const OperandTile* tile : {&a_, &b_}) {
      code_.line(fmt::format(
          "{0} (* const {1})[{2}][{3}] = reinterpret_cast<{0} (*)[{2}][{3}]>("
          "g_shared + {4});",
          format_.shared_type, tile->shared(), tile->outer, tile->inner + tile->padding, offset));
      offset += stages_ * stage_bytes(*tile);
    }
    spec_.shared_bytes = static_cast<uint32_t>(bytes);
  }

  void declarations() {
    shared_tiles();
    for (const OperandTile* tile : {&a_, &b_}) {
      if (!tile->vector) {
        code_.line(
            fmt::format("{} {}[{}];", format_.register_type, tile->registers(), tile->per_thread));
      }
    }
    const int64_t batch = view_.batch;
    code_.line(fmt::format("const {} g_b = blockIdx.z % {};", index_, batch));
    code_.line(fmt::format("const {} g_m0 = static_cast<{}>(blockIdx.y) * {};", index_, index_,
                           tiling_.block_m));
    code_.line(fmt::format("const {} g_n0 = static_cast<{}>(blockIdx.x) * {};", index_, index_,
                           tiling_.block_n));
    code_.line(fmt::format("const {} g_kbegin = static_cast<{}>(blockIdx.z / {}) * {};", index_,
                           index_, batch, tiling_.split_depth));
    code_.line(fmt::format("const {} g_kend = min(static_cast<{}>({}), g_kbegin + {});", index_,
                           index_, view_.depth, tiling_.split_depth));
    code_.line("const int g_lane = threadIdx.x % 32, g_warp = threadIdx.x / 32;");
    code_.line(fmt::format("const int g_wm = g_warp / {} * {}, g_wn = g_warp % {} * {};",
                           tiling_.warps_n, tiling_.warp_m(), tiling_.warps_n, tiling_.warp_n()));
    code_.line(fmt::format("float g_acc[{}][{}][4] = {{}};", fragments_m(), fragments_n()));
  }

  bool any_async() const { return a_.vector || b_.vector; }

  // kAsyncStages shared-memory buffers per operand when both come by cp.async (so that three
  // steps' copies are in flight during the math; 74 KiB for 128×128 tiles of 16-bit operands,
  // two blocks an SM), else two.
  int pipeline_stages() const { return a_.vector && b_.vector ? kAsyncStages : 2; }

  // With every operand by cp.async, a pipeline of stages_ buffers: step s's copies are issued
  // stages_ - 1 steps ahead, and the wait leaves the later steps' groups in flight:
  //
  //   prologue: copy steps 0 .. S-2 into buffers 0 .. S-2, a group each
  //   step s:   wait until at most S-2 groups are in flight (step s has landed); __syncthreads
  //             copy step s+S-1 into buffer (s+S-1) % S (the one step s-1 read: every warp has
  //             passed the barrier after reading it); math on buffer s % S
  void main_loop_async() {
    for (int ahead = 0; ahead < stages_ - 1; ++ahead) {
      load_step(ahead == 0 ? "g_kbegin" : fmt::format("g_kbegin + {}", ahead * format_.k_step),
                std::to_string(ahead));
    }
    e_.open_block(
        fmt::format("for ({} g_k0 = g_kbegin; g_k0 < g_kend; g_k0 += {})", index_, format_.k_step));
    code_.line(fmt::format("const int g_step = static_cast<int>((g_k0 - g_kbegin) / {});",
                           format_.k_step));
    code_.line(fmt::format("const int g_buf = g_step % {};", stages_));
    code_.line(fmt::format("kiln_cp_async_wait<{}>();", stages_ - 2));
    code_.line("__syncthreads();");
    code_.line(
        fmt::format("const {} g_kahead = g_k0 + {};", index_, (stages_ - 1) * format_.k_step));
    load_step("g_kahead", fmt::format("(g_step + {}) % {}", stages_ - 1, stages_));
    multiply_step();
    e_.close_block();
    code_.line("kiln_cp_async_wait<0>();");
  }

  void main_loop() {
    load_step("g_kbegin", "0");
    e_.open_block(
        fmt::format("for ({} g_k0 = g_kbegin; g_k0 < g_kend; g_k0 += {})", index_, format_.k_step));
    code_.line(fmt::format("const int g_buf = static_cast<int>((g_k0 - g_kbegin) / {}) & 1;",
                           format_.k_step));
    for (const OperandTile* tile : {&a_, &b_}) {
      if (!tile->vector) store_step(*tile);
    }
    if (any_async()) code_.line("kiln_cp_async_wait<0>();");
    code_.line("__syncthreads();");
    // The next step's loads, unconditionally: after the last step every element lies past
    // g_kend and loads nothing (a cp.async zero-fills the free buffer), and with no branch
    // around them the loads, the math and the packing of the loaded values form one basic
    // block, in which the math can fill the loads' latency.
    code_.line(fmt::format("const {} g_knext = g_k0 + {};", index_, format_.k_step));
    load_step("g_knext", "g_buf ^ 1");
    multiply_step();
    e_.close_block();
    // No cp.async may still be writing shared memory when the block ends.
    if (any_async()) code_.line("kiln_cp_async_wait<0>();");
  }

  // Loads both tiles at depth `k0`: register-staged ones into their registers, the others with
  // cp.async into shared buffer `buffer` (a gathered A's chunks in the padding zero-filled).
  void load_step(const std::string& k0, const std::string& buffer) {
    load_operand(
        a_, k0, buffer, "g_m0", view_.rows,
        [&](const std::string& m, const std::string& k) { return view_.a_index(e_, "g_b", m, k); },
        [&](const std::string& m, const std::string& k) {
          return a_gathered() ? view_.a_padding(e_, "g_b", m, k) : std::string();
        },
        [&](const std::string& m, const std::string& k) {
          const std::string padding = view_.a_padding(e_, "g_b", m, k);
          if (!padding.empty()) e_.open_block("if (" + padding + ")");
          code_.line("g_v[g_h] = " + view_.a_element(e_, "g_b", m, k) + ";");
          if (!padding.empty()) e_.close_block();
        });
    load_operand(
        b_, k0, buffer, "g_n0", view_.cols,
        [&](const std::string& n, const std::string& k) { return view_.b_index(e_, "g_b", k, n); },
        [](const std::string&, const std::string&) { return std::string(); },
        [&](const std::string& n, const std::string& k) {
          code_.line("g_v[g_h] = " + view_.b_element(e_, "g_b", k, n) + ";");
        });
    if (any_async()) code_.line("kiln_cp_async_commit();");
  }

  // Thread t's chunk p of `tile` (a pair, an element or a vector) is chunk q = t + p · threads in
  // row-major order of the tile: as a row holds C chunks and C divides the thread count, row
  // t / C + p · (threads / C), chunk t % C: each thread keeps its position along the row, so
  // index arithmetic along the row is shared by all its chunks.
  void chunk_coordinates(const OperandTile& tile) {
    const int per_row = tile.inner / tile.chunk();
    if (tiling_.threads() % per_row != 0) {
      throw InternalError("mma contraction: a tile row of " + std::to_string(per_row) +
                          " chunks does not divide the block's threads");
    }
    code_.line(
        fmt::format("const int g_outer = threadIdx.x / {} + g_p * {}, g_inner = "
                    "threadIdx.x % {} * {};",
                    per_row, tiling_.threads() / per_row, per_row, tile.chunk()));
  }

  // Loads `tile`'s chunks at depth k0. `other0` names the first row or column of the block along
  // the operand's dimension other than k, `other_size` its extent; index(other, k) gives the
  // element's index in the operand, inside(other, k) the condition that it is not padding ("":
  // none is), load(other, k) sets g_v[g_h] to it.
  template <typename Index, typename Inside, typename Load>
  void load_operand(const OperandTile& tile, const std::string& k0, const std::string& buffer,
                    const std::string& other0, int64_t other_size, const Index& index,
                    const Inside& inside, const Load& load) {
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_p = 0; g_p < {}; ++g_p)", tile.per_thread));
    chunk_coordinates(tile);
    if (tile.vector) {
      // A vector lies wholly inside or wholly outside the operand: its length divides the
      // runs, the depth and the split depth.
      const std::string along_k = tile.inner_is_k ? "g_inner" : "g_outer";
      const std::string across = tile.inner_is_k ? "g_outer" : "g_inner";
      code_.line(fmt::format("const {} g_k = {} + {}, g_o = {} + {};", index_, k0, along_k, other0,
                             across));
      std::string valid = fmt::format("g_k < g_kend && g_o < {}", other_size);
      std::string at = index("g_o", "g_k");
      // A chunk in the padding (a gathered convolution input's) is zero-filled, its address
      // never formed.
      if (const std::string in_image = inside("g_o", "g_k"); !in_image.empty()) {
        valid = e_.temp("bool", valid + " && " + in_image);
        at = fmt::format("({} ? {} : 0)", valid, at);
      }
      code_.line(fmt::format("kiln_cp_async_{}(&{}[{}][g_outer][g_inner], {} + {}, {});",
                             tile.vector * format_.element_bytes, tile.shared(), buffer,
                             tile.parameter, at, valid));
      e_.close_block();
      return;
    }
    code_.line(fmt::format("float g_v[{}];", tile.staged));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_h = 0; g_h < {}; ++g_h)", tile.staged));
    code_.line("g_v[g_h] = 0.0f;");
    const std::string along_k = tile.inner_is_k ? "g_inner + g_h" : "g_outer";
    const std::string across = tile.inner_is_k ? "g_outer" : "g_inner + g_h";
    code_.line(
        fmt::format("const {} g_k = {} + {}, g_o = {} + {};", index_, k0, along_k, other0, across));
    e_.open_block(fmt::format("if (g_k < g_kend && g_o < {})", other_size));
    load("g_o", "g_k");
    e_.close_block();
    e_.close_block();
    code_.line(format_.pack.empty()
                   ? fmt::format("{}[g_p] = g_v[0];", tile.registers())
                   : fmt::format("{}[g_p] = {}(g_v[0], g_v[1]);", tile.registers(), format_.pack));
    e_.close_block();
  }

  void store_step(const OperandTile& tile) {
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_p = 0; g_p < {}; ++g_p)", tile.per_thread));
    chunk_coordinates(tile);
    const std::string at = fmt::format("{}[g_buf][g_outer][g_inner]", tile.shared());
    code_.line(format_.pack.empty() ? fmt::format("{} = {}[g_p];", at, tile.registers())
                                    : fmt::format("*reinterpret_cast<unsigned*>(&{}) = {}[g_p];",
                                                  at, tile.registers()));
    e_.close_block();
  }

  void multiply_step() {
    if (format_.tf32) {
      multiply_step_tf32();
    } else {
      multiply_step_16bit();
    }
  }

  // Two k16 steps of ldmatrix and mma from shared buffer g_buf. ldmatrix_x4: lanes 8i..8i+7
  // address the rows of matrix i; see the fragment layouts in codegen/device_functions.cc.
  void multiply_step_16bit() {
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; g_ks += 16)", format_.k_step));
    code_.line(fmt::format("unsigned g_fa[{}][4], g_fb[{}][2];", fragments_m(), fragments_n()));
    // A: matrix i holds rows (i % 2) · 8.. and k (i / 2) · 8.. of the 16 × 16 fragment.
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", fragments_m()));
    code_.line("const int g_r = g_wm + g_i * 16;");
    if (a_.inner_is_k) {
      code_.line(
          "kiln_ldmatrix_x4(g_fa[g_i], &g_as[g_buf][g_r + g_lane % 8 + g_lane / 8 % 2 * 8]"
          "[g_ks + g_lane / 16 * 8]);");
    } else {
      code_.line(
          "kiln_ldmatrix_x4_trans(g_fa[g_i], &g_as[g_buf][g_ks + g_lane % 8 + g_lane / 16 * 8]"
          "[g_r + g_lane / 8 % 2 * 8]);");
    }
    e_.close_block();
    // B, two 8-column fragments at a time: matrix i holds k (i % 2) · 8.. of columns
    // (i / 2) · 8...
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_j = 0; g_j < {}; g_j += 2)", fragments_n()));
    code_.line("const int g_c = g_wn + g_j * 8;");
    code_.line("unsigned g_x[4];");
    if (b_.inner_is_k) {
      code_.line(
          "kiln_ldmatrix_x4(g_x, &g_bs[g_buf][g_c + g_lane % 8 + g_lane / 16 * 8]"
          "[g_ks + g_lane / 8 % 2 * 8]);");
    } else {
      code_.line(
          "kiln_ldmatrix_x4_trans(g_x, &g_bs[g_buf][g_ks + g_lane % 8 + g_lane / 8 % 2 * 8]"
          "[g_c + g_lane / 16 * 8]);");
    }
    code_.line("g_fb[g_j][0] = g_x[0];");
    code_.line("g_fb[g_j][1] = g_x[1];");
    code_.line("g_fb[g_j + 1][0] = g_x[2];");
    code_.line("g_fb[g_j + 1][1] = g_x[3];");
    e_.close_block();
    mma_all();
    e_.close_block();
  }

  // Two k8 steps of TF32 mma; each fragment element read from shared memory and rounded
  // (a[0] = A(g, t), a[1] = A(g + 8, t), a[2] = A(g, t + 4), a[3] = A(g + 8, t + 4);
  // b[0] = B(t, g), b[1] = B(t + 4, g)).
  void multiply_step_tf32() {
    const auto element = [](const OperandTile& tile, const std::string& row_or_col,
                            const std::string& k) {
      const std::string at = tile.inner_is_k ? fmt::format("[{}][{}]", row_or_col, k)
                                             : fmt::format("[{}][{}]", k, row_or_col);
      return fmt::format("__float_as_uint(kiln_round_to_tf32({}[g_buf]{}))", tile.shared(), at);
    };
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; g_ks += 8)", format_.k_step));
    code_.line(fmt::format("unsigned g_fa[{}][4], g_fb[{}][2];", fragments_m(), fragments_n()));
    code_.line("const int g_kk = g_ks + g_lane % 4;");
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", fragments_m()));
    code_.line("const int g_r = g_wm + g_i * 16 + g_lane / 4;");
    code_.line("g_fa[g_i][0] = " + element(a_, "g_r", "g_kk") + ";");
    code_.line("g_fa[g_i][1] = " + element(a_, "g_r + 8", "g_kk") + ";");
    code_.line("g_fa[g_i][2] = " + element(a_, "g_r", "g_kk + 4") + ";");
    code_.line("g_fa[g_i][3] = " + element(a_, "g_r + 8", "g_kk + 4") + ";");
    e_.close_block();
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", fragments_n()));
    code_.line("const int g_c = g_wn + g_j * 8 + g_lane / 4;");
    code_.line("g_fb[g_j][0] = " + element(b_, "g_c", "g_kk") + ";");
    code_.line("g_fb[g_j][1] = " + element(b_, "g_c", "g_kk + 4") + ";");
    e_.close_block();
    mma_all();
    e_.close_block();
  }

  void mma_all() {
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", fragments_m()));
    code_.line("#pragma unroll");
    code_.line(
        fmt::format("for (int g_j = 0; g_j < {}; ++g_j) {}(g_acc[g_i][g_j], g_fa[g_i], g_fb[g_j]);",
                    fragments_n(), format_.mma));
    e_.close_block();
  }

  // Unrolled loops over the warp's fragments (g_i, g_j) and, innermost, `innermost` up to
  // `count`; the caller closes the three blocks and one it opens inside.
  void open_result_loops(const char* innermost, int count) {
    const std::pair<const char*, int> loops[] = {
        {"g_i", fragments_m()}, {"g_j", fragments_n()}, {innermost, count}};
    for (const auto& [name, extent] : loops) {
      code_.line("#pragma unroll");
      e_.open_block(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", name, extent));
    }
  }

  // Accumulator register r of fragment (i, j) is C(g + r / 2 · 8, 2t + r % 2), g = lane / 4,
  // t = lane % 4.
  void results(const std::vector<std::string>& outputs) {
    if (paired_stores()) {
      paired_results(outputs);
      return;
    }
    open_result_loops("g_r", 4);
    code_.line(
        fmt::format("const {} g_m = g_m0 + g_wm + g_i * 16 + g_lane / 4 + g_r / 2 * 8, "
                    "g_n = g_n0 + g_wn + g_j * 8 + g_lane % 4 * 2 + g_r % 2;",
                    index_));
    e_.open_block(fmt::format("if (g_m < {} && g_n < {})", view_.rows, view_.cols));
    if (tiling_.splits > 1) {
      emit_split_k_store(e_, spec_.params, view_, tiling_.splits, "g_m", "g_n",
                         "g_acc[g_i][g_j][g_r]");
    } else {
      emit_contraction_result(e_, body_, anchor_, view_, outputs, "g_b", "g_m", "g_n",
                              "g_acc[g_i][g_j][g_r]");
    }
    for (int level = 0; level < 4; ++level) e_.close_block();
  }

  // Whether a thread writes its two adjacent columns (registers 2h and 2h + 1) as one 32-bit
  // store: no split-K, and stores_result_runs(..., 2).
  bool paired_stores() const {
    return tiling_.splits == 1 && stores_result_runs(body_, anchor_, view_, 2);
  }

  void paired_results(const std::vector<std::string>& outputs) {
    open_result_loops("g_h", 2);
    code_.line(
        fmt::format("const {} g_m = g_m0 + g_wm + g_i * 16 + g_lane / 4 + g_h * 8, "
                    "g_n = g_n0 + g_wn + g_j * 8 + g_lane % 4 * 2;",
                    index_));
    e_.open_block(fmt::format("if (g_m < {} && g_n < {})", view_.rows, view_.cols));
    emit_paired_results(e_, body_, anchor_, view_, outputs, "g_b", "g_m", "g_n",
                        "g_acc[g_i][g_j][2 * g_h + 0]",
                        "g_acc[g_i][g_j][2 * g_h + 1]");
    for (int level = 0; level < 4; ++level) e_.close_block();
  }

  const KernelBody& body_;
  const Node& anchor_;
  ContractionView& view_;
  const MmaTiling& tiling_;
  KernelSpec& spec_;
  ElementEmitter& e_;
  CodeWriter& code_;
  const std::string index_;
  const MmaFormat format_;
  OperandTile a_, b_;
  int stages_ = 2;
};

}  // namespace

int async_vector_width(const KernelParams& params, const Value* operand, int64_t run,
                       int element_bytes) {
  if (!params.reads_buffer(operand)) return 0;
  for (int bytes : {16, 8, 4}) {
    const int width = bytes / element_bytes;
    if (width >= 2 && run % width == 0) return width;
  }
  return 0;
}

int64_t split_k_workspace_floats(const ContractionView& view, int splits) {
  return splits * view.batch * view.rows * view.cols;
}

void emit_split_k_store(ElementEmitter& e, KernelParams& params, const ContractionView& view,
                        int splits, const std::string& m, const std::string& n,
                        const std::string& sum) {
  const bool m_fastest = view.result_contiguous_along_m();
  e.code().line(fmt::format(
      "{}[(static_cast<{}>(blockIdx.z) * {} + {}) * {} + {}] = {};",
      params.add_workspace(split_k_workspace_floats(view, splits)), e.index_type(),
      m_fastest ? view.cols : view.rows, m_fastest ? n : m, m_fastest ? view.rows : view.cols,
      m_fastest ? m : n, sum));
}

bool stores_result_runs(const KernelBody& body, const Node& anchor, const ContractionView& view,
                        int width, bool f32_outputs) {
  if (view.result_contiguous_along_m() || view.cols % width != 0) return false;
  const int64_t elements = anchor.result()->type().num_elements();
  return std::all_of(body.outputs.begin(), body.outputs.end(), [&](const Value* output) {
    const DType dtype = output->type().dtype;
    return (dtype == DType::kF16 || dtype == DType::kBF16 || (f32_outputs && dtype == DType::kF32)) &&
           output->type().num_elements() == elements;
  });
}

void emit_paired_results(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                         ContractionView& view, const std::vector<std::string>& outputs,
                         const std::string& b, const std::string& m, const std::string& n,
                         const std::string& low, const std::string& high) {
  std::string at[2];
  std::vector<std::string> bits[2];
  for (int column = 0; column < 2; ++column) {
    const std::string column_n = column ? n + " + 1" : n;
    at[column] = view.result_index(e, b, m, column_n);
    if (view.result_index_ends_in_n()) e.set_inner_coordinate(at[column], view.cols, column_n);
    e.bind(anchor.result(), at[column], view.result(e, b, m, column_n, column ? high : low));
    for (const Value* output : body.outputs) {
      bits[column].push_back(e.temp("unsigned", e.stored(output, at[column])));
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    e.code().line(fmt::format("*reinterpret_cast<unsigned*>(&{}[{}]) = {} | {} << 16;",
                              outputs[k], at[0], bits[0][k], bits[1][k]));
  }
}

bool uses_tensor_cores(const Node& anchor) {
  const DType a = anchor.operand(0)->type().dtype, b = anchor.operand(1)->type().dtype;
  if (a != b) return false;
  const bool tf32 = anchor.has_attr("tf32") && anchor.int_attr("tf32") != 0;
  return a == DType::kF16 || a == DType::kBF16 || (a == DType::kF32 && tf32);
}

KernelSpec emit_mma_contraction_kernel(const KernelBody& body, const Node& anchor,
                                       ContractionView& view, const MmaTiling& tiling) {
  const int64_t row_tiles = ceil_div(view.rows, tiling.block_m);
  const int64_t z = view.batch * tiling.splits;
  if (z > 65535 || row_tiles > 65535) {
    throw UnsupportedError(anchor.describe() + ": too many rows or batches for one launch");
  }
  const std::array<uint32_t, 3> grid{static_cast<uint32_t>(ceil_div(view.cols, tiling.block_n)),
                                     static_cast<uint32_t>(row_tiles), static_cast<uint32_t>(z)};
  const auto threads = static_cast<uint32_t>(tiling.threads());
  KernelSpec spec;
  std::vector<std::string> outputs;
  if (tiling.splits > 1) {
    begin_spec_reading(spec, body, threads, grid);
  } else {
    outputs = begin_spec(spec, body, threads, grid);
  }
  CodeWriter code(1);
  ElementEmitter e(code, spec.params,
                   index_type_for(body, split_k_workspace_floats(view, tiling.splits)));
  MmaKernelWriter(body, anchor, view, tiling, spec, e).write(outputs);
  spec.body = code.text();
  return spec;
}

KernelSpec emit_split_k_sum_kernel(const KernelBody& body, const Node& anchor,
                                   ContractionView& view, int splits) {
  const int64_t total = view.batch * view.rows * view.cols;
  const int64_t blocks = std::min<int64_t>(ceil_div(total, kSumThreads), 65535);
  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_spec(spec, body, kSumThreads, {static_cast<uint32_t>(blocks), 1, 1});
  const int64_t workspace_size = split_k_workspace_floats(view, splits);
  const std::string& workspace = spec.params.add_workspace(workspace_size);
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, index_type_for(body, workspace_size + blocks * kSumThreads));
  const std::string& index = e.index_type();
  e.open_block(
      fmt::format("for ({} g_i = static_cast<{}>(blockIdx.x) * {} + threadIdx.x; g_i < {}; g_i += "
                  "static_cast<{}>(gridDim.x) * {})",
                  index, index, kSumThreads, total, index, kSumThreads));
  // g_i walks the workspace's [b][m][n] or [b][n][m] (emit_mma_contraction_kernel).
  if (view.result_contiguous_along_m()) {
    code.line(fmt::format("const {} g_m = g_i % {}, g_n = g_i / {} % {}, g_b = g_i / {};", index,
                          view.rows, view.rows, view.cols, view.rows * view.cols));
  } else {
    code.line(fmt::format("const {} g_n = g_i % {}, g_m = g_i / {} % {}, g_b = g_i / {};", index,
                          view.cols, view.cols, view.rows, view.rows * view.cols));
  }
  code.line("float g_sum = 0.0f;");
  code.line("#pragma unroll");
  code.line(fmt::format(
      "for (int g_s = 0; g_s < {}; ++g_s) g_sum += {}[static_cast<{}>(g_s) * {} + g_i];",
      splits, workspace, index, total));
  emit_contraction_result(e, body, anchor, view, outputs, "g_b", "g_m", "g_n", "g_sum");
  e.close_block();
  spec.body = code.text();
  spec.tactic = fmt::format("split-K sum of {} slices, then the epilogue", splits);
  return spec;
}

}  // namespace kiln::codegen
