#!/usr/bin/env bash
# ctest python_pip_install: `pip install` of the kiln package the fast way, against this build:
# the build tree is installed into a temporary prefix (cmake --install), then pip builds only
# the module (python/ as the CMake project, find_package(kiln) from that prefix) without build
# isolation or network, into a temporary target directory, which must then import and work: the
# example model on the CPU reference, and with a CUDA device on the GPU too.
# A plain `pip install .` builds kiln's libraries again (minutes); docs/PYTHON.md.
#
#   usage: pip_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
python=$3
# Without pip or scikit-build-core (the GPU host has neither) there is nothing to test: skipped.
if ! "$python" -c "import pip, scikit_build_core" 2>/dev/null; then
  echo "python_pip_install skipped: pip or scikit-build-core missing for $python"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln_pip_test_XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
"$python" -m pip install --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  --target "$work/site" -C cmake.source-dir=python -C build-dir="$work/build" \
  -C cmake.define.CMAKE_PREFIX_PATH="$work/prefix" "$source" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; exit 1; }
cd "$work"
PYTHONPATH="$work/site" "$python" - "$source" <<'PY'
import pathlib, sys
import numpy
import kiln
source = pathlib.Path(sys.argv[1])
assert pathlib.Path(kiln.__file__).is_relative_to(pathlib.Path.cwd() / "site"), kiln.__file__
model = source / "examples" / "fashion_mnist_cnn.onnx"
image = numpy.load(source / "examples" / "test_images" / "image_0.npy")
probabilities = kiln.run_reference(model, {"image": image})["probabilities"]
assert int(numpy.argmax(probabilities)) == 9, probabilities
exe = kiln.compile(model, arch="sm_80", input_shapes={"image": image.shape},
                   cache_dir=str(pathlib.Path.cwd() / "cache"))
assert exe.inputs == [("image", (1, 1, 28, 28), "float32")], exe.inputs
assert (pathlib.Path(kiln.__file__).parent / "py.typed").exists()
where = "the CPU reference"
if kiln.cuda_device_error() is None:  # with a GPU, the installed package runs the model there
    gpu = kiln.compile(model, input_shapes={"image": image.shape},
                       cache_dir=str(pathlib.Path.cwd() / "cache"))
    got = gpu(image)
    numpy.testing.assert_allclose(got, probabilities, rtol=1e-3, atol=1e-4)
    where += " and the GPU"
print(f"python_pip_install: kiln {kiln.__version__} installed and ran on {where}")
PY
