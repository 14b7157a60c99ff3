"""kiln.run_reference (the CPU oracle) against numpy, and kiln.dump_ir's stages and formats;
neither needs a GPU."""

import json

import numpy
import pytest

import kiln


def test_reference_matches_numpy(linear_relu_model):
    model, w, b = linear_relu_model
    x = numpy.random.default_rng(1).standard_normal((5, 4)).astype(numpy.float32)
    got = kiln.run_reference(model, {"x": x})
    assert list(got) == ["y"]
    numpy.testing.assert_allclose(got["y"], numpy.maximum(x @ w + b, 0), rtol=1e-6, atol=1e-6)


def test_reference_fused_stage_agrees(linear_relu_model):
    model, _, _ = linear_relu_model
    x = numpy.random.default_rng(2).standard_normal((3, 4)).astype(numpy.float32)
    imported = kiln.run_reference(model, {"x": x})["y"]
    fused = kiln.run_reference(model, {"x": x}, stage="fused")["y"]
    numpy.testing.assert_allclose(fused, imported, rtol=1e-6, atol=1e-6)


def test_reference_classifies_example_image(mnist_model, mnist_image):
    probabilities = kiln.run_reference(mnist_model, {"image": mnist_image})["probabilities"]
    assert probabilities.shape == (1, 10)
    assert int(numpy.argmax(probabilities)) == 9  # Ankle boot (examples/test_images/labels.json)


def test_dump_ir_stages(mnist_model):
    shapes = {"image": (1, 1, 28, 28)}
    imported = kiln.dump_ir(mnist_model, stage="imported", input_shapes=shapes)
    fused = kiln.dump_ir(mnist_model, stage="fused", input_shapes=shapes)
    assert "conv" in imported and "fusion." not in imported
    assert "fusion." in fused
    summary = json.loads(kiln.dump_ir(mnist_model, format="json", input_shapes=shapes))
    assert summary["kernels"]["total"] > 0
    assert kiln.dump_ir(mnist_model, format="dot", input_shapes=shapes).startswith("digraph")


def test_dump_ir_precision(linear_relu_model):
    model, _, _ = linear_relu_model
    text = kiln.dump_ir(model, precision="fp16", input_shapes={"x": (2, 4)})
    assert "f16" in text
