// kiln's C++ API: compile an ONNX model (or kiln IR) to a GPU program, save and load it, run it,
// and look at the IR at any stage. The kiln command is built on exactly this.
//
//   #include "kiln/kiln.h"
//
//   kiln::CompileOptions options;                       // sm_80 + sm_90, fp32, fusion on
//   options.archs = {"native"};                         // or this machine's GPU
//   options.pipeline.precision = kiln::Precision::kFP16;
//   kiln::CompiledModel compiled = kiln::compile("model.onnx", options, {{"x", {1, 3, 224, 224}}});
//   kiln::write_program(compiled.program, "model.kiln");    // runtime/program_io.h
//
//   kiln::Session session = kiln::Session::load("model.kiln");  // needs a CUDA device
//   std::vector<kiln::Tensor> outputs = session.run({input});
//   kiln::Session on_gpu1 = kiln::Session::load("model.kiln", {.device = 1});
//   kiln::Session second = on_gpu1.share();           // same weights on the GPU, no second copy
//   second.run_device({x}, {y}, stream);               // enqueued on the caller's cudaStream_t
//   (docs/RUNTIME.md: streams, threads, several GPUs)
//
//   // One program for batch 1..16 (kiln/dynamic_compile.h); any batch in range runs:
//   kiln::CompiledDynamicModel ranged =
//       kiln::compile_dynamic("model.onnx", options, {{"x", {{1, 16}, {3, 3}, {224, 224}, {224,
//       224}}}});
//   kiln::write_dynamic_program(ranged.program, "model.kiln");
//   kiln::DynamicSession dynamic = kiln::DynamicSession::load("model.kiln");
//   outputs = dynamic.run({input_of_batch_5});                  // runs padded to 8, cut to 5
//
//   std::unique_ptr<kiln::Graph> graph = kiln::load_model("model.onnx");
//   kiln::optimize(*graph, kiln::Stage::kFused, {});           // IR after the whole pipeline
//   std::string text = kiln::dump_graph(*graph, kiln::DumpFormat::kText);
//   std::vector<kiln::Tensor> want = kiln::run_reference(*graph, {input});  // the CPU oracle
//
// Pieces: kiln/compiler.h (load_model, optimize, run_passes, compile, compile_fused),
// kiln/dynamic_compile.h (compile_dynamic), runtime/dynamic_session.h (DynamicSession),
// kiln/ir_dump.h (dump_graph), target/target.h (Target, target_for_arch), runtime/session.h
// (Session), runtime/program_io.h (read_program, write_program), reference/reference_interpreter.h
// (run_reference). Errors are kiln::InputError, UnsupportedError and InternalError (ir/error.h),
// with messages that name the model, node, input or option at fault.
#pragma once

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "kiln/compiler.h"
#include "kiln/dynamic_compile.h"
#include "kiln/ir_dump.h"
#include "reference/reference_interpreter.h"
#include "runtime/dynamic_session.h"
#include "runtime/program_io.h"
#include "runtime/session.h"
#include "target/target.h"
