"""The peer of bench/allreduce: PyTorch's all-reduce (torch.distributed, NCCL backend), one process per GPU,
timed the way bench/allreduce times ours: for each size, `iters` float32 sum all-reduces back to back between
two CUDA events, `reps` times; the median of elapsed / iters. Prints one line per size on rank 0:

    peer_allreduce bytes B seconds S

    python3 bench/allreduce_peer.py --ranks 2 --bytes 1048576,1073741824 --iters 20 --reps 7
"""
import argparse
import os
import socket
import statistics

# NVLink multicast stays off: on shared hosts a program using it can take the GPUs out of service.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def time_allreduce(buf, iters, reps):
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        dist.all_reduce(buf)
    per_call = []
    for _ in range(reps):
        torch.cuda.synchronize()
        begin.record()
        for _ in range(iters):
            dist.all_reduce(buf)
        end.record()
        torch.cuda.synchronize()
        per_call.append(begin.elapsed_time(end) * 1e-3 / iters)
    return statistics.median(per_call)


def rank_main(rank, args, port):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks,
                            device_id=torch.device("cuda", rank))
    sizes = [int(b) for b in args.bytes.split(",")]
    buf = torch.empty(max(sizes) // 4, dtype=torch.float32, device="cuda")
    for size in sizes:
        part = buf[: size // 4]
        part.fill_(rank + 1)
        dist.all_reduce(part)
        torch.cuda.synchronize()
        want = args.ranks * (args.ranks + 1) / 2
        assert part[0].item() == want, f"rank {rank}: all-reduce gave {part[0].item()}, expected {want}"
        seconds = time_allreduce(part, args.iters, args.reps)
        if rank == 0:
            print(f"peer_allreduce bytes {size} seconds {seconds:.9g}", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--bytes", required=True, help="comma-separated message sizes in bytes")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, {args.ranks} ranks",
          flush=True)
    mp.spawn(rank_main, args=(args, free_port()), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
