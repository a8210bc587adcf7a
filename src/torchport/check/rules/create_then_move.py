"""TP106 create-then-move: ``torch.zeros(...).to(device)`` instead of creating on the device."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import (
    RANDOM_FACTORIES,
    TENSOR_FACTORIES,
    is_cpu_target,
    keyword,
    method_name,
    string_value,
)
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._once import runs_once

# Factories whose values come from the host (their data argument), not computed by the factory.
_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
# Factories whose positional arguments are all sizes (and `full`, whose first one is).
_SHAPED = frozenset(
    f"torch.{n}" for n in ("zeros", "ones", "empty", "rand", "randn", "eye", "full")
)
_DEVICE_TEXT = re.compile(r"dev|cuda|gpu|rank|accelerator", re.IGNORECASE)


class CreateThenMove(Rule):
    """## What it does
    Finds tensors created on the CPU and moved right away:
    `torch.zeros(n).to(device)`, `torch.randn(n).cuda()`.

    ## Why is this bad?
    The tensor is filled on the CPU, then copied to the device: one allocation,
    one fill and one host-to-device copy too many, and a synchronization on
    some backends. Pass `device=` to the factory and the tensor is made where
    it is used. Random tensors drawn with a `generator=` are left alone: a CPU
    generator (same numbers on every device) needs a CPU tensor. Data
    factories (`torch.tensor(values).to(device)`, `torch.as_tensor(array)`)
    are left alone too: their values are on the host, so they cross to the
    device either way, and passing `device=` saves no copy; so are tensors
    with a literal 0 among their sizes (`torch.empty((n, 0))`: nothing to copy),
    and tensors made once: at a script's top level outside loops, in a function
    the script calls only from there (`if __name__ == "__main__": check()`), or
    kept on the object that makes it (`if not hasattr(self, "queue"):
    self.queue = ...`): a one-off copy saves nothing that matters (per step, in
    a loop or a function called per batch, it does).

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`,
    `eye`...). Unsafe for random ones (`randn`, `rand`, `randint`...): the
    device's generator draws different numbers from the CPU's, so seeded
    results change. `.cuda()` becomes `device="cuda"`: the fix keeps the
    device the code chose (replacing CUDA is TP101's job, and a
    `# noqa: TP101` keeps it).
    """

    code = "TP106"
    name = "create-then-move"
    intent = Intent.SPEED
    message = "pass `device=` to the factory to create the tensor where it is used, not move it"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"to", "cuda"})
    valid = (
        "x = torch.zeros(3, device=device)\n",
        "x = torch.zeros(3).to(torch.float16)\n",
        "import torch\n\nz = torch.randn(4, generator=torch.Generator().manual_seed(0)).to(dev)\n",
        'x = torch.zeros(3).to("cpu")\n',
        "import torch\n\nx = torch.tensor(values, dtype=torch.long).to(device)\n",
        "import torch\n\nx = torch.as_tensor(array).cuda()\n",
        "import torch\n\nctx = torch.empty((n, 0)).to(z.device)\n",
        "import torch\n\n\ndef check():\n    w = torch.randn(3, 3).cuda()\n\n\n"
        'if __name__ == "__main__":\n    check()\n',
        "import torch\n\n\nclass Pool:\n    def add(self, x):\n        if self.buf is None:\n"
        "            self.buf = torch.zeros(64, 3).cuda()\n",
    )
    invalid = (
        Example(
            "import torch\n\nmask = torch.ones(4, 4).to(device)\n",
            fixed="import torch\n\nmask = torch.ones(4, 4, device=device)\n",
        ),
        Example(
            "import torch\n\nnoise = torch.randn(8).cuda()\nidx = torch.arange(8,).to(dev)\n",
            fixed="import torch\n\n"
            'noise = torch.randn(8, device="cuda")\n'
            "idx = torch.arange(8, device=dev,)\n",
            count=2,
        ),
        Example(  # the script calls it in a loop: a copy per iteration
            "import torch\n\n\ndef step():\n    return torch.zeros(3).to(device)\n\n\n"
            'if __name__ == "__main__":\n    for _ in range(9):\n        step()\n',
            fixed="import torch\n\n\ndef step():\n    return torch.zeros(3, device=device)\n\n\n"
            'if __name__ == "__main__":\n    for _ in range(9):\n        step()\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        method = method_name(node)
        if method not in ("to", "cuda"):
            return
        assert isinstance(node.func, ast.Attribute)
        made = node.func.value
        if not isinstance(made, ast.Call):
            return
        factory = ctx.qualname(made.func)
        if factory is None or not _device_would_save_a_copy(made, factory):
            return
        if runs_once(node, ctx):
            return  # a one-off copy: nothing that matters to save
        target = _moved_to(node, method, ctx)
        if target is not None:
            yield ctx.finding(self, node, fix=_create_there(node, made, factory, target, ctx))


def _device_would_save_a_copy(made: ast.Call, factory: str) -> bool:
    """A factory given no device, whose values ``device=`` would make there instead."""
    if factory not in TENSOR_FACTORIES or keyword(made, "device") is not None:
        return False
    if factory in _DATA_FACTORIES or _no_elements(made, factory):
        return False  # host values cross either way, or nothing crosses: no copy saved
    if any(kw.arg is None for kw in made.keywords):
        return False  # **kwargs may already hold a device
    # drawn from a CPU generator on purpose (same numbers on every device)
    return keyword(made, "generator") is None


def _moved_to(node: ast.Call, method: str, ctx: Context) -> str | None:
    """The source of the device the tensor is moved to, when that is all the call does."""
    if method == "cuda":
        if node.args or any(kw.arg != "non_blocking" for kw in node.keywords):
            return None
        # Keep the CUDA choice: replacing it is TP101's job (and a `noqa: TP101` keeps it).
        return '"cuda"'
    moved = _device_target(node, ctx)
    return None if moved is None else ctx.segment(moved)


def _create_there(node: ast.Call, made: ast.Call, factory: str, target: str, ctx: Context) -> Fix:
    """``device=target`` given to the factory, and the move dropped."""
    args: list[ast.AST] = [*made.args, *(kw.value for kw in made.keywords)]
    if args:
        at = max(ctx.argument_end(made, a) for a in args)
        add = Edit(at, at, f", device={target}")
    else:
        at = ctx.end(made) - 1
        add = Edit(at, at, f"device={target}")
    assert isinstance(node.func, ast.Attribute)
    drop = Edit(ctx.receiver_end(node.func), ctx.end(node), "")
    if factory in RANDOM_FACTORIES:
        return Fix((add, drop), FixSafety.UNSAFE, _OTHER_GENERATOR)
    return Fix((add, drop), FixSafety.SAFE)


_OTHER_GENERATOR = (
    "the numbers are drawn by the device's generator instead of the CPU's: "
    "seeded runs get different values (and a different CPU random stream after this line)"
)


def _no_elements(made: ast.Call, factory: str) -> bool:
    """``torch.empty((n, 0))``, ``torch.zeros(0)``: a literal 0 among the sizes, nothing to copy.

    Only the arguments that are sizes count: every positional one of the shape
    factories, the first of ``full`` (the rest is its fill value).
    """
    args = made.args[:1] if factory == "torch.full" else made.args
    if factory not in _SHAPED:
        return False
    sizes = [*args, *(kw.value for kw in made.keywords if kw.arg == "size")]
    flat = [e for s in sizes for e in (s.elts if isinstance(s, (ast.Tuple, ast.List)) else [s])]
    return any(isinstance(e, ast.Constant) and type(e.value) is int and e.value == 0 for e in flat)


def _device_target(call: ast.Call, ctx: Context) -> ast.expr | None:
    """The device of ``.to(device)`` when that is all the call does, else None."""
    if len(call.args) == 1 and all(kw.arg == "non_blocking" for kw in call.keywords):
        target = call.args[0]
    elif not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "device":
        target = call.keywords[0].value
    else:
        return None
    if is_cpu_target(target, ctx):
        return None
    if string_value(target) is not None:
        return target
    if isinstance(target, ast.Call):
        return target if ctx.qualname(target.func) == "torch.device" else None
    if isinstance(target, (ast.Name, ast.Attribute)) and ctx.qualname(target) is None:
        # A dtype variable would be wrong here: trust only names that say "device".
        return target if _DEVICE_TEXT.search(ctx.segment(target)) else None
    return None
