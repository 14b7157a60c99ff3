#!/usr/bin/env python3
"""Checks kiln's layering (docs/ARCHITECTURE.md): every #include "LAYER/..." in a source file of a
layer names that layer or one it may use, and ir/ mentions no backend (no "cuda", any case).

usage: check_layers.py SOURCE_DIR      (exit 1 listing every violation)
"""
import os
import re
import sys

# What each layer's files may include, besides their own layer.
ALLOWED = {
    "ir": set(),
    "reference": {"ir"},
    "frontend": {"ir", "reference"},
    "passes": {"ir", "reference"},
    "target": {"ir"},
    "runtime": {"ir"},
    "codegen": {"ir", "target", "runtime"},
    "kiln": {"ir", "reference", "frontend", "passes", "target", "runtime", "codegen"},
    "tools": {"ir", "reference", "frontend", "passes", "target", "runtime", "kiln"},
    "python": {"ir", "reference", "frontend", "passes", "target", "runtime", "kiln", "tools"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.MULTILINE)


def main():
    root = sys.argv[1]
    problems = []
    for layer, allowed in ALLOWED.items():
        for directory, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".inc")):
                    continue
                path = os.path.join(directory, name)
                text = open(path, encoding="utf-8").read()
                relative = os.path.relpath(path, root)
                for included in INCLUDE.findall(text):
                    if included in ALLOWED and included != layer and included not in allowed:
                        problems.append(f"{relative}: includes {included}/, which {layer}/ may not use")
                if layer == "ir" and "cuda" in text.lower():
                    problems.append(f"{relative}: mentions CUDA; ir/ knows no backend")
    for problem in problems:
        print(problem)
    print(f"layering: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
