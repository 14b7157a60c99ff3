#!/usr/bin/env bash
# The SASS of each kernel kiln generates for a graph, without a GPU: `kiln compile --emit-cuda`,
# each kernel's CUDA compiled by nvcc to a cubin for ARCH, disassembled by cuobjdump; prints each
# kernel's tactic, registers and spills, instruction count and its most frequent opcodes.
# cuobjdump is not in the CUDA toolkit this machine has: `pip download nvidia-cuda-cuobjdump
# --no-deps` and unzip the wheel, then point CUOBJDUMP at its bin/cuobjdump.
#
# usage: scripts/kernel-sass.sh GRAPH OUT_DIR [kiln compile flags, e.g. --precision fp16
#        --io-precision fp16 --tactic "128 query rows"]
# Environment: KILN (default build/bin/kiln), ARCH (default sm_90a), NVCC (default
# /usr/local/cuda/bin/nvcc), CUOBJDUMP (default cuobjdump on PATH). OUT_DIR/<kernel>.sass holds
# each listing.
set -euo pipefail
graph=$1
out=$2
shift 2
kiln=${KILN:-build/bin/kiln}
arch=${ARCH:-sm_90a}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuobjdump=${CUOBJDUMP:-cuobjdump}
command -v "$cuobjdump" > /dev/null || { echo "no cuobjdump (set CUOBJDUMP; see the header)" >&2; exit 2; }
mkdir -p "$out"
rm -rf "$out/cu"
if ! "$kiln" compile "$graph" --arch "$arch" -o "$out/program.kiln" --emit-cuda "$out/cu" "$@" \
    > "$out/compile.log" 2>&1; then
  cat "$out/compile.log" >&2
  exit 2
fi
for source in "$out"/cu/*.cu; do
  kernel=$(basename "$source" .cu)
  echo "== $kernel"
  sed -n 2p "$source"
  "$nvcc" -arch="$arch" -cubin -O3 -Xptxas -v -o "$out/$kernel.cubin" "$source" 2>&1 |
    grep -E "registers|spill" | sed 's/^ *//;s/ptxas info *: //'
  "$cuobjdump" -sass "$out/$kernel.cubin" > "$out/$kernel.sass"
  grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] +)?[A-Z0-9_]+' "$out/$kernel.sass" |
    awk '{print $NF}' | sort | uniq -c | sort -rn |
    awk '{total += $1; top[NR] = $2 " " $1} END {printf "%d instructions:", total;
         for (i = 1; i <= 12 && i <= NR; ++i) printf " %s", top[i]; print ""}'
done
