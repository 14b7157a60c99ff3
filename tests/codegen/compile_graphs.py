#!/usr/bin/env python3
"""Compiles .kir graphs with `kiln compile` (NVRTC, a fresh kernel cache, no GPU needed) for one
arch in each given precision, with inputs and outputs in that precision (`--io-precision`, so
16-bit operands are buffers as inside a model), and checks that the emitted CUDA contains a
string: the ctest that every variant of the sm_90a wgmma contraction kernel compiles and is chosen.

usage: compile_graphs.py KILN --arch ARCH --precisions fp16,bf16 --expect TEXT GRAPH.kir...
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--arch", required=True)
    parser.add_argument("--precisions", default="fp16")
    parser.add_argument("--expect", required=True, help="text every graph's CUDA must contain")
    args = parser.parse_args()
    failures = []
    for graph in args.graphs:
        for precision in args.precisions.split(","):
            with tempfile.TemporaryDirectory() as work:
                cuda_dir = os.path.join(work, "cuda")
                command = [args.kiln, "compile", graph, "--arch", args.arch, "--precision",
                           precision, "--io-precision", precision, "--emit-cuda", cuda_dir,
                           "-o", os.path.join(work, "out.kiln")]
                result = subprocess.run(command, capture_output=True, text=True,
                                        env={**os.environ, "KILN_CACHE_DIR":
                                             os.path.join(work, "cache")})
                name = f"{os.path.basename(graph)} {precision}"
                if result.returncode != 0:
                    failures.append(f"{name}: exit {result.returncode}: {result.stderr[-2000:]}")
                    continue
                cuda = "".join(open(path).read()
                               for path in glob.glob(os.path.join(cuda_dir, "*.cu")))
                found = args.expect in cuda
                print(f"{name}: compiled, {'contains' if found else 'LACKS'} {args.expect!r}")
                if not found:
                    failures.append(f"{name}: no {args.expect!r} in its CUDA")
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
