"""TP501 model-not-on-device: a model built and used with no ``.to(device)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._loader_placement import (
    PLACED_BY_LOADER,
    never_given_inputs,
    placed_by_loader,
)
from torchport.check.rules._port import PortFacts, port_facts
from torchport.check.rules._snippets import DEVICE_LINE, short_call
from torchport.check.semantic._guards import Guard, device_guard
from torchport.check.semantic._receivers import Owner, receiver_owner

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortScope


_DEFAULTED = (
    "hand the program's device to the callee this model goes to: it moves the model, or the "
    "model's inputs, to its `{param}`, which is the CPU here (left to its default, or given "
    "the CPU; a `.to(device)` here would be undone, or meet inputs on the CPU)"
)
_OWN = "the program places its model itself (`{call}`, line {line}): left as it is, not moved"


class ModelNotOnDevice(Rule):
    """## What it does
    Finds models (`Net()`, `nn.Sequential(...)`, `torchvision.models.resnet18()`)
    built outside any `nn.Module` and never moved to a device, including models
    built inside a function and returned, or wrapped in `nn.DataParallel`,
    DDP or `torch.compile`.

    ## Why is this bad?
    A model that is never moved runs on the CPU even when the machine has a
    GPU. Moving it where it is built, before the optimizer takes its
    parameters, is what every other placement builds on: the fix appends
    `.to(device)` to the constructor (inside a wrapper, so DDP gets a model
    that is already on its device), with one `device` definition that picks
    the accelerator when there is one and the CPU otherwise.

    A model its loader places or quantizes itself
    (`from_pretrained(..., device_map="auto")`, `load_in_8bit=True`,
    `quantization_config=...`, or `**kwargs` that may carry them) is reported,
    never moved: `.to()` raises for a quantized model and undoes a split over
    several devices; unless the file never calls it nor hands it on (only reads
    attributes such as `model.config`): then there are no inputs to move.
    A model whose class (of the file or of the project's own modules) defines
    its own `to` is reported, never moved: `.to(device)` would call that method.
    A model handed to a project callable that moves it to the device it is handed
    (`cls(model, device=device)` whose `__init__` runs `self.model = model.to(device)`) is
    placed there: not reported; where that device is left to its default or the CPU,
    reported, not moved (the callee would undo it); so is a model whose class moves its input,
    or makes its state, on its own CPU `self.device` (one left to a parameter's default is
    handed `device=device` too). A model the program puts on the CPU itself (`Net().cpu()`,
    `.to("cpu")`) is left there, and the port's moves are reported, not written (TP503).
    """

    code = "TP501"
    name = "model-not-on-device"
    intent = Intent.PORT
    default = False
    message = "move the model to `device` where it is built: `Model().to(device)`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    valid = (
        "import torch.nn as nn\n\nmodel = nn.Linear(3, 4).to(device)\n",
        "import torch.nn as nn\n\nmodel = nn.Linear(3, 4)\nmodel.to(device)\n",
        "import torch.nn as nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(3, 4)\n",
        "import torch.nn as nn\n\nloss_fn = nn.CrossEntropyLoss()\n",
        "from transformers import AutoModel\n\n"
        'model = AutoModel.from_pretrained("m", device_map="auto")\nout = model(x)\n',
        # placed by its loader but never given inputs (only `.config` read): nothing to move
        "import torch\nfrom transformers import AutoModel\n\n"
        'model = AutoModel.from_pretrained("m", device_map="auto")\nsize = model.config.hidden\n',
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn as nn\n\n"
            "model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())  # the net\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            fixed="import torch\nimport torch.nn as nn\n\n"
            f"{DEVICE_LINE}\n"
            "model = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).to(device)  # the net\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ),
        Example(
            "import torch\nfrom torch import nn\n\n"
            "class Net(nn.Module):\n    pass\n\n"
            "def build():\n    return nn.DataParallel(Net())\n\n"
            "model = torch.compile(build())\n",
            fixed="import torch\nfrom torch import nn\n\n"
            f"{DEVICE_LINE}\n"
            "class Net(nn.Module):\n    pass\n\n"
            "def build():\n    return nn.DataParallel(Net().to(device))\n\n"
            "model = torch.compile(build())\n",
        ),
        Example(
            "import torch\nfrom transformers import AutoModel\n\n"
            'model = AutoModel.from_pretrained("gpt2", device_map="auto")\n'
            'small = AutoModel.from_pretrained("gpt2", **options)\n'
            "out = model(ids), small.generate(ids)\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        facts = port_facts(ctx)
        scope = _scope_of_a_whole_model_built(node, facts)
        if scope is None:
            return
        expr = _the_whole_model_expression(node, facts)
        from torchport.check.port._class_devices import own_device_left, placed_by_callee

        handed = placed_by_callee(expr, facts, scope)  # "": a callee places it; a name: the CPU
        if expr is None or handed == "" or _dropped_or_moved_later(expr, scope, facts):
            return
        if handed:  # `Clf(Net())` whose `__init__` runs `model.to(device)`, `device="cpu"`
            # (or keeps the model and moves its inputs to `self.device`)
            yield ctx.finding(self, node, message=_DEFAULTED.format(param=handed))
            return
        placed = placed_by_loader(node)
        if placed is not None:
            if not never_given_inputs(expr, ctx, facts):
                yield ctx.finding(self, node, message=PLACED_BY_LOADER.format(placed=placed))
            return
        if device_guard(node, ctx, arms=False) is Guard.AVAILABILITY:
            return  # `Net().cuda() if use_cuda else Net()`: the program's CUDA-or-CPU arm
        found = facts.device_at(node)
        left = own_device_left(node, facts, scope, found)  # `x.to(self.device)` in its forward
        if left is not None:  # handed the program's device by keyword where that places it
            fix = Fix(left[1], FixSafety.SAFE) if left[1] else None
            yield ctx.finding(self, node, message=left[0], fix=fix)
            return
        if found is None or receiver_owner(node, "to", ctx) is Owner.OTHER:
            own = facts.own_placement  # (or a class with a `to` of its own: reported)
            said = own and _OWN.format(call=short_call(own), line=own.lineno)
            yield ctx.finding(self, node, message=said or facts.device_name.kept_message(node))
            return
        name, edits = found
        fix = Fix((*ctx.append_call(node, f".to({name})"), *edits), FixSafety.SAFE)
        yield ctx.finding(self, node, fix=fix)


def _scope_of_a_whole_model_built(node: ast.Call, facts: PortFacts) -> PortScope | None:
    """Where ``node`` builds a whole model (None: unreached code, stateless, or a part)."""
    known = facts.known
    scope = facts.scope_of.get(id(node))  # (first: most calls are in a library's methods)
    if scope is None or scope.internal:
        return None
    if not (known.constructor(node) or known.project_factory(node)) or known.stateless(node):
        return None
    parent = facts.parents.get(id(node))
    if isinstance(parent, ast.Call) and known.constructor(parent):
        return None  # a part of a bigger model, moved with it
    return scope


def _the_whole_model_expression(node: ast.Call, facts: PortFacts) -> ast.AST | None:
    """Up through ``.train()``, wrappers and the like to the whole model; None past a move."""
    from torchport.check.port._models import MODEL_METHODS  # on first use

    parents, known = facts.parents, facts.known
    expr: ast.AST = node
    while True:
        up = parents.get(id(expr))
        if isinstance(up, ast.Attribute) and up.attr in MODEL_METHODS:
            call = parents.get(id(up))
            if not isinstance(call, ast.Call) or call.func is not up:
                return expr
            if up.attr in ("to", "cuda", "to_empty", "cpu"):
                return None  # already moved (`.cpu()`: the program's own choice, kept)
            expr = call
        elif isinstance(up, ast.Call) and known.wrapper(up) and up.args[0] is expr:
            expr = up
        else:
            return expr


def _dropped_or_moved_later(expr: ast.AST, scope: PortScope, facts: PortFacts) -> bool:
    """Built and thrown away, or assigned to a name that ``.to(device)`` moves later."""
    holder = facts.parents.get(id(expr))
    if isinstance(holder, ast.Expr):
        return True  # built and thrown away
    if isinstance(holder, (ast.Assign, ast.AnnAssign)):
        targets = holder.targets if isinstance(holder, ast.Assign) else [holder.target]
        return any(isinstance(t, ast.Name) and t.id in scope.moved for t in targets)
    return False
