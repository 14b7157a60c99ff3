#!/usr/bin/env bash
# README quick start (b): installs dependencies, builds kiln and runs the whole test suite.
# Ends with ctest's summary. Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec ctest --test-dir build -j"$(nproc)" --output-on-failure "$@"
