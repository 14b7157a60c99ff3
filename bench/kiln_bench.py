"""Running `kiln bench` (unfused vs fused) from the benchmark scripts in bench/.

Each variant is timed in a process of its own that loads one Session: on an H200 the first
Session a process loads replays its graph 6-7% faster than every later one (BERT-base b1 0.518
against 0.551 ms for the same program; MobileNetV2 b1 0.155 against 0.164; session 15,
docs/PERF.md), so `--compare unfused,fused` in one process, or a fused compile that autotuned
(its rounds are Sessions), would time fused as a later Session. A short run first fills the
kernel and tactic caches; the timed run then compiles from them and measures nothing else."""
import json
import os
import subprocess


def kiln_bench_once(kiln, model_path, json_path, iters, warmup, variant, extra_args):
    """One `kiln bench MODEL --compare VARIANT --json JSON` process: (its figures, its error
    lines or None)."""
    if os.path.exists(json_path):
        os.remove(json_path)  # figures of an earlier run must not pass for this one's
    command = [kiln, "bench", model_path, "--compare", variant, "--iters", str(iters),
               "--warmup", str(warmup), "--json", json_path, *extra_args]
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout + result.stderr[-2000:], flush=True)
    figures = {}
    if os.path.exists(json_path):
        with open(json_path) as f:
            figures = json.load(f)
    error = None
    if result.returncode != 0:
        error = (result.stderr or result.stdout).strip().splitlines()[-1:]
    return figures, error


def run_kiln_bench(kiln, model_path, json_path, iters, warmup, extra_args=(),
                   variants="unfused,fused", first_sessions=True):
    """Times each of VARIANTS (comma-separated) as `kiln bench MODEL --compare VARIANT`, each in
    its own process after a short run that fills the caches (first_sessions=False: all in one
    `--compare VARIANTS` process, for a correctness check where the time does not matter);
    returns the figures as one `--compare VARIANTS --json` run writes them (a variant that failed
    has {"error": why}; when kiln bench fails, the result also has "error": [the last line of
    its output])."""
    if not first_sessions:
        figures, error = kiln_bench_once(kiln, model_path, json_path, iters, warmup, variants,
                                         extra_args)
        if error:
            figures["error"] = error
        return figures
    merged = {}
    for variant in variants.split(","):
        kiln_bench_once(kiln, model_path, json_path, 1, 0, variant, extra_args)
        figures, error = kiln_bench_once(kiln, model_path, json_path, iters, warmup, variant,
                                         extra_args)
        for key, value in figures.items():
            merged.setdefault(key, value)  # "device" and the like: the first run's
        if error and "error" not in merged:
            merged["error"] = error
    with open(json_path, "w") as f:  # the merged figures replace the last run's
        json.dump(merged, f, indent=1)
    return merged
