#!/bin/bash
# The tiled attention kernels on the GPU host, in one device run (about 5 minutes):
#   bash bench/attention_gpu.sh            (from the repository root; logs under $OUT)
# builds kiln, then `kiln bench` (unfused vs fused, each checked against the CPU reference:
# cosine, max error; median of 50 CUDA-graph replays) in fp16, bf16 and fp32 on BERT-base's
# attention alone (bench/attention_bert_base.kir), the emulation-test graphs
# (tests/codegen/emulation/*.kir), and the dev models (tests/models/export_models.py bert vit);
# then bench/models.py for BERT-base and ViT-B/16 at batch 1 and 32 (no torch.compile), each
# bounded so that the run ends within the device tool's limit.
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/attention_gpu}
mkdir -p "$OUT"
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 &&
  cmake --build build-gpu -j16 --target kiln >"$OUT/build.log" 2>&1 || {
  tail -40 "$OUT/build.log"
  exit 1
}
echo "built in $(elapsed) s"
kiln=build-gpu/bin/kiln
for graph in bench/attention_bert_base.kir tests/codegen/emulation/*.kir; do
  for precision in fp16 bf16 fp32; do
    $kiln bench "$graph" --precision $precision --iters 50 --warmup 10 2>>"$OUT/stderr.log"
  done
done | tee "$OUT/graphs.txt"
python3 tests/models/export_models.py /tmp/attention_models bert vit >"$OUT/export.log" 2>&1 ||
  tail -5 "$OUT/export.log"
for model in bert vit; do
  for precision in fp16 bf16 fp32; do
    $kiln bench /tmp/attention_models/$model.onnx --precision $precision --iters 50 --warmup 10 \
      2>>"$OUT/stderr.log"
  done
done | tee "$OUT/dev_models.txt"
echo "graphs and dev models in $(elapsed) s"
for model in bert vit; do
  left=$((400 - $(elapsed)))
  [ $left -gt 30 ] || break
  timeout $left python3 bench/models.py $kiln "$OUT/$model" --models $model --batches 1,32 \
    --no-compile --iters 30 --warmup 5 >"$OUT/$model.txt" 2>&1
  echo "$model: exit $? at $(elapsed) s"
  grep -A3 "median ms" "$OUT/$model.txt"
  rm -f "$OUT/$model"/*.onnx*
done
