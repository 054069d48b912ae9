#!/usr/bin/env python3
"""Turns the README's ```cpp blocks into one Catch2 test file, so the API tour always compiles and runs.

Every ```cpp block becomes the body of a [cpu] test case; blocks may use CHECK/REQUIRE. A block that starts
with `// file scope` is pasted at namespace scope instead (for user functors and helpers)."""
import re
import sys

readme, out = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"```cpp\n(.*?)```", text, flags=re.S)
lines = [
    "// Generated from README.md by tools/extract_snippets.py: do not edit.",
    "#include <catch2/catch.hpp>",
    "#include <tensorexpr/tensorexpr.h>",
    "#include <cstdio>",
    "using namespace tensorexpr;",
    "using namespace tensorexpr::expr;",
]
for i, block in enumerate(blocks):
    if block.lstrip().startswith("// file scope"):
        lines.append(block)
    else:
        lines.append('TEST_CASE("README snippet %d", "[cpu][readme]") {\n%s}\n' % (i + 1, block))
open(out, "w", encoding="utf-8").write("\n".join(lines) + "\n")
