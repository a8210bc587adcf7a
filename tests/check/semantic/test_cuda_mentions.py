"""Where a file names CUDA apart from a device value, as the device-following proof needs."""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._cuda_mentions import cuda_mentions, snippet

SOURCE = """\
import torch
from torch import cuda
import mylib
a = "cuda"
b = "cuda:1"
c = "cudas"
if d == "cuda":
    pass
e = x.cuda()
f = mylib.cuda()
g = torch.cuda.is_available()
h = cuda.device_count()
i = torch.cuda.synchronize
j = torch.cuda.FloatTensor(2)
"""


def _context(source: str) -> Context:
    return Context(source, "m.py", ast.parse(source))


def test_each_way_of_naming_cuda_and_only_those() -> None:
    ctx = _context(SOURCE)
    found = cuda_mentions(ctx)
    lines = [(getattr(node, "lineno", 0), why.split("`")[1]) for node, why in found]
    assert sorted(lines) == [
        (4, '"cuda"'),
        (5, '"cuda:1"'),
        (9, "x.cuda()"),
        (11, "torch.cuda.is_available"),
        (12, "cuda.device_count"),
        (14, "torch.cuda.FloatTensor"),
    ]
    assert cuda_mentions(ctx) is found  # once per file


def test_snippet_is_the_first_line_cut_at_sixty() -> None:
    long_call = "y = f(" + ", ".join(f"a{i}" for i in range(30)) + ",\n  b)\n"
    ctx = _context(long_call)
    call = ctx.tree.body[0].value  # type: ignore[attr-defined]
    text = snippet(call, ctx)
    assert len(text) == 60 and text.endswith("...") and "\n" not in text
    fn = _context("def f(a, b=1):\n    return a\n")
    arguments = fn.tree.body[0].args  # type: ignore[attr-defined]
    assert not hasattr(arguments, "lineno")
    assert snippet(arguments, fn) == "def f(a, b=1):"  # no position: its function's first line


def test_snippet_goes_on_past_a_line_that_ends_in_an_opening_bracket() -> None:
    ctx = _context("records.append({\n    'seed': seed,\n    'device': str(device),\n})\n")
    call = ctx.tree.body[0].value  # type: ignore[attr-defined]
    assert snippet(call, ctx) == "records.append({'seed': seed,"
    assert snippet(call.args[0], ctx) == "{'seed': seed,"
    one = _context("y = f(a,\n      b)\n")
    assert snippet(one.tree.body[0].value, one) == "f(a,"  # type: ignore[attr-defined]
    nested = _context("y = f(\n" + "    g(\n" * 40 + "1" + ")" * 41 + "\n")
    text = snippet(nested.tree.body[0].value, nested)  # type: ignore[attr-defined]
    assert len(text) == 60 and text.startswith("f(g(g(") and text.endswith("...")
