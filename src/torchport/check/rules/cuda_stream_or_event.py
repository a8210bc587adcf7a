"""TP406 cuda-stream-or-event: ``torch.cuda.Stream``, ``Event``, ``stream``, ``current_stream``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import cuda_function
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import cuda_is_the_subject
from torchport.check.semantic._guards import device_guard

# The CUDA call and its device-generic twin (torch >= 2.7 for the accelerator functions).
_TWINS = {
    "Stream": "`torch.Stream(device)`",
    "Event": "`torch.Event(device, enable_timing=...)`",
    "stream": "`with stream:` on a `torch.Stream`",
    "current_stream": "`torch.accelerator.current_stream()`",
    "default_stream": "`torch.accelerator.current_stream()`",
    "set_stream": "`torch.accelerator.set_stream(stream)`",
    "StreamContext": "`with stream:` on a `torch.Stream`",
}
_TAILS = frozenset(_TWINS)


class CudaStreamOrEvent(Rule):
    """## What it does
    Finds the CUDA-only stream and event API: `torch.cuda.Stream()`,
    `torch.cuda.Event(...)`, `with torch.cuda.stream(s):`,
    `torch.cuda.current_stream()`, `torch.cuda.default_stream()`,
    `torch.cuda.set_stream(s)`. Calls under a device check are left alone, and so
    are those in the arm of a CUDA option (`if self.use_cuda_events():`, `if
    cfg.cuda_streams:`): the program's CUDA-only option, its other path elsewhere.
    So is test code whose subject is CUDA (a GPU-only test, a test class or module
    named for the GPU: `_test_code.cuda_is_the_subject`), as for TP101 and TP401.

    ## Why is this bad?
    They raise on every machine without CUDA, so a data prefetcher or a
    timing helper built on them stops the whole program there (and
    `torchport run` cannot redirect them). `torch.Stream(device)`,
    `torch.Event(device)` and `torch.accelerator.current_stream()` /
    `set_stream()` do the same on any accelerator, and a `torch.Stream` is a
    context manager.

    ## Why is it off by default?
    80% real over samples A-O (16 of 20; held-out O 2 of 11): mostly CUDA's own tests;
    `--extend-select TP406` runs it.
    """

    code = "TP406"
    name = "cuda-stream-or-event"
    intent = Intent.DEVICE
    default = False
    message = "use `torch.Stream` / `torch.Event` and `torch.accelerator.current_stream()` instead"
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n\ns = torch.Stream(device)\nwith s:\n    y = model(x)\n",
        'import torch\n\nif x.device.type == "cuda":\n'
        "    torch.cuda.current_stream().synchronize()\n",
    )
    invalid = (
        Example(
            "import torch\n\n"
            "class Prefetcher:\n"
            "    def __init__(self, loader):\n"
            "        self.stream = torch.cuda.Stream()\n"
            "    def preload(self):\n"
            "        with torch.cuda.stream(self.stream):\n"
            "            pass\n"
            "        torch.cuda.current_stream().wait_stream(self.stream)\n",
            count=3,
        ),
        Example("from torch.cuda import Event\n\nstart = Event(enable_timing=True)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        function = cuda_function(node, ctx, _TAILS)
        if function is None:
            return
        twin = _TWINS.get(function)
        if twin is None or device_guard(node, ctx) is not None or _cuda_option(ctx):
            return
        if cuda_is_the_subject(node, ctx):
            return  # a test of CUDA itself (`_test_code.py`)
        message = f"use {twin} instead of `torch.cuda.{function}`, which exists only for CUDA"
        yield ctx.finding(self, node, message=message)


def _cuda_option(ctx: Context) -> bool:
    """In the ``if`` arm of a test that reads an option named for CUDA, within the function."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(outer, ast.If) and any(s is child for s in outer.body):
            tests = outer.test.values if isinstance(outer.test, ast.BoolOp) else [outer.test]
            if isinstance(outer.test, ast.BoolOp) and isinstance(outer.test.op, ast.Or):
                tests = []  # `if use_cuda_events() or profile:` runs without CUDA too
            if any(_named_for_cuda(t) for t in tests):
                return True
        child = outer
    return False


def _named_for_cuda(test: ast.expr) -> bool:
    """``use_cuda_events()``, ``self.cuda_streams``, ``cfg.use_cuda_graph`` (not negated)."""
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return "cuda" in name.lower()
