#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12 (run as root, or with sudo available):
# C++ libraries and tools from Debian (Graphviz renders dump-ir's DOT in a test), onnx/onnxruntime/
# numpy from PyPI for the default python3, with pybind11, scikit-build-core and pytest (the Python
# package is built from these, `pip install --no-build-isolation .`, and tested offline),
# and Debian's CPU PyTorch (for /usr/bin/python3) to export the test models.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

debian_packages=(
  build-essential cmake ninja-build git
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  llvm-14-tools clang-14 libclang-rt-14-dev
  graphviz
  python3-torch python3-torchvision
  dataset-fashion-mnist
)
missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# PyPI packages for the default python3 (the node tests come from this onnx version; pybind11
# and scikit-build-core build the Python package, pytest runs its tests).
python3 -m pip install -q --disable-pip-version-check \
  "onnx==1.23.2" "onnxruntime==1.32.0" "numpy>=1.26" \
  "pybind11==3.1.0" "scikit-build-core==1.1.0" "pytest>=8"
echo "install-deps: done"
