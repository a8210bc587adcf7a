"""TP124 integer-device-argument: ``self.load(cfg, device_id)`` where ``load`` moves to it.

The invariant: **an integer handed to a parameter that its function's body places work on
(``.to(p)``, ``.cuda(p)``, ``device=p``) is a CUDA device index there**, however the
parameter is named: ``device_id = 0`` then ``self.load_model(model_config, device_id, ...)``,
whose body does ``.cuda(device)`` and ``stitcher.to(device)`` (ComfyUI-AdvancedLivePortrait,
held-out recall round 5h). What places is ``port/_device_parameters.placing_parameters``'s
answer, asked with ``cuda=True``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import cuda_is_the_subject
from torchport.check.rules.integer_device_index import index_name, names_an_index
from torchport.check.semantic._guards import Guard, device_guard

_LOAD = "import torch\n\n\ndef load(net, device):\n    return net.to(device)\n\n\n"
_ENGINE = (
    "import torch\n\n\nclass Engine:\n    def load(self, cfg, device):\n"
    "        return Net(cfg).cuda(device)\n\n    def setup(self, cfg):\n"
)


class IntegerDeviceArgument(Rule):
    """## What it does
    Finds an integer handed as the device of one of the project's own functions or of
    a method of the same class, where the callee's body places work on that parameter
    (`.to(device)`, `.cuda(device)`, `device=device`, also through `torch.device(device)`):
    `self.load_model(cfg, 0)`, `device_id = 0; self.load_model(cfg, device_id)` (reported
    at the `0`), `train(model, args.gpu)` or `setup(local_rank)` (a name or attribute that
    says it is a rank or GPU index). A callee whose own parameter is named as an index
    (`def train(model, gpu): model.to(gpu)`) is left alone, its `.cuda(gpu)` is TP101's.
    Left alone: a call under a test of the device type, and test code about CUDA itself.

    ## Why is this bad?
    `net.cuda(0)` needs CUDA. Nothing in the callee looks wrong (it moves to the `device`
    it is handed), but every call that hands it an index runs only where there is CUDA,
    and never on MPS or XPU. Hand it a device built from the accelerator that is there:
    `torch.device(torch.accelerator.current_accelerator().type, index)`.
    Reported without a fix: the integer may serve as an index elsewhere too.

    ## Why is it off by default?
    New (held-out recall round 5h), and not yet judged on a precision sample. A callee
    that only moves with `.to(device)` is reported too, though on torch 2.5 and newer an
    integer device there is the current accelerator's (CUDA, MPS, XPU): a known noise
    class (issue 34, a34r), which only a callee's `.cuda(device)` escapes.
    `--extend-select TP124` runs it.
    """

    code = "TP124"
    name = "integer-device-argument"
    intent = Intent.DEVICE
    default = False
    message = (
        "pass a device (`torch.device(torch.accelerator.current_accelerator().type, index)`) "
        "instead of a bare integer, which the function moves work to as a CUDA index"
    )
    node_types = (ast.Call,)
    valid = (
        _LOAD + "net = load(net, device)\n",
        _LOAD + "net = load(net, 'mps')\n",
        "import torch\n\n\ndef pick(items, index):\n    return items[index]\n\n\nx = pick(xs, 0)\n",
        "import torch\n\n\ndef train(net, gpu):\n    return net.to(gpu)\n\n\ntrain(net, rank)\n",
        _LOAD + "if device.type == 'cuda':\n    net = load(net, 0)\n",
        _ENGINE + "        n = 0.5\n        return self.load(cfg, n)\n",
        _LOAD + "def main(rank, device):\n    if device.type == 'cuda':\n        device_id = rank\n"
        "    else:\n        device_id = device\n    return load(net, device_id)\n",
    )
    invalid = (
        Example(_LOAD + "net = load(net, 0)\n"),
        Example(_LOAD + "def main(args):\n    return load(net, device=args.gpu)\n"),
        Example(
            _ENGINE + "        device_id = 0\n        a = self.load(cfg, device_id)\n"
            "        b = self.load(cfg, device=device_id)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        for spot, name in _indices_placed_on(node, ctx):
            said = f"{self.message} (`{ctx.segment(node.func)}` places its work on `{name}`)"
            yield ctx.finding(self, spot, message=said)


def _indices_placed_on(node: ast.Call, ctx: Context) -> list[tuple[ast.expr, str]]:
    """Where ``node`` hands an index to a parameter its callee places work on, and the
    parameter's name; each literal once per file (one bound and handed on by several calls)."""
    handed = _indices_handed(node, ctx)
    if not handed or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return []
    from torchport.check.port._device_parameters import placing_parameters  # first use

    hits = [
        (spot, name)
        for position, name in placing_parameters(node, ctx, cuda=True)
        if (spot := handed.get(name, handed.get(position))) is not None
        and not index_name(name)  # a callee's `gpu` parameter: named as an index there
    ]
    if not hits or device_guard(node, ctx) is Guard.DEVICE_TYPE or cuda_is_the_subject(node, ctx):
        return []
    reported = ctx.memo.setdefault("integer_device_argument.reported", set())
    assert isinstance(reported, set)
    fresh = [(spot, name) for spot, name in hits if id(spot) not in reported]
    reported.update(id(spot) for spot, _ in fresh)
    return fresh


def _indices_handed(node: ast.Call, ctx: Context) -> dict[int | str | None, ast.expr]:
    """The call's arguments that are device indices, by position and keyword name.

    An ``int`` literal, a name or attribute named as an index (``rank``, ``args.gpu``), or
    a name bound to an ``int`` literal, reported at that literal.
    """
    found: dict[int | str | None, ast.expr] = {}
    for position, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred):
            break  # the positions after it are unknown
        spot = _index_spot(arg, ctx)
        if spot is not None:
            found[position] = spot
    for kw in node.keywords:
        spot = _index_spot(kw.value, ctx) if kw.arg is not None else None
        if spot is not None:
            found[kw.arg] = spot
    return found


def _index_spot(expr: ast.expr, ctx: Context) -> ast.expr | None:
    """Where an index ``expr`` is written: itself, or the literal a name holds.

    A name some assignment binds to anything else is no index, whatever it is called
    (``device_id = rank`` under a CUDA test, ``device_id = device`` in the other arm).
    """
    if isinstance(expr, ast.Name) and ctx.may_hold_a_value(expr.id):
        value = ctx.value_of(expr)
        if isinstance(value, ast.Constant) and type(value.value) is int:
            return value
        bound = ctx.scopes.bindings(expr.id, expr)
        if any(b.value is not None and not names_an_index(b.value) for b in bound):
            return None
    return expr if names_an_index(expr) else None
