#!/usr/bin/env python3
"""Peer for bench/conv_cpu_bench.cpp: PyTorch convolution on the host CPU (oneDNN when PyTorch has it).

Same layers (--layers C:H:K:R:stride:pad[:D],... ; H=W, R=S; D > 0: a D x H x H volume, F.conv3d with an
R x R x R kernel), same batch (N=8), NCHW fp32 without bias, the same
thread count (torch.set_num_threads(--threads)) and the same timing method as ours: time.perf_counter around
each call, median of --reps after --warmup. Forward is torch.nn.functional.conv2d; backward is the data and
weight gradients together (aten.convolution_backward with output_mask [True, True, False], what autograd
calls; the torch.nn.grad.conv2d_input / conv2d_weight pair when that op is missing).

Prints machine-readable lines that conv_cpu_bench.cpp parses:
    peer_conv_cpu_info <torch version, oneDNN availability, threads>
    peer_conv_cpu_layer <index> <C> <H> <K> <R> <stride> <pad> fwd_ms <ms> bwd_ms <ms>
    peer_conv_cpu_total fwd_ms <sum> bwd_ms <sum>
or one line `peer_conv_cpu_error <reason>` (exit status 2) when PyTorch is missing.
"""
import argparse
import statistics
import sys
import time

# The five ResNet-50 layers of peers-h200.md's CPU row (C:H:K:R:stride:pad).
DEFAULT_LAYERS = "64:56:64:3:1:1,256:56:64:1:1:0,128:28:128:3:1:1,256:14:256:3:1:1,512:7:512:3:1:1"


def parse_layers(spec):
    """C:H:K:R:stride:pad[:D] items; D (depth) makes a D x H x H volume with an R x R x R kernel (0: 2-D)."""
    layers = []
    for item in spec.split(","):
        values = [int(v) for v in item.split(":")]
        if len(values) not in (6, 7):
            raise ValueError(f"layer {item!r} is not C:H:K:R:stride:pad[:D]")
        layers.append(tuple(values) + ((0,) if len(values) == 6 else ()))
    return layers


def median_ms(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def backward_fn(torch, x, w, dy, stride, pad):
    """Data + weight gradients in one call, as autograd would make it (2-D or 3-D, from x's rank)."""
    nd = x.dim() - 2
    op = getattr(torch.ops.aten, "convolution_backward", None)
    if op is not None:
        return lambda: op(dy, x, w, None, [stride] * nd, [pad] * nd, [1] * nd, False, [0] * nd, 1, [True, True, False])
    grad = torch.nn.grad
    data, weight = (grad.conv3d_input, grad.conv3d_weight) if nd == 3 else (grad.conv2d_input, grad.conv2d_weight)
    return lambda: (data(x.shape, w, dy, stride, pad), weight(x, w.shape, dy, stride, pad))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True, help="torch.set_num_threads")
    parser.add_argument("--layers", default=DEFAULT_LAYERS, help="C:H:K:R:stride:pad[:D],...")
    parser.add_argument("--n", type=int, default=8, help="batch")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions first")
    args = parser.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as err:
        print(f"peer_conv_cpu_error PyTorch is not importable ({err})")
        return 2
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)  # the backward op is called directly; no graph is needed
    mkldnn = torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
    print(f"peer_conv_cpu_info torch {torch.__version__} onednn={mkldnn} threads={torch.get_num_threads()} fp32",
          flush=True)

    gen = torch.Generator().manual_seed(0)
    total_f = total_b = 0.0
    for i, (c, h, k, r, s, p, d) in enumerate(parse_layers(args.layers)):
        depth, kdepth, conv = ((d,), (r,), F.conv3d) if d else ((), (), F.conv2d)
        x = torch.rand(args.n, c, *depth, h, h, generator=gen) * 2 - 1
        w = torch.rand(k, c, *kdepth, r, r, generator=gen) * 2 - 1
        y = conv(x, w, None, s, p)
        dy = torch.rand(y.shape, generator=gen) * 2 - 1
        fwd = median_ms(lambda: conv(x, w, None, s, p), args.warmup, args.reps)
        bwd = median_ms(backward_fn(torch, x, w, dy, s, p), args.warmup, args.reps)
        total_f += fwd
        total_b += bwd
        print(f"peer_conv_cpu_layer {i} {c} {h} {k} {r} {s} {p} fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}", flush=True)
        del x, w, y, dy
    print(f"peer_conv_cpu_total fwd_ms {total_f:.6f} bwd_ms {total_b:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
