#!/usr/bin/env python3
"""Peer for bench/conv_bench.cu: PyTorch (cuDNN) convolution on the ResNet-50 layers and the 3-D case.

Same layers (bench/resnet50_layers.txt: C H K R stride pad), same batch (N=32), fp32 with TF32 off, the
same timing method as ours: CUDA events around each repetition, median of --reps after --warmup.
Forward is torch.nn.functional.conv2d (conv3d for the 3-D case); backward is the data and weight gradients
together (aten.convolution_backward with output_mask [True, True, False], what autograd calls; the
torch.nn.grad.conv*_input / conv*_weight pair when that op is missing). cudnn.benchmark=True, so cuDNN
picks its fastest algorithm during warm-up.

Prints machine-readable lines that conv_bench.cu parses:
    peer_conv_info <torch version, cuDNN version, device>
    peer_conv_layer <index> <C> <H> <K> <R> <stride> <pad> fwd_ms <ms> bwd_ms <ms>
    peer_conv_total fwd_ms <sum> bwd_ms <sum>
    peer_conv3d fwd_ms <ms> bwd_ms <ms>
or one line `peer_conv_error <reason>` (exit status 2) when PyTorch or a GPU is missing.
"""
import argparse
import os
import statistics
import sys


def read_layers(path):
    layers = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                c, h, k, r, s, p = (int(v) for v in line.split())
                layers.append((c, h, k, r, s, p))
    return layers


def median_ms(torch, fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def backward_fn(torch, x, w, dy, stride, pad, dims):
    """Data + weight gradients in one call, as autograd would make it."""
    strides, pads = [stride] * dims, [pad] * dims
    op = getattr(torch.ops.aten, "convolution_backward", None)
    if op is not None:
        return lambda: op(dy, x, w, None, strides, pads, [1] * dims, False, [0] * dims, 1, [True, True, False])
    grad = torch.nn.grad
    conv_input = grad.conv2d_input if dims == 2 else grad.conv3d_input
    conv_weight = grad.conv2d_weight if dims == 2 else grad.conv3d_weight
    return lambda: (conv_input(x.shape, w, dy, stride, pad), conv_weight(x, w.shape, dy, stride, pad))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=os.path.join(here, "resnet50_layers.txt"))
    parser.add_argument("--n", type=int, default=32, help="batch")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    parser.add_argument("--no-3d", action="store_true", help="skip the 3-D case")
    parser.add_argument("--reps-3d", type=int, default=5)
    args = parser.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as err:
        print(f"peer_conv_error PyTorch is not importable ({err})")
        return 2
    if not torch.cuda.is_available():
        print("peer_conv_error PyTorch sees no CUDA device")
        return 2
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"peer_conv_info torch {torch.__version__} cudnn {torch.backends.cudnn.version()} "
          f"{torch.cuda.get_device_name()} fp32 tf32=off cudnn.benchmark=True")

    dev = "cuda"
    total_f = total_b = 0.0
    for i, (c, h, k, r, s, p) in enumerate(read_layers(args.layers)):
        x = torch.rand(args.n, c, h, h, device=dev) * 2 - 1
        w = torch.rand(k, c, r, r, device=dev) * 2 - 1
        y = F.conv2d(x, w, None, s, p)
        dy = torch.rand_like(y) * 2 - 1
        fwd = median_ms(torch, lambda: F.conv2d(x, w, None, s, p), args.warmup, args.reps)
        bwd = median_ms(torch, backward_fn(torch, x, w, dy, s, p, 2), args.warmup, args.reps)
        total_f += fwd
        total_b += bwd
        print(f"peer_conv_layer {i} {c} {h} {k} {r} {s} {p} fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}", flush=True)
        del x, w, y, dy
    print(f"peer_conv_total fwd_ms {total_f:.6f} bwd_ms {total_b:.6f}", flush=True)

    if not args.no_3d:
        x = torch.rand(1, 1, 256, 256, 256, device=dev) * 2 - 1
        w = torch.rand(8, 1, 7, 7, 7, device=dev) * 2 - 1
        y = F.conv3d(x, w)
        dy = torch.rand_like(y) * 2 - 1
        fwd = median_ms(torch, lambda: F.conv3d(x, w), 2, args.reps_3d)
        bwd = median_ms(torch, backward_fn(torch, x, w, dy, 1, 0, 3), 2, args.reps_3d)
        print(f"peer_conv3d fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
