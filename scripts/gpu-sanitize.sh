#!/usr/bin/env bash
# Runs compute-sanitizer's four tools (memcheck, racecheck, initcheck, synccheck), API errors
# reported, over kiln's kernels on the GPU host: the BERT-style encoder in fp32 and fp16 (tiled
# attention, layer norm rows, SIMT, tensor-core and split-K gemms), ResNet-50 in fp16 (wgmma or
# mma.sync implicit-GEMM convolutions with cp.async pipelines, pooling, the global-average
# reduction), from the model tests' work directory, compiled for this GPU (--arch native) and run
# once by `kiln run`; and a few ONNX node tests (softmax, matmul, conv, reduce, layer norm, gemm,
# max pool, attention) in fp32 and fp16 through `kiln test-onnx --device gpu`. The session asks
# each generated kernel for exactly the parameters its source states (runtime/kernel_header.h),
# so a clean run reports no API error either. racecheck takes about a minute on ResNet-50.
#
# usage: scripts/gpu-sanitize.sh BUILD_DIR OUT_DIR
# The node tests must have been generated (ctest's onnx_node_data fixture); a dev model missing
# from BUILD_DIR/models-work is exported first with $KILN_TORCH_PYTHON (default /usr/bin/python3).
# ctest runs it as gpu_sanitize (label gpu). Prints each run's summary line (racecheck: hazards;
# the others: errors); exits 1 when any reports a hazard or an error, or gives no summary, and 77
# (skipped) without a CUDA device or without compute-sanitizer.
set -uo pipefail
build=$1
out=$2
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
kiln="$build/bin/kiln"
work="$build/models-work"
nodes="$build/onnx_node_tests/node"
tools=(memcheck racecheck initcheck synccheck)
mkdir -p "$out"
status=0

if ! "$kiln" compile "$source_dir/examples/fashion_mnist_cnn.onnx" --arch native \
    -o "$out/device_probe.kiln" >"$out/device_probe.log" 2>&1; then
  if grep -q "no CUDA device" "$out/device_probe.log"; then
    echo "no CUDA device: skipped ($(grep -m1 "no CUDA device" "$out/device_probe.log"))"
    exit 77
  fi
  echo "compiling the example for this GPU failed (device_probe.log)"
  exit 1
fi
if ! command -v compute-sanitizer >/dev/null; then
  echo "compute-sanitizer not found (on PATH): skipped"
  exit 77
fi
for model in bert resnet50; do
  if [ ! -f "$work/$model.onnx" ]; then
    "${KILN_TORCH_PYTHON:-/usr/bin/python3}" "$source_dir/tests/models/export_models.py" "$work" \
      "$model" >"$out/export_$model.log" 2>&1 || { echo "exporting $model failed"; exit 1; }
  fi
done

# sanitize NAME COMMAND...: each tool over COMMAND, its log in $out/<tool>_NAME.log.
sanitize() {
  local name=$1
  shift
  for tool in "${tools[@]}"; do
    local log="$out/${tool}_${name}.log"
    compute-sanitizer --tool "$tool" "$@" >"$log" 2>&1
    local summary
    summary=$(grep -hE "RACECHECK SUMMARY|ERROR SUMMARY" "$log" | head -n 1)
    echo "$tool $name: ${summary:-no summary (see $log)}"
    [[ "$summary" == *"ERROR SUMMARY: 0 errors"* || "$summary" == *"SUMMARY: 0 hazards"* ]] ||
      status=1
  done
}

for run in bert:fp32 bert:fp16 resnet50:fp16; do
  model=${run%%:*}
  precision=${run#*:}
  inputs=()
  for file in "$work/$model"/inputs/*.npy; do inputs+=(--input "$(basename "$file" .npy)=$file"); done
  program="$out/${model}_${precision}.kiln"
  if ! "$kiln" compile "$work/$model.onnx" --arch native --precision "$precision" \
      -o "$program" >"$out/compile_${model}_${precision}.log" 2>&1; then
    echo "$model $precision: compile failed (compile_${model}_${precision}.log)"
    status=1
    continue
  fi
  sanitize "${model}_${precision}" "$kiln" run "$program" --device gpu "${inputs[@]}"
done

cases=()
for name in test_softmax_axis_1 test_matmul_2d test_conv_with_strides_padding \
    test_reduce_sum_default_axes_keepdims_random test_layer_normalization_4d_axis1 \
    test_gemm_default_matrix_bias test_maxpool_2d_pads test_attention_4d; do
  cases+=("$nodes/$name")
done
for precision in fp32 fp16; do
  sanitize "node_tests_${precision}" "$kiln" test-onnx "${cases[@]}" --device gpu \
    --precision "$precision" -q
done
exit $status
