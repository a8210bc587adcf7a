"""TP110 integer-device-index: ``DistributedDataParallel(model, device_ids=[rank])``.

A bare integer *device* is no longer CUDA's: since torch 2.5 (pytorch#129119), ``x.to(0)``,
``torch.device(rank)`` and ``device=rank`` name the current accelerator (CUDA, MPS, XPU, ...),
so they run wherever an accelerator is there. Held-out judging found every such finding
untrue (precision_rejudged.csv, a34r: 16 of 31). What still breaks is DDP's ``device_ids``:
a module on the CPU (gloo, no accelerator) must be given ``device_ids=None``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import cuda_is_the_subject
from torchport.check.semantic._guards import Guard, device_guard

# Names that hold a process's or a GPU's index (never a device object or a dtype).
_INDEX_NAME = re.compile(
    r"^(local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|cuda_id|"
    r"local_gpu|gpu_rank|ddp_local_rank|LOCAL_RANK|RANK)$",
    re.IGNORECASE,
)
_DDP_NAMES = frozenset({"DDP", "DistributedDataParallel"})


def names_an_index(expr: ast.expr | None) -> bool:
    """An int literal, or a name/attribute whose name says it is a rank or GPU index."""
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.Name):
        return index_name(expr.id)
    if isinstance(expr, ast.Attribute):
        return index_name(expr.attr)
    return False


def index_name(name: str) -> bool:
    """Whether ``name`` says it holds a rank or GPU index (``local_rank``, ``gpu``)."""
    return bool(_INDEX_NAME.match(name))


class IntegerDeviceIndex(Rule):
    """## What it does
    Finds `DistributedDataParallel(model, device_ids=[rank])` (also `DDP(...)`): device ids
    given as bare integers, an integer literal or a name that says it is one (`rank`,
    `local_rank`, `gpu`, `device_id`, ...). Left alone: a call under a test of the device
    type, and test code about CUDA itself. `x.to(rank)`, `torch.device(rank)` and
    `device=rank` are not reported: on torch 2.5 and newer an integer device is the
    current accelerator's, whichever it is.

    ## Why is this bad?
    DDP takes device ids only for a module on an accelerator: on the CPU (the gloo backend
    of a machine without one) `device_ids=[rank]` raises. Pass them only where there is an
    accelerator: `device_ids=[device.index] if device.type != "cpu" else None`.
    """

    code = "TP110"
    name = "integer-device-index"
    intent = Intent.DEVICE
    default_contexts = frozenset({"code", "bench"})  # judged: check/_default_scope.py
    message = (
        "pass `device_ids=[device.index]` only when `device` is an accelerator (`None` on the "
        "CPU): DDP refuses device ids for a module on the CPU"
    )
    node_types = (ast.Call,)
    call_attrs = _DDP_NAMES
    valid = (
        "x = x.to(0)\n",
        "model = model.to(local_rank)\nx = batch.to(args.gpu, non_blocking=True)\n",
        "import torch\n\ndev = torch.device(local_rank)\nz = torch.zeros(3, device=0)\n",
        "import torch\n\nddp = DistributedDataParallel(model, device_ids=None)\n",
        "import torch\n\ndp = torch.nn.DataParallel(model, device_ids=[0, 1])\n",
        'import torch\n\nif device.type == "cuda":\n    m = DDP(m, device_ids=[rank])\n',
    )
    invalid = (
        Example(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "ddp = DDP(model, device_ids=[rank], output_device=rank)\n"
        ),
        Example(
            "import torch\n\n"
            "m = torch.nn.parallel.DistributedDataParallel(m, device_ids=[args.local_rank])\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        spot = _device_ids_of_indices(node) if tail in _DDP_NAMES else None
        if spot is None or device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return
        if not cuda_is_the_subject(node, ctx):  # a CUDA-gated test's devices (`_test_code`)
            yield ctx.finding(self, spot)


def _device_ids_of_indices(node: ast.Call) -> ast.expr | None:
    """``DistributedDataParallel(model, device_ids=[rank])``: the list, if it holds an index."""
    ids = keyword(node, "device_ids")
    value = ids.value if ids is not None else None
    if isinstance(value, (ast.List, ast.Tuple)) and any(names_an_index(e) for e in value.elts):
        return value
    return None
