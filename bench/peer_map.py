#!/usr/bin/env python3
"""Peer for bench/bandwidth.cu: PyTorch eager  c = a*b + 2*sqrt(abs(a))  on the GPU.

Same expression, same size (2^28 fp32 by default) and the same timing method as ours: CUDA events around
each repetition, median of --reps after --warmup. Prints machine-readable lines that bandwidth.cu parses:
    peer_map_ms <median milliseconds>
    peer_map_gbps <effective GB/s at 12 bytes per element>
or one line `peer_map_error <reason>` (exit status 2) when PyTorch or a GPU is missing.
"""
import argparse
import statistics
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 28, help="elements per tensor")
    parser.add_argument("--reps", type=int, default=50, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    args = parser.parse_args()

    try:
        import torch
    except ImportError as err:
        print(f"peer_map_error PyTorch is not importable ({err})")
        return 2
    if not torch.cuda.is_available():
        print("peer_map_error PyTorch sees no CUDA device")
        return 2

    a = torch.rand(args.n, device="cuda", dtype=torch.float32) * 2 - 1
    b = torch.rand(args.n, device="cuda", dtype=torch.float32) * 2 - 1

    def expression():
        return a * b + 2 * torch.sqrt(torch.abs(a))

    for _ in range(args.warmup):
        expression()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        c = expression()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
        del c
    ms = statistics.median(times)
    print(f"peer_map torch {torch.__version__}, eager, {torch.cuda.get_device_name()}")
    print(f"peer_map_ms {ms:.6f}")
    print(f"peer_map_gbps {12 * args.n / (ms * 1e-3) / 1e9:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
