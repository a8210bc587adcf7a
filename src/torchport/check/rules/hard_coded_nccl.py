"""TP404 hard-coded-nccl: ``init_process_group("nccl")``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, keyword, string_value
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE

_TAILS = frozenset({"init_process_group"})


class HardCodedNccl(Rule):
    """## What it does
    Finds `torch.distributed.init_process_group("nccl")` and `backend="nccl"`,
    also in a backend per device (`"cuda:nccl,cpu:gloo"`) or a name or attribute bound to
    one first (`backend = "nccl"`; `args.dist_backend = "nccl"` earlier in the call's block,
    nothing between handing `args` on): those without a fix.

    ## Why is this bad?
    NCCL exists only for NVIDIA (and ROCm) GPUs: the same script fails under
    torchrun on CPU nodes, Apple or Intel machines.
    `torch.distributed.get_default_backend_for_device(device)` picks NCCL,
    Gloo, XCCL... for the device the process uses.

    ## Fix safety
    Needs torch >= 2.6. On machines where NCCL was wrongly forced, the backend
    now differs (Gloo on the CPU), which is the point, but changes behaviour.
    """

    code = "TP404"
    name = "hard-coded-nccl"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = (
        "pass `backend=torch.distributed.get_default_backend_for_device(device)` "
        "instead of hard-coding NCCL"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        'import torch.distributed as dist\n\ndist.init_process_group("gloo")\n',
        "import torch\n"
        "import torch.distributed as dist\n\n"
        'backend = "nccl" if torch.cuda.is_available() else "gloo"\n'
        "dist.init_process_group(backend)\n",
    )
    invalid = (
        Example(
            "import torch\n"
            "import torch.distributed as dist\n"
            "\n"
            'dist.init_process_group(backend="nccl")\n',
            fixed="import torch\n"
            "import torch.distributed as dist\n"
            "\n"
            f"{DEVICE_LINE}"
            "\n"
            "dist.init_process_group(backend=torch.distributed.get_default_backend_for_device("
            "device))\n",
        ),
        Example(
            'import torch.distributed as dist\n\ndist.init_process_group("cuda:nccl,cpu:gloo")\n'
        ),
        Example(
            "import torch.distributed as dist\n\n"
            'backend = "nccl"\n'
            "dist.init_process_group(backend)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) != "torch.distributed.init_process_group":
            return
        given = keyword(node, "backend")
        backend = given.value if given is not None else (node.args[0] if node.args else None)
        if isinstance(backend, ast.Name | ast.Attribute):  # bound first: said, no fix
            if isinstance(backend, ast.Name):  # `backend = "nccl"`
                bound = ctx.value_of(backend)  # (None where it may hold different values)
            else:  # `args.dist_backend = "nccl"` (DETR's `init_distributed_mode`, rf-detr)
                bound = _stored_before(backend, ctx.ancestors)
            if bound is not None and _names_nccl((string_value(bound) or "").lower()):
                yield ctx.finding(self, backend)
            return
        spec = (string_value(backend) or "").lower()
        if backend is None or not _names_nccl(spec):
            return
        if spec != "nccl":  # "cuda:nccl,cpu:gloo": a backend per device, XCCL and others left out
            yield ctx.finding(self, backend)
            return
        found, torch = ctx.device_at(node), ctx.torch_at(node)
        if found is None or torch is None:
            yield ctx.finding(self, backend)  # no device or torch name is safe here: by hand
            return
        device, edits = found
        text = f"{torch[0]}.distributed.get_default_backend_for_device({device})"
        if not edits:
            edits = torch[1]
        fix = Fix((ctx.replace(backend, text), *edits), FixSafety.UNSAFE)
        yield ctx.finding(self, backend, fix=fix)


def _names_nccl(spec: str) -> bool:
    """Whether a backend spec (``"nccl"``, ``"cuda:nccl,cpu:gloo"``) names NCCL."""
    return "nccl" in {part.partition(":")[2] or part for part in spec.split(",")}


def _stored_before(target: ast.Attribute, ancestors: list[ast.AST]) -> ast.expr | None:
    """What ``X.attr = value`` last stored, a statement of the block holding the call before
    it, where no statement between mentions ``X`` but to read its other attributes (a call
    handed ``X`` whole, a store of ``X.attr`` in a branch, ``X`` rebound: None)."""
    owner = target.value
    at = next(
        (i for i in range(len(ancestors) - 1, 0, -1) if isinstance(ancestors[i], ast.stmt)), 0
    )
    if not isinstance(owner, ast.Name) or not at:
        return None
    stmt, parent = ancestors[at], ancestors[at - 1]
    blocks = (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
    held = [b for b in blocks if isinstance(b, list) and any(s is stmt for s in b)]
    if not held:
        return None
    block = held[0]
    for before in reversed(block[: next(i for i, s in enumerate(block) if s is stmt)]):
        if (
            isinstance(before, ast.Assign)
            and len(before.targets) == 1
            and isinstance(stored := before.targets[0], ast.Attribute)
            and isinstance(stored.value, ast.Name)
            and (stored.value.id, stored.attr) == (owner.id, target.attr)
        ):
            return before.value
        names = reads = 0  # of `X`, and of `X.other` (no other mention keeps the value)
        for n in ast.walk(before):
            if isinstance(n, ast.Name) and n.id == owner.id:
                names += 1
            elif (
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == owner.id
                and n.attr != target.attr
                and isinstance(n.ctx, ast.Load)
            ):
                reads += 1
        if names != reads:
            return None
    return None
