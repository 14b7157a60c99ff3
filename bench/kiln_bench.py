"""Running `kiln bench` (unfused vs fused) from the benchmark scripts in bench/."""
import json
import os
import subprocess


def run_kiln_bench(kiln, model_path, json_path, iters, warmup, extra_args=(),
                   variants="unfused,fused"):
    """Runs `kiln bench MODEL --compare VARIANTS` with --json; returns the figures it wrote
    (a variant that failed has {"error": why} there). When kiln bench fails, the result also has
    "error": [the last line of its output]."""
    if os.path.exists(json_path):
        os.remove(json_path)  # figures of an earlier run must not pass for this one's
    command = [kiln, "bench", model_path, "--compare", variants, "--iters", str(iters),
               "--warmup", str(warmup), "--json", json_path, *extra_args]
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout + result.stderr[-2000:], flush=True)
    figures = {}
    if os.path.exists(json_path):
        with open(json_path) as f:
            figures = json.load(f)
    if result.returncode != 0:
        figures["error"] = (result.stderr or result.stdout).strip().splitlines()[-1:]
    return figures
