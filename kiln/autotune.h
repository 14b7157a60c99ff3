// Tactics chosen by measurement (kiln compile --autotune), as TensorRT's builder and XLA's
// autotuner choose theirs: every kernel node its emitter can compute several ways (a
// contraction's tile width, pipeline stages, split-K, wgmma or mma.sync: codegen's TacticSite)
// gets the way that ran fastest on this machine's GPU.
//
//   1. Lowering names each such node's site: a key (its problem: the heuristic kernel's code,
//      so shape, dtypes, layouts, prologue and epilogue) and its tactics, the heuristic's first.
//      Sites the tactic cache knows (same key, GPU, driver and NVRTC) take the cached tactic.
//   2. The rest are measured in rounds: round r lowers the whole program with tactic r at every
//      such site that has one (the heuristic's elsewhere), compiles it (the kernel cache keeps
//      what repeats), runs it on the tuning inputs and times each step (Session::profile_steps);
//      a site's time for tactic r is the sum over the nodes of its key. Round 0, the heuristic
//      program, gives the reference outputs: a round whose outputs differ from them (relative L2
//      error over kMaxRelativeError) or that fails is left out, with a warning naming it, and so
//      are its tactics. When round 0 itself cannot run on the GPU (busy, out of memory), nothing
//      is measured: the heuristics (and the cache) choose, and the report's note says why.
//      All rounds are lowered first, up to four at once; then their kernels compile on one
//      pool of threads on another thread (a kernel several rounds share compiles once), round
//      by round, and each round is measured as soon as it is compiled, while the later ones
//      compile.
//   3. Each key takes its fastest measured tactic; the final program is lowered with those.
//      Steps timed apart need not add up to the program as its CUDA graph runs it (kernels
//      launched early, overlapping the previous one's tail; independent branches at once). So
//      where rounds were timed whole (ProgramTimes::program_ms), the final program is compiled
//      and timed whole too, and when a round's program ran more than kWholeProgramMargin
//      faster, that round's tactics are taken instead (the report's whole_program says which,
//      with both times). The chosen tactics are stored in the cache. (The driver's measure hook
//      times the first program twice, as the first Session of a process replays faster than
//      later ones, docs/RUNTIME.md: every round compared is then a later Session.)
//
// Measuring needs the GPU the kernels are generated for, so the driver tunes only for --arch
// native (kiln/compiler.h); elsewhere the heuristic chooses and the report says why.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "codegen/options.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln {

// A round's outputs may differ from the heuristic program's by this relative L2 error (f16
// accumulation orders differ between split-K slices and tile widths).
inline constexpr double kMaxRelativeError = 1e-2;

// A round's whole program must run this much (relative) faster than the per-step winners' to be
// taken instead of them: the replays' medians vary by a few tenths of a percent.
inline constexpr double kWholeProgramMargin = 0.01;

// The kernel nodes of one site key.
struct TunedSite {
  std::string label;                 // the first node's ONNX node (or kernel)
  std::vector<std::string> tactics;  // the heuristic's first
  std::vector<double> ms;            // per tactic, the nodes' summed step medians; < 0: not run
  int chosen = 0;
  int nodes = 0;
  bool from_cache = false;  // chosen by the cache (ms not measured this time)
  std::vector<std::string> notes;  // codegen::TacticSite::notes
};

struct AutotuneReport {
  bool measured = false;  // the tactics were measured (now or by the cache); false: heuristics
  std::string note;       // why not measured
  std::vector<TunedSite> sites;
  int rounds = 0;      // programs measured
  int from_cache = 0;  // sites the cache chose for
  double seconds = 0;
  // Where the seconds went: lowering the rounds after the first, compiling them all (NVRTC and
  // the memory plan, wall time on the compiling thread, overlapping the measurements), measuring
  // them on the GPU, and the measuring thread waiting for a round's compilation.
  double lower_seconds = 0;
  double compile_seconds = 0;
  double measure_seconds = 0;
  double wait_seconds = 0;
  std::vector<std::string> warnings;  // rounds left out and why
  // Where the per-problem winners' program was timed whole against the rounds': both figures,
  // and whose tactics were taken ("": not compared).
  std::string whole_program;
};

// What the GPU gives for one candidate program.
struct ProgramTimes {
  std::vector<float> step_ms;   // each step's median milliseconds
  std::vector<Tensor> outputs;  // on the tuning inputs
  double program_ms = -1;       // the whole program's median replay; < 0: not timed
};

// Called by AutotuneHooks::compile as a round is compiled: its index, and null or what its
// compilation threw.
using RoundCompiled = std::function<void(size_t round, std::exception_ptr error)>;

struct AutotuneHooks {
  // NVRTC and the memory plan for every round's program at once: makes each runnable, and calls
  // `compiled` as each is (rounds in order where it can; from any thread). Called on another
  // thread than measure, while measure runs. What it throws fails the rounds it did not report.
  std::function<void(const std::vector<Program*>& rounds, const RoundCompiled& compiled)> compile;
  // Runs a compiled program (a copy it may keep) on the tuning inputs and times its steps.
  std::function<ProgramTimes(Program)> measure;
  // The tactic cache's directory ("": none) and what its entries depend on besides the site
  // (GPU, driver, NVRTC version).
  std::string cache_directory;
  std::string cache_identity;
};

// Lowers `fused_graph` with every site's tactic chosen by the cache or by measurement, filling
// `report`. The returned program is lowered (perhaps compiled too); compile it.
Program lower_autotuned(const Graph& fused_graph, codegen::CodegenOptions codegen,
                        const AutotuneHooks& hooks, AutotuneReport& report);

// A line per problem whose fusion was undone (codegen::kUnfusedTactic chosen), for
// --explain-fusion: "fuse-kernels: <label> (N nodes): unfused by measurement: its ops as kernels
// of their own took A ms, the fused kernel B ms at best", or saying the cache or --tactic chose it.
std::vector<std::string> unfused_notes(const AutotuneReport& report);

// Inputs for timing a program: floats uniform in [-1, 1) from a fixed seed, integers and
// booleans zero (a valid index for any gather and an unmasked-or-masked-alike mask).
std::vector<Tensor> tuning_inputs(const Program& program);

// The relative L2 error of `got` against `want` (exact equality for integers: 0 or infinity);
// infinity for another dtype or shape, or a NaN where `want` has none.
double relative_error(const Tensor& got, const Tensor& want);

}  // namespace kiln
