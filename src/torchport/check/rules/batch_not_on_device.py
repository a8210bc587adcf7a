"""TP502 batch-not-on-device: a batch from a loader meets the model on the CPU."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import BatchMove, PortFacts, batch_plan, cpu_keys, port_facts
from torchport.check.rules._snippets import DEVICE_LINE

_HEAD = (
    "import torch\nfrom torch.utils.data import DataLoader\n\n"
    + DEVICE_LINE
    + "\nmodel = torch.nn.Linear(4, 2).to(device)\nloader = DataLoader(dataset)\n"
)
_NB = "non_blocking=True"


class BatchNotOnDevice(Rule):
    """## What it does
    Finds batches taken from a DataLoader (or from a tensor or a list of
    tensors, or `next(iter(loader))`), and tensors a function is given, that
    reach the model without being moved to its device, in training and
    evaluation loops alike: `for x, y in loader`, `inputs, labels = data`,
    `batch["x"]`, `batch[0]`, `model(**batch)`. Only values known to be
    tensors are moved (see TP520 for the others).

    ## Why is this bad?
    Once the model is on an accelerator, a CPU batch fails its first forward
    ("Expected all tensors to be on the same device"). The fix moves each
    batch right where it is bound, once per step, with `non_blocking=True` so
    the copy from a pinned loader overlaps compute; a dict batch has its
    tensors moved and other values kept; a batch used only through its
    elements has those elements moved where they meet the model.
    """

    code = "TP502"
    name = "batch-not-on-device"
    intent = Intent.PORT
    default = False
    message = "move each batch to the model's device where it is bound: `x = x.to(device)`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Module,)  # the batch plan is made once per file
    valid = (
        _HEAD + "for x, y in loader:\n    x = x.to(device)\n    out = model(x)\n",
        _HEAD + "for epoch in range(3):\n    print(epoch)\n",
        _HEAD + "for x, y in loader:\n    print(x.shape, y)\n",
    )
    invalid = (
        Example(
            _HEAD + "for i, (x, y) in enumerate(loader):\n"
            "    # forward\n"
            "    loss = (model(x) - y).pow(2).mean()\n",
            fixed=_HEAD + "for i, (x, y) in enumerate(loader):\n"
            f"    x, y = x.to(device, {_NB}), y.to(device, {_NB})\n"
            "    # forward\n"
            "    loss = (model(x) - y).pow(2).mean()\n",
        ),
        Example(
            _HEAD + "for data in loader:\n"
            "    inputs, labels = data\n"
            "    loss = (model(inputs) - labels).sum()\n",
            fixed=_HEAD + "for data in loader:\n"
            "    inputs, labels = data\n"
            f"    inputs, labels = inputs.to(device, {_NB}), labels.to(device, {_NB})\n"
            "    loss = (model(inputs) - labels).sum()\n",
        ),
        Example(
            _HEAD + "for batch in loader:\n"
            "    out = model(batch[0])\n"
            "    loss = (out - batch[1]).sum()\n",
            fixed=_HEAD + "for batch in loader:\n"
            f"    out = model(batch[0].to(device, {_NB}))\n"
            f"    loss = (out - batch[1].to(device, {_NB})).sum()\n",
            count=2,
        ),
        Example(
            _HEAD + 'for batch in loader:\n    out = model(batch["x"], mask=batch["mask"])\n',
            fixed=_HEAD + "for batch in loader:\n"
            f"    batch = {{k: v.to(device, {_NB}) if isinstance(v, torch.Tensor) else v "
            "for k, v in batch.items()}\n"
            '    out = model(batch["x"], mask=batch["mask"])\n',
        ),
        Example(  # the lengths pack_padded_sequence takes stay on the CPU
            _HEAD + "from torch.nn.utils.rnn import pack_padded_sequence as pack\n\n"
            'for batch in loader:\n    out = model(pack(batch["x"], batch["lengths"]))\n',
            fixed=_HEAD + "from torch.nn.utils.rnn import pack_padded_sequence as pack\n\n"
            "for batch in loader:\n"
            f"    batch = {{k: v.to(device, {_NB}) if isinstance(v, torch.Tensor) and "
            'k != "lengths" else v for k, v in batch.items()}\n'
            '    out = model(pack(batch["x"], batch["lengths"]))\n',
        ),
        Example(
            _HEAD + "for batch in loader:\n    out = model(**batch)\n",
            fixed=_HEAD + "for batch in loader:\n"
            f"    batch = {{k: v.to(device, {_NB}) if isinstance(v, torch.Tensor) else v "
            "for k, v in batch.items()}\n"
            "    out = model(**batch)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        plan = batch_plan(ctx)
        facts = port_facts(ctx)
        for element in plan.elements:
            found = facts.device_at(element)
            fix = None
            if found is not None:
                moved = ctx.append_call(element, f".to({found[0]}, {_NB})")
                fix = Fix((*moved, *found[1]), FixSafety.SAFE)
            yield ctx.finding(self, element, fix=fix)
        for move in plan.moves.values():
            anchor = move.anchor
            names = ", ".join(f"`{n}`" for n in (*move.tensors, *move.dicts))
            message = (
                f"move the batch {names} to `device` where it is bound, before it meets the model"
            )
            span: ast.AST = anchor
            if isinstance(anchor, (ast.For, ast.AsyncFor)):
                span = anchor.target
            elif isinstance(anchor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = anchor.args
                names_moved = {*move.tensors, *move.dicts}
                span = next(
                    p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg in names_moved
                )
            yield ctx.finding(self, span, message=message, fix=_fix(move, facts, ctx))


def _fix(move: BatchMove, facts: PortFacts, ctx: Context) -> Fix | None:
    anchor = move.anchor
    at_node: ast.AST = anchor
    if isinstance(anchor, (ast.For, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef)):
        at_node = anchor.body[0]  # where the moving statement goes
    device = facts.device_at(at_node)
    torch = ctx.torch_at(at_node) if move.dicts else ("torch", ())
    if device is None or torch is None:
        return None
    insert = _insertion(move, device[0], torch[0], ctx)
    if insert is None:
        return None
    return Fix((insert, *device[1], *torch[1]), FixSafety.SAFE)


def _insertion(move: BatchMove, device: str, t: str, ctx: Context) -> Edit | None:
    """The statements moving the batch, inserted after its binding (None: no safe place)."""
    anchor = move.anchor
    nl = ctx.newline
    starts = ctx._line_starts()
    if isinstance(anchor, (ast.For, ast.AsyncFor)):
        first = anchor.body[0]
        if ctx.source[starts[first.lineno] : ctx.start(first)].strip(" \t"):
            return None  # `for x in xs: f(x)` on one line
        header_end = anchor.iter.end_lineno or anchor.lineno
        if header_end >= first.lineno:
            return None
        at = starts[header_end + 1]  # first in the body, above its comments
        indent = ctx.indent_of(first)
    elif isinstance(anchor, (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = anchor.body
        docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        first = body[1] if docstring and len(body) > 1 else body[0]
        if first is body[0] and docstring:
            return None
        at = starts[first.lineno]
        if ctx.source[at : ctx.start(first)].strip(" \t") or first.lineno <= anchor.lineno:
            return None  # `def f(x): return model(x)` on one line
        indent = ctx.indent_of(first)
    else:
        if not ctx.owns_lines(anchor):
            return None
        indent = ctx.indent_of(anchor)
        end = anchor.end_lineno or anchor.lineno
        at = starts[end + 1] if end + 1 < len(starts) else len(ctx.source)
        if at == len(ctx.source) and not ctx.source.endswith(("\n", "\r")):
            indent = nl + indent
    nb = f", {_NB}" if move.loader else ""
    lines: list[str] = []
    if move.tensors:
        moved = ", ".join(f"{n}.to({device}{nb})" for n in move.tensors)
        lines.append(f"{', '.join(move.tensors)} = {moved}")
    for n in move.dicts:
        keep = cpu_keys(n, ctx)  # `batch["lengths"]` for pack_padded_sequence: stays
        test = f"isinstance(v, {t}.Tensor)"
        if keep:
            quoted = ", ".join(f'"{k}"' for k in keep)
            test += f" and k != {quoted}" if len(keep) == 1 else f" and k not in ({quoted})"
        lines.append(f"{n} = {{k: v.to({device}{nb}) if {test} else v for k, v in {n}.items()}}")
    return Edit(at, at, "".join(f"{indent}{line}{nl}" for line in lines))
