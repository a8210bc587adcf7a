"""TP521 tensor-from-library: a tensor made by a library the port cannot see into."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule

_HEAD = "import torch\nfrom PIL import Image\nfrom torchvision import transforms\n\n"
_MODEL = "model = torch.nn.Linear(4, 2)\n"


class TensorFromLibrary(Rule):
    """## What it does
    Reports values that meet the model straight from a call into another
    library (`transforms.ToTensor()(img)`, `tokenizer(text)`,
    `some_lib.load(...)`): the port cannot see whether they are tensors, or
    where they live, so it does not move them.

    ## Why is this bad?
    Such tensors are made on the CPU; once the model is on an accelerator
    they fail its first forward. Whether `.to(device)` is right for them
    (a tensor), or they need their fields moved (a dict, a `BatchEncoding`),
    depends on that library: move them yourself. A library's value that the
    port converts and moves (`torch.tensor(scaler.transform(x))`) is not
    reported: what meets the model there is a torch tensor on the device.
    """

    code = "TP521"
    name = "tensor-from-library"
    intent = Intent.PORT
    default = False
    message = "move this value to `device` yourself: it comes from a library the port cannot see"
    node_types = (ast.Module,)  # the operands are found once per file
    valid = (
        _HEAD + _MODEL + "x = torch.zeros(2, 4)\nout = model(x)\n",
        _HEAD + _MODEL + "def f(model, x):\n    return model(x)\n",
        _HEAD
        + _MODEL
        + "from sklearn.preprocessing import StandardScaler\n\n"
        + "x = StandardScaler().fit_transform(data)\n"
        + "out = model(torch.tensor(x, dtype=torch.float32))\n",
        # an environment's reward and flags: Python scalars
        _HEAD + _MODEL + "import gym\n\nenv = gym.make('CartPole-v1')\n"
        "obs, reward, done, info = env.step(0)\nloss = model(x).sum() * reward\n",
    )
    invalid = (
        Example(
            _HEAD + _MODEL + "to_tensor = transforms.ToTensor()\n"
            "x = to_tensor(Image.open('cat.png'))\n"
            "out = model(x)\n"
        ),
        Example(_HEAD + _MODEL + "import timm_utils\n\nout = model(timm_utils.load_image(p))\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        from torchport.check.port._origins import origins

        named: set[int] = set()  # one finding per origin: `x, y = lib.load()` is one
        for operand, found in origins(ctx).operands():
            library = [o for o in found if o.library]
            if library and not {id(o.node) for o in library} <= named:
                named.update(id(o.node) for o in library)
                message = (
                    f"move this value to `device` yourself: it comes from {library[0].what}, "
                    "which the port cannot see into"
                )
                yield ctx.finding(self, operand, message=message)
