#!/usr/bin/env python3
"""α-β model of NCCL all-reduce: fit it to a measurement on one host, extrapolate it to many nodes.

    allreduce_model.py --measured allreduce.csv [--impl tensorexpr]   fit, scaling table, bucketing
    allreduce_model.py --check                                        self-test (no input; CI)

The model is Hockney's: sending n bytes over a link costs α + n·β (α the per-message latency, β the
seconds per byte, 1/β the link bandwidth). The costs of the collectives follow Thakur, Rabenseifner and
Gropp, "Optimization of collective communication operations in MPICH" (2005), for p ranks:

    ring all-reduce     2(p-1)·α + 2(p-1)/p·n·β     (a reduce-scatter, then an all-gather, p-1 steps each)
    reduce-scatter      (p-1)·α + (p-1)/p·n·β       (all-gather: the same)
    tree all-reduce     2·log2(p)·α + 2·n·β         (reduce up, broadcast down, log2 p levels each; the
                                                      message pipelined in chunks so that every link
                                                      carries n once each way; NCCL's double binary tree
                                                      sends half of n down each of two trees. This is
                                                      the large-message, large-p approximation: it
                                                      ignores the pipeline's fill and the chunk count.)

Thakur et al. add γ·(p-1)/p·n for the local reduction (γ: seconds per byte reduced). It is off by default:
NCCL reduces inside the kernel that moves the data, at memory bandwidth (terabytes per second on an H100),
far above the link's rate, so the term hides under the transfer; and from one world size it cannot be
told apart from β (both grow with n), so a fit would fold it into β. --gamma-gbs R adds it with a given
reduction rate, and the fit then attributes only the rest of the slope to β.

Bandwidths follow NCCL's convention (nccl-tests, PERFORMANCE.md): algbw = n / t, and bus bandwidth
busbw = algbw · 2(p-1)/p, which for a ring tends to the link bandwidth 1/β whatever p is.

The fit uses the measured points of one implementation and world size (2 GPUs over NVLink on our
machine), minimising the sum of squared relative errors, so 4 KB and 1 GB points weigh the same. The
intra-node steps of the extrapolation reuse that α and β (with NVSwitch, each GPU's NVLink bandwidth does
not depend on how many peers it talks to); inter-node steps use --ib-gbs and --ib-latency-us, one NIC
per GPU. With buckets, communication is assumed not to slow the backward pass that it overlaps.
"""
import argparse
import csv
import math
import re
import statistics
import sys
from collections import namedtuple

Link = namedtuple("Link", "alpha beta gamma")  # s per step; s per byte on the wire; s per byte reduced
SCALING_P = (8, 16, 32, 64, 128, 256, 512, 1024)
SWEEP_BUCKETS = ("1MB", "5MB", "25MB", "100MB")
SWEEP_P = (64, 1024)
CSV_COLUMNS = ("impl", "world_size", "bytes", "seconds", "algbw_gbs", "busbw_gbs")


class UsageError(Exception):
    """Bad arguments or input: one line on stderr, exit status 2."""


# ---- collective costs (seconds) ----------------------------------------------------------------------

def ring_allreduce(p, n, link):
    if p < 2:
        return 0.0
    return 2 * (p - 1) * link.alpha + (p - 1) / p * n * (2 * link.beta + link.gamma)


def tree_allreduce(p, n, link):
    if p < 2:
        return 0.0
    return 2 * math.ceil(math.log2(p)) * link.alpha + n * (2 * link.beta + link.gamma)


def ring_reduce_scatter(p, n, link):
    """Also the cost of the ring all-gather, without the γ term."""
    if p < 2:
        return 0.0
    return (p - 1) * link.alpha + (p - 1) / p * n * (link.beta + link.gamma)


def ring_all_gather(p, n, link):
    return ring_reduce_scatter(p, n, link._replace(gamma=0.0))


def slowest_link(p, gpus_per_node, nvlink, ib):
    """A ring or tree over all p GPUs moves in lock-step: once it spans nodes, IB paces every step."""
    return ib if p > gpus_per_node else nvlink


def flat_ring(p, n, gpus_per_node, nvlink, ib):
    return ring_allreduce(p, n, slowest_link(p, gpus_per_node, nvlink, ib)), ""


