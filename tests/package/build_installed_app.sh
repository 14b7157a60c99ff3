#!/usr/bin/env bash
# ctest example_installed_package: installs the build tree into a temporary prefix, builds
# examples/installed_app against it with find_package(kiln) as an application outside the tree
# would, and runs that build's compile_and_run on the bundled example model (CPU reference; the
# GPU run when a device is present) and its run_kiln on the program it wrote. The temporary
# directory is removed afterwards, also on failure.
#
#   usage: build_installed_app.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln_package_test_XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/kiln/kilnConfig.cmake"
test -f "$work/prefix/include/kiln/kiln/kiln.h"
cmake -S "$source/examples/installed_app" -B "$work/app" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/app" -j2 >"$work/build.log"
"$work/app/compile_and_run" "$source/examples/fashion_mnist_cnn.onnx" "$work/example.kiln" \
  --input-shape image=2x1x28x28 | tee "$work/run.log"
grep -q "CPU reference ran" "$work/run.log"
status=0
"$work/app/run_kiln" "$work/example.kiln" 2>&1 | tee "$work/run_kiln.log" || status=$?
# Without a GPU it must refuse for that reason alone (exit 2, "no CUDA device").
test "$status" -eq 0 || { test "$status" -eq 2 && grep -q "no CUDA device" "$work/run_kiln.log"; }
echo "example_installed_package: ok"
