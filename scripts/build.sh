#!/usr/bin/env bash
# Configures and builds kiln into build/ (the CLI lands at build/bin/kiln).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${KILN_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build build -j"$(nproc)"