def flat_tree(p, n, gpus_per_node, nvlink, ib):
    return tree_allreduce(p, n, slowest_link(p, gpus_per_node, nvlink, ib)), ""


def hierarchical(p, n, gpus_per_node, nvlink, ib):
    """Reduce-scatter in the node over NVLink, all-reduce n/g among the nodes, all-gather in the node.

    Each of the g GPUs of a node all-reduces its own n/g shard with its peers on the other nodes through
    its own NIC, so the g inter-node all-reduces run side by side. Returns (seconds, inter-node choice)."""
    g = min(p, gpus_per_node)
    nodes = p // g
    shard = n / g
    inter = {"ring": ring_allreduce(nodes, shard, ib), "tree": tree_allreduce(nodes, shard, ib)}
    choice = min(inter, key=inter.get) if nodes > 1 else ""
    intra = ring_reduce_scatter(g, n, nvlink) + ring_all_gather(g, n, nvlink)
    return intra + (inter[choice] if choice else 0.0), choice


ALGORITHMS = {"ring": flat_ring, "tree": flat_tree, "hierarchical": hierarchical}


def bus_bandwidth(p, n, seconds):
    return n / seconds * 2 * (p - 1) / p


# ---- measurements and the fit ------------------------------------------------------------------------

def read_measurements(lines, source, impl, world_size):
    """Returns ([(bytes, seconds)] of impl at world_size, the '#' comment lines, {other impl: points})."""
    comments = [line.strip() for line in lines if line.lstrip().startswith("#")]
    rows = [(i, line) for i, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise UsageError("%s: no data lines" % source)
    header = [h.strip() for h in next(csv.reader([rows[0][1]]))]
    if tuple(header[:len(CSV_COLUMNS)]) != CSV_COLUMNS:
        raise UsageError("%s:%d: header is not %s" % (source, rows[0][0], ",".join(CSV_COLUMNS)))
    points = {}
    for number, line in rows[1:]:
        fields = [f.strip() for f in next(csv.reader([line]))]
        try:
            if len(fields) != len(header):
                raise ValueError("%d fields, expected %d" % (len(fields), len(header)))
            p, n, t = int(fields[1]), int(fields[2]), float(fields[3])
            if p < 2 or n <= 0 or not t > 0 or math.isinf(t):
                raise ValueError("world_size < 2, bytes <= 0 or seconds not > 0")
        except ValueError as e:
            raise UsageError("%s:%d: malformed row (%s)" % (source, number, e))
        if p == world_size:
            points.setdefault(fields[0], []).append((n, t))
    mine = points.pop(impl, [])
    if not mine:
        raise UsageError("%s: no rows for impl %s at world_size %d" % (source, impl, world_size))
    if len({n for n, _ in mine}) < 2:
        raise UsageError("%s: %s has fewer than 2 message sizes at world_size %d" % (source, impl, world_size))
    return mine, comments, points


def fit_ring(points, p, gamma=0.0):
    """Least squares on relative error of t = 2(p-1)·α + 2(p-1)/p·n·β (+ the known γ term), α ≥ 0, β > 0.

    Dividing each equation by its measured t makes the problem linear with target (t - γ term)/t; the
    2×2 normal equations give (α, β), and a negative α is clamped to 0 with β refitted alone."""
    a = [2 * (p - 1) / t for n, t in points]
    b = [2 * (p - 1) / p * n / t for n, t in points]
    r = [1 - (p - 1) / p * n * gamma / t for n, t in points]
    saa, sab, sbb = sum(x * x for x in a), sum(x * y for x, y in zip(a, b)), sum(y * y for y in b)
    sar, sbr = sum(x * z for x, z in zip(a, r)), sum(y * z for y, z in zip(b, r))
    det = saa * sbb - sab * sab
    if det <= 1e-12 * saa * sbb:
        raise UsageError("the message sizes are too close together to fit α and β")
    alpha, beta = (sar * sbb - sbr * sab) / det, (saa * sbr - sab * sar) / det
    if alpha < 0:
        alpha, beta = 0.0, sbr / sbb
    if not beta > 0:
        raise UsageError("measured times do not grow with message size: β cannot be fitted")
    return Link(alpha, beta, gamma)


# ---- gradient bucketing ------------------------------------------------------------------------------

def exposed_communication(grad_bytes, bucket_bytes, backward_s, allreduce):
    """Buckets become ready in proportion to the bytes the backward has produced; bucket i's all-reduce
    starts when it is ready and bucket i-1's has finished. Returns (exposed s, buckets, all-reduce s)."""
    ready_bytes, end, total, count = 0.0, 0.0, 0.0, 0
    while ready_bytes < grad_bytes:
        size = min(bucket_bytes, grad_bytes - ready_bytes)
        ready_bytes += size
        ready_at = backward_s * ready_bytes / grad_bytes
        seconds = allreduce(size)
        end = max(end, ready_at) + seconds
        total += seconds
        count += 1
    return max(0.0, end - backward_s), count, total


# ---- output ------------------------------------------------------------------------------------------

def parse_bytes(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(|B|KB|MB|GB|KIB|MIB|GIB)\s*", text.upper())
    if not m:
        raise argparse.ArgumentTypeError("not a size: %r (examples: 4096, 25MB, 1GiB)" % text)
    unit = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    value = float(m.group(1)) * unit[m.group(2)]
    if value < 1:
        raise argparse.ArgumentTypeError("size must be at least 1 byte: %r" % text)
    return value


def parse_sizes(text):
    return [parse_bytes(part) for part in text.split(",")]


def format_bytes(n):
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 2**shift and n % 2**shift == 0:
            return "%d %s" % (n // 2**shift, unit)
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if n >= scale:
            return "%g %s" % (round(n / scale, 3), unit)
    return "%d B" % n


def print_table(headers, rows):
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    for row in rows:
        print(line(row))
    print()


def report_fit(points, comments, peers, args):
    p = args.world_size
    link = fit_ring(points, p, args.gamma)
    for comment in comments:
        print(comment)
    print("Fit: ring all-reduce t = 2(p-1)·α + 2(p-1)/p·n·β%s, %s, p = %d, %d points, least squares on"
          " relative error" % (" + γ term" if args.gamma else "", args.impl, p, len(points)))
    print("  α = %.2f µs per step, 1/β = %.1f GB/s (the bus bandwidth of a large message)"
          % (link.alpha * 1e6, 1e-9 / link.beta))
    if p == 2:
        print("  p = 2: ring and tree are the same exchange between the two GPUs; this describes the link")
    for impl, other in sorted(peers.items()):
        if len({n for n, _ in other}) >= 2:
            peer = fit_ring(other, p, args.gamma)
            print("  (%s, same file: α = %.2f µs, 1/β = %.1f GB/s)" % (impl, peer.alpha * 1e6, 1e-9 / peer.beta))
    print()
    rows, errors = [], []
    for n, t in sorted(points):
        model = ring_allreduce(p, n, link)
        errors.append(abs(model - t) / t)
        rows.append((format_bytes(n), "%.1f" % (t * 1e6), "%.1f" % (model * 1e6), "%+.1f%%" % (100 * (model - t) / t),
                     "%.1f" % (bus_bandwidth(p, n, t) / 1e9)))
    print_table(("bytes", "measured µs", "model µs", "rel. error", "measured busbw GB/s"), rows)
    print("|rel. error|: max %.1f%%, median %.1f%%\n" % (100 * max(errors), 100 * statistics.median(errors)))
    return link


def report_scaling(nvlink, ib, args):
    g = args.gpus_per_node
    print("Scaling (%d GPUs per node; NVLink: the fit; IB: %.0f GB/s per GPU, %.1f µs per step). Cells: time ms"
          " / busbw GB/s; * fastest at this p and size; [ring|tree]: the inter-node step" % (g, args.ib_gbs, args.ib_latency_us))
    rows = []
    for p in SCALING_P:
        if p > g and p % g:
            continue
        results = {name: [algorithm(p, n, g, nvlink, ib) for n in args.sizes] for name, algorithm in ALGORITHMS.items()}
        best = [min(results[name][i][0] for name in results) for i in range(len(args.sizes))]
        for name, cells in results.items():
            rows.append([p, name] + ["%.3f / %.3g%s%s" % (t * 1e3, bus_bandwidth(p, n, t) / 1e9,
                                                           " [%s]" % choice if choice else "", " *" if t == best[i] else "")
                                     for i, ((t, choice), n) in enumerate(zip(cells, args.sizes))])
    print_table(["p", "algorithm"] + [format_bytes(n) for n in args.sizes], rows)


def report_bucketing(nvlink, ib, args):
    g, backward = args.gpus_per_node, args.backward_ms / 1e3

    def exposed(p, bucket):
        return exposed_communication(args.grad_bytes, bucket, backward,
                                     lambda n: hierarchical(p, n, g, nvlink, ib)[0])

    print("Gradient bucketing: %s of gradients in %s buckets, backward %.0f ms, hierarchical all-reduce;"
          " exposed = end of the last all-reduce - end of the backward"
          % (format_bytes(args.grad_bytes), format_bytes(args.bucket_bytes), args.backward_ms))
    rows = []
    for p in SCALING_P:
        seconds, count, total = exposed(p, args.bucket_bytes)
        rows.append((p, count, "%.2f" % (total * 1e3), "%.3f" % (seconds * 1e3), "%.1f%%" % (100 * seconds / backward)))
    print_table(("p", "buckets", "all-reduce total ms", "exposed ms", "exposed / backward"), rows)
    print("Bucket size at p = %s: small buckets pay α per bucket, large ones start late" % " and ".join(map(str, SWEEP_P)))
    rows = []
    for bucket in map(parse_bytes, SWEEP_BUCKETS):
        cells = [format_bytes(bucket), exposed(SWEEP_P[0], bucket)[1]]
        for p in SWEEP_P:
            seconds, _, total = exposed(p, bucket)
            cells += ["%.2f" % (total * 1e3), "%.3f" % (seconds * 1e3)]
        rows.append(cells)
    headers = ["bucket", "buckets"]
    for p in SWEEP_P:
        headers += ["p=%d total ms" % p, "p=%d exposed ms" % p]
    print_table(headers, rows)


# ---- self-test ---------------------------------------------------------------------------------------

def self_check():
    """Returns None on success, else what failed."""
    args = build_parser().parse_args([])
    truth = Link(15e-6, 1 / 150e9, 0.0)
    lines = ["# synthetic, α = 15 µs, 1/β = 150 GB/s, ±1% noise", ",".join(CSV_COLUMNS)]
    for i, shift in enumerate(range(12, 31)):
        n = 2**shift
        t = ring_allreduce(2, n, truth) * (1.01 if i % 2 else 0.99)
        lines.append("tensorexpr,2,%d,%.9e,%.3f,%.3f" % (n, t, n / t / 1e9, bus_bandwidth(2, n, t) / 1e9))
    points, _, _ = read_measurements(lines, "synthetic", "tensorexpr", 2)
    nvlink = fit_ring(points, 2)
    if abs(nvlink.alpha / truth.alpha - 1) > 0.03 or abs(nvlink.beta / truth.beta - 1) > 0.03:
        return "fit gave α = %.3g s, β = %.3g s/B; expected %.3g, %.3g within 3%%" % (
            nvlink.alpha, nvlink.beta, truth.alpha, truth.beta)
    for p in (2, 8, 64, 1024):
        busbw = bus_bandwidth(p, 1e13, ring_allreduce(p, 1e13, truth))
        if abs(busbw * truth.beta - 1) > 1e-3:
            return "ring busbw at p = %d, n = 1e13 is %.4g B/s, not 1/β = %.4g" % (p, busbw, 1 / truth.beta)
    ib = Link(args.ib_latency_us * 1e-6, 1 / (args.ib_gbs * 1e9), 0.0)
    g = args.gpus_per_node
    for p in (q for q in SCALING_P if q >= 16):
        for n in args.sizes:
            if hierarchical(p, n, g, nvlink, ib)[0] > flat_ring(p, n, g, nvlink, ib)[0]:
                return "hierarchical slower than the flat ring at p = %d, %s" % (p, format_bytes(n))
    for p in SCALING_P:
        for bucket in map(parse_bytes, SWEEP_BUCKETS):
            previous = math.inf
            for backward_ms in range(0, 401, 10):
                seconds = exposed_communication(args.grad_bytes, bucket, backward_ms / 1e3,
                                                lambda n: hierarchical(p, n, g, nvlink, ib)[0])[0]
                if seconds > previous + 1e-12:
                    return "exposed time grew with the backward time (p = %d, bucket %s, %d ms)" % (
                        p, format_bytes(bucket), backward_ms)
                previous = seconds
    return None


# ---- command line ------------------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    parser = Parser(description="Fit the α-β model of a ring all-reduce to a measured CSV (bench/allreduce),"
                    " extrapolate to many nodes, and estimate the communication left exposed by gradient"
                    " bucketing. Sizes take B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB.",
                    epilog="CSV columns: %s; '#' lines are comments and are echoed." % ",".join(CSV_COLUMNS))
    parser.add_argument("--measured", metavar="FILE.csv", help="all-reduce times from bench/allreduce")
    parser.add_argument("--impl", default="tensorexpr", help="which impl's rows to fit (default: %(default)s)")
    parser.add_argument("--world-size", type=int, default=2, metavar="P", help="which rows to fit (default: %(default)s)")
    parser.add_argument("--gamma-gbs", type=float, metavar="R", help="add the reduction term at R GB/s reduced"
                        " (default: off, see the module docstring)")
    parser.add_argument("--gpus-per-node", type=int, default=8, metavar="G", help="GPUs per node, joined by NVLink"
                        " (default: %(default)s)")
    parser.add_argument("--ib-gbs", type=float, default=50.0, metavar="B", help="inter-node bandwidth per GPU,"
                        " GB/s (default: %(default)s, a 400 Gb/s NIC per GPU)")
    parser.add_argument("--ib-latency-us", type=float, default=5.0, metavar="US", help="inter-node α per step, µs"
                        " (default: %(default)s)")
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("25MB,102MB,1GB"), metavar="LIST",
                        help="message sizes to extrapolate (default: 25MB,102MB,1GB: a bucket, ResNet-50's"
                        " gradients, 1 GB)")
    parser.add_argument("--grad-bytes", type=parse_bytes, default=parse_bytes("102MB"), metavar="SIZE",
                        help="gradient bytes per step (default: 102MB, ResNet-50 in fp32)")
    parser.add_argument("--bucket-bytes", type=parse_bytes, default=parse_bytes("25MB"), metavar="SIZE",
                        help="gradient bucket size (default: 25MB; PyTorch DDP's is 25 MiB)")
    parser.add_argument("--backward-ms", type=float, default=60.0, metavar="MS", help="length of the backward pass"
                        " that the buckets' all-reduces overlap (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="run the self-test instead (no input file)")
    return parser


def check_ranges(args):
    limits = (("--world-size", args.world_size, 2), ("--gpus-per-node", args.gpus_per_node, 1),
              ("--ib-latency-us", args.ib_latency_us, 0), ("--backward-ms", args.backward_ms, 0))
    for flag, value, least in limits:
        if not value >= least:
            raise UsageError("%s must be at least %g" % (flag, least))
    for flag, value in (("--ib-gbs", args.ib_gbs), ("--gamma-gbs", args.gamma_gbs)):
        if value is not None and not value > 0:
            raise UsageError("%s must be positive" % flag)


def main(argv):
    try:
        args = build_parser().parse_args(argv)
        if args.check:
            failure = self_check()
            print("allreduce_model.py --check: %s" % (failure or "ok"), file=sys.stderr if failure else sys.stdout)
            return 1 if failure else 0
        if not args.measured:
            raise UsageError("--measured FILE.csv is required (or --check)")
        check_ranges(args)
        args.gamma = 1 / (args.gamma_gbs * 1e9) if args.gamma_gbs else 0.0
        try:
            with open(args.measured, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise UsageError("cannot read %s: %s" % (args.measured, e.strerror or e))
        points, comments, peers = read_measurements(lines, args.measured, args.impl, args.world_size)
        nvlink = report_fit(points, comments, peers, args)
        ib = Link(args.ib_latency_us * 1e-6, 1 / (args.ib_gbs * 1e9), args.gamma)
        report_scaling(nvlink, ib, args)
        report_bucketing(nvlink, ib, args)
        return 0
    except UsageError as e:
        print("allreduce_model.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
