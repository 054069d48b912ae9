#!/usr/bin/env python3
"""Peer for bench/bandwidth.cu --families: the expression families in PyTorch, eager and torch.compile.

The same shapes as ours (x of (N, 256, 3136) fp32; a square matrix of about x's bytes for a.T()), results
written into preallocated tensors (out=, copy_) where PyTorch allows it, so that neither side allocates in
the timed loop. Timing: CUDA events around each repetition, median of --reps after --warmup; before each
repetition (untimed) a sum over twice the L2's bytes, as bandwidth.cu does for ours: no dirty lines left
from the previous call, and the GPU busy while Python launches the timed call. Prints one
machine-readable line per family:
    peer_family <key> eager_ms <ms> compile_ms <ms, or -1 without --compile or when compiling failed>
or `peer_family_error <reason>` (exit status 2) when PyTorch or a GPU is missing.
"""
import argparse
import math
import statistics
import sys


def median_ms(torch, f, warmup, reps, flush):
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        flush()
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="batch N of x (N, 256, 3136)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--compile", action="store_true", help="also time torch.compile of each family")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as err:
        print(f"peer_family_error PyTorch is not importable ({err})")
        return 2
    if not torch.cuda.is_available():
        print("peer_family_error PyTorch sees no CUDA device")
        return 2

    N, C, HW = args.n, 256, 3136
    dev = "cuda"
    x = torch.rand(N, C, HW, device=dev) * 2 - 1
    bias = torch.rand(C, device=dev)
    h1, h2 = x[:, : C // 2].contiguous(), x[:, C // 2 :].contiguous()
    flat = x.reshape(-1)
    n = int(math.sqrt(x.numel()) / 32) * 32
    a = torch.rand(n, n, device=dev)
    y = torch.empty_like(x)
    yt = torch.empty(N, HW, C, device=dev)
    out1 = torch.empty(C, device=dev)
    out2 = torch.empty(N, C, device=dev)
    half = torch.empty(N, C // 2, HW, device=dev)
    scalar = torch.empty((), device=dev)
    b = torch.empty(n, n, device=dev)

    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
    flush_buf = torch.zeros(max(2 * l2_bytes, 1 << 24) // 4, device=dev)
    flush_sum = torch.empty((), device=dev)

    def flush():
        torch.sum(flush_buf, dim=0, out=flush_sum)

    # key -> (eager callable, pure function and its inputs for torch.compile)
    families = {
        "broadcast": (lambda: torch.add(x, bias.view(1, C, 1), out=y), lambda x, bias: x + bias.view(1, C, 1), (x, bias)),
        "broadcast_rows7": (
            lambda: torch.add(x.view(N, C, HW // 7, 7), bias.view(1, C, 1, 1), out=y.view(N, C, HW // 7, 7)),
            lambda x, bias: x.view(N, C, HW // 7, 7) + bias.view(1, C, 1, 1),
            (x, bias),
        ),
        "sumall_except_dim": (lambda: torch.sum(x, dim=(0, 2), out=out1), lambda x: x.sum(dim=(0, 2)), (x,)),
        "reduce_sum": (lambda: torch.sum(x, dim=2, out=out2), lambda x: x.sum(dim=2), (x,)),
        "reduce_max": (lambda: torch.amax(x, dim=2, out=out2), lambda x: x.amax(dim=2), (x,)),
        "swapaxis": (lambda: yt.copy_(x.transpose(2, 1)), lambda x: x.transpose(2, 1).contiguous(), (x,)),
        "transpose": (lambda: yt.copy_(x.permute(0, 2, 1)), lambda x: x.permute(0, 2, 1).contiguous(), (x,)),
        "concat": (lambda: torch.cat((h1, h2), dim=1, out=y), lambda h1, h2: torch.cat((h1, h2), dim=1), (h1, h2)),
        "slice": (lambda: half.copy_(x[:, : C // 2]), lambda x: x[:, : C // 2].contiguous(), (x,)),
        "sumall": (lambda: torch.sum(flat, dim=0, out=scalar), lambda flat: flat.sum(), (flat,)),
        "matrix_T": (lambda: b.copy_(a.t()), lambda a: a.t().contiguous(), (a,)),
    }
    for key, (eager, pure, inputs) in families.items():
        eager_ms = median_ms(torch, eager, args.warmup, args.reps, flush)
        compile_ms = -1.0
        if args.compile:
            try:
                compiled = torch.compile(pure)
                compile_ms = median_ms(torch, lambda: compiled(*inputs), args.warmup, args.reps, flush)
            except Exception as err:  # a missing compiler toolchain is a peer that was not measured
                print(f"torch.compile failed for {key}: {err}", file=sys.stderr)
        print(f"peer_family {key} eager_ms {eager_ms:.6f} compile_ms {compile_ms:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
