#!/usr/bin/env python3
"""Writes the ONNX oracle's reference cases, which tests/onnx_oracle_test.cc compares the operators with.

    onnx_cases.py OUT.txt

Each case is one random configuration of one operator: a one-node ONNX model (two for a border: Pad, then the
window operator; op "Pad+Conv" and so on) run through onnxruntime, or through ONNX's reference evaluator
(onnx.reference.ReferenceEvaluator) where onnxruntime refuses the node.
Neither was written here, so a case checks our operators against an implementation nobody here wrote.
The seed is fixed: the same script writes the same cases.

The file is plain text, one item per line:
    tensorexpr-onnx-cases 1
    status ok | status unavailable <why>
    generator <sha256 of this script>
    case <ONNX op type> <runner: onnxruntime | reference>
    attr <name> <count> <numbers...>          an ONNX attribute (ints and floats alike)
    sattr <name> <word>                       a string attribute
    in|out <name> <rank> <dims...>            a tensor, its values (row-major) on the next line
    end
When onnx or onnxruntime cannot be imported the file says so (status unavailable) and the tests skip.
The packages come from PyPI (tools/ensure-packages.sh, ensure_python_packages), also from its folder.
"""
import hashlib
import os
import sys

FORMAT = "tensorexpr-onnx-cases 1"
OPSET = 19
IR_VERSION = 9


def generator_hash():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def up_to_date(path, digest):
    """True when `path` already holds this script's complete, available cases."""
    try:
        with open(path, encoding="utf-8") as f:
            head = [f.readline().strip() for _ in range(3)]
    except OSError:
        return False
    return head == [FORMAT, "status ok", "generator " + digest]


