"""Fixtures of kiln's Python tests: the repository's example model, a tiny ONNX model whose
result numpy computes, a kernel cache of the session's own, and the gpu marker (tests that need
a CUDA device; skipped with kiln's reason without one)."""

import os
import pathlib

import numpy
import pytest

import kiln

REPO = pathlib.Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")
    config.addinivalue_line("markers", "torch_backend: torch.compile(backend='kiln'), run by "
                                       "ctest in a process of its own (python_torch_backend)")


def pytest_collection_modifyitems(config, items):
    reason = kiln.cuda_device_error()
    if reason is None:
        return
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def mnist_model():
    return str(REPO / "examples" / "fashion_mnist_cnn.onnx")


@pytest.fixture(scope="session")
def mnist_image():
    return numpy.load(REPO / "examples" / "test_images" / "image_0.npy")


@pytest.fixture(scope="session")
def kiln_cache(tmp_path_factory):
    """A kernel cache for this run alone (compiles stay hermetic, repeats hit it)."""
    return str(tmp_path_factory.mktemp("kiln_cache"))


@pytest.fixture(scope="session")
def linear_relu_model():
    """y = relu(x @ w + b) with x: f32[batch, 4] (batch symbolic), as an onnx.ModelProto, with
    its weights; numpy computes the expected result."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = numpy.random.default_rng(13)
    w = rng.standard_normal((4, 3)).astype(numpy.float32)
    b = rng.standard_normal((3,)).astype(numpy.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["xwb"]),
            helper.make_node("Relu", ["xwb"], ["y"]),
        ],
        "linear_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, w, b


@pytest.fixture(scope="session")
def kiln_binary():
    """The kiln command of the same build (ctest sets KILN_BINARY), or None."""
    path = os.environ.get("KILN_BINARY")
    return path if path and os.path.exists(path) else None
