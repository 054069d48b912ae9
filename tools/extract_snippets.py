#!/usr/bin/env python3
"""Turns the README's code blocks into a Catch2 test file, so the API tour always compiles and runs.

    extract_snippets.py README.md out.cc        every ```cpp block -> a [cpu][readme] test case
    extract_snippets.py README.md out.cu cu     every ```cu block  -> a [gpu][readme] test case
    extract_snippets.py README.md out.cu cuda   every ```cuda block -> a [gpu][readme][nccl] test case (the
                                                distributed layer's: built with NCCL, into nccl_tests)

Blocks may use CHECK/REQUIRE. A block that starts with `// file scope` is pasted at namespace scope
instead (for user functors and helpers)."""
import re
import sys

readme, out = sys.argv[1], sys.argv[2]
lang = sys.argv[3] if len(sys.argv) > 3 else "cpp"
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"```%s\n(.*?)```" % lang, text, flags=re.S)
lines = [
    "// Generated from README.md by tools/extract_snippets.py: do not edit.",
    "#include <catch2/catch.hpp>",
    "#include <tensorexpr/tensorexpr.h>",
]
if lang in ("cu", "cuda"):
    lines.append("#include <tensorexpr/cuda/tensorexpr_cuda.cuh>")
if lang == "cuda":
    lines.append("#include <tensorexpr/dist/communicator.cuh>")
    lines.append("#include <tensorexpr/dist/gradient_reducer.cuh>")
lines.append("#include <tensorexpr/ops/convolution.h>")
lines.append("#include <tensorexpr/ops/conv_epilogue.h>")
lines.append("#include <tensorexpr/ops/conv_fixed.h>")
lines.append("#include <tensorexpr/ops/softmax.h>")
lines.append("#include <tensorexpr/ops/dropout.h>")
lines += [
    "#include <cstdio>",
    "using namespace tensorexpr;",
    "using namespace tensorexpr::expr;",
    "using namespace tensorexpr::ops;",
]
tags = {"cu": "[gpu][readme]", "cuda": "[gpu][readme][nccl]"}.get(lang, "[cpu][readme]")
for i, block in enumerate(blocks):
    if block.lstrip().startswith("// file scope"):
        lines.append(block)
    else:
        lines.append('TEST_CASE("README %s snippet %d", "%s") {\n%s}\n' % (lang, i + 1, tags, block))
open(out, "w", encoding="utf-8").write("\n".join(lines) + "\n")