def import_oracle():
    """(onnx, onnxruntime, numpy) or the reason they cannot be imported."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    extra = os.path.join(cache, "tensorexpr", "python%d.%d" % sys.version_info[:2])
    if os.path.isdir(extra):
        sys.path.insert(0, extra)
    try:
        import numpy
        import onnx
        import onnxruntime
    except Exception as e:  # ImportError, or a broken install
        return None, "%s: %s (tools/test.sh installs onnx and onnxruntime from PyPI)" % (type(e).__name__, e)
    return (onnx, onnxruntime, numpy), None


class Oracle:
    def __init__(self, onnx, ort, np):
        self.onnx, self.ort, self.np = onnx, ort, np
        from onnx import helper, numpy_helper
        from onnx.reference import ReferenceEvaluator
        self.helper, self.numpy_helper, self.Reference = helper, numpy_helper, ReferenceEvaluator
        self.options = ort.SessionOptions()
        # Fatal messages only: a node onnxruntime refuses goes to the reference evaluator, its refusal is
        # no error worth printing.
        self.options.log_severity_level = 4
        self.options.intra_op_num_threads = 1

    def model(self, op, inputs, outputs, attrs):
        h = self.helper
        names, results = [n for n, _ in inputs], [n for n, _ in outputs]
        if op.startswith("Pad+"):
            # A border that is data: Pad (mode = the pad_mode attribute) feeds the window operator its X.
            pad_inputs = [n for n in ("X", "pads", "constant_value") if n in names]
            window_attrs = {k: v for k, v in attrs.items() if k != "pad_mode"}
            nodes = [h.make_node("Pad", pad_inputs, ["X_padded"], mode=attrs["pad_mode"]),
                     h.make_node(op[4:], ["X_padded"] + [n for n in names if n not in pad_inputs], results,
                                 **window_attrs)]
        else:
            nodes = [h.make_node(op, names, results, **attrs)]
        graph = h.make_graph(
            nodes, "case",
            [h.make_tensor_value_info(n, h.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs],
            [h.make_tensor_value_info(n, dtype, None) for n, dtype in outputs])
        # IR version 9, the first that carries opset 19: onnx writes its newest by default, which an older
        # onnxruntime refuses to load (1.30 against onnx 1.23's).
        return h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], ir_version=IR_VERSION)

    def onnxruntime_fails(self):
        """Why onnxruntime cannot run a plain Relu node here ("" when it can). A build whose sessions all fail
        would hand every case to the reference evaluator, which is no oracle for LRN or pooling."""
        x = self.np.ones((2, 3), dtype=self.np.float32)
        m = self.model("Relu", [("X", x)], [("Y", self.onnx.TensorProto.FLOAT)], {})
        try:
            sess = self.ort.InferenceSession(m.SerializeToString(), self.options, providers=["CPUExecutionProvider"])
            sess.run(None, {"X": x})
        except Exception as e:
            return "onnxruntime %s imports but cannot run a Relu node: %s" % (
                self.ort.__version__, str(e).splitlines()[0][:160] if str(e) else type(e).__name__)
        return ""

    def run(self, op, inputs, outputs, attrs, runner="onnxruntime"):
        """Runs the node; returns (runner, [output arrays]). `outputs` are (name, ONNX element type)."""
        m = self.model(op, inputs, outputs, attrs)
        feed = {n: a for n, a in inputs}
        if runner == "onnxruntime":
            try:
                sess = self.ort.InferenceSession(m.SerializeToString(), self.options,
                                                 providers=["CPUExecutionProvider"])
                return runner, sess.run(None, feed)
            except Exception:  # onnxruntime lacks the node or this configuration of it
                pass
        wrong = self.reference_is_wrong(op, attrs, inputs)
        if wrong:
            raise RuntimeError("onnxruntime refuses it, and ONNX's reference evaluator " + wrong)
        return "reference", self.Reference(m).run(None, feed)

    @staticmethod
    def reference_is_wrong(op, attrs, inputs):
        """Why ONNX's reference evaluator cannot be the oracle for this node ("" when it can): configurations
        where it disagrees with onnxruntime and with the definition (onnx 1.23, checked by hand; the pooling
        and LRN ones by running every case of both generators through both runners)."""
        if op == "LRN" and inputs[0][1].shape[0] != inputs[0][1].shape[1]:
            return "sums LRN's window over the batch instead of the channels (right only when N == C)"
        if op.split("+")[-1] in ("MaxPool", "AveragePool"):  # with a Pad node before it too
            return ("differs from onnxruntime on pooling (1-D Indices, SAME_LOWER, ceil_mode, dilated "
                    "count_include_pad; 9 of pool_cases' 48 in onnx 1.23)")
        if op != "ConvTranspose":
            return ""
        if attrs.get("group", 1) > 1:
            return "gives every group past the first the wrong values (grouped ConvTranspose)"
        if "output_shape" in attrs and any(attrs.get("output_padding", [])):
            return "places the output elsewhere when output_shape comes with output_padding"
        return ""


# ---- the cases ---------------------------------------------------------------------------------------------
# Each generator yields (op, inputs, outputs, attrs[, runner]): inputs are (name, numpy array) in the node's
# input order, outputs (name, ONNX element type).

def random_shape(rng, rank, lo=1, hi=5, most=240):
    """Extents in [lo, hi], redrawn until the tensor has at most `most` elements (small files)."""
    while True:
        shape = tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))
        if int(np_prod(shape)) <= most:
            return shape


def np_prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def softmax_cases(rng, np, F):
    for op in ("Softmax", "LogSoftmax"):
        for i in range(24):
            rank = int(rng.integers(1, 6))
            shape = random_shape(rng, rank, 1, 7)
            axis = int(rng.integers(-rank, rank))
            x = (rng.standard_normal(shape) * 4).astype(np.float32)
            if i % 6 == 0:
                x += np.float32(80)  # large values: only a shifted exponent stays finite
            yield op, [("X", x)], [("Y", F)], {"axis": axis}


def pad_cases(rng, np, F):
    modes = ("constant", "reflect", "edge", "wrap")
    for i in range(48):
        mode = modes[i % 4]
        rank = int(rng.integers(1, 6))
        shape = random_shape(rng, rank, 1 if mode != "reflect" else 2, 5, 120)
        limit = [d - 1 if mode == "reflect" else (d if mode == "wrap" else 3) for d in shape]
        while True:  # the padded output small too
            begin = [int(rng.integers(0, l + 1)) for l in limit]
            end = [int(rng.integers(0, l + 1)) for l in limit]
            if np_prod([d + b + e for d, b, e in zip(shape, begin, end)]) <= 600:
                break
        x = rng.standard_normal(shape).astype(np.float32)
        inputs = [("data", x), ("pads", np.array(begin + end, dtype=np.int64))]
        if mode == "constant":
            inputs.append(("constant_value", np.array(rng.standard_normal(), dtype=np.float32)))
        yield "Pad", inputs, [("output", F)], {"mode": mode}


def matmul_cases(rng, np, F):
    """2-D products, and batches of one to three dimensions, either side's batch dimensions 1 (broadcast) now and
    then: dot and batch_dot."""
    for i in range(24):
        m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
        if i % 3 == 0:
            a, b = (m, k), (k, n)
        else:
            batch = int(rng.integers(1, 5))
            a, b = (1 if i % 3 == 1 and i % 2 else batch, m, k), (1 if i % 3 == 2 and i % 2 else batch, k, n)
        yield ("MatMul", [("A", rng.standard_normal(a).astype(np.float32)),
                          ("B", rng.standard_normal(b).astype(np.float32))], [("Y", F)], {})
    for i in range(12):  # 4-D and 5-D, each batch dimension 1 on one side now and then (broadcast)
        m, k, n = (int(v) for v in rng.integers(1, 7, size=3))
        batch = [int(v) for v in rng.integers(1, 4, size=2 + i % 2)]
        a = tuple(1 if rng.integers(0, 3) == 0 else d for d in batch) + (m, k)
        b = tuple(1 if rng.integers(0, 3) == 0 else d for d in batch) + (k, n)
        yield ("MatMul", [("A", rng.standard_normal(a).astype(np.float32)),
                          ("B", rng.standard_normal(b).astype(np.float32))], [("Y", F)], {})


def slice_cases(rng, np, F):
    """One axis, a step of -3..3 (not 0), starts / ends anywhere, negative and past the ends included."""
    for i in range(32):
        rank = int(rng.integers(1, 5))
        shape = random_shape(rng, rank, 1, 7)
        axis = int(rng.integers(-rank, rank))
        n = shape[axis]
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        start, end = (int(v) for v in rng.integers(-n - 2, n + 3, size=2))
        x = rng.standard_normal(shape).astype(np.float32)
        i64 = lambda v: np.array([v], dtype=np.int64)
        yield ("Slice", [("data", x), ("starts", i64(start)), ("ends", i64(end)), ("axes", i64(axis)),
                         ("steps", i64(step))], [("output", F)], {})


def concat_cases(rng, np, F):
    for i in range(16):
        rank = int(rng.integers(1, 5))
        shape = random_shape(rng, rank, 1, 5)
        axis = int(rng.integers(-rank, rank))
        inputs = []
        for k in range(int(rng.integers(2, 5))):
            s = list(shape)
            s[axis] = int(rng.integers(0 if k else 1, 4))
            inputs.append(("x%d" % k, rng.standard_normal(s).astype(np.float32)))
        yield "Concat", inputs, [("concat_result", F)], {"axis": axis}


def reduce_mean_cases(rng, np, F):
    """keepdims = 1 over a random subset of the axes (negative ones too); no axes input: every axis."""
    for i in range(20):
        rank = int(rng.integers(1, 6))
        shape = random_shape(rng, rank, 1, 6)
        axes = [int(d if rng.integers(2) else d - rank) for d in range(rank) if rng.integers(2)]
        rng.shuffle(axes)
        x = rng.standard_normal(shape).astype(np.float32)
        inputs = [("data", x)]
        if axes or i % 2:
            inputs.append(("axes", np.array(axes, dtype=np.int64)))
        yield "ReduceMean", inputs, [("reduced", F)], {"keepdims": 1}


def leaky_cases(rng, np, F):
    """LeakyRelu and Elu (alpha given or ONNX's default), PRelu with one slope or one per channel."""
    for i in range(36):
        rank = int(rng.integers(1, 6)) if i % 3 < 2 else int(rng.integers(2, 6))
        shape = random_shape(rng, rank, 1, 6)
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        if i % 3 == 0:
            attrs = {"alpha": float(rng.uniform(0.01, 1.0))} if i % 2 else {}
            yield "LeakyRelu", [("X", x)], [("Y", F)], attrs
        elif i % 3 == 1:
            attrs = {"alpha": float(rng.uniform(0.1, 2.0))} if i % 2 else {}
            yield "Elu", [("X", x)], [("Y", F)], attrs
        else:
            per_channel = (shape[1],) + (1,) * (rank - 2)
            slope = rng.uniform(-0.5, 1.0, size=per_channel if i % 2 else (1,)).astype(np.float32)
            yield "PRelu", [("X", x), ("slope", slope)], [("Y", F)], {}


def fully_connected_cases(rng, np, F):
    """Gemm with transB = 1 and a bias (FullyConnected), and N-D x 2-D MatMul (FullyConnected, flatten=false)."""
    for i in range(20):
        k, d = (int(v) for v in rng.integers(1, 9, size=2))
        w = rng.standard_normal((k, d)).astype(np.float32)
        if i % 2 == 0:
            x = rng.standard_normal((int(rng.integers(1, 9)), d)).astype(np.float32)
            bias = rng.standard_normal((k,)).astype(np.float32)
            yield "Gemm", [("A", x), ("B", w), ("C", bias)], [("Y", F)], {"transB": 1}
        else:
            lead = random_shape(rng, int(rng.integers(2, 4)), 1, 4)
            x = rng.standard_normal(lead + (d,)).astype(np.float32)
            yield "MatMul", [("A", x), ("B", np.ascontiguousarray(w.T))], [("Y", F)], {}


def window_case(rng, i, modes):
    """What Conv and ConvTranspose case i draws alike: its mode (cycling through `modes`), spatial rank (1 to 3),
    groups, and input and output channels (multiples of the groups)."""
    groups = int(rng.integers(1, 3))
    return modes[i % len(modes)], 1 + i % 3, groups, groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))


