#!/usr/bin/python3
"""Trains kiln's bundled example model, a small CNN for Fashion-MNIST, and exports it to ONNX.

Run with the Debian interpreter, which has PyTorch (CPU):
    /usr/bin/python3 examples/train_fashion_mnist.py [--data-dir DIR] [--epochs N]

Steps:
  1. Read Fashion-MNIST from the idx files (Debian package dataset-fashion-mnist).
  2. Train conv-bn-relu-pool x2 + linear with fixed seeds on one CPU thread (1-3 minutes).
  3. Measure test accuracy on all 10000 test images and on the first 1000 (the subset kiln's
     accuracy test runs), and record both in examples/fashion_mnist.json.
  4. Export opset 17 ONNX with input "image" [batch,1,28,28] (batch dynamic) and output
     "probabilities" [batch,10]; BatchNormalization is kept as its own node.
  5. Write the committed test data: examples/test_images/image_<k>.npy + labels.json, and the
     first 1000 test images as uint8 with their labels.
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
from torch import nn

EXAMPLES_DIR = os.path.dirname(os.path.abspath(__file__))
CLASS_NAMES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]
# Mean and standard deviation of the Fashion-MNIST training pixels, scaled to [0, 1].
PIXEL_MEAN = 0.2860
PIXEL_STD = 0.3530
SEED = 20240601
NUM_DEMO_IMAGES = 10
NUM_ACCURACY_IMAGES = 1000


def read_idx(path):
    """Returns the array stored in a gzip-compressed idx file (uint8 data only)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an idx file of uint8 data")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def normalize(images_uint8):
    """uint8 [N,28,28] -> float32 [N,1,28,28], the model's input normalization."""
    pixels = images_uint8.astype(np.float32) / np.float32(255.0)
    return ((pixels - np.float32(PIXEL_MEAN)) / np.float32(PIXEL_STD))[:, None, :, :]


class FashionCnn(nn.Module):
    """Two conv-bn-relu-maxpool stages and a linear classifier: about 20k parameters."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * 7 * 7, 10)

    def forward(self, image):
        return self.classifier(torch.flatten(self.features(image), 1))


class WithSoftmax(nn.Module):
    """The exported model: class probabilities instead of logits."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, image):
        return torch.softmax(self.net(image), dim=1)


def train(model, images, labels, epochs, batch_size):
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    steps_per_epoch = (len(images) + batch_size - 1) // batch_size
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=4e-3, epochs=epochs, steps_per_epoch=steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(SEED)
    for epoch in range(epochs):
        model.train()
        start = time.time()
        order = torch.randperm(len(images), generator=generator)
        total_loss = 0.0
        for first in range(0, len(images), batch_size):
            batch = order[first:first + batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
            schedule.step()
            total_loss += loss.item() * len(batch)
        print(f"epoch {epoch + 1}/{epochs}: loss {total_loss / len(images):.4f} "
              f"({time.time() - start:.1f} s)", flush=True)


@torch.no_grad()
def predictions(model, images):
    model.eval()
    return torch.cat([model(images[i:i + 1000]).argmax(1) for i in range(0, len(images), 1000)])


def export_onnx(model, path):
    model.eval()
    torch.onnx.export(
        WithSoftmax(model), torch.zeros(1, 1, 28, 28), path,
        opset_version=17,
        input_names=["image"], output_names=["probabilities"],
        dynamic_axes={"image": {0: "batch"}, "probabilities": {0: "batch"}},
        # PRESERVE keeps BatchNormalization as a node (EVAL would fold it into the conv):
        # kiln's own passes are meant to do that folding.
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False)


def write_test_data(test_images, test_labels):
    demo_dir = os.path.join(EXAMPLES_DIR, "test_images")
    os.makedirs(demo_dir, exist_ok=True)
    demo_inputs = normalize(test_images[:NUM_DEMO_IMAGES])
    labels = {}
    for k in range(NUM_DEMO_IMAGES):
        name = f"image_{k}.npy"
        np.save(os.path.join(demo_dir, name), demo_inputs[k:k + 1])
        labels[name] = int(test_labels[k])
    with open(os.path.join(demo_dir, "labels.json"), "w") as f:
        json.dump({"class_names": CLASS_NAMES, "labels": labels}, f, indent=1)
        f.write("\n")
    np.save(os.path.join(EXAMPLES_DIR, "fashion_mnist_test_1000_images.npy"),
            np.ascontiguousarray(test_images[:NUM_ACCURACY_IMAGES]))
    np.save(os.path.join(EXAMPLES_DIR, "fashion_mnist_test_1000_labels.npy"),
            test_labels[:NUM_ACCURACY_IMAGES].astype(np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    # One thread: the result does not depend on the machine's core count, and a busy machine
    # does not stall the training threads on each other.
    torch.set_num_threads(1)

    def load(split):
        images = read_idx(os.path.join(args.data_dir, f"{split}-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(args.data_dir, f"{split}-labels-idx1-ubyte.gz"))
        return images, labels

    train_images, train_labels = load("train")
    test_images, test_labels = load("t10k")

    model = FashionCnn()
    print(f"parameters: {sum(p.numel() for p in model.parameters())}")
    train(model, torch.from_numpy(normalize(train_images)),
          torch.from_numpy(train_labels.astype(np.int64)), args.epochs, args.batch_size)

    predicted = predictions(model, torch.from_numpy(normalize(test_images))).numpy()
    correct = predicted == test_labels
    accuracy_all = float(correct.mean())
    accuracy_subset = float(correct[:NUM_ACCURACY_IMAGES].mean())
    print(f"test accuracy: {accuracy_all:.4f} (10000 images), "
          f"{accuracy_subset:.4f} (first {NUM_ACCURACY_IMAGES})")

    export_onnx(model, os.path.join(EXAMPLES_DIR, "fashion_mnist_cnn.onnx"))
    write_test_data(test_images, test_labels)
    with open(os.path.join(EXAMPLES_DIR, "fashion_mnist.json"), "w") as f:
        json.dump({
            "class_names": CLASS_NAMES,
            "pixel_mean": PIXEL_MEAN,
            "pixel_std": PIXEL_STD,
            "epochs": args.epochs,
            "pytorch_accuracy_test_10000": accuracy_all,
            "pytorch_accuracy_first_1000": accuracy_subset,
        }, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
