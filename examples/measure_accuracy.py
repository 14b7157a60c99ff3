#!/usr/bin/env python3
"""Measures the example model's Fashion-MNIST accuracy through kiln and checks it against PyTorch.

Run with the interpreter that has numpy, from anywhere:
    python3 examples/measure_accuracy.py --kiln build/bin/kiln [--work-dir DIR]

Normalizes the 1000 committed test images the way training did (examples/fashion_mnist.json),
classifies all of them with ONE `kiln run` (batch 1000 via --input-shape), and compares the
accuracy with the one PyTorch measured on the same images at training time. Exit status 1 when
they differ by more than --max-difference percentage points (default 0.5).

With --precisions fp16 bf16, it classifies the images again with `kiln run --precision P` for
each, and also fails when one of those accuracies is more than --max-difference points below
kiln's fp32 accuracy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

EXAMPLES_DIR = os.path.dirname(os.path.abspath(__file__))


def normalized_images(config):
    images = np.load(os.path.join(EXAMPLES_DIR, "fashion_mnist_test_1000_images.npy"))
    pixels = images.astype(np.float32) / np.float32(255.0)
    normalized = (pixels - np.float32(config["pixel_mean"])) / np.float32(config["pixel_std"])
    return np.ascontiguousarray(normalized[:, None, :, :])


def classify_with_kiln(kiln, images, work_dir, precision="fp32"):
    input_path = os.path.join(work_dir, "images.npy")
    output_dir = os.path.join(work_dir, "got" if precision == "fp32" else f"got_{precision}")
    np.save(input_path, images)
    shape = "x".join(str(d) for d in images.shape)
    command = [kiln, "run", os.path.join(EXAMPLES_DIR, "fashion_mnist_cnn.onnx"),
               "--device", "cpu", "--input", f"image={input_path}",
               "--input-shape", f"image={shape}", "--output-dir", output_dir]
    if precision != "fp32":
        command += ["--precision", precision]
    print(f"$ {' '.join(command)}", flush=True)
    start = time.time()
    result = subprocess.run(command)
    seconds = time.time() - start
    if result.returncode != 0:
        sys.exit(f"measure_accuracy: kiln run failed (exit status {result.returncode})")
    probabilities = np.load(os.path.join(output_dir, "probabilities.npy"))
    if probabilities.shape != (len(images), 10):
        sys.exit(f"measure_accuracy: kiln's probabilities have shape {list(probabilities.shape)},"
                 f" expected {[len(images), 10]}")
    return probabilities, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", required=True, help="the kiln binary")
    parser.add_argument("--work-dir", help="where to put the batch and kiln's output "
                                           "(default: a temporary directory)")
    parser.add_argument("--max-difference", type=float, default=0.5,
                        help="allowed accuracy difference, in percentage points")
    parser.add_argument("--precisions", nargs="*", default=[], choices=["tf32", "fp16", "bf16"],
                        help="also classify with kiln run --precision P; each accuracy may be at "
                             "most --max-difference points below kiln's fp32 accuracy")
    args = parser.parse_args()

    with open(os.path.join(EXAMPLES_DIR, "fashion_mnist.json")) as f:
        config = json.load(f)
    labels = np.load(os.path.join(EXAMPLES_DIR, "fashion_mnist_test_1000_labels.npy"))
    images = normalized_images(config)

    with tempfile.TemporaryDirectory() as temporary:
        work_dir = args.work_dir or temporary
        os.makedirs(work_dir, exist_ok=True)
        probabilities, seconds = classify_with_kiln(args.kiln, images, work_dir)
        low_precision = {precision: classify_with_kiln(args.kiln, images, work_dir, precision)
                         for precision in args.precisions}

    def accuracy(probabilities):
        return 100.0 * float(np.mean(probabilities.argmax(axis=1) == labels))

    kiln_accuracy = accuracy(probabilities)
    pytorch_accuracy = 100.0 * config["pytorch_accuracy_first_1000"]
    difference = kiln_accuracy - pytorch_accuracy
    print(f"kiln run over {len(images)} images: {seconds:.2f} s")
    print(f"accuracy: kiln {kiln_accuracy:.1f}%, PyTorch at training time {pytorch_accuracy:.1f}% "
          f"(difference {difference:+.1f} points, allowed {args.max_difference})")
    ok = abs(difference) <= args.max_difference
    for precision, (precision_probabilities, precision_seconds) in low_precision.items():
        precision_accuracy = accuracy(precision_probabilities)
        drop = kiln_accuracy - precision_accuracy
        agreement = 100.0 * float(np.mean(
            precision_probabilities.argmax(axis=1) == probabilities.argmax(axis=1)))
        print(f"kiln --precision {precision}: accuracy {precision_accuracy:.1f}% "
              f"({precision_accuracy - kiln_accuracy:+.1f} points against kiln fp32, at most "
              f"{args.max_difference} below allowed), "
              f"top-1 agreement with fp32 {agreement:.1f}%, {precision_seconds:.2f} s")
        ok = ok and drop <= args.max_difference
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
