"""TP503 tensor-not-on-device: a tensor made on the CPU that meets the model."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import RANDOM_FACTORIES, add_keyword, keyword, move_after
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE

_HEAD = "import torch\n\n" + DEVICE_LINE + "\nmodel = torch.nn.RNN(4, 8).to(device)\n"
# Made from host data or drawn from the CPU's generator: moved after creation, so the
# values stay exactly those the CPU run sees. The typed constructors take no device; the
# in-place initializers chained to them (`torch.Tensor(2, 3).uniform_()`) draw before the move.


class TensorNotOnDevice(Rule):
    """## What it does
    Finds tensors created on the CPU (`torch.zeros`, `torch.arange`,
    `torch.tensor`, `torch.randn`, `torch.from_numpy`, the typed constructors
    `torch.LongTensor([...])`, also inside `Variable(...)`) outside any
    `nn.Module` whose values meet the model or its outputs: data held in
    tensors, an RNN's initial hidden state, positions, masks, targets.

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
        from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS, is_move
        from torchport.check.port._chains import cast_end, initialized
        from torchport.check.port._facts import port_facts

        assert isinstance(node, ast.Call)
        name = ctx.qualname(node.func)
        facts = port_facts(ctx)
        helper = facts.cpu_tensor_call(node)  # `make_mask(n)`: returns a CPU tensor
        if (name not in CREATORS and name not in TYPED_CONSTRUCTORS and not helper) or (
            not helper and keyword(node, "device") is not None
        ):
            return
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.internal:
            return
        key = id(node)
        if key not in scope.sink_nodes and key not in scope.reach_values:
            return
        cast = cast_end(node, facts.parents) if name not in TYPED_CONSTRUCTORS else None
        parent = facts.parents.get(id(cast or node))
        if isinstance(parent, ast.Attribute) and is_move(facts.parents.get(id(parent), parent)):
            return
        if any(k.arg is None for k in node.keywords):
            return  # **kwargs may carry device=
        found = facts.device_at(node)
        if found is None:
            placed = facts.own_placement
            if placed is not None:
                message = (
                    "make the tensor on the device the program put its model on "
                    f"(`{ast.unparse(placed)[:60]}`, line {placed.lineno}); the port does not "
                    "overrule a per-process placement"
                )
                yield ctx.finding(self, node, message=message)
                return
            yield ctx.finding(self, node)
            return
        device, edits = found
        if cast is not None and keyword(node, "requires_grad") is None:
            # `torch.from_numpy(a).float()`: cast on the host, then move (half the bytes of
            # a float64 copy, and float64 does not exist on MPS)
            moved = ctx.append_call(cast, f".to({device})")
        elif name in TYPED_CONSTRUCTORS:  # after the initializers chained to it: drawn on the CPU
            moved = ctx.append_call(initialized(node, facts.parents), f".to({device})")
        elif (
            helper
            or name in RANDOM_FACTORIES
            or name in TYPED_CONSTRUCTORS
            or name == "torch.from_numpy"
        ):
            moved = move_after(node, device, ctx)
        else:
            moved = (add_keyword(node, f"device={device}", ctx),)
        yield ctx.finding(self, node, fix=Fix((*moved, *edits), FixSafety.SAFE))
