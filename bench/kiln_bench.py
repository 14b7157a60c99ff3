"""Running `kiln bench` (unfused vs fused) from the benchmark scripts in bench/."""
import json
import subprocess


def run_kiln_bench(kiln, model_path, json_path, iters, warmup, extra_args=(),
                   variants="unfused,fused"):
    """Runs `kiln bench MODEL --compare VARIANTS` with --json; returns the figures it wrote,
    or {"error": [last line of its output]} when it failed."""
    command = [kiln, "bench", model_path, "--compare", variants, "--iters", str(iters),
               "--warmup", str(warmup), "--json", json_path, *extra_args]
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout + result.stderr[-2000:], flush=True)
    if result.returncode != 0:
        return {"error": (result.stderr or result.stdout).strip().splitlines()[-1:]}
    with open(json_path) as f:
        return json.load(f)
