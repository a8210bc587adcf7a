"""TP202 sync-in-loop: ``.item()``, ``.cpu()``, ``.tolist()``, ``print(tensor)`` in loops."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._guards import known_on_cpu
from torchport.check._match import method_name, probably_module, probably_tensor
from torchport.check._rule import Example, Finding, Intent, Rule

_SYNCS = frozenset({"item", "tolist", "cpu"})
# `x.cpu().numpy()` is reported at `.cpu()`; a bare `.numpy()` only runs on CPU tensors
# (it raises for a device tensor: TP201's business), so it never waits for a device.
_CHAINED = _SYNCS | {"numpy"}


class SyncInLoop(Rule):
    """## What it does
    Finds host reads of device tensors inside `for`/`while` loops and
    comprehensions: `.item()`, `.tolist()`, `.cpu()` (also before `.numpy()`)
    and `print(tensor)`. Tensors known to be on the CPU already (`.cpu()`
    results, `torch.tensor(...)` or `torch.linspace(...)` without `device=`,
    NumPy values) are left alone: reading them waits for nothing.

    ## Why is this bad?
    Each of them waits until the device has finished all queued work and
    copies the value back. Inside a training loop that drains the GPU's queue
    every step, so the GPU idles while Python prepares the next step. Keep
    running sums on the device (`total += loss.detach()`) and read them once
    after the loop, or every N steps (reads under `if step % N == 0:` and
    `if i == 0:`, which run now and then or once, are not reported). A read
    in an outer loop that also runs an inner loop (once per epoch, around the
    loop over batches) is cheap and is not reported either.
    """

    code = "TP202"
    name = "sync-in-loop"
    intent = Intent.SPEED
    message = (
        "accumulate on the device (`total += loss.detach()`) and read once after the loop "
        "instead of syncing every iteration"
    )
    node_types = (ast.Call,)
    valid = (
        "total = 0\nfor x in xs:\n    total += model(x).sum()\nprint(total.item())\n",
        "for k, v in d.items():\n    pass\n",
        "for i in range(3):\n    model.cpu()\n",
        "for step, x in enumerate(xs):\n    if step % 100 == 0:\n        print(x.sum().item())\n",
        (
            "for epoch in range(10):\n    total = 0\n    for x, y in loader:\n"
            "        total += crit(model(x), y).detach()\n    print(total.item())\n"
        ),
        "import torch\n\ndpr = [x.item() for x in torch.linspace(0, 0.1, 12)]\n",
        "out = model(xs).cpu()\nfor row in out:\n    vals.append(row.tolist())\n",
        "for i, x in enumerate(xs):\n    if i == 0:\n        print(model(x).sum().item())\n",
        "for x in xs:\n    a = x.numpy()\n",
    )
    invalid = (
        Example("for x, y in loader:\n    loss = crit(model(x), y)\n    total += loss.item()\n"),
        Example(
            "for epoch in range(10):\n    for x, y in loader:\n"
            "        print(model(x).sum().item())\n"
        ),
        Example("while step < n:\n    preds.append(out.argmax(-1).cpu().numpy())\n"),
        Example("vals = [t.tolist() for t in ts]\n"),
        Example("import torch\n\nvals = [x.item() for x in torch.linspace(0, 1, 4).cuda()]\n"),
        Example(
            "import torch\n\nfor i in range(3):\n    loss = torch.zeros(1) + i\n    print(loss)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method not in _SYNCS or (method != "cpu" and (node.args or node.keywords)):
                return
            receiver = func.value
            if isinstance(receiver, ast.Call) and method_name(receiver) in _CHAINED:
                return  # `x.cpu().tolist()`: reported once, at the inner call
            if method == "cpu" and probably_module(receiver, ctx):
                return
            if known_on_cpu(receiver, ctx):
                return  # already on the CPU: nothing to wait for
            if not _every_iteration(node, ctx):
                return
            message = f"`.{method}()` in a loop waits for the device every iteration; " + (
                "accumulate on the device and read once after the loop"
                if method == "item"
                else "collect on the device (`torch.stack`) and copy once after the loop"
            )
            yield ctx.finding(self, node, message=message)
        elif (
            isinstance(func, ast.Name)
            and func.id == "print"
            and any(probably_tensor(a, ctx) for a in node.args)
            and _every_iteration(node, ctx)
        ):
            message = "`print(tensor)` in a loop waits for the device; print every N steps"
            yield ctx.finding(self, node, message=message)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _runs_an_inner_loop(loop: ast.AST) -> bool:
    """Whether ``loop``'s body holds another loop (outside nested functions and classes)."""
    todo: list[ast.AST] = list(getattr(loop, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, _LOOPS):
            return True
        if not isinstance(node, _SCOPES):
            todo.extend(
                child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)
            )
    return False


def _every_iteration(node: ast.Call, ctx: Context) -> bool:
    """In a loop's hot path, not under ``if step % N ...`` (reading every N steps is the advice).

    A read in a loop whose body runs an inner loop happens once per outer
    iteration (an epoch summary), which is not what the rule is about.
    """
    loop = ctx.loop_of(node)
    if loop is None or (isinstance(loop, _LOOPS) and _runs_an_inner_loop(loop)):
        return False
    for outer in reversed(ctx.ancestors):
        if outer is loop:
            return True
        if isinstance(outer, ast.If) and isinstance(outer.test, ast.Compare):
            sides = [outer.test.left, *outer.test.comparators]
            if any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod) for s in sides):
                return False
            if isinstance(outer.test.ops[0], (ast.Eq, ast.Is)):
                return False  # `if i == 0:`, `if step == last:`: once, not every iteration
    return True
