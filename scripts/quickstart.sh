#!/usr/bin/env bash
# README quick start (a): installs dependencies, builds kiln and runs its main job on the bundled
# example model: import, a short IR summary, then predictions on a few test images.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
examples/demo.sh
