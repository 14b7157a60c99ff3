"""kiln's C++ errors as Python exceptions with the library's messages, argument checks, the
version, and running without a GPU ("no CUDA device ...")."""

import pathlib
import re

import numpy
import pytest

import kiln

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_cmake_project_version():
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert kiln.__version__ == re.search(r"project\(kiln VERSION ([0-9.]+)", cmake).group(1)


def test_hierarchy():
    assert issubclass(kiln.InputError, ValueError)
    assert issubclass(kiln.UnsupportedError, kiln.InputError)
    assert issubclass(kiln.InternalError, RuntimeError)
    for error in (kiln.InputError, kiln.UnsupportedError, kiln.InternalError):
        assert issubclass(error, kiln.KilnError)


def test_missing_file(tmp_path):
    missing = tmp_path / "nothing.onnx"
    with pytest.raises(kiln.InputError, match=re.escape(str(missing))):
        kiln.dump_ir(missing)


def test_unknown_model_type(tmp_path):
    with pytest.raises(kiln.InputError, match="unknown model type"):
        kiln.dump_ir(tmp_path / "model.txt")


def test_bad_options(mnist_model):
    with pytest.raises(kiln.InputError, match="precision"):
        kiln.dump_ir(mnist_model, precision="fp8")
    with pytest.raises(kiln.InputError, match="stage"):
        kiln.dump_ir(mnist_model, stage="lowered")
    with pytest.raises(kiln.InputError, match="sm_12"):
        kiln.compile(mnist_model, arch="sm_12", input_shapes={"image": (1, 1, 28, 28)})
    with pytest.raises(TypeError, match="model: expected a path"):
        kiln.dump_ir(42)


def test_unsupported_op():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Bernoulli", ["x"], ["y"])], "random",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(kiln.UnsupportedError, match="Bernoulli"):
        kiln.dump_ir(model)


def test_reference_input_errors(mnist_model, mnist_image):
    with pytest.raises(kiln.InputError, match="no array for the model's input 'image'"):
        kiln.run_reference(mnist_model, {})
    with pytest.raises(kiln.InputError, match="has no input 'label'"):
        kiln.run_reference(mnist_model, {"image": mnist_image, "label": mnist_image})
    with pytest.raises(kiln.InputError, match="complex64"):
        kiln.run_reference(mnist_model, {"image": mnist_image.astype(numpy.complex64)})


def test_load_rejects_a_non_program(tmp_path):
    path = tmp_path / "bad.kiln"
    path.write_bytes(b"not a kiln program")
    with pytest.raises(kiln.InputError, match=re.escape(str(path))):
        kiln.load(path)


def test_run_without_gpu(mnist_model, mnist_image, kiln_cache):
    if kiln.cuda_device_error() is None:
        pytest.skip("a CUDA device is present")
    exe = kiln.compile(mnist_model, arch="sm_80", input_shapes={"image": (1, 1, 28, 28)},
                       cache_dir=kiln_cache)
    with pytest.raises(kiln.UnsupportedError, match="^no CUDA device"):
        exe(mnist_image)
    with pytest.raises(kiln.UnsupportedError, match="no CUDA device"):
        exe.bench(devices="all")
    with pytest.raises(kiln.InputError, match="no CUDA device"):
        kiln.compile(mnist_model, arch="native", input_shapes={"image": (1, 1, 28, 28)})


def test_wrong_input_count(mnist_model, mnist_image, kiln_cache):
    exe = kiln.compile(mnist_model, arch="sm_80", input_shapes={"image": (1, 1, 28, 28)},
                       cache_dir=kiln_cache)
    with pytest.raises(ValueError, match=r"expected 1 inputs \['image'\], got 2"):
        exe(mnist_image, mnist_image)
    with pytest.raises(ValueError, match="no input named 'x'"):
        exe.run({"x": mnist_image})
