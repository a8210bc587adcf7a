"""TP113 hard-coded-cuda-device-type: ``torch.autocast("cuda")``, ``init_device_mesh("cuda")``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword, string_value
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import collected_by_a_test_runner
from torchport.check.semantic._guards import Guard, device_guard

# torch functions whose first positional argument is a device *type*.
_FIRST_IS_TYPE = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.distributed.device_mesh.init_device_mesh",
        "torch.distributed.init_device_mesh",
        "torch.get_autocast_dtype",
        "torch.is_autocast_enabled",
        "torch.set_autocast_dtype",
        "torch.set_autocast_enabled",
        "torch.Generator",
    }
)
_TAILS = frozenset(name.rsplit(".", 1)[1] for name in _FIRST_IS_TYPE)


class HardCodedCudaDeviceType(Rule):
    """## What it does
    Finds `"cuda"` passed where torch wants a device type:
    `torch.autocast("cuda")`, `torch.autocast(device_type="cuda")`,
    `torch.amp.autocast("cuda")`, `torch.amp.GradScaler("cuda")`,
    `init_device_mesh("cuda", ...)`, `torch.amp.custom_fwd(device_type="cuda")`
    and any other `device_type="cuda"` argument, except to another library's call
    or a stand-in (`Mock(device_type="cuda")`, `SimpleNamespace(...)`, `dict(...)`:
    test doubles and records, not a device setup), or in test code (a `test`/`tests`
    folder, a module pytest collects: `_test_code.collected_by_a_test_runner`), as
    TP109 leaves it: there the device type decides what the test exercises, and on
    MPS or XPU the test still runs and passes (autocast and the scaler are off), or
    CUDA is what it tests. (`device="cuda"` is TP101's; an autocast query that names no
    device type, `torch.is_autocast_enabled()`, is TP122's.)

    ## Why is this bad?
    Mixed precision, gradient scaling and device meshes are then set up for
    CUDA only: on MPS or XPU autocast silently does nothing (the model runs
    in float32) and `init_device_mesh` fails. Pass the type of the one device
    the program uses: `torch.autocast(device.type)`,
    `init_device_mesh(device.type, ...)`.
    """

    code = "TP113"
    name = "hard-coded-cuda-device-type"
    intent = Intent.DEVICE
    message = 'pass `device.type` of your one `device` instead of the device type "cuda"'
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    node_types = (ast.Call,)
    call_attrs = _TAILS  # `torch.autocast("cuda")` ...; any other call only by keyword
    call_keywords = frozenset({"device_type"})
    valid = (
        "import torch\n\nwith torch.autocast(device.type):\n    y = model(x)\n",
        'import torch\n\nwith torch.autocast("cpu", dtype=torch.bfloat16):\n    y = model(x)\n',
        'import torch\n\nif device.type == "cuda":\n    scaler = torch.amp.GradScaler("cuda")\n',
        'from unittest import mock\n\nopt = mock.MagicMock(device_type="cuda")\n',
        'from types import SimpleNamespace\n\ncfg = SimpleNamespace(device_type="cuda")\n',
    )
    invalid = (
        Example(
            "import torch\n\n"
            'with torch.autocast(device_type="cuda", dtype=torch.bfloat16):\n'
            "    y = model(x)\n"
        ),
        Example(
            "import torch\n"
            "from torch.distributed.device_mesh import init_device_mesh\n\n"
            'scaler = torch.amp.GradScaler("cuda")\n'
            'mesh = init_device_mesh("cuda", (2, 4))\n',
            count=2,
        ),
        Example(
            "import torch\n\n"
            '@torch.amp.custom_fwd(device_type="cuda")\n'
            "def forward(ctx, x):\n"
            "    return x\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        spot: ast.expr | None = None
        kw = keyword(node, "device_type")
        if kw is not None and string_value(kw.value) == "cuda" and not _stand_in(node, ctx):
            spot = kw.value
        elif node.args and string_value(node.args[0]) == "cuda":
            func = node.func
            tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if tail in _TAILS and ctx.qualname(func) in _FIRST_IS_TYPE:
                spot = node.args[0]
        if spot is None or device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return
        if not collected_by_a_test_runner(ctx):  # a test's choice (`_test_code.py`)
            yield ctx.finding(self, spot)


# Calls that only record what they are given: test doubles, namespaces, mappings.
_STAND_INS = frozenset(
    {"Mock", "MagicMock", "NonCallableMock", "AsyncMock", "PropertyMock", "create_autospec",
     "patch", "object", "SimpleNamespace", "Namespace", "dict", "namedtuple", "OrderedDict"}
)  # fmt: skip


def _stand_in(call: ast.Call, ctx: Context) -> bool:
    """A test double, namespace or mapping, or a call of another library than torch."""
    func = call.func
    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if tail in _STAND_INS:
        return True
    name = ctx.qualname(func)
    return name is not None and name.partition(".")[0] != "torch"
