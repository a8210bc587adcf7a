"""TP110 integer-device-index: ``.to(0)``, ``.to(rank)``, ``device_ids=[rank]``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword, method_name
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import cuda_is_the_subject
from torchport.check.semantic._guards import Guard, device_guard

# Names that hold a process's or a GPU's index (never a device object or a dtype).
_INDEX_NAME = re.compile(
    r"^(local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|cuda_id|"
    r"local_gpu|gpu_rank|ddp_local_rank|LOCAL_RANK|RANK)$",
    re.IGNORECASE,
)
_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel"})
_DDP = (
    "pass `device_ids=[device.index]` only when `device` is an accelerator (`None` on the "
    "CPU): an integer device id always means a CUDA device"
)


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
    Finds devices given as a bare integer: `x.to(0)`, `model.to(rank)`,
    `torch.device(local_rank)`, `torch.zeros(3, device=0)`, and
    `DistributedDataParallel(model, device_ids=[rank])`. An argument counts as
    an index when it is an integer literal or is named like one (`rank`,
    `local_rank`, `gpu`, `device_id`, ...).

    ## Why is this bad?
    A bare integer means a CUDA device: `x.to(0)` is `x.to("cuda:0")`. The code
    fails on a machine without CUDA, and never uses MPS or XPU. Build the
    device from the accelerator that is there and keep the index:
    `torch.device(torch.accelerator.current_accelerator().type, rank)`. For
    DDP, pass `device_ids=[rank]` only on an accelerator (`None` on the CPU).
    """

    code = "TP110"
    name = "integer-device-index"
    intent = Intent.DEVICE
    default_contexts = frozenset({"code", "bench"})  # judged: check/_default_scope.py
    message = (
        "use `torch.device(torch.accelerator.current_accelerator().type, index)` instead of a "
        "bare integer, which always means a CUDA device"
    )
    node_types = (ast.Call,)
    # `.to(0)`, `torch.device(rank)`, the DDP wrappers; any other call only with `device=`
    call_attrs = frozenset({"to", "device", "DDP", *_WRAPPERS})
    call_keywords = frozenset({"device"})
    valid = (
        "x = x.to(device)\n",
        "x = x.to(torch.float16)\n",
        "y = x.to(other)\n",
        "import torch\n\ndev = torch.device(acc.type, rank)\n",
        "import torch\n\nddp = DistributedDataParallel(model, device_ids=None)\n",
        'import torch\n\nif device.type == "cuda":\n    x = x.to(rank)\n',
    )
    invalid = (
        Example("x = x.to(0)\n"),
        Example(
            "model = model.to(local_rank)\nx = batch.to(args.gpu, non_blocking=True)\n", count=2
        ),
        Example(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "ddp = DDP(model, device_ids=[rank], output_device=rank)\n"
        ),
        Example(
            "import torch\n\ndev = torch.device(local_rank)\nz = torch.zeros(3, device=0)\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        spot = _integer_device_argument(node, ctx)
        if spot is None or device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return
        if not cuda_is_the_subject(node, ctx):  # a CUDA-gated test's devices (`_test_code`)
            message = _DDP if isinstance(spot, (ast.List, ast.Tuple)) else None
            yield ctx.finding(self, spot, message=message)


def _integer_device_argument(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The integer device argument of ``node``, if it has one."""
    if method_name(node) == "to":
        return _moved_to_an_index(node)
    func = node.func
    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if tail in _WRAPPERS or tail == "DDP":
        return _device_ids_of_indices(node)
    return _torch_device_index(node, tail, ctx)


def _moved_to_an_index(node: ast.Call) -> ast.expr | None:
    """``x.to(0)`` / ``x.to(device=0)``: the index."""
    first = node.args[0] if node.args else None
    if first is None:
        kw = keyword(node, "device")
        first = kw.value if kw is not None else None
    return first if names_an_index(first) else None


def _device_ids_of_indices(node: ast.Call) -> ast.expr | None:
    """``DistributedDataParallel(model, device_ids=[rank])``: the list, if it holds an index."""
    ids = keyword(node, "device_ids")
    value = ids.value if ids is not None else None
    if isinstance(value, (ast.List, ast.Tuple)) and any(names_an_index(e) for e in value.elts):
        return value
    return None


def _torch_device_index(node: ast.Call, tail: str, ctx: Context) -> ast.expr | None:
    """``torch.device(rank)`` or ``torch.zeros(3, device=0)``: the index, if it is torch's."""
    kw = keyword(node, "device")
    if tail == "device" and len(node.args) == 1 and names_an_index(node.args[0]):
        spot: ast.expr | None = node.args[0]  # `torch.device(rank)`, if it is torch's
    elif kw is not None and names_an_index(kw.value):
        spot = kw.value  # `torch.zeros(3, device=0)`, if it is torch's
    else:
        return None
    name = ctx.qualname(node.func)
    if name is None or not name.startswith("torch."):
        return None
    if name == "torch.device":
        return spot if len(node.args) == 1 else None
    return kw.value if kw is not None and names_an_index(kw.value) else None
