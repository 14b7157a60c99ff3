#!/usr/bin/env bash
# Runs compute-sanitizer's racecheck and synccheck over kiln's attention, reduction, pooling and
# contraction kernels on the GPU host: the BERT-style encoder in fp32 and fp16 (tiled attention,
# layer norm rows, SIMT, tensor-core and split-K gemms) and ResNet-50 in fp16 (tensor-core
# implicit-GEMM convolutions with cp.async pipelines, pooling, the global-average reduction), from
# the model tests' work directory, compiled for this GPU and run once by `kiln run` (racecheck
# takes about a minute on ResNet-50). API errors are not reported (--report-api-errors no: the session's probe of each
# kernel's parameter count provokes one per kernel; the hardening issue removes it).
#
# usage: scripts/gpu-sanitize.sh BUILD_DIR OUT_DIR     (after ctest -L gpu exported the models)
# Prints each run's summary line (racecheck: hazards; synccheck: errors); exits 1 when any reports
# a hazard or an error, or gives no summary.
set -uo pipefail
build=$1
out=$2
kiln="$build/bin/kiln"
work="$build/models-work"
mkdir -p "$out"
status=0
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
  for tool in racecheck synccheck; do
    log="$out/${tool}_${model}_${precision}.log"
    compute-sanitizer --tool "$tool" --report-api-errors no "$kiln" run "$program" \
      --device gpu "${inputs[@]}" >"$log" 2>&1
    summary=$(grep -hE "RACECHECK SUMMARY|ERROR SUMMARY" "$log" | head -n 1)
    echo "$tool $model $precision: ${summary:-no summary (see $log)}"
    [[ "$summary" == *"ERROR SUMMARY: 0 errors"* || "$summary" == *"SUMMARY: 0 hazards"* ]] ||
      status=1
  done
done
exit $status
