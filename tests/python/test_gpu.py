"""Runs on a GPU (marked gpu; skipped with kiln's reason without a device): numpy in and out
against the CPU reference, torch CUDA tensors zero-copy (outputs allocated by torch on the
input's device), 16-bit precisions, save/load and run, bench (on one and on every device), a
dynamic program at every batch of its range, a gather index out of range reported."""

import numpy
import pytest

import kiln

pytestmark = pytest.mark.gpu

SHAPES = {"image": (4, 1, 28, 28)}


@pytest.fixture(scope="module")
def images():
    return numpy.random.default_rng(7).standard_normal(SHAPES["image"]).astype(numpy.float32)


@pytest.fixture(scope="module")
def expected(mnist_model, images):
    return kiln.run_reference(mnist_model, {"image": images})["probabilities"]


@pytest.fixture(scope="module")
def exe(mnist_model, kiln_cache):
    return kiln.compile(mnist_model, arch="native", input_shapes=SHAPES, cache_dir=kiln_cache)


def cosine(a, b):
    a, b = numpy.ravel(a).astype(numpy.float64), numpy.ravel(b).astype(numpy.float64)
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


def test_numpy_matches_reference(exe, images, expected):
    got = exe(images)
    assert isinstance(got, numpy.ndarray) and got.dtype == numpy.float32
    numpy.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)
    assert "sm_" in exe.device


def test_run_dict(exe, images, expected):
    got = exe.run({"image": images})
    numpy.testing.assert_allclose(got["probabilities"], expected, rtol=1e-3, atol=1e-4)


def test_torch_cuda_zero_copy(exe, mnist_model, images, expected):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(images).cuda()
    y = exe(x)
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.dtype == torch.float32
    numpy.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-3, atol=1e-4)
    produced = torch.from_numpy(images).cuda() * 2  # pending work on torch's stream
    doubled = exe(produced)
    want = kiln.run_reference(mnist_model, {"image": images * 2})["probabilities"]
    numpy.testing.assert_allclose(doubled.cpu().numpy(), want, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match=r"expected float32\[4, 1, 28, 28\], got float64"):
        exe(x.double())


def test_torch_cpu_gives_torch(exe, images, expected):
    torch = pytest.importorskip("torch")
    y = exe(torch.from_numpy(images))
    assert isinstance(y, torch.Tensor) and y.device.type == "cpu"
    numpy.testing.assert_allclose(y.numpy(), expected, rtol=1e-3, atol=1e-4)


def test_misaligned_device_input_is_refused(exe, images):
    torch = pytest.importorskip("torch")
    flat = torch.zeros(images.size + 1, device="cuda")
    view = flat[1:].view(SHAPES["image"])
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        exe(view)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_16_bit(mnist_model, kiln_cache, images, expected, precision):
    exe = kiln.compile(mnist_model, arch="native", precision=precision, input_shapes=SHAPES,
                       cache_dir=kiln_cache)
    assert cosine(exe(images), expected) > 0.999


def test_bf16_io_with_torch(mnist_model, kiln_cache, images, expected):
    torch = pytest.importorskip("torch")
    exe = kiln.compile(mnist_model, arch="native", precision="bf16", io_precision="bf16",
                       input_shapes=SHAPES, cache_dir=kiln_cache)
    y = exe(torch.from_numpy(images).cuda().to(torch.bfloat16))
    assert y.dtype == torch.bfloat16
    assert cosine(y.float().cpu().numpy(), expected) > 0.99
    with pytest.raises(kiln.InputError, match="bf16, which numpy lacks"):
        exe(images)


def test_save_load_run(exe, images, expected, tmp_path):
    exe.save(tmp_path / "m.kiln")
    got = kiln.load(tmp_path / "m.kiln")(images)
    numpy.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)


def test_bench(exe, images):
    result = exe.bench([images], iterations=20, warmup=2)
    assert result["median_ms"] > 0 and result["p90_ms"] >= result["min_ms"]
    assert result["iterations"] == 20


def test_bench_on_every_device(exe, images):
    """Data-parallel replicas on every GPU (one on a one-GPU host), as kiln bench --devices."""
    result = exe.bench([images], iterations=20, warmup=2, devices="all")
    assert [d["device"] for d in result["devices"]] == list(range(len(result["devices"])))
    assert all(d["median_ms"] > 0 and "sm_" in d["description"] for d in result["devices"])
    assert result["batch"] == SHAPES["image"][0] and result["iterations"] == 20
    assert result["inferences_per_s"] > 0 and result["one_device_inferences_per_s"] > 0
    assert result["scaling"] == pytest.approx(
        result["inferences_per_s"] / result["one_device_inferences_per_s"])
    with pytest.raises(kiln.InputError, match="devices: .*0.* twice"):
        exe.bench(devices="0,0")


def test_cupy(exe, images, expected):
    cupy = pytest.importorskip("cupy")
    y = exe(cupy.asarray(images))
    assert isinstance(y, cupy.ndarray)
    numpy.testing.assert_allclose(cupy.asnumpy(y), expected, rtol=1e-3, atol=1e-4)


def test_dynamic_program_runs_every_batch(linear_relu_model, kiln_cache):
    model, w, b = linear_relu_model
    dyn = kiln.compile(model, arch="native", input_shapes={"x": (range(1, 7), 4)},
                       cache_dir=kiln_cache)
    rng = numpy.random.default_rng(3)
    for batch in (5, 1, 3, 6, 2, 4):
        x = rng.standard_normal((batch, 4)).astype(numpy.float32)
        y = dyn(x)
        assert y.shape == (batch, 3)
        numpy.testing.assert_allclose(y, numpy.maximum(x @ w + b, 0), rtol=1e-3, atol=1e-4)
    with pytest.raises(kiln.InputError, match="outside the compiled range 1..6"):
        dyn(numpy.zeros((7, 4), numpy.float32))


def test_out_of_range_gather_index_is_an_error(kiln_cache):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    table = numpy.arange(15, dtype=numpy.float32).reshape(5, 3)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0)], "gather",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(table, "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    exe = kiln.compile(model, arch="native", cache_dir=kiln_cache)
    with pytest.raises(kiln.InputError, match="index out of the range"):
        exe(numpy.array([1, 7], dtype=numpy.int64))
    # The check is cleared: a good run after it passes, negative indices count from the end.
    numpy.testing.assert_array_equal(exe(numpy.array([4, -5], dtype=numpy.int64)), table[[4, 0]])
