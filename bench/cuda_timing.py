"""Timing a CUDA callable with CUDA events, shared by the benchmarks in bench/."""
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
