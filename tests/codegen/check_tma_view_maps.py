#!/usr/bin/env python3
"""Checks, without a GPU, that the wgmma kernel's TMA tensor maps of a strided-view A read
exactly A's elements (codegen/wgmma_contraction_emitter.cc, view_tensor_map).

For each graph — a source tensor transposed and reshaped into A [M, K], times a weight — it runs
`kiln compile --arch sm_90a --emit-cuda` (the heuristic's tactic, and the warp-specialized one
where offered), reads A's map from the kernel (the `// A by TMA through g_mapI ...` comment:
dims, byte strides, box) and the coordinates its `kiln_tma_load_Nd` call gives each box, and for
every tile (m0, k0) enumerates the source elements the box reads (zeros outside the dims) against
A(m, k)'s source element (numpy's transpose and reshape of an index array). Rows past M read
zeros and are never stored; K is a whole number of 64-wide steps. Graphs: BERT's attention
output, ViT's sequence-first tokens and others that must take a map, some that must not (a tile
would cross into a digit outside the box), and seeded random transposes.

usage: check_tma_view_maps.py KILN WORK_DIR
Exit 1 on a mismatch, on a graph expected to take a map that did not, or on a compile failure.
"""
import glob
import os
import random
import re
import shutil
import subprocess
import sys

import numpy as np

TILE_M, TILE_K = 128, 64


def graph_text(shape, perm, rows, depth, cols):
    joined = lambda values: ",".join(str(v) for v in values)
    moved = [shape[p] for p in perm]
    return (f"graph @view(%o: f16[{joined(shape)}], %w: f16[{depth},{cols}]) -> "
            f"(f16[{rows},{cols}]) {{\n"
            f"  %0 = transpose(%o) {{perm=[{', '.join(str(p) for p in perm)}]}} : "
            f"f16[{joined(moved)}] loc(\"/Transpose\")\n"
            f"  %1 = reshape(%0) {{shape=[{rows}, {depth}]}} : f16[{rows},{depth}] "
            f"loc(\"/Reshape\")\n"
            f"  %2 = matmul(%1, %w) : f16[{rows},{cols}] loc(\"/MatMul\")\n"
            f"  return %2\n}}\n")


