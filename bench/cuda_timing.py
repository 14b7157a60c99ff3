"""Timing a CUDA callable with CUDA events, and picking named cases from the command line, shared
by the benchmarks in bench/."""
import statistics

import torch


def time_cuda(fn, iters, warmup):
    """Median and p90 milliseconds of fn() over `iters` calls issued back to back, an event
    between each two and no waiting in between, after `warmup` untimed ones, with autograd off:
    as `kiln bench` replays its CUDA graph. A host that dispatches faster than the GPU computes
    stays out of the figures (its dispatch overlaps the previous call's work); a slower one (eager
    PyTorch at small batches) still shows, as the GPU waits for it. (Until session 14 each call
    was timed alone after a synchronization, which counted PyTorch's host dispatch as GPU time.)"""
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        events[0].record()
        for i in range(iters):
            fn()
            events[i + 1].record()
        events[-1].synchronize()
    times = sorted(events[i].elapsed_time(events[i + 1]) for i in range(iters))
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def chosen(parser, names, known, what):
    """The comma-separated `names`, each one of `known` (else argparse's usage error naming the
    unknown `what`s)."""
    given = names.split(",")
    unknown = set(given) - set(known)
    if unknown:
        parser.error(f"unknown {what}(s) {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    return given
