"""TP501 model-not-on-device: a model built and used with no ``.to(device)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.port._facts import port_facts
from torchport.check.port._models import MODEL_METHODS
from torchport.check.rules._snippets import DEVICE_LINE


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

    A model loaded with placement or quantization options
    (`from_pretrained(..., device_map=...)`, `load_in_8bit`/`load_in_4bit`,
    `quantization_config`) is placed by its loader and left alone: `.to()`
    raises for 8-bit models and undoes a split over devices. One given
    `**kwargs` (which may carry those options) is reported without a fix.
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
            "from transformers import AutoModel\n\n"
            "def load(name, **options):\n    return AutoModel.from_pretrained(name, **options)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        facts = port_facts(ctx)
        known = facts.known
        if not known.constructor(node):
            return
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.module_method or known.stateless(node):
            return
        placement = _placement(node)
        if placement == "placed":
            return  # `device_map=` / quantized: the loader placed it, `.to()` would undo or raise
        parents = facts.parents
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and known.constructor(parent):
            return  # a part of a bigger model, moved with it
        # Climb through `.train()`, wrappers and the like to the whole model expression.
        expr: ast.AST = node
        while True:
            up = parents.get(id(expr))
            if isinstance(up, ast.Attribute) and up.attr in MODEL_METHODS:
                call = parents.get(id(up))
                if not isinstance(call, ast.Call) or call.func is not up:
                    break
                if up.attr in ("to", "cuda", "to_empty"):
                    return  # already moved
                expr = call
            elif isinstance(up, ast.Call) and known.wrapper(up) and up.args[0] is expr:
                expr = up
            else:
                break
        holder = parents.get(id(expr))
        if isinstance(holder, ast.Expr):
            return  # built and thrown away
        if isinstance(holder, (ast.Assign, ast.AnnAssign)):
            targets = holder.targets if isinstance(holder, ast.Assign) else [holder.target]
            if any(isinstance(t, ast.Name) and t.id in scope.moved for t in targets):
                return  # `model.to(device)` follows
        found = facts.device_at(node)
        if placement == "unknown":
            yield ctx.finding(self, node, message=_UNKNOWN)
            return
        if found is None:
            yield ctx.finding(self, node)
            return
        name, edits = found
        at = ctx.end(node)
        fix = Fix((Edit(at, at, f".to({name})"), *edits), FixSafety.SAFE)
        yield ctx.finding(self, node, fix=fix)


# Loader options that place the model themselves, or quantize it (`.to()` raises for 8-bit).
_PLACING = frozenset(
    {"device_map", "load_in_8bit", "load_in_4bit", "quantization_config", "tp_plan", "device"}
)
_UNKNOWN = (
    "move the model to `device` where it is built, unless the `**` options place or quantize "
    "it (`device_map`, `load_in_8bit`, `quantization_config`): no automatic fix, since "
    "`.to()` raises for 8-bit models and undoes a split over devices"
)


def _placement(call: ast.Call) -> str | None:
    """``"placed"`` where the call's own options place or quantize the model, ``"unknown"``
    where a ``**`` argument may, None where neither."""
    unknown = False
    for kw in call.keywords:
        if kw.arg in _PLACING:
            return "placed"
        if kw.arg is None:
            value = kw.value
            if isinstance(value, ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys
            ):
                if any(isinstance(k, ast.Constant) and k.value in _PLACING for k in value.keys):
                    return "placed"
                continue  # `**{"torch_dtype": ...}`: every key is known
            unknown = True
    return "unknown" if unknown else None