def compile_kernels(kiln, work, kir, tactic):
    """The emitted .cu files, or None where the tactic is not offered."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "g.kir"), "w") as f:
        f.write(kir)
    command = [kiln, "compile", os.path.join(work, "g.kir"), "--arch", "sm_90a", "--emit-cuda",
               os.path.join(work, "cu"), "-o", os.path.join(work, "p.kiln")]
    if tactic:
        command += ["--tactic", tactic]
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache")))
    if result.returncode != 0:
        if tactic and "names no tactic" in result.stderr:
            return None
        raise RuntimeError(f"kiln compile failed:\n{result.stderr}")
    return sorted(glob.glob(os.path.join(work, "cu", "*.cu")))


def split_arguments(text):
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts


def a_map(cu_text):
    """(dims, element strides, box, coordinate expressions) of A's map, or None."""
    found = re.search(r"// A by TMA through g_map(\d+) of \w+: \w+ dims (\S+) strides (\S+) box "
                      r"(\S+)", cu_text)
    if not found:
        return None
    index = found.group(1)
    dims = [int(v) for v in found.group(2).split("x")]
    strides = [1] + [int(v) // 2 for v in found.group(3).split("x")]
    box = [int(v) for v in found.group(4).split("x")]
    # The load issued for a later step: its k coordinate is an expression of g_kahead (the
    # one-tile kernel) or g_step (the warp-specialized one).
    for rank, arguments in re.findall(
            r"kiln_tma_load_(\d)d\(g_dst \+ 0, &g_map%s, (.*), g_bar\);" % index, cu_text):
        if "g_kahead" in arguments or "g_step" in arguments:
            expressions = [e.replace("static_cast<int>", "").replace("/", "//")
                           for e in split_arguments(arguments)]
            assert len(expressions) == int(rank) == len(dims)
            return dims, strides, box, expressions
    raise RuntimeError("A's map has no load for a later step")


def mismatched_tiles(a_source, mapping):
    """Tiles whose box does not read exactly A's elements (rows past M: zeros)."""
    dims, strides, box, expressions = mapping
    rows, depth = a_source.shape
    # Box element j (innermost first) in row-major order over the reversed dims: the tile's
    # shared-memory order, 64 k a row, 128 rows.
    offsets = np.indices(tuple(reversed(box))).reshape(len(box), -1)[::-1]
    bad = []
    for m0 in range(0, rows, TILE_M):
        for k0 in range(0, depth, TILE_K):
            at = {"g_m0": m0, "g_kahead": k0, "g_step": k0 // TILE_K, "g_kbegin": 0}
            start = np.array([eval(e, {}, at) for e in expressions])
            position = start[:, None] + offsets
            outside = np.zeros(position.shape[1], bool)
            for d, size in enumerate(dims):
                outside |= (position[d] < 0) | (position[d] >= size)
            read = np.where(outside, -1, (position * np.array(strides)[:, None]).sum(0))
            want = np.full(TILE_M * TILE_K, -1, dtype=np.int64)
            for r in range(min(TILE_M, rows - m0)):
                want[r * TILE_K:(r + 1) * TILE_K] = a_source[m0 + r, k0:k0 + TILE_K]
            if read.size != want.size or not np.array_equal(read, want):
                bad.append((m0, k0))
    return bad


# (source shape, transpose, rows M, depth K, whether the heuristic's kernel must take a map)
FIXED = [
    ([32, 12, 128, 64], [0, 2, 1, 3], 4096, 768, True),   # BERT-base's attention output
    ([8, 12, 256, 64], [0, 2, 1, 3], 2048, 768, True),    # longer sequences
    ([5, 8, 32, 64], [0, 2, 1, 3], 160, 512, True),       # 4 sequences a tile: three m digits
    ([4, 8, 128, 128], [0, 2, 1, 3], 512, 1024, None),    # heads of 128 (split-K: cp.async)
    ([32, 197, 768], [1, 0, 2], 6304, 768, True),         # ViT's sequence-first tokens
    ([4, 320, 128], [1, 0, 2], 1280, 128, True),          # 4 × 32 rows a tile
    ([8, 12, 96, 64], [0, 2, 1, 3], 768, 768, False),     # a tile would cross sequences
    ([320, 2, 128], [1, 0, 2], 640, 128, False),          # 320 rows a sequence: tiles cross
    ([6, 64, 256], [1, 0, 2], 384, 256, False),           # 6 rows a digit: no 128-row box
]


def cases():
    for case in FIXED:
        yield case
    generator = random.Random(11)
    sizes = [2, 3, 4, 5, 6, 8, 12, 16, 32, 64, 96, 128, 256]
    produced = 0
    while produced < 20:
        rank = generator.randint(2, 5)
        shape = [generator.choice(sizes) for _ in range(rank)]
        # The innermost axis stays innermost: A's rows are then runs of whole 16-byte vectors,
        # as the wgmma kernel needs of a view.
        perm = list(range(rank - 1))
        generator.shuffle(perm)
        perm.append(rank - 1)
        moved = [shape[p] for p in perm]
        cut = generator.randint(1, rank - 1)
        rows, depth = int(np.prod(moved[:cut])), int(np.prod(moved[cut:]))
        if depth % TILE_K or rows < TILE_M or rows * depth > 2**21 or moved[-1] % 8:
            continue
        produced += 1
        yield shape, perm, rows, depth, None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kiln, work = sys.argv[1], sys.argv[2]
    failures, mapped = 0, 0
    for shape, perm, rows, depth, must_map in cases():
        # Enough 64-wide column tiles that the heuristic takes the wgmma kernel (at least half
        # the SMs' worth of blocks), not the mma.sync one.
        cols = 64 * max(4, -(-70 // -(-rows // TILE_M)))
        kir = graph_text(shape, perm, rows, depth, cols)
        a_source = np.transpose(np.arange(int(np.prod(shape))).reshape(shape), perm)
        a_source = a_source.reshape(rows, depth)
        for tactic in (None, "warp-specialized"):
            kernels = compile_kernels(kiln, os.path.join(work, "graph"), kir, tactic)
            if kernels is None:
                continue
            mappings = [a_map(open(cu).read()) for cu in kernels]
            mappings = [m for m in mappings if m]
            name = f"{shape} perm {perm} as [{rows}, {depth}] ({tactic or 'heuristic'})"
            if tactic is None and must_map is not None and bool(mappings) != must_map:
                print(f"FAIL {name}: expected {'a' if must_map else 'no'} tensor map of A")
                failures += 1
            for mapping in mappings:
                mapped += 1
                bad = mismatched_tiles(a_source, mapping)
                verdict = "ok" if not bad else f"WRONG in {len(bad)} tiles, first {bad[0]}"
                print(f"{name}: dims {mapping[0]} box {mapping[2]}: {verdict}")
                failures += bool(bad)
    print(f"{mapped} maps checked, {failures} failures")
    sys.exit(1 if failures or mapped < 10 else 0)


if __name__ == "__main__":
    main()
