#!/usr/bin/env bash
# Builds kiln on the GPU test host (see ../shared/gpu/README.md: Ubuntu 24.04, CUDA 13, protobuf
# 3.21, the onnx package's onnx.proto, no apt or pip) and runs what needs or may use the GPU:
# `ctest -L gpu` (compute-sanitizer's four tools among them: gpu_sanitize), the CPU
# suites that run there (unit, onnx), and the benchmarks in bench/.
# Every log goes to $OUT (the device tool's output folder) or build-gpu/logs.
#
# usage: scripts/gpu-host.sh
# Knobs (environment), for fitting a run into the device tool's time:
#   KILN_GPU_TEST_JOBS   ctest -j for the gpu label (default 1; the tests may share the GPU)
#   KILN_CPU_SUITES      ctest labels of the CPU suites to run there (default "unit|onnx"; empty:
#                        none — CI runs them anyway)
#   KILN_STEP_LIMIT_GPU_TESTS, KILN_STEP_LIMIT_BENCH  seconds a step may take (default: no limit)
#   KILN_BENCH_SHAPES    all, or shapes of bench/contraction_shapes.py: also time those (below)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/build-gpu/logs}
mkdir -p "$out"
status=0
step() {  # step NAME COMMAND...: runs COMMAND, logs to $out/NAME.log, records a failure
  local name=$1
  shift
  local start=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then
    echo "$name: ok ($((SECONDS - start)) s)"
  else
    echo "$name: FAILED ($((SECONDS - start)) s), see $name.log"
    tail -n 30 "$out/$name.log"
    status=1
  fi
}

nvidia-smi >"$out/nvidia-smi.log" 2>&1 || echo "no nvidia-smi: is this the GPU host?"
# The device tool copies the tree with its files' times: on a machine still warm from an earlier
# call, a header edited before that call's build looks older than its objects, and ninja links
# objects of two struct layouts (session 25: every kiln bench then died of SIGFPE). There, every
# source is touched: a whole rebuild (under a minute on its 16 cores) rather than a wrong binary.
if [ -d build-gpu ]; then
  find . -path ./build-gpu -prune -o \( -name '*.cc' -o -name '*.h' \) -print0 | xargs -0 -r touch
fi
step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release
step build cmake --build build-gpu -j"$(nproc)"
step ctest-gpu timeout "${KILN_STEP_LIMIT_GPU_TESTS:-0}" \
  ctest --test-dir build-gpu -L gpu -j"${KILN_GPU_TEST_JOBS:-1}" --output-on-failure
cpu_suites=${KILN_CPU_SUITES-unit|onnx}
if [ -n "$cpu_suites" ]; then
  step ctest-cpu ctest --test-dir build-gpu -L "$cpu_suites" -j"$(nproc)" --output-on-failure
fi
# The fusion microbenchmarks always; the model benchmarks (minutes: exports, torch.compile) when
# KILN_BENCH_MODELS names them (all four: resnet50,mobilenetv2,bert,vit), at KILN_BENCH_BATCHES
# (default 1,32) plus KILN_BENCH_EXTRA_BATCHES (default resnet50=128; empty for none), e.g.
# KILN_BENCH_MODELS=mobilenetv2,vit KILN_BENCH_BATCHES=1 KILN_BENCH_EXTRA_BATCHES= ; more flags of
# bench/models.py (--iters, --no-compile) in KILN_BENCH_FLAGS. A model that fails shows as an
# error in its table row, and the step as FAILED.
step bench-microbench bench/microbench.py build-gpu/bin/kiln "$out"
if [ -n "${KILN_BENCH_MODELS:-}" ]; then
  step bench-models timeout "${KILN_STEP_LIMIT_BENCH:-0}" \
    bench/models.py build-gpu/bin/kiln "$out" --models "$KILN_BENCH_MODELS" \
    --batches "${KILN_BENCH_BATCHES:-1,32}" \
    --extra-batches "${KILN_BENCH_EXTRA_BATCHES-resnet50=128}" ${KILN_BENCH_FLAGS:-}
fi
# The contraction, attention and depthwise shapes against cuBLAS, cuDNN and SDPA when
# KILN_BENCH_SHAPES names them ("all", or shape names of bench/contraction_shapes.py: a,b).
if [ -n "${KILN_BENCH_SHAPES:-}" ]; then
  shapes=()
  [ "$KILN_BENCH_SHAPES" != all ] && shapes=(--shapes "$KILN_BENCH_SHAPES")
  step bench-shapes timeout "${KILN_STEP_LIMIT_BENCH:-0}" \
    bench/contraction_shapes.py build-gpu/bin/kiln "$out/shapes" "${shapes[@]}"
fi
grep -h "tests passed\|No tests were found" "$out"/ctest-*.log
exit $status
