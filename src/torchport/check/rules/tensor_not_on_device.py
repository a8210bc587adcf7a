"""TP503 tensor-not-on-device: a tensor made on the CPU that meets the model."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from types import ModuleType

from torchport.check._context import Context
from torchport.check._match import RANDOM_FACTORIES, add_keyword, keyword, move_after
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import PortFacts, port_facts
from torchport.check.rules._snippets import DEVICE_LINE

_HEAD = "import torch\n\n" + DEVICE_LINE + "\nmodel = torch.nn.RNN(4, 8).to(device)\n"
# Made from host data or drawn from the CPU's generator: moved after creation, so the
# values stay exactly those the CPU run sees. The typed constructors take no device; the
# in-place initializers chained to them (`torch.Tensor(2, 3).uniform_()`) draw before the move.
_MOVE_AFTER = RANDOM_FACTORIES | {"torch.from_numpy"}  # and the typed constructors


class TensorNotOnDevice(Rule):
    """## What it does
    Finds tensors created on the CPU (`torch.zeros`, `torch.arange`,
    `torch.tensor`, `torch.randn`, `torch.from_numpy`, the typed constructors
    `torch.LongTensor([...])`, also inside `Variable(...)`) outside any
    `nn.Module` whose values meet the model or its outputs: data held in
    tensors, an RNN's initial hidden state, positions, masks, targets. Beside a
    model, a tensor computed with that meets none is placed where all it meets can
    follow, else reported as possibly deliberate.

    ## Why is this bad?
    Once the model runs on an accelerator, these tensors are on the wrong
    device and the first operation mixing them fails. The fix passes
    `device=device` to deterministic factories, so the tensor is made where
    it is used, and appends `.to(device)` to random ones and to
    `from_numpy`, so the values are drawn by the CPU's generator exactly as
    before and the results on the CPU stay the same. The legacy typed
    constructors (`torch.LongTensor([...])`, `torch.FloatTensor(...)`,
    `torch.Tensor(2, 3).uniform_()`, also inside `Variable(...)`) have no
    `device=`: `.to(device)` follows them and the initializers chained to them.
    A tensor cast where it is made (`torch.from_numpy(a).float()`) is moved after
    the cast: half the bytes of a float64 copy, and float64 does not exist on MPS.
    A call of a function whose every return is such a tensor (`make_mask(n)`
    returning `torch.from_numpy(...)`), the file's own or one another module of
    the project defines (`from helpers import make_mask`), gets `.to(device)` where
    it is called.
    """

    code = "TP503"
    name = "tensor-not-on-device"
    intent = Intent.PORT
    default = False
    message = "make the tensor on the model's device: pass `device=device` or call `.to(device)`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    valid = (
        _HEAD + "h = torch.zeros(1, 2, 8, device=device)\nout, h = model(x, h)\n",
        _HEAD + "idx = torch.arange(10)\nprint(idx)\n",
        _HEAD + "h = torch.zeros(1, 2, 8)\nh = h.to(device)\nout, h = model(x, h)\n",
    )
    invalid = (
        Example(
            _HEAD + "h = torch.zeros(1, 2, 8)  # initial state\n"
            "x = torch.randn(5, 2, 4)\n"
            "out, h = model(x, h)\n",
            fixed=_HEAD + "h = torch.zeros(1, 2, 8, device=device)  # initial state\n"
            "x = torch.randn(5, 2, 4).to(device)\n"
            "out, h = model(x, h)\n",
            count=2,
        ),
        Example(
            _HEAD + "from torch.autograd import Variable\n\n"
            "ids = Variable(torch.LongTensor([[1, 2, 3]]))\n"
            "out, h = model(torch.FloatTensor(3, 1, 4), ids)\n",
            fixed=_HEAD + "from torch.autograd import Variable\n\n"
            "ids = Variable(torch.LongTensor([[1, 2, 3]]).to(device))\n"
            "out, h = model(torch.FloatTensor(3, 1, 4).to(device), ids)\n",
            count=2,
        ),
        Example(  # cast on the host, then moved
            _HEAD + "x = torch.from_numpy(a).float()\nout, h = model(x)\n",
            fixed=_HEAD + "x = torch.from_numpy(a).float().to(device)\nout, h = model(x)\n",
        ),
        Example(  # a function of the file (or of a project module) that returns a CPU tensor
            _HEAD + "def make_mask(n):\n    return torch.from_numpy(np.tril(np.ones((n, 8))))\n\n"
            "out, h = model(x)\nloss = (out * make_mask(2)).sum()\n",
            fixed=_HEAD
            + "def make_mask(n):\n    return torch.from_numpy(np.tril(np.ones((n, 8))))\n\n"
            "out, h = model(x)\nloss = (out * make_mask(2).to(device)).sum()\n",
        ),
        Example(  # an optimized leaf stays a leaf: the flag goes after the move
            _HEAD + "z = torch.randn(5, 2, 4, requires_grad=True)\nout, h = model(z)\n",
            fixed=_HEAD
            + "z = torch.randn(5, 2, 4).to(device).requires_grad_()\nout, h = model(z)\n",
        ),
        Example(
            _HEAD + "out, h = model(x)\nloss = (out - torch.ones(5, 2, 8)).sum()\n",
            fixed=_HEAD
            + "out, h = model(x)\nloss = (out - torch.ones(5, 2, 8, device=device)).sum()\n",
        ),
        Example(
            _HEAD + "x = torch.FloatTensor([[[1.0, 2.0, 3.0, 4.0]]])\n"
            "h = torch.Tensor(1, 1, 8).uniform_(-1, 1)\nout, h = model(x, h)\n",
            fixed=_HEAD + "x = torch.FloatTensor([[[1.0, 2.0, 3.0, 4.0]]]).to(device)\n"
            "h = torch.Tensor(1, 1, 8).uniform_(-1, 1).to(device)\nout, h = model(x, h)\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        facts = port_facts(ctx)
        guesses, placed, memory, side = _port()
        scope = facts.scope_of.get(id(node), facts.module)
        if guesses.seeded(ctx, facts.scopes):  # on the device, met by host data?
            crossings = guesses.crossing_moves(
                facts.flow, facts.scopes, node, scope, _bound(node, facts)
            )
            if crossings:
                at, message = guesses.meeting_fix(ctx, crossings)
                yield ctx.finding(self, node, message=message, fix=Fix(at, FixSafety.SAFE))
        if said := placed.guessed_default(node, facts):  # a default meeting only guessed values
            yield ctx.finding(self, node, message=said)
            return
        chosen = placed.to_place(node, facts, helpers=True)
        if chosen is None:  # a side computation left on the CPU is said (`_side_computations`)
            if (said := side.side_report(node, facts)) is not None:
                yield ctx.finding(self, node, message=said)
            return
        found = facts.device_at(node)
        meetings, every = guesses.meeting_moves(facts.flow, node, scope, _bound(node, facts))
        at, message = guesses.meeting_fix(ctx, meetings)
        if placed.only_guessed(node, facts):  # meets only values some paths leave on the host
            if not (meetings and every and found is not None):
                message = guesses.guess_message(facts.flow, node, _bound(node, facts))
                yield ctx.finding(self, node, message=message)
                return  # (else moved where it meets them, not where it is made)
            yield ctx.finding(self, node, message=message, fix=Fix(at, FixSafety.SAFE))
            return
        name, cast, helper = chosen
        if shared := memory.shared_memory(node, facts):  # a copy would not see the writes
            yield ctx.finding(self, node, message=shared)
            return
        if found is None:
            yield ctx.finding(self, node, message=placed.placed_by_the_program(facts, node))
            return
        device, edits = found
        moved = made_on(device, node, name, cast, helper, facts, ctx)
        yield ctx.finding(self, node, fix=Fix((*moved, *edits, *at), FixSafety.SAFE))


@cache
def _port() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """The port's modules :meth:`TensorNotOnDevice.check` asks, imported on first use (not
    at start-up) and kept: no import statement per call (~50,000 calls in a port of timm)."""
    from torchport.check.port import _guesses, _placed, _shared_memory, _side_computations

    return _guesses, _placed, _shared_memory, _side_computations


def _bound(node: ast.AST, facts: PortFacts) -> set[str]:
    """The names the statement holding ``node`` binds (``MEAN = torch.tensor(...)``)."""
    from torchport.check.port._device_flow import names_of

    up: ast.AST | None = node
    while up is not None and not isinstance(up, ast.Assign | ast.AnnAssign | ast.stmt):
        up = facts.parents.get(id(up))
    if isinstance(up, ast.Assign):
        return {n for t in up.targets for n in names_of(t)}
    return set(names_of(up.target)) if isinstance(up, ast.AnnAssign) else set()


def made_on(
    device: str,
    node: ast.Call,
    name: str | None,
    cast: ast.expr | None,
    helper: bool,
    facts: PortFacts,
    ctx: Context,
) -> tuple[Edit, ...]:
    """The edits that put the new tensor on ``device``."""
    from torchport.check.port._calls import TYPED_CONSTRUCTORS  # on first use
    from torchport.check.port._chains import drawn, initialized

    if (chain := drawn(node, facts.parents)) is not None:  # `torch.empty(n).normal_()`
        return ctx.append_call(chain, f".to({device})")  # drawn by the CPU's generator
    if cast is not None and keyword(node, "requires_grad") is None:
        # `torch.from_numpy(a).float()`: cast on the host, then move (half the bytes of
        # a float64 copy, and float64 does not exist on MPS)
        return ctx.append_call(cast, f".to({device})")
    if name in TYPED_CONSTRUCTORS:  # after the initializers chained to it: drawn on the CPU
        return ctx.append_call(initialized(node, facts.parents), f".to({device})")
    if helper or name in _MOVE_AFTER or name in TYPED_CONSTRUCTORS:
        return move_after(node, device, ctx)
    return (add_keyword(node, f"device={device}", ctx),)
