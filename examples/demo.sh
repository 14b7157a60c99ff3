#!/usr/bin/env bash
# kiln's demo: classifies the ten bundled Fashion-MNIST test images with the example CNN.
#
# Usage, from anywhere after a build:  examples/demo.sh [KILN_BINARY]   (default build/bin/kiln)
# Prints the model's IR summary, one line per image (predicted and true class) and the accuracy,
# and exits 1 when fewer than 9 of the 10 are right (the model classifies all ten correctly; it
# is 92% accurate on the 1000 test images, examples/README.md). Needs python3 with numpy (or set
# KILN_PYTHON) to read kiln's output files.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kiln="${1:-$repo_root/build/bin/kiln}"
[[ "$kiln" == /* ]] || kiln="$PWD/$kiln"
python="${KILN_PYTHON:-python3}"
model="$repo_root/examples/fashion_mnist_cnn.onnx"
images="$repo_root/examples/test_images"

if [[ ! -x "$kiln" ]]; then
  echo "demo: no kiln binary at $kiln (build first, or pass its path)" >&2
  exit 2
fi

echo "note: no GPU — running on the CPU reference interpreter"
echo "model: examples/fashion_mnist_cnn.onnx"
"$kiln" dump-ir "$model" --format summary --input-shape image=1x1x28x28
echo

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for image in "$images"/image_*.npy; do
  name="$(basename "$image" .npy)"
  if ! "$kiln" run "$model" --device cpu --input "image=$image" --output-dir "$work/$name" \
      >"$work/$name.log" 2>&1; then
    echo "demo: kiln run failed on $image:" >&2
    cat "$work/$name.log" >&2
    exit 1
  fi
done

"$python" - "$images/labels.json" "$work" <<'EOF'
import json, os, sys
import numpy as np

labels_file, work = sys.argv[1], sys.argv[2]
with open(labels_file) as f:
    data = json.load(f)
names, labels = data["class_names"], data["labels"]
correct = 0
for file_name in sorted(labels, key=lambda n: int(n[len("image_"):-len(".npy")])):
    image = file_name[:-len(".npy")]
    predicted = int(np.argmax(np.load(os.path.join(work, image, "probabilities.npy"))))
    label = labels[file_name]
    correct += predicted == label
    print(f"{image}: predicted {names[predicted]} (label {names[label]})")
print(f"accuracy: {correct}/{len(labels)}")
if correct < len(labels) - 1:
    sys.exit(f"demo: only {correct} of {len(labels)} images classified correctly (at least "
             f"{len(labels) - 1} expected)")
EOF
