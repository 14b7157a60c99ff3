"""Timing a CUDA callable with CUDA events, and picking named cases from the command line, shared
by the benchmarks in bench/."""
import statistics

import torch


def time_cuda(fn, iters, warmup):
    """Median and p90 milliseconds of fn() over `iters` runs after `warmup` untimed ones, with
    autograd off."""
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def chosen(parser, names, known, what):
    """The comma-separated `names`, each one of `known` (else argparse's usage error naming the
    unknown `what`s)."""
    given = names.split(",")
    unknown = set(given) - set(known)
    if unknown:
        parser.error(f"unknown {what}(s) {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    return given
