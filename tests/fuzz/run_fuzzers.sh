#!/usr/bin/env bash
# Builds kiln's libFuzzer targets with clang (ASan + UBSan) in BUILD_DIR and runs each for at
# most SECONDS on its seed corpus: the ONNX loader, the IR text parser and the .kiln reader. Any
# crash, sanitizer report or exception other than kiln::InputError fails the run. The seed and the
# number of runs are fixed, so a CI run repeats what passed here (longer exploratory runs: see
# tests/fuzz/).
#
# usage: run_fuzzers.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
source_dir=$1
build_dir=$2
seconds=$3

clang_cxx=$(command -v clang++ || command -v clang++-14 || true)
clang_c=$(command -v clang || command -v clang-14 || true)
if [ -z "$clang_cxx" ]; then
  echo "run_fuzzers: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
# -O1 with line tables only: the sanitizers' reports keep their file:line, and the clang build
# (most of this test's time in CI, on 2 cores) takes less than RelWithDebInfo's -O2 -g. A unity
# build (each library's sources compiled a batch at a time): 80 s of compile CPU instead of 135
# on CI's kind of machine. Two files' internal helpers of one name and signature then clash
# ("redefinition of ..." in a unity_N_cxx.cxx): share one helper, or rename one.
CC=$clang_c CXX=$clang_cxx cmake -S "$source_dir" -B "$build_dir" -G Ninja -DKILN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target fuzz_onnx_loader fuzz_ir_parser \
  fuzz_program_reader
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for pair in fuzz_onnx_loader:corpus_onnx fuzz_ir_parser:corpus_ir fuzz_program_reader:corpus_kiln; do
  fuzzer=${pair%%:*}
  corpus=${pair##*:}
  work="$build_dir/work_$fuzzer"
  mkdir -p "$work"
  echo "run_fuzzers: $fuzzer for $seconds s"
  "$build_dir/bin/$fuzzer" -seed=1 -runs=1000000 -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 "$work" "$source_dir/tests/fuzz/$corpus" 2>&1 | tail -n 25
done
echo "run_fuzzers: no crash, sanitizer report or unexpected exception"
