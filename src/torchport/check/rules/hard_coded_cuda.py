"""TP101 hard-coded-cuda: ``.cuda()``, ``"cuda"`` devices and ``torch.device("cuda")``."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from functools import partial

from torchport.check._context import Context
from torchport.check._match import (
    called,
    cuda_choice,
    device_keywords,
    device_settings,
    forwards_to_super,
    keyword,
    method_name,
    takes_a_device,
)
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._cuda_choice import default_never_runs, foreign_device, left_alone
from torchport.check.rules._cuda_device_fixes import dot_cuda_to_device, replace_device
from torchport.check.rules._snippets import DEVICE_LINE

_DEVICE = frozenset({"device"})
_GUARDED = (
    "import torch\n\n\ndef act(x, device):\n    if torch.cuda.is_available():\n        x = x.{}\n"
)


class HardCodedCuda(Rule):
    """## What it does
    Finds code that names CUDA as the device: `.cuda()`, `.to("cuda")`, `device="cuda"`,
    `map_location="cuda:0"` and `accelerator="cuda"` arguments, `torch.device("cuda")`, `device =
    "cuda"`, `device: str = "cuda"`, `def f(device="cuda")` and `{"device": "cuda"}` settings, as an
    arm of a conditional (`"cuda:0" if c else "cpu"`; `f"cuda:{rank}"` is TP115's; not the old-torch
    fallback of `torch.accelerator`'s answer). Left alone: a CUDA device compared (`dev ==
    torch.device("cuda")`, a test), CUDA a test sets up on purpose inside `with pytest.warns(...)`
    (or `assertWarns`, `assertLogs`: a CUDA device set to trigger a GPU warning) or `with
    FakeTensorMode()`, test code whose subject is CUDA (named, marked or skipped for it or its GPU
    architecture, asserting it first, naming two GPUs, starting NCCL, testing a GPU-only kernel:
    `rules/_test_code.py`, `rules/_cuda_kernels.py`), a default every call of the function passes
    (its repository's, `rules/_passed_defaults.py`) or no code reads (or rebinds first), a CUDA
    probe's own tensor, benchmark code (a `bm_*` file or function, a timing closure or program), a
    class's own `cuda()` method, a string whose every use is another library's device (CTranslate2,
    ONNX Runtime, JAX: `rules/_foreign_devices.py`), and code in the arm of a device check where
    CUDA is there (`if device.type == "cuda":`, any case, `if torch.cuda.is_available():`, `if s ==
    "cuda":` in a function testing `s == "mps"`; not `if x.device != cuda: x.cuda()`): ported, or
    TP109's choice, except a move in code that carries its device (`self.device`).

    ## Why is this bad?
    The program fails on a machine without an NVIDIA GPU, and never uses an Apple (MPS), Intel
    (XPU) or other accelerator that is there. Define the device once from `torch.accelerator`
    and pass it everywhere.

    ## Fix safety
    The fix uses the device the code carries (a `device` parameter, `self.device`: unsafe, the
    data follows it), else defines `device` once after the imports: safe for `.cuda()`,
    `"cuda"`, `torch.device("cuda")`; unsafe for an index (`.cuda(0)`), which it drops. By hand:
    an index in a variable (`.cuda(rank)`), a string default (`def f(device="cuda")`), a
    conditional choice, a call not known to be torch's (a file's class with its own `.cuda()`),
    CUDA used to fail on purpose, device values in a file that compares or asserts them.
    """

    code = "TP101"
    name = "hard-coded-cuda"
    intent = Intent.DEVICE
    default_contexts = frozenset({"code"})  # kept on below the bar by decision (KEPT_ON)
    message = "use one `device` chosen from `torch.accelerator` instead of hard-coding CUDA"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call, ast.Assign, ast.AnnAssign, ast.arguments, ast.Dict)
    # `.cuda()`, `torch.device(...)`, `.to(...)`, `add_argument("--device", default=...)`,
    # and any call given a device by keyword (see `device_keywords`)
    call_attrs = frozenset({"cuda", "device", "to", "add_argument"})
    call_keywords = frozenset({"device", "map_location", "accelerator"})
    valid = (
        "x = x.to(device)\n",
        'x = torch.zeros(3, device="cpu")\n',
        'if device.type == "cuda":\n    pass\n',
        "if x.is_cuda:\n    torch.cuda.synchronize(x.device)\n    y = x.cuda()\n",
        'name = f"cuda_{i}"\n',
        "import torch\n\nif torch.cuda.is_available():\n    model.cuda()\n",  # TP109's
        'def _load(p, device="cuda"):\n    pass\n\n\n_load("a.pt", device=dev)\n',  # passed
    )
    invalid = (
        Example(
            "import torch\n\nx = torch.zeros(3).cuda()\n",
            fixed=f"import torch\n\n{DEVICE_LINE}\nx = torch.zeros(3).to(device)\n",
        ),
        Example(
            "import torch\n"
            "import torch.nn as nn\n"
            "\n"
            'model = nn.Linear(2, 2).to("cuda")\n'
            'x = torch.ones(2, device="cuda")\n',
            fixed="import torch\n"
            "import torch.nn as nn\n"
            "\n"
            f"{DEVICE_LINE}"
            "\n"
            "model = nn.Linear(2, 2).to(device)\n"
            "x = torch.ones(2, device=device)\n",
            count=2,
        ),
        Example(
            "import torch\n\nbatch = batch.cuda(non_blocking=True)\n",
            fixed=f"import torch\n\n{DEVICE_LINE}\nbatch = batch.to(device, non_blocking=True)\n",
        ),
        Example(
            'import torch\n\nckpt = torch.load(path, map_location="cuda:0", weights_only=True)\n',
            fixed=f"import torch\n\n{DEVICE_LINE}\n"
            "ckpt = torch.load(path, map_location=device, weights_only=True)\n",
        ),
        Example('device = "cuda"\n'),
        Example('class Run:\n    def __init__(self, device="cuda:0"):\n        self.d = device\n'),
        Example('import torch\n\ndev = torch.device("cuda", local_rank)\n'),
        Example(
            "import numpy as np\n\n\ndef run(x):\n    return x.cuda(1)\n",
            fixed="import torch\n"
            "import numpy as np\n"
            "\n"
            f"{DEVICE_LINE}"
            "\n"
            "\n"
            "def run(x):\n"
            "    return x.to(device)\n",
        ),
        Example(_GUARDED.format("cuda()"), fixed=_GUARDED.format("to(device)")),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        guarded: bool | None = None
        for make in self._check(node, ctx):  # a finding's fix is worked out after its guard
            if guarded is None:  # asked only when there is something to say
                guarded = left_alone(node, ctx)
            if not guarded:
                yield make()

    def _check(self, node: ast.AST, ctx: Context) -> Iterator[Callable[[], Finding]]:
        if not isinstance(node, ast.Call):
            yield from ((lambda found=found: found) for found in _cuda_settings(self, node, ctx))
            return
        if _tensordot_cuda_to_device(node, ctx):
            yield partial(dot_cuda_to_device, self, node, ctx)
            return
        made = _torch_device_of_cuda(node, ctx)
        if made is not None:
            yield partial(_torch_device, self, node, ctx, *made)
            return
        yield from _cuda_device_arguments(self, node, ctx)


def _cuda_settings(rule: Rule, node: ast.AST, ctx: Context) -> Iterator[Finding]:
    """``device = "cuda"``, ``def f(device="cuda")``, a config's ``{"device": "cuda"}``: by hand."""
    for name, setting in device_settings(node):
        found = "device" in name.lower() and cuda_choice(setting, ctx) is not None
        if found and not default_never_runs(node, name, ctx):
            yield ctx.finding(rule, setting)


def _tensordot_cuda_to_device(node: ast.Call, ctx: Context) -> bool:
    """``x.cuda(...)`` on a value (not ``torch.cuda``, not ``super().cuda()`` passing it on)."""
    cuda = method_name(node) == "cuda"
    return cuda and ctx.qualname(node.func) is None and not forwards_to_super(node)


def _torch_device_of_cuda(node: ast.Call, ctx: Context) -> tuple[ast.expr | None, str] | None:
    """``torch.device("cuda")`` / ``torch.device(type="cuda")``: its type argument and value."""
    kind = node.args[0] if node.args else getattr(keyword(node, "type"), "value", None)
    value = cuda_choice(kind, ctx)
    if value is not None and called(node, ctx, _DEVICE) == "torch.device":  # string first
        return kind, value
    return None


def _torch_device(
    rule: Rule, node: ast.Call, ctx: Context, kind: ast.expr | None, value: str
) -> Finding:
    """The finding for ``torch.device("cuda...")``: fixed where the index is a constant."""
    if isinstance(kind, ast.IfExp):
        return ctx.finding(rule, node)  # `torch.device("cuda:0" if c else "cpu")`
    index = [*node.args[1:], *(kw.value for kw in node.keywords if kw.arg != "type")]
    if any(not isinstance(i, ast.Constant) for i in index):
        return ctx.finding(rule, node)  # `torch.device("cuda", rank)`: by hand
    exact = value == "cuda" and not index
    return replace_device(rule, node, ctx, FixSafety.SAFE if exact else FixSafety.UNSAFE)


def _cuda_device_arguments(rule: Rule, node: ast.Call, ctx: Context) -> Iterator[partial[Finding]]:
    """``.to("cuda")`` and ``device="cuda"`` given to a call (each finding made when called)."""
    targets = [node.args[0]] if method_name(node) == "to" and node.args else []
    targets += [t for t in device_keywords(node) if not foreign_device(t, ctx, node)]
    for target in targets:
        if (value := cuda_choice(target, ctx)) is not None:
            if isinstance(target, ast.IfExp) or not takes_a_device(node, ctx):
                yield partial(ctx.finding, rule, target)  # `dict(device="cuda")`, a user helper
                continue
            safety = FixSafety.SAFE if value == "cuda" else FixSafety.UNSAFE
            yield partial(replace_device, rule, target, ctx, safety, whole=False)
