"""TP511 host-argument-on-device: a value an API reads on the host, made on the model's device."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import port_facts
from torchport.check.rules._snippets import DEVICE_LINE

_HEAD = (
    "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n\n"
    + DEVICE_LINE
    + "\nrnn = torch.nn.LSTM(3, 5, batch_first=True).to(device)\n"
    "emb = torch.nn.Embedding(10, 3).to(device)\n"
    "ids = torch.tensor([[1, 2, 3], [4, 5, 0]], device=device)\n"
)

_MODULE = (
    "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n\n"
    "class Enc(torch.nn.Module):\n    def forward(self, x, lengths):\n"
    "        return pack_padded_sequence(x, {lengths}, batch_first=True)\n"
)
_MAYBE = (
    "pass these lengths on the CPU (`.cpu()` where they are a tensor): "
    "`pack_padded_sequence` reads them on the host, and some of what reaches here is on the "
    "model's device"
)


class HostArgumentOnDevice(Rule):
    """## What it does
    Finds the lengths handed to `torch.nn.utils.rnn.pack_padded_sequence` where they
    are on the model's device: computed from a tensor the port moves there
    (`(ids != 0).sum(1)` of the padded ids), or moved there with the batch.

    ## Why is this bad?
    `pack_padded_sequence` reads its lengths on the host: it raises for lengths on
    CUDA ("'lengths' argument should be a 1D CPU int64 tensor") and on any other
    accelerator, so a CPU program the port moved this way stops at that call. The
    fix passes `.cpu()` of them: on the CPU it returns the tensor itself (no copy);
    on the device it is one small copy, and a sync, which the call needs anyway.
    In an `nn.Module`'s methods, which run where the module and its inputs are (the port
    moves both), every lengths argument not plainly on the host is brought there. Where what
    reaches the call may not be a tensor (a method's parameter, a function one caller hands
    a list), the fix is `torch.as_tensor(lengths, device="cpu")` (`.cpu()` of a list
    raises): a CPU tensor is returned as it is, a list or a device tensor made a CPU one.
    """

    code = "TP511"
    name = "host-argument-on-device"
    intent = Intent.PORT
    default = False
    message = (
        "pass `.cpu()` of these lengths: `pack_padded_sequence` reads them on the host, "
        "and they are on the model's device here"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"pack_padded_sequence"})
    valid = (
        _HEAD + "lengths = (ids != 0).sum(1)\n"
        "packed = pack_padded_sequence(emb(ids), lengths.cpu(), batch_first=True)\n",
        _HEAD + "packed = pack_padded_sequence(emb(ids), [3, 2], batch_first=True)\n",
        _HEAD + "lengths = torch.tensor([3, 2])\n"
        "packed = pack_padded_sequence(emb(ids), lengths, batch_first=True)\n",
        _MODULE.replace(
            "        return", "        lengths = lengths.cpu().numpy()\n        return"
        ).format(lengths="lengths"),  # a parameter the method itself brought to the host
    )
    invalid = (
        Example(
            _HEAD + "lengths = (ids != 0).sum(1)\n"
            "packed = pack_padded_sequence(emb(ids), lengths, batch_first=True)\n",
            fixed=_HEAD + "lengths = (ids != 0).sum(1)\n"
            "packed = pack_padded_sequence(emb(ids), lengths.cpu(), batch_first=True)\n",
        ),
        Example(
            _HEAD + "packed = pack_padded_sequence(emb(ids), (ids > 0).sum(-1), True)\n",
            fixed=_HEAD
            + "packed = pack_padded_sequence(emb(ids), (ids > 0).sum(-1).cpu(), True)\n",
        ),
        Example(  # a module's method: its inputs go to the device with it
            _MODULE.format(lengths="lengths"),
            fixed=_MODULE.format(lengths='torch.as_tensor(lengths, device="cpu")'),
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        from torchport.check.port._calls import api_cpu_arguments  # on first use
        from torchport.check.port._kinds import value_kinds
        from torchport.check.port._value_kind import Kind

        wanted = api_cpu_arguments(node, ctx)  # also `pack = ...pack_padded_sequence; pack(...)`
        facts = port_facts(ctx) if wanted else None
        scope = facts.scope_of.get(id(node)) if facts is not None else None
        if facts is None or scope is None or (scope.internal and not scope.module_method):
            return
        for _, given in wanted:
            if _plainly_on_host(given) or _brought_to_host(given, ctx):
                continue
            on_device = facts.on_device(given, scope)
            if not (on_device or (scope.module_method and facts.known.classes)):
                continue  # (a module's method runs where the module and its inputs are)
            kind = value_kinds(facts).of(given)
            if kind is Kind.NUMPY or (not on_device and _made_here(given, ctx)):
                continue  # numpy, or a tensor made on the CPU there: on the host
            if on_device and kind in (Kind.TENSOR, Kind.DEVICE):
                edits = ctx.append_call(given, ".cpu()")
            else:  # what reaches it may be a list as well: made a CPU tensor, whatever it is
                torch = ctx.torch_at(given)
                if torch is None:
                    yield ctx.finding(self, given, message=_MAYBE)
                    continue
                t, imports = torch
                start, end = ctx.start(given), ctx.end(given)
                made = (Edit(start, start, f"{t}.as_tensor("), Edit(end, end, ', device="cpu")'))
                edits = (*made, *imports)
            yield ctx.finding(self, given, fix=Fix(edits, FixSafety.SAFE))


def _made_here(expr: ast.expr, ctx: Context) -> bool:
    """A name every binding of which makes a tensor with a torch factory and no ``device=``
    (``lengths = torch.tensor(lens)``): on the CPU, where the port leaves it."""
    from torchport.check.port._calls import CREATORS  # on first use

    found = ctx.scopes.bindings(expr.id, expr) if isinstance(expr, ast.Name) else []
    return bool(found) and all(
        isinstance(b.value, ast.Call)
        and ctx.qualname(b.value.func) in CREATORS
        and not any(k.arg == "device" for k in b.value.keywords)
        for b in found
    )


def _brought_to_host(expr: ast.expr, ctx: Context) -> bool:
    """A name whose binding on every path here brings it to the host: ``lengths =
    lengths.cpu()``, ``.numpy()`` or ``.tolist()`` of it (a method's parameter rebound)."""
    if not isinstance(expr, ast.Name):
        return False
    reached = ctx.scopes.reaching(expr.id, expr)
    value = reached.value if reached is not None else None
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in ("numpy", "tolist") or _plainly_on_host(value):
            return True
        value = value.func.value  # ``.cpu().numpy()``, ``.numpy().astype(...)``
    return False


def _plainly_on_host(expr: ast.expr) -> bool:
    """``x.cpu()``, ``x.to("cpu")``, a tensor made with ``device="cpu"`` (the fix's own
    ``torch.as_tensor(x, device="cpu")``), or a literal list or tuple of lengths."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return False
    if any(k.arg == "device" and _cpu(k.value) for k in expr.keywords):
        return True
    attr, args = expr.func.attr, expr.args
    return attr == "cpu" or (attr == "to" and bool(args) and _cpu(args[0]))


def _cpu(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == "cpu"
