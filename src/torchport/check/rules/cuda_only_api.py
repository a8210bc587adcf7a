"""TP401 cuda-only-api: ``torch.cuda.*`` calls that have a ``torch.accelerator`` twin."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import cuda_function, guard_statement, in_device_probe, only_shown
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._settled_calls import settled
from torchport.check.rules._test_code import (
    benchmark_code,
    cuda_is_the_subject,
    decides_where_a_test_runs,
)
from torchport.check.semantic._guards import device_guard

# How each call is rewritten: "statement" calls raise without an accelerator and are
# guarded by an `if`; "value" calls get a conditional expression; "plain" calls are
# swapped as they are; None: reported only.
_TWINS: dict[str, tuple[str, str | None, FixSafety]] = {
    "synchronize": ("synchronize", "statement", FixSafety.SAFE),
    "empty_cache": ("empty_cache", "statement", FixSafety.UNSAFE),
    "reset_peak_memory_stats": ("reset_peak_memory_stats", "statement", FixSafety.UNSAFE),
    "memory_allocated": ("memory_allocated", "value", FixSafety.UNSAFE),
    "memory_reserved": ("memory_reserved", "value", FixSafety.UNSAFE),
    "max_memory_allocated": ("max_memory_allocated", "value", FixSafety.UNSAFE),
    "max_memory_reserved": ("max_memory_reserved", "value", FixSafety.UNSAFE),
    "device_count": ("device_count", "plain", FixSafety.UNSAFE),
    "current_device": ("current_device_index", None, FixSafety.NONE),
    "device": ("device_index", None, FixSafety.NONE),  # `with torch.cuda.device(i):`
    "get_device_capability": ("get_device_capability", None, FixSafety.NONE),
    "mem_get_info": ("get_memory_info", None, FixSafety.NONE),
    "memory_stats": ("memory_stats", None, FixSafety.NONE),
    "reset_accumulated_memory_stats": ("reset_accumulated_memory_stats", None, FixSafety.NONE),
}
# Questions about one device that `torch.accelerator` does not ask: the device's own
# module answers them (`torch.get_device_module(device)`: CUDA's and XPU's have them).
_DEVICE_MODULE = frozenset({"get_device_name", "get_device_properties"})
_TAILS = frozenset({*_TWINS, *_DEVICE_MODULE, "is_available"})


class CudaOnlyApi(Rule):
    """## What it does
    Finds `torch.cuda` calls that have a device-generic twin in
    `torch.accelerator`: `synchronize`, `empty_cache`, `memory_allocated`,
    `memory_reserved`, `max_memory_allocated`, `max_memory_reserved`,
    `reset_peak_memory_stats`, `device_count`, `current_device`,
    `get_device_capability`, `mem_get_info`, `memory_stats` (also spelled
    `torch.cuda.memory.*`) and the `with torch.cuda.device(i):` context
    (`torch.accelerator.device_index`); `get_device_name` and
    `get_device_properties`, which the device's own module answers
    (`torch.get_device_module(device)`), are only reported, and left alone in a
    `try` that catches what a machine without CUDA raises (a probe).
    `torch.cuda.is_available()` is TP109's business (a CUDA-or-CPU choice), but
    in an `assert` it demands CUDA and is reported here; a count its own expression
    settles (`_settled_calls`) and calls under a device check (`if device.type == "cuda":`,
    `if torch.cuda.is_available():`) are left alone, as are those in a test's
    skip condition, in test code whose subject is CUDA and in benchmark code
    (`rules/_test_code.py`: a benchmark times one device on purpose).

    ## Why is this bad?
    They only see CUDA: on an Apple, Intel or AMD-without-ROCm machine they
    raise or report "no device" while an accelerator is there, so timings skip
    the synchronization, memory reports read zero and the code takes its CPU
    path.

    ## Fix safety
    `synchronize()` becomes `torch.accelerator.synchronize()` guarded by
    `torch.accelerator.is_available()` (it raises without an accelerator):
    safe. The memory calls need torch >= 2.8 and read 0 without an
    accelerator; `device_count()` now counts MPS and XPU devices too, which
    changes which branch runs there: unsafe, and offered only where the count
    is printed or logged. A count that is stored, tested or iterated over
    guards CUDA code the fix cannot see; it is reported without a fix.
    `current_device()`, `torch.cuda.device(...)` and the capability and memory
    queries whose answers differ in shape between devices are only reported.
    """

    code = "TP401"
    name = "cuda-only-api"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = "use the `torch.accelerator` twin of this `torch.cuda` call"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n"
        "\n"
        "if torch.accelerator.is_available():\n"
        "    torch.accelerator.synchronize()\n",
        "import torch\n\nbf16 = torch.cuda.is_bf16_supported()\n",
        "import torch\n\ncuda = torch.cuda.is_available()\n",
        'import torch\n\nif x.device.type == "cuda":\n    torch.cuda.synchronize()\n',
        "import torch\n\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n",
        "import torch\n\nif torch.cuda.is_available():\n    print(torch.cuda.get_device_name(0))\n",
        "import torch\n\ntry:\n    name = torch.cuda.get_device_name(0)\n"
        "except (RuntimeError, AssertionError):\n    name = None\n",
    )
    invalid = (
        Example(
            "import torch\n"
            "\n"
            "def timed(fn):\n"
            "    torch.cuda.synchronize()  # wait for the kernels\n"
            "    return fn()\n",
            fixed="import torch\n"
            "\n"
            "def timed(fn):\n"
            "    if torch.accelerator.is_available():\n"
            "        torch.accelerator.synchronize()  # wait for the kernels\n"
            "    return fn()\n",
        ),
        Example(
            "import torch as th\n"
            "\n"
            "used = th.cuda.memory_allocated() / 2**20\n"
            "print(th.cuda.device_count())\n",
            fixed="import torch as th\n"
            "\n"
            "used = (th.accelerator.memory_allocated() if th.accelerator.is_available() else 0)"
            " / 2**20\n"
            "print(th.accelerator.device_count())\n",
            count=2,
        ),
        Example("import torch\n\nworld_size = torch.cuda.device_count()\n"),
        Example("import torch\n\ni = torch.cuda.current_device()\n"),
        Example("import torch\n\nname = torch.cuda.get_device_name(None)\n"),
        Example("import torch\n\nwith torch.cuda.device(x.device):\n    y = kernel(x)\n"),
        Example('import torch\n\nassert torch.cuda.is_available(), "needs a GPU"\n'),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        function = cuda_function(node, ctx, _TAILS)
        if function is None:
            return
        if decides_where_a_test_runs(ctx) or cuda_is_the_subject(node, ctx) or benchmark_code(ctx):
            return  # a test's skip condition, a test of CUDA itself, a benchmark (`_test_code.py`)
        function = function.removeprefix("memory.")  # `torch.cuda.memory.memory_allocated()`
        if function == "is_available":
            if _asserted(ctx) and device_guard(node, ctx) is None:
                # (not reported: a choice, TP109's, or a demand inside a branch for CUDA)
                message = f"use `{ctx.torch_name()}.accelerator.is_available()` {_DEMAND}"
                yield ctx.finding(self, node, message=message)
        elif function in _DEVICE_MODULE:
            if device_guard(node, ctx) is None and not in_device_probe(ctx):
                t = ctx.torch_name()
                message = f"use `{t}.get_device_module(device).{function}()` {_WHY}"
                yield ctx.finding(self, node, message=message)
        elif function in _TWINS and device_guard(node, ctx) is None:
            if settled(node, function, ctx):
                return  # `count() > 1 and "cuda" in dev.type`, `a if count() else a`
            # (not reported: a branch for CUDA, ported code, or a CUDA-or-CPU choice, TP109)
            yield _accelerator_twin(self, node, _TWINS[function], ctx)


def _accelerator_twin(
    rule: Rule, node: ast.Call, twin: tuple[str, str | None, FixSafety], ctx: Context
) -> Finding:
    """The finding for a call ``torch.accelerator`` has a twin of, fixed where that is safe."""
    method, kind, safety = twin
    torch = ctx.torch_at(node)
    t = torch[0] if torch is not None else ctx.torch_name()
    args = ", ".join(ctx.segment(a) for a in (*node.args, *node.keywords))
    call = f"{t}.accelerator.{method}({args})"
    edit = None
    if torch is None:
        pass  # torch is optional here: no `import torch` to add
    elif kind == "statement":
        edit = guard_statement(node, call, ctx, t)
    elif kind == "value":
        edit = ctx.replace(node, f"({call} if {t}.accelerator.is_available() else 0)")
    elif kind == "plain" and only_shown(ctx):
        # A count that decides anything (`n = ...`, `if ... > 1:`) guards CUDA code this
        # fix cannot see; changing it alone would send that code to MPS/XPU.
        edit = ctx.replace(node, call)
    fix = None if edit is None or torch is None else Fix((edit, *torch[1]), safety)
    return ctx.finding(rule, node, message=f"use `{t}.accelerator.{method}()` {_WHY}", fix=fix)


_WHY = "instead of the CUDA-only call, so the code sees any accelerator"
_DEMAND = "in this assert: demanding CUDA stops the program on every other accelerator"


def _asserted(ctx: Context) -> bool:
    """Whether the call is (part of) the test of an ``assert``: a demand, not a choice."""
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Assert):
            return True
        if not isinstance(outer, (ast.BoolOp, ast.UnaryOp, ast.Call, ast.Compare)):
            return False
    return False
