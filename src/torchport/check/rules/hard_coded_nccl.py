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
    also in a backend per device (`"cuda:nccl,cpu:gloo"`, reported without a fix).

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
    valid = ('import torch.distributed as dist\n\ndist.init_process_group("gloo")\n',)
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
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) != "torch.distributed.init_process_group":
            return
        given = keyword(node, "backend")
        backend = given.value if given is not None else (node.args[0] if node.args else None)
        spec = (string_value(backend) or "").lower()
        if backend is None or "nccl" not in {
            part.partition(":")[2] or part for part in spec.split(",")
        }:
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
