"""kiln.compile, kiln.load and the Executable's description without a GPU: explicit archs,
the signature, save/load round trips, inspect (the same text as `kiln inspect`), progress."""

import subprocess

import pytest

import kiln


@pytest.fixture(scope="module")
def mnist_exe(mnist_model, kiln_cache):
    return kiln.compile(mnist_model, arch="sm_80,sm_90", input_shapes={"image": (2, 1, 28, 28)},
                        cache_dir=kiln_cache)


def test_signature(mnist_exe):
    assert mnist_exe.inputs == [("image", (2, 1, 28, 28), "float32")]
    assert [(o.name, o.shape, o.dtype) for o in mnist_exe.outputs] == [
        ("probabilities", (2, 10), "float32")
    ]
    assert mnist_exe.archs == ["sm_80", "sm_90"]
    assert mnist_exe.kernel_count > 0


def test_save_load_roundtrip(mnist_exe, tmp_path):
    path = tmp_path / "mnist.kiln"
    mnist_exe.save(path)
    loaded = kiln.load(path)
    assert loaded.inputs == mnist_exe.inputs
    assert loaded.outputs == mnist_exe.outputs
    assert loaded.archs == mnist_exe.archs
    assert loaded.inspect() == mnist_exe.inspect()
    loaded.save(tmp_path / "again.kiln")
    assert (tmp_path / "again.kiln").read_bytes() == path.read_bytes()


def test_inspect_is_kiln_inspect(mnist_exe, tmp_path, kiln_binary):
    report = mnist_exe.inspect()
    assert "sm_80" in report and "kernel" in report
    if kiln_binary is None:
        pytest.skip("KILN_BINARY not set: no kiln command to compare with")
    mnist_exe.save(tmp_path / "m.kiln")
    printed = subprocess.run([kiln_binary, "inspect", str(tmp_path / "m.kiln")],
                             check=True, capture_output=True, text=True).stdout
    assert printed == report


def test_model_proto_fp16_and_io_precision(linear_relu_model, kiln_cache):
    model, _, _ = linear_relu_model
    exe = kiln.compile(model, precision="fp16", arch=["sm_90"], input_shapes={"x": [8, 4]},
                       cache_dir=kiln_cache)
    assert exe.inputs == [("x", (8, 4), "float32")]
    assert exe.archs == ["sm_90"]
    half = kiln.compile(model.SerializeToString(), precision="fp16", io_precision="fp16",
                        arch="sm_80", input_shapes={"x": [8, 4]}, cache_dir=kiln_cache)
    assert half.inputs == [("x", (8, 4), "float16")]
    assert half.outputs == [("y", (8, 3), "float16")]


def test_unfused_has_more_kernels(mnist_model, kiln_cache):
    shapes = {"image": (1, 1, 28, 28)}
    fused = kiln.compile(mnist_model, arch="sm_80", input_shapes=shapes, cache_dir=kiln_cache)
    unfused = kiln.compile(mnist_model, arch="sm_80", input_shapes=shapes, fusion=False,
                           cache_dir=kiln_cache)
    assert unfused.kernel_count > fused.kernel_count


CONCAT_GRAPH = """graph @block(%x: f32[1,8,4,4], %a: f32[8,8,1,1], %b: f32[8,8,1,1]) -> (f32[1,16,2,2]) {
  %p = conv(%x, %a) {dilations=[1, 1], group=1, pads=[0, 0, 0, 0], strides=[1, 1]} : f32[1,8,4,4]
  %q = conv(%x, %b) {dilations=[1, 1], group=1, pads=[0, 0, 0, 0], strides=[1, 1]} : f32[1,8,4,4]
  %c = concat(%p, %q) {axis=1} : f32[1,16,4,4]
  %y = max_pool(%c) {kernel_shape=[2, 2], strides=[2, 2]} : f32[1,16,2,2]
  return %y
}
"""


def test_concat_views_leave_no_concat_kernel(kiln_cache, tmp_path):
    path = tmp_path / "block.kir"
    path.write_text(CONCAT_GRAPH)
    views = kiln.compile(str(path), arch="sm_80", cache_dir=kiln_cache)
    copies = kiln.compile(str(path), arch="sm_80", cache_dir=kiln_cache, concat_views=False)
    def steps(exe):  # the kernel column of inspect's steps table
        table = exe.inspect().split("\nsteps\n")[1].split("\nbuffers")[0]
        return [line.split()[1] for line in table.strip().splitlines()[1:]]

    assert not any(kernel.startswith("concat") for kernel in steps(views))
    assert [kernel for kernel in steps(copies) if kernel.startswith("concat")]
    assert len(steps(copies)) == len(steps(views)) + 1


def test_progress_reaches_total(mnist_model, kiln_cache):
    calls = []
    kiln.compile(mnist_model, arch="sm_80", input_shapes={"image": (1, 1, 28, 28)},
                 cache_dir=kiln_cache, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1]


def test_progress_error_is_raised(mnist_model, kiln_cache):
    def stop(done, total):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        kiln.compile(mnist_model, arch="sm_80", input_shapes={"image": (1, 1, 28, 28)},
                     cache_dir=kiln_cache, progress=stop)


def test_defaulted_dims_warn(mnist_model, kiln_cache):
    with pytest.warns(UserWarning, match="input 'image' has symbolic dimensions"):
        exe = kiln.compile(mnist_model, arch="sm_80", cache_dir=kiln_cache)
    assert exe.inputs[0].shape == (1, 1, 28, 28)


def test_dynamic_program_from_ranges(linear_relu_model, kiln_cache, tmp_path, kiln_binary):
    model, _, _ = linear_relu_model
    dyn = kiln.compile(model, arch="sm_90", input_shapes={"x": (range(1, 7), 4)},
                       cache_dir=kiln_cache)
    assert isinstance(dyn, kiln.DynamicExecutable)
    assert dyn.ranges == [("x", 0, 1, 6, True)]
    assert [shapes[0] for shapes in dyn.variants] == [(1, 4), (2, 4), (4, 4), (6, 4)]
    assert dyn.inputs == [("x", (6, 4), "float32")]
    assert "dynamic program: 4 variants" in dyn.inspect()
    dyn.save(tmp_path / "dyn.kiln")
    loaded = kiln.load(tmp_path / "dyn.kiln")
    assert isinstance(loaded, kiln.DynamicExecutable)
    assert loaded.variants == dyn.variants and loaded.inspect() == dyn.inspect()
    if kiln_binary is not None:
        printed = subprocess.run([kiln_binary, "inspect", str(tmp_path / "dyn.kiln")],
                                 check=True, capture_output=True, text=True).stdout
        assert printed == dyn.inspect()
    # A string range and an opt shape: 3 gets a variant of its own.
    opt = kiln.compile(model, arch="sm_90", input_shapes={"x": ("2..6", 4)},
                       opt_shapes={"x": (3, 4)}, cache_dir=kiln_cache)
    assert [shapes[0] for shapes in opt.variants] == [(2, 4), (3, 4), (4, 4), (6, 4)]
    with pytest.raises(ValueError, match="step 1"):
        kiln.compile(model, arch="sm_90", input_shapes={"x": (range(1, 7, 2), 4)})
    with pytest.raises(kiln.InputError, match="range 0..4"):
        kiln.compile(model, arch="sm_90", input_shapes={"x": ("0..4", 4)})
