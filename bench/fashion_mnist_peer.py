#!/usr/bin/env python3
"""Peer for examples/fashion_mnist: the same convnet trained with PyTorch, for time and accuracy comparisons.

Same data (the four IDX .gz files, read with gzip + numpy, normalised with the training set's pixel mean and
standard deviation), same network (conv 5x5x32 same + relu + maxpool 2, conv 5x5x64 same + relu + maxpool 2, fc
1024 + relu + dropout, fc 10, softmax cross-entropy; --bn puts batch norm after each convolution, whose bias it
then replaces), same initialisation (He normal for the weights feeding a relu, Xavier uniform for the last
layer, zero biases), same batch, SGD with momentum and weight decay, the same learning-rate schedule (linear
warm-up over --warmup minibatches, then cosine or constant), the same per-epoch shuffle policy (a fresh
permutation each epoch; the last partial batch is trained too). TF32 is off on the GPU. The epoch time covers training only, as in our trainer
(synchronised on the GPU); the test pass is timed apart.

Prints machine-readable lines:
    peer_fashion_mnist_info torch=<version> device=<cuda|cpu> threads=<n> train=<images> batch=<n> bn=<0|1>
    peer_fashion_mnist_epoch epoch=<i> seconds=<s> images_per_second=<r> train_loss=<l> test_accuracy=<a>
    peer_fashion_mnist_final epochs=<n> seconds_per_epoch=<median s> test_accuracy=<a>
or one line `peer_fashion_mnist_error <reason>` (exit status 2) when PyTorch, the GPU or the data is missing.
"""
import argparse
import gzip
import math
import os
import statistics
import struct
import sys
import time

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def fail(reason):
    print(f"peer_fashion_mnist_error {reason}")
    sys.exit(2)


