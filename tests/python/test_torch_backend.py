"""torch.compile(model, backend="kiln") (kiln/torch_backend.py). Without a GPU: every graph falls
back to eager PyTorch with a warning saying why (no CUDA device), and the result is eager's.
On a GPU (marked gpu): ResNet-50 and BERT-base in fp16 against eager (cosine >= 0.999), and a
graph with an op kiln refuses (Det) runs eagerly with a warning naming it."""

import warnings

import numpy
import pytest

pytestmark = pytest.mark.torch_backend
torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip(f"torch {torch.__version__} has no torch.compile", allow_module_level=True)

import kiln  # noqa: E402
import kiln.torch_backend  # noqa: E402,F401  (registers "kiln")


def cosine(a, b):
    a = a.detach().double().flatten().cpu().numpy()
    b = b.detach().double().flatten().cpu().numpy()
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


def compiled(model, **options):
    torch._dynamo.reset()
    return torch.compile(model, backend="kiln", dynamic=False, options=options)


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_backend_is_registered():
    assert "kiln" in torch._dynamo.list_backends(exclude_tags=())


def test_without_a_gpu_graphs_run_eagerly_with_the_reason(kiln_cache):
    if kiln.cuda_device_error() is None:
        pytest.skip("a CUDA device is present: the GPU tests cover this")
    torch.manual_seed(0)
    model = SmallNet().eval()
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = compiled(model, cache_dir=kiln_cache)(x)
    reasons = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert reasons and "no CUDA device" in reasons[0], reasons
    assert "runs as eager PyTorch" in reasons[0]
    torch.testing.assert_close(got, model(x))


def test_parameters_and_buffers_are_baked_in_and_inputs_are_not():
    """BatchNorm's running statistics come to the backend as graph inputs like the image; they
    are weights (BatchNorm folds into the convolution only then), the image is not."""
    from kiln.torch_backend import _weight_positions

    seen = {}

    def recording_backend(graph, example_inputs):
        names = [node.name for node in graph.graph.nodes if node.op == "placeholder"]
        seen["weights"] = {names[k] for k in _weight_positions(graph, example_inputs)}
        seen["all"] = set(names)
        return graph.forward

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()
    torch._dynamo.reset()
    torch.compile(model, backend=recording_backend, dynamic=False)(torch.randn(1, 3, 8, 8))
    activations = seen["all"] - seen["weights"]
    assert len(activations) == 1 and "args" in next(iter(activations)), seen
    assert any("running_mean" in name for name in seen["weights"]), seen
    assert len(seen["weights"]) == 6, seen  # conv weight, bias; BN weight, bias, mean, var


class Counter(torch.nn.Module):
    """A buffer written in forward, as a KV cache is: baked in, later calls would read it stale."""

    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(3))

    def forward(self, x):
        self.seen.add_(x.sum(0))
        return x * 2 + self.seen


def test_a_graph_writing_a_buffer_runs_eagerly():
    model = Counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        run = compiled(model, arch="sm_90")
        first = run(torch.ones(2, 3))
        second = run(torch.ones(2, 3))
    reasons = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert reasons and "in place" in reasons[0] and "runs as eager PyTorch" in reasons[0], reasons
    torch.testing.assert_close(first, torch.full((2, 3), 4.0))
    torch.testing.assert_close(second, torch.full((2, 3), 6.0))  # the buffer moved on


def test_an_inplace_op_on_an_input_runs_eagerly():
    def halve_in_place(x):
        return torch.nn.functional.relu(x, inplace=True) * 0.5

    x = torch.tensor([[-1.0, 2.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        got = torch.compile(halve_in_place, backend="kiln", dynamic=False,
                            options={"arch": "sm_90"})(x)
    reasons = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert reasons and "in place" in reasons[0], reasons
    torch.testing.assert_close(x, torch.tensor([[0.0, 2.0]]))  # the caller's tensor was written
    torch.testing.assert_close(got, torch.tensor([[0.0, 1.0]]))


def test_batch_norm_in_training_mode_runs_eagerly():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).train()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        compiled(model, arch="sm_90")(torch.randn(2, 3, 8, 8))
    reasons = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    # Caught by its counter's add_ (or, without one, by batch_norm's training flag).
    assert reasons and ("in place" in reasons[0] or "training mode" in reasons[0]), reasons
    assert int(model[1].num_batches_tracked) == 1  # eager updated the statistics


@pytest.mark.gpu
def test_small_net_on_the_gpu_matches_eager(kiln_cache):
    torch.manual_seed(0)
    model = SmallNet().eval().cuda()
    x = torch.randn(4, 3, 8, 8, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback
        with torch.no_grad():
            got = compiled(model, cache_dir=kiln_cache)(x)
    assert got.is_cuda
    torch.testing.assert_close(got, model(x), rtol=1e-3, atol=1e-4)


@pytest.mark.gpu
def test_resnet50_fp16_matches_eager(kiln_cache):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet50().eval().half().cuda()
    x = torch.randn(8, 3, 224, 224, device="cuda", dtype=torch.half)
    with torch.no_grad():
        want = model(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(model, precision="fp16", cache_dir=kiln_cache)(x)
    assert not [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert cosine(got, want) >= 0.999


@pytest.mark.gpu
def test_bert_fp16_matches_eager(kiln_cache):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig()).eval().half().cuda()
    ids = torch.randint(0, 30522, (4, 128), device="cuda")
    mask = torch.ones(4, 128, dtype=torch.int64, device="cuda")
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask).last_hidden_state
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(model, precision="fp16", cache_dir=kiln_cache)(
                input_ids=ids, attention_mask=mask).last_hidden_state
    fallbacks = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert not fallbacks, fallbacks
    assert cosine(got, want) >= 0.999


class MaskedAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(64, 3 * 64)

    def forward(self, x, keep):
        q, k, v = self.qkv(x).view(x.shape[0], x.shape[1], 3, 2, 32).permute(2, 0, 3, 1, 4)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)


@pytest.mark.gpu
def test_half_attention_with_a_boolean_mask_stays_half(kiln_cache):
    """TorchScript's export promotes a boolean mask's attention to fp32 (and BERT's LayerNorm
    with it); the backend hands it an additive mask in fp16, and masked keys get no weight."""
    torch.manual_seed(0)
    model = MaskedAttention().eval().half().cuda()
    x = torch.randn(2, 16, 64, device="cuda", dtype=torch.half)
    keep = torch.ones(2, 1, 16, 16, dtype=torch.bool, device="cuda")
    keep[0, :, :, 11:] = False  # key padding: sequence 0 has 11 tokens
    with torch.no_grad():
        want = model(x, keep)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(model, precision="fp16", cache_dir=kiln_cache)(x, keep)
    assert not [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert got.dtype == torch.half
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-3)


@pytest.mark.gpu
def test_a_refused_op_falls_back_naming_it(kiln_cache):
    def determinants(x):
        return torch.linalg.det(x * 2)  # ONNX Det, which kiln does not take

    x = torch.randn(4, 3, 3, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        got = torch.compile(determinants, backend="kiln", dynamic=False,
                            options={"cache_dir": kiln_cache})(x)
    reasons = [str(w.message) for w in caught if str(w.message).startswith("kiln:")]
    assert reasons and "Det" in reasons[0] and "runs as eager PyTorch" in reasons[0], reasons
    torch.testing.assert_close(got, determinants(x))
