#!/usr/bin/env python3
"""Peer for bench/conv_bench.cu: PyTorch (cuDNN) convolution on the ResNet-50 layers and the 3-D case.

Same layers (bench/resnet50_layers.txt: C H K R stride pad), same batch (N=32), the same element type, math
and layout as ours (--dtype, --layout), the same timing method: CUDA events around each repetition, median
of --reps after --warmup.
    --dtype fp32   torch.float32, TF32 off (cudnn.allow_tf32 and cuda.matmul.allow_tf32 False; the default)
            tf32   torch.float32, TF32 allowed (both True)
            fp16   torch.float16;  bf16  torch.bfloat16
    --layout nchw  contiguous tensors (the default); nhwc: input, weight and output gradient in
                   torch.channels_last (channels_last_3d for the 3-D case), which is how cuDNN runs NHWC.
--epilogue: the first time is conv + bias + relu as PyTorch runs it (cuDNN's convolution, then the bias
add and the relu as in-place elementwise kernels), the second the convolution alone (no 3-D case).
Forward is torch.nn.functional.conv2d (conv3d for the 3-D case); backward is the data and weight gradients
together (aten.convolution_backward with output_mask [True, True, False], what autograd calls; the
torch.nn.grad.conv*_input / conv*_weight pair when that op is missing). cudnn.benchmark=True, so cuDNN
picks its fastest algorithm during warm-up.

Prints machine-readable lines that conv_bench.cu parses:
    peer_conv_info <torch version, cuDNN version, device, mode>
    peer_conv_layer <index> <C> <H> <K> <R> <stride> <pad> fwd_ms <ms> bwd_ms <ms>
                   [data_ms <ms> weight_ms <ms>]   (--split: each gradient alone)
    peer_conv_total fwd_ms <sum> bwd_ms <sum>
    peer_conv3d fwd_ms <ms> bwd_ms <ms>   (or peer_conv3d_error <reason> when cuDNN refuses it)
    peer_conv3d_volume <filters> fwd_ms <ms> bwd_ms <ms>   (--volume-filters: the imaging sweep only, a
                   1x1xS^3 input, S = --volume-size, convolved with that many 7x7x7 filters, no padding)
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


def backward_fn(torch, x, w, dy, stride, pad, dims, data=True, weight=True):
    """Data and/or weight gradients in one call, as autograd would make it."""
    strides, pads = [stride] * dims, [pad] * dims
    op = getattr(torch.ops.aten, "convolution_backward", None)
    if op is not None:
        return lambda: op(dy, x, w, None, strides, pads, [1] * dims, False, [0] * dims, 1, [data, weight, False])
    grad = torch.nn.grad
    conv_input = grad.conv2d_input if dims == 2 else grad.conv3d_input
    conv_weight = grad.conv2d_weight if dims == 2 else grad.conv3d_weight
    return lambda: (conv_input(x.shape, w, dy, stride, pad) if data else None,
                    conv_weight(x, w.shape, dy, stride, pad) if weight else None)


def element_type(torch, dtype):
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]


def memory_format(torch, layout, dims):
    """How a tensor of `dims` spatial dimensions sits in memory: cuDNN picks NHWC kernels for channels_last."""
    if layout == "nchw":
        return torch.contiguous_format
    return torch.channels_last if dims == 2 else torch.channels_last_3d


def uniform(torch, shape, dtype, fmt):
    """Values in [-1, 1) (drawn in float32, then converted), in memory format `fmt`."""
    t = torch.rand(shape, device="cuda") * 2 - 1
    return t.to(dtype=dtype, memory_format=fmt)


def time_conv(torch, F, x_shape, w_shape, stride, pad, dtype, fmt, warmup, reps, epilogue=False, split=False):
    """Median forward and backward milliseconds of one convolution; with epilogue, of conv + bias + relu and
    of the convolution alone; with split, then also the data and the weight gradient alone."""
    dims = len(x_shape) - 2
    conv = F.conv2d if dims == 2 else F.conv3d
    x = uniform(torch, x_shape, dtype, fmt)
    w = uniform(torch, w_shape, dtype, fmt)
    y = conv(x, w, None, stride, pad)
    plain = median_ms(torch, lambda: conv(x, w, None, stride, pad), warmup, reps)
    if epilogue:
        b = uniform(torch, (1, w_shape[0]) + (1,) * dims, dtype, torch.contiguous_format)
        fused = median_ms(torch, lambda: conv(x, w, None, stride, pad).add_(b).relu_(), warmup, reps)
        return fused, plain
    dy = uniform(torch, tuple(y.shape), dtype, fmt)
    bwd = median_ms(torch, backward_fn(torch, x, w, dy, stride, pad, dims), warmup, reps)
    if split:
        data = median_ms(torch, backward_fn(torch, x, w, dy, stride, pad, dims, weight=False), warmup, reps)
        weight = median_ms(torch, backward_fn(torch, x, w, dy, stride, pad, dims, data=False), warmup, reps)
        return plain, bwd, data, weight
    return plain, bwd


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=os.path.join(here, "resnet50_layers.txt"))
    parser.add_argument("--n", type=int, default=32, help="batch")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    parser.add_argument("--dtype", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32",
                        help="element type and math (fp32: TF32 off)")
    parser.add_argument("--layout", choices=["nchw", "nhwc"], default="nchw",
                        help="nhwc: tensors in torch.channels_last")
    parser.add_argument("--no-3d", action="store_true", help="skip the 3-D case")
    parser.add_argument("--epilogue", action="store_true",
                        help="time conv + bias + relu, and the convolution alone, instead of forward and backward")
    parser.add_argument("--split", action="store_true",
                        help="also time the data gradient and the weight gradient alone")
    parser.add_argument("--reps-3d", type=int, default=5)
    parser.add_argument("--volume-filters", default="",
                        help="comma-separated filter counts: the imaging sweep instead of the layers")
    parser.add_argument("--volume-size", type=int, default=256)
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
    tf32 = args.dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    dtype = element_type(torch, args.dtype)
    print(f"peer_conv_info torch {torch.__version__} cudnn {torch.backends.cudnn.version()} "
          f"{torch.cuda.get_device_name()} {str(dtype).replace('torch.', '')} tf32={'on' if tf32 else 'off'} "
          f"{args.layout} cudnn.benchmark=True{' epilogue' if args.epilogue else ''}")

    if args.volume_filters:
        s = args.volume_size
        for k in (int(v) for v in args.volume_filters.split(",")):
            try:
                fwd, bwd = time_conv(torch, F, (1, 1, s, s, s), (k, 1, 7, 7, 7), 1, 0, dtype,
                                     memory_format(torch, args.layout, 3), 2, args.reps)
                print(f"peer_conv3d_volume {k} fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}", flush=True)
            except RuntimeError as err:
                print(f"peer_conv3d_volume_error {k} {str(err).splitlines()[0]}", flush=True)
        return 0
    fmt2d = memory_format(torch, args.layout, 2)
    total_f = total_b = 0.0
    for i, (c, h, k, r, s, p) in enumerate(read_layers(args.layers)):
        split = args.split and not args.epilogue
        times = time_conv(torch, F, (args.n, c, h, h), (k, c, r, r), s, p, dtype, fmt2d, args.warmup, args.reps,
                          args.epilogue, split)
        fwd, bwd = times[:2]
        total_f += fwd
        total_b += bwd
        extra = f" data_ms {times[2]:.6f} weight_ms {times[3]:.6f}" if split else ""
        print(f"peer_conv_layer {i} {c} {h} {k} {r} {s} {p} fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}{extra}", flush=True)
    print(f"peer_conv_total fwd_ms {total_f:.6f} bwd_ms {total_b:.6f}", flush=True)

    if not args.no_3d and not args.epilogue:
        # Some cuDNN versions have no 3-D kernel for every type and layout: say so instead of failing the run.
        try:
            fwd, bwd = time_conv(torch, F, (1, 1, 256, 256, 256), (8, 1, 7, 7, 7), 1, 0, dtype,
                                 memory_format(torch, args.layout, 3), 2, args.reps_3d)
            print(f"peer_conv3d fwd_ms {fwd:.6f} bwd_ms {bwd:.6f}", flush=True)
        except RuntimeError as err:
            print(f"peer_conv3d_error {str(err).splitlines()[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