def read_idx(path, ndim, np):
    """One IDX file of unsigned bytes with `ndim` dimensions (gzip-compressed or not), checked."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e} (Fashion-MNIST: apt-get install dataset-fashion-mnist, or --data DIR)")
    want_magic = 0x0800 | ndim
    if len(data) < 4 + 4 * ndim or struct.unpack(">I", data[:4])[0] != want_magic:
        fail(f"{path}: not an IDX file with {ndim} dimension(s) of unsigned bytes")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        fail(f"{path}: {body.size} data bytes but the header says {dims}")
    return body.reshape(dims)


def find(directory, name):
    path = os.path.join(directory, name)
    if not os.path.exists(path) and os.path.exists(path[:-3]):
        return path[:-3]
    return path


def load(directory, np):
    sets = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(find(directory, f"{prefix}-images-idx3-ubyte.gz"), 3, np)
        labels = read_idx(find(directory, f"{prefix}-labels-idx1-ubyte.gz"), 1, np)
        if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28) or labels.max() > 9:
            fail(f"{directory}: {split} images {images.shape} and labels {labels.shape} do not fit together")
        sets[split] = (images, labels)
    return sets


def build_net(torch, bn):
    nn = torch.nn

    def conv_block(c_in, c_out):
        layers = [nn.Conv2d(c_in, c_out, 5, padding=2, bias=not bn)]
        if bn:
            layers.append(nn.BatchNorm2d(c_out, eps=1e-5, momentum=0.1))
        layers += [nn.ReLU(), nn.MaxPool2d(2)]
        return layers

    net = nn.Sequential(*conv_block(1, 32), *conv_block(32, 64), nn.Flatten(), nn.Linear(64 * 7 * 7, 1024),
                        nn.ReLU(), nn.Dropout(0.5), nn.Linear(1024, 10))
    linear_or_conv = [m for m in net if isinstance(m, (nn.Conv2d, nn.Linear))]
    for i, m in enumerate(linear_or_conv):
        if i + 1 < len(linear_or_conv):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
        else:
            nn.init.xavier_uniform_(m.weight)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    return net


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--data", default=os.environ.get("FASHION_MNIST_DIR") or DEFAULT_DIR)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only (0: all)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=5e-4, help="weight decay on the weights (not biases / BN)")
    ap.add_argument("--warmup", type=int, default=100,
                    help="ramp the learning rate linearly over the first N minibatches, as our trainer does")
    ap.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    ap.add_argument("--bn", action="store_true")
    ap.add_argument("--augment", action="store_true", help="random left-right flips, as our --augment")
    ap.add_argument("--threads", type=int, default=16, help="CPU threads (torch.set_num_threads)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--profile", action="store_true",
                    help="run the training under torch.profiler and print its per-operator table (slower)")
    args = ap.parse_args()

    try:
        import numpy as np
        import torch
    except ImportError as e:
        fail(f"PyTorch / numpy missing: {e}")
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("no CUDA GPU visible to PyTorch")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)

    sets = load(args.data, np)
    train_x, train_y = sets["train"]
    if args.limit > 0:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    mean = float(train_x.mean()) / 255.0
    std = float(train_x.std()) / 255.0

    def to_tensors(images, labels):
        x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - mean) / std
        return x.unsqueeze(1).to(dev), torch.from_numpy(labels.astype(np.int64)).to(dev)

    xtr, ytr = to_tensors(train_x, train_y)
    xte, yte = to_tensors(*sets["test"])
    n = xtr.shape[0]
    print(f"peer_fashion_mnist_info torch={torch.__version__} device={args.device} threads={torch.get_num_threads()} "
          f"train={n} batch={args.batch} bn={int(args.bn)} "
          f"schedule={args.schedule} wd={args.wd} augment={int(args.augment)}", flush=True)

    net = build_net(torch, args.bn).to(dev)
    # Weight decay on the conv / linear weights only (not biases, not batch norm), as our trainer does.
    decay = [p for p in net.parameters() if p.ndim > 1]
    no_decay = [p for p in net.parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, momentum=args.momentum)
    # Minibatch `step` (0-based) of `steps` trains at the rate examples/fashion_mnist's LearningRate gives:
    # a linear warm-up, then constant or a half cosine down to 0.
    warm = max(args.warmup, 0)
    steps = args.epochs * ((n + args.batch - 1) // args.batch)

    def rate(step):
        if step < warm:
            return (step + 1) / warm
        if args.schedule == "constant" or steps <= warm:
            return 1.0
        return 0.5 * (1.0 + math.cos(math.pi * (step - warm) / (steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    profiler = None
    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if dev.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = torch.profiler.profile(activities=activities)
        profiler.start()
    epoch_seconds, accuracy = [], 0.0
    for epoch in range(1, args.epochs + 1):
        net.train()
        order = torch.randperm(n, generator=gen).to(dev)
        sync()
        start = time.perf_counter()
        loss_sum = torch.zeros((), device=dev)
        batches = 0
        for b0 in range(0, n, args.batch):
            idx = order[b0:b0 + args.batch]
            opt.zero_grad(set_to_none=True)
            xb = xtr[idx]
            if args.augment:  # mirror a random half left to right, as our --augment does
                flip = torch.rand(xb.shape[0], device=dev) < 0.5
                xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = loss_fn(net(xb), ytr[idx])
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.detach()
            batches += 1
        sync()
        seconds = time.perf_counter() - start
        if profiler is not None and epoch == args.epochs:
            profiler.stop()
            sort = "self_cuda_time_total" if dev.type == "cuda" else "self_cpu_time_total"
            print(profiler.key_averages().table(sort_by=sort, row_limit=30), flush=True)
        train_loss = float(loss_sum) / batches
        net.eval()
        correct = 0
        with torch.no_grad():
            for b0 in range(0, xte.shape[0], 1000):
                correct += int((net(xte[b0:b0 + 1000]).argmax(1) == yte[b0:b0 + 1000]).sum())
        accuracy = correct / xte.shape[0]
        epoch_seconds.append(seconds)
        print(f"peer_fashion_mnist_epoch epoch={epoch} seconds={seconds:.3f} images_per_second={n / seconds:.1f} "
              f"train_loss={train_loss:.6f} test_accuracy={accuracy:.4f}", flush=True)
    print(f"peer_fashion_mnist_final epochs={args.epochs} seconds_per_epoch={statistics.median(epoch_seconds):.3f} "
          f"test_accuracy={accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