def window_sizes(rng, nd):
    """Kernel extents 1 to 3, strides 1 to 3 and dilations 1 to 2 per spatial dimension."""
    return ([int(v) for v in rng.integers(1, 4, size=nd)], [int(v) for v in rng.integers(1, 4, size=nd)],
            [int(v) for v in rng.integers(1, 3, size=nd)])


def conv_cases(rng, np, F):
    """Conv in 1-D, 2-D and 3-D with groups, strides, dilations and a bias now and then; auto_pad SAME_LOWER
    most often (the odd pixel of padding before), SAME_UPPER, VALID, or explicit pads (begin != end)."""
    modes = ("SAME_LOWER", "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", "SAME_LOWER")
    for i in range(36):
        mode, nd, groups, c, k = window_case(rng, i, modes)
        kernel, strides, dilations = window_sizes(rng, nd)
        span = [(kk - 1) * d + 1 for kk, d in zip(kernel, dilations)]
        pads = [int(v) for v in rng.integers(0, 3, size=2 * nd)] if mode == "NOTSET" else [0] * (2 * nd)
        # VALID and explicit padding need the dilated kernel to fit.
        spatial = random_shape(rng, nd, 1, {1: 9, 2: 7, 3: 5}[nd], 200)
        spatial = tuple(max(d, s - pads[j] - pads[j + nd]) for j, (d, s) in enumerate(zip(spatial, span)))
        x = rng.standard_normal((int(rng.integers(1, 3)), c) + spatial).astype(np.float32)
        w = rng.standard_normal((k, c // groups) + tuple(kernel)).astype(np.float32)
        inputs = [("X", x), ("W", w)]
        if i % 2:
            inputs.append(("B", rng.standard_normal((k,)).astype(np.float32)))
        attrs = {"auto_pad": mode, "group": groups, "kernel_shape": kernel, "strides": strides,
                 "dilations": dilations}
        if mode == "NOTSET":
            attrs["pads"] = pads
        yield "Conv", inputs, [("Y", F)], attrs


def lrn_cases(rng, np, F):
    """LRN over the channels of (N, C, H, W) data (both runners take 4-D only), windows wider than the channels
    too, alpha / beta / bias given or ONNX's defaults. onnxruntime takes odd sizes only; even ones go to the
    reference evaluator, whose loop over the channels runs over the batch (onnx 1.23), which is right only
    when N == C: those cases have N == C."""
    for i in range(24):
        size = int(rng.integers(1, 8))
        c = int(rng.integers(1, 9))
        n = int(rng.integers(1, 3)) if size % 2 else c
        shape = (n, c) + random_shape(rng, 2, 1, 4, 24 if size % 2 else 12)
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        attrs = {"size": size}
        if i % 4:
            attrs.update(alpha=float(rng.uniform(1e-4, 2.0)), beta=float(rng.uniform(0.2, 1.5)),
                         bias=float(rng.uniform(0.5, 3.0)))
        yield "LRN", [("X", x)], [("Y", F)], attrs, "onnxruntime" if size % 2 else "reference"


def gather_cases(rng, np, F):
    """Gather on axis 0 of a 2-D table (Embedding): int64 or int32 indices of rank 1 to 4, in range (ONNX reads
    a negative index from the end, where ours clips: a difference, not a case)."""
    for i in range(16):
        rows, cols = (int(v) for v in rng.integers(1, 9, size=2))
        shape = random_shape(rng, 1 + i % 4, 1, 4, 40)
        idx = rng.integers(0, rows, size=shape).astype(np.int64 if i % 2 else np.int32)
        table = rng.standard_normal((rows, cols)).astype(np.float32)
        yield "Gather", [("data", table), ("indices", idx)], [("output", F)], {"axis": 0}


def conv_transpose_cases(rng, np, F):
    """ConvTranspose (Deconvolution) in 1-D, 2-D and 3-D with groups, strides, dilations, output_padding (below
    the stride) and a bias now and then; explicit pads (begin != end), output_shape (with NOTSET: the odd pixel
    of padding before; with SAME_UPPER: after), auto_pad SAME_UPPER / SAME_LOWER, VALID."""
    modes = ("NOTSET", "output_shape", "SAME_UPPER", "SAME_LOWER", "VALID", "output_shape SAME_UPPER")
    for i in range(36):
        mode, nd, groups, c, m = window_case(rng, i, modes)
        spatial = random_shape(rng, nd, 1, {1: 6, 2: 4, 3: 3}[nd], 60)
        while True:
            kernel, strides, dilations = window_sizes(rng, nd)
            adj = [int(rng.integers(0, s)) for s in strides]
            span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
            full = [s * (n - 1) + sp + a for s, n, sp, a in zip(strides, spatial, span, adj)]
            if not mode.startswith("SAME") or all(sp + a >= s for sp, a, s in zip(span, adj, strides)):
                break  # SAME needs the full output to reach input * stride
        attrs = {"group": groups, "kernel_shape": kernel, "strides": strides, "dilations": dilations,
                 "output_padding": adj}
        if mode == "NOTSET":
            pads = [0] * (2 * nd)
            for j in range(nd):
                while True:
                    pads[j], pads[j + nd] = (int(v) for v in rng.integers(0, 3, size=2))
                    if pads[j] + pads[j + nd] < full[j]:
                        break
            attrs["pads"] = pads
        elif mode.startswith("output_shape"):
            attrs["output_shape"] = [int(f - rng.integers(0, min(3, f - 1) + 1)) for f in full]
            if mode.endswith("SAME_UPPER"):
                attrs["auto_pad"] = "SAME_UPPER"
        else:
            attrs["auto_pad"] = mode
        x = rng.standard_normal((int(rng.integers(1, 3)), c) + spatial).astype(np.float32)
        w = rng.standard_normal((c, m // groups) + tuple(kernel)).astype(np.float32)
        inputs = [("X", x), ("W", w)]
        if i % 2:
            inputs.append(("B", rng.standard_normal((m,)).astype(np.float32)))
        yield "ConvTranspose", inputs, [("Y", F)], attrs


def pool_cases(rng, np, F):
    I64 = 7  # onnx.TensorProto.INT64
    """MaxPool (with its Indices) and AveragePool in 1-D, 2-D and 3-D: strides, dilations, explicit pads (begin != end, below the
    kernel), ceil_mode, count_include_pad (ONNX's default 0, ours 1), auto_pad SAME_UPPER / SAME_LOWER / VALID.
    The data is at least the dilated kernel's extent, so every window holds an element. SAME cases are not
    dilated: onnxruntime and the reference evaluator size dilated SAME padding by the undilated kernel, against
    the spec's ceil(input / stride) outputs (ours follow the spec)."""
    modes = ("NOTSET", "NOTSET", "SAME_UPPER", "NOTSET", "SAME_LOWER", "VALID")
    for i in range(48):
        op = "MaxPool" if i % 2 == 0 else "AveragePool"
        mode = modes[(i // 2) % len(modes)]
        nd = 1 + i % 3
        kernel = [int(v) for v in rng.integers(1, 4, size=nd)]
        strides = [int(v) for v in rng.integers(1, 4, size=nd)]
        dilations = [int(v) for v in rng.integers(1, 3, size=nd)] if i % 3 and not mode.startswith("SAME") else [1] * nd
        if mode.startswith("SAME"):  # a stride above the kernel would need negative padding: onnxruntime refuses it
            strides = [min(st, k) for st, k in zip(strides, kernel)]
        span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        spatial = tuple(max(int(v), sp) for v, sp in zip(random_shape(rng, nd, 1, {1: 9, 2: 6, 3: 4}[nd], 150), span))
        attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations}
        if mode == "NOTSET":
            attrs["pads"] = [int(rng.integers(0, k)) for k in kernel] + [int(rng.integers(0, k)) for k in kernel]
            attrs["ceil_mode"] = int(rng.integers(0, 2))
        else:
            attrs["auto_pad"] = mode
        if op == "AveragePool":
            attrs["count_include_pad"] = int(rng.integers(0, 2))
        x = rng.standard_normal((int(rng.integers(1, 3)), int(rng.integers(1, 4))) + spatial).astype(np.float32)
        outputs = [("Y", F), ("Indices", I64)] if op == "MaxPool" else [("Y", F)]  # argmax: flat, row-major
        yield op, [("X", x)], outputs, attrs


def border_cases(rng, np, F):
    """Conv, MaxPool and AveragePool whose padding reads a border (our pad_mode / pad_value), written the ONNX
    way: a Pad node (constant with a value, reflect, edge, wrap) feeding the window operator, which pads no
    further. Reflect pads stay below the extent and wrap pads within it (onnxruntime's limits); pooling pads
    below the window (ours); no ceil_mode (ONNX clips a window past the border, ours reads the border on)."""
    modes = ("constant", "reflect", "edge", "wrap")
    for i in range(48):
        mode, op, nd = modes[i % 4], ("Conv", "MaxPool", "AveragePool")[(i // 4) % 3], 1 + i % 3
        kernel, strides, dilations = window_sizes(rng, nd)
        span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        spatial = tuple(max(int(v), sp, 2) for v, sp in zip(random_shape(rng, nd, 2, {1: 9, 2: 6, 3: 4}[nd], 150), span))
        limit = [d - 1 if mode == "reflect" else (d if mode == "wrap" else 3) for d in spatial]
        if op != "Conv":
            limit = [min(l, sp - 1) for l, sp in zip(limit, span)]
        begin = [int(rng.integers(0, l + 1)) for l in limit]
        end = [int(rng.integers(0, l + 1)) for l in limit]
        groups = int(rng.integers(1, 3)) if op == "Conv" else 1
        c = groups * int(rng.integers(1, 3))
        x = rng.standard_normal((int(rng.integers(1, 3)), c) + spatial).astype(np.float32)
        inputs = [("X", x), ("pads", np.array([0, 0] + begin + [0, 0] + end, dtype=np.int64))]
        if mode == "constant":
            inputs.append(("constant_value", np.array(rng.standard_normal(), dtype=np.float32)))
        attrs = {"pad_mode": mode, "kernel_shape": kernel, "strides": strides, "dilations": dilations}
        if op == "Conv":
            k = groups * int(rng.integers(1, 3))
            inputs.append(("W", rng.standard_normal((k, c // groups) + tuple(kernel)).astype(np.float32)))
            if i % 2:
                inputs.append(("B", rng.standard_normal((k,)).astype(np.float32)))
            attrs["group"] = groups
        yield "Pad+" + op, inputs, [("Y", F)], attrs


def activation_cases(rng, np, F):
    """Relu, Sigmoid, Tanh and Softplus (our Activation's relu, sigmoid, tanh, softrelu) on ranks 1 to 5."""
    for op in ("Relu", "Sigmoid", "Tanh", "Softplus"):
        for i in range(6):
            x = (rng.standard_normal(random_shape(rng, 1 + i % 5, 1, 6)) * 4).astype(np.float32)
            yield op, [("X", x)], [("Y", F)], {}


def batch_norm_cases(rng, np, F):
    """BatchNormalization on ranks 2 to 5: inference (the running statistics) and training_mode 1 (the batch's,
    biased variance, with the running statistics moved by momentum as further outputs)."""
    for i in range(16):
        training = i % 2
        rank = 2 + i % 4
        shape = random_shape(rng, rank, 1 if not training else 2, 5, 200)
        c = shape[1]
        x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        stats = [("scale", rng.standard_normal((c,)).astype(np.float32)),
                 ("B", rng.standard_normal((c,)).astype(np.float32)),
                 ("input_mean", rng.standard_normal((c,)).astype(np.float32)),
                 ("input_var", rng.uniform(0.5, 2.0, (c,)).astype(np.float32))]
        attrs = {"epsilon": float(rng.choice([1e-5, 1e-3])), "momentum": float(rng.choice([0.9, 0.8]))}
        outputs = [("Y", F)]
        if training:
            attrs["training_mode"] = 1
            outputs += [("running_mean", F), ("running_var", F)]
        yield "BatchNormalization", [("X", x)] + stats, outputs, attrs


GENERATORS = [softmax_cases, pad_cases, matmul_cases, slice_cases, concat_cases, reduce_mean_cases, leaky_cases,
              fully_connected_cases, conv_cases, lrn_cases, gather_cases,
              conv_transpose_cases, pool_cases, border_cases, activation_cases, batch_norm_cases]


# ---- writing ---------------------------------------------------------------------------------------------

def fmt_values(a):
    return " ".join("%.9g" % v for v in a.reshape(-1).tolist())


def write_tensor(out, role, name, a):
    out.append("%s %s %d %s" % (role, name, a.ndim, " ".join(str(d) for d in a.shape)))
    out.append(fmt_values(a.astype("float64")))


def write_cases(oracle, digest):
    np = oracle.np
    F = oracle.onnx.TensorProto.FLOAT
    rng = np.random.default_rng(17)
    out = [FORMAT, "status ok", "generator " + digest,
           "# onnx %s, onnxruntime %s, opset %d" % (oracle.onnx.__version__, oracle.ort.__version__, OPSET)]
    count = 0
    unrun = []
    for gen in GENERATORS:
        for item in gen(rng, np, F):
            op, inputs, outputs, attrs = item[:4]
            try:
                runner, results = oracle.run(op, inputs, outputs, attrs, *item[4:])
            except Exception as e:  # neither oracle computes it (a bug of this onnx version's evaluator, say)
                unrun.append("%s %s: %s" % (op, {k: v for k, v in attrs.items()}, str(e).splitlines()[0][:120]))
                continue
            out.append("case %s %s" % (op, runner))
            for k, v in sorted(attrs.items()):
                if isinstance(v, str):
                    out.append("sattr %s %s" % (k, v))
                else:
                    vals = v if isinstance(v, (list, tuple)) else [v]
                    out.append("attr %s %d %s" % (k, len(vals), " ".join(repr(x) for x in vals)))
            for name, a in inputs:
                write_tensor(out, "in", name, np.asarray(a))
            for (name, _), a in zip(outputs, results):
                write_tensor(out, "out", name, np.asarray(a))
            out.append("end")
            count += 1
    # The generators draw every case before running it, so a case left out shifts no other one.
    for u in unrun:
        out.append("# not computed by either oracle, left out: " + u)
        print("onnx_cases.py: left out a case neither oracle computes: " + u, file=sys.stderr)
    return out, count


def main():
    path = sys.argv[1]
    digest = generator_hash()
    if up_to_date(path, digest):
        return 0
    modules, why = import_oracle()
    oracle = Oracle(*modules) if modules is not None else None
    if oracle is not None:
        why = oracle.onnxruntime_fails()
    if why:
        lines = [FORMAT, "status unavailable " + why]
        print("onnx_cases.py: " + why + "; the [onnx] test cases will be skipped", file=sys.stderr)
    else:
        lines, count = write_cases(oracle, digest)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
