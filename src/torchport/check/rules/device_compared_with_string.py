"""TP114 device-compared-with-string: ``x.device == "cuda"``, always False."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import string_value
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.semantic._devices import device_type
from torchport.check.semantic._residence import known_device_object


def _device_string(expr: ast.expr) -> bool:
    value = string_value(expr)
    if value is not None:
        return device_type(value) is not None
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return bool(expr.elts) and all(_device_string(e) for e in expr.elts)
    return False


class DeviceComparedWithString(Rule):
    """## What it does
    Finds a `torch.device` compared with a string: `x.device == "cuda"`,
    `dev != "cpu"`, `x.device in ("cuda", "mps")`, where the left side is
    certainly a `torch.device` (a tensor's `.device`, a `torch.device(...)`, or
    a name bound to one). Comparisons whose left side may be a string
    (`args.device`, `self.device`) are left to TP902, which runs only when selected, and
    so is `X.device` where the program says it is a string: `X`'s class (a dataclass, a
    pydantic model, the file's or one import away) annotates `device: str` or
    `Literal["cpu", "cuda"]`, or `X` is an argparse namespace whose `--device` has no `type=`.

    ## Why is this bad?
    A `torch.device` never equals a string: `torch.device("cuda") == "cuda"` is
    False, so `==` is always False and `!=` always True, on every machine. The
    branch it guards never runs (or always runs), silently. Compare the type:
    `x.device.type == "cuda"`, or compare with a device:
    `x.device == torch.device("cuda", 0)`.
    """

    code = "TP114"
    name = "device-compared-with-string"
    intent = Intent.DEVICE
    default_contexts = frozenset({"code", "bench"})  # judged: check/_default_scope.py
    message = (
        'test `x.device.type == "cuda"`: a `torch.device` never equals a string, so this '
        "comparison always gives the same answer"
    )
    node_types = (ast.Compare,)
    valid = (
        'ok = x.device.type == "cuda"\n',
        'ok = args.device == "cuda"\n',
        'device = "cuda"\nok = device == "cuda"\n',
        'import torch\n\nok = x.device == torch.device("cuda", 0)\n',
    )
    invalid = (
        Example('if x.device == "cpu":\n    x = x.cuda()\n'),
        Example('import torch\n\ndev = torch.device("cuda")\nif dev != "cpu":\n    pass\n'),
        Example('on_gpu = next(model.parameters()).device in ("cuda", "cuda:0")\n'),
        Example('on_tpu = x.device == "xla"\n'),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Compare)
        if len(node.ops) != 1:
            return
        op = node.ops[0]
        left, right = node.left, node.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            pairs = [(left, right)]
        elif isinstance(op, (ast.Eq, ast.NotEq)):
            pairs = [(left, right), (right, left)]
        else:
            return
        for obj, text in pairs:
            if _device_string(text) and known_device_object(obj, ctx):
                yield ctx.finding(self, node)
                return
