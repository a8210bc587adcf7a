"""TP123 lightning-gpu-accelerator: ``Trainer(accelerator="gpu")``, ``Fabric(accelerator="cuda")``.

What Lightning's accelerator names select (its docs, "GPU training (Basic)", and its accelerator
connector): ``"cuda"`` CUDA only; ``"gpu"`` MPS on Apple silicon, else CUDA, else it raises
``MisconfigurationException("No supported gpu backend found!")``; ``"auto"`` (the Trainer's
default since 2.0) TPU, HPU, MPS, CUDA or the CPU, whichever is there. fuse-med-ml's knight
baseline, ``pl.Trainer(accelerator="gpu", devices=cfg["num_gpus"], ...)`` (held-out recall
round 5h), failed on every machine without a GPU until its port chose ``"cpu"`` there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import collected_by_a_test_runner
from torchport.check.semantic._guards import device_guard

_LIGHTNING = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})
_ENTRIES = frozenset({"Trainer", "Fabric"})
# Accelerator classes that are CUDA's alone (`accelerator=CUDAAccelerator()`).
_CUDA_CLASSES = frozenset({"CUDAAccelerator", "GPUAccelerator"})
_WHAT = {
    "cuda": "CUDA only: it fails on MPS, XPU and a machine without a GPU",
    "gpu": "CUDA or MPS only: it fails on a machine without either",
}
_PL = "import pytorch_lightning as pl\n\n"


class LightningGpuAccelerator(Rule):
    """## What it does
    Finds Lightning's `Trainer` and `Fabric` (`pytorch_lightning`, `lightning`,
    `lightning.pytorch`, `lightning.fabric`, `lightning_fabric`, also
    `Trainer.from_argparse_args`) given `accelerator="gpu"` or `accelerator="cuda"`
    (a literal, or a name bound to one) or a CUDA accelerator object
    (`accelerator=CUDAAccelerator()`). Left alone: an accelerator chosen under a test
    of the device (`"gpu" if torch.cuda.is_available() else "cpu"` is no literal),
    test code (a test that asks Lightning for the GPU is a GPU test: Lightning's own
    are gated by `@RunIf(min_cuda_gpus=N)`), and any other `accelerator=` keyword (a
    config's, Hugging Face's).

    ## Why is this bad?
    In Lightning `"cuda"` selects CUDA only, and `"gpu"` selects MPS on Apple silicon,
    else CUDA, and raises `No supported gpu backend found!` on a machine with neither:
    the program cannot run on the CPU, and `"cuda"` not on MPS either.
    `accelerator="auto"` (the Trainer's default since Lightning 2.0) picks the GPU
    where there is one and the CPU where there is none; keep `devices=` right for
    both (`devices="auto"`), or choose `"cpu"` where the machine has no accelerator.
    Reported without a fix: `devices=` (a count or list of GPU ids) and the strategy
    the call names may need to change with it.

    ## Why is it off by default?
    New (held-out recall round 5h), and not yet judged on a precision sample: a
    training script meant for one GPU cluster reads the same.
    `--extend-select TP123` runs it.
    """

    code = "TP123"
    name = "lightning-gpu-accelerator"
    intent = Intent.DEVICE
    default = False
    message = (
        'use `accelerator="auto"` (the GPU where there is one, else the CPU) instead of a '
        "GPU accelerator that Lightning cannot find on every machine"
    )
    node_types = (ast.Call,)
    call_attrs = frozenset({*_ENTRIES, "from_argparse_args"})
    call_keywords = frozenset({"accelerator"})
    valid = (
        _PL + 'trainer = pl.Trainer(accelerator="auto", devices="auto")\n',
        _PL + 'trainer = pl.Trainer(accelerator="cpu")\n',
        "import torch\nimport lightning as L\n\n"
        'acc = "gpu" if torch.cuda.is_available() else "cpu"\n'
        "trainer = L.Trainer(accelerator=acc)\n",
        'from transformers import Trainer\n\ntrainer = Trainer(accelerator="gpu")\n',
        'config = dict(accelerator="gpu", devices=1)\n',
        "import torch\nfrom lightning.fabric import Fabric\n\nif torch.cuda.is_available():\n"
        '    fabric = Fabric(accelerator="cuda")\n',
    )
    invalid = (
        Example(_PL + 'trainer = pl.Trainer(accelerator="gpu", devices=cfg["num_gpus"])\n'),
        Example(
            'from lightning.fabric import Fabric as F\n\nACC = "cuda"\n'
            "fabric = F(accelerator=ACC)\n"
        ),
        Example(
            "from lightning.pytorch import Trainer\n"
            "from lightning.pytorch.accelerators import CUDAAccelerator\n\n"
            "t = Trainer(accelerator=CUDAAccelerator(), devices=2)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        given = keyword(node, "accelerator")
        if given is None or not _lightnings(node, ctx):
            return
        named = _cuda_accelerator(given.value, ctx)
        if named is None or device_guard(node, ctx) is not None:
            return
        if not collected_by_a_test_runner(ctx):
            said = f'{self.message} (`accelerator="{named}"` is {_WHAT[named]})'
            yield ctx.finding(self, given.value, message=said)


def _lightnings(node: ast.Call, ctx: Context) -> bool:
    """Whether ``node`` makes Lightning's ``Trainer`` or ``Fabric``."""
    name = ctx.qualname(node.func)
    if name is None or name.partition(".")[0] not in _LIGHTNING:
        return False
    parts = name.split(".")
    if parts[-1] == "from_argparse_args":
        parts.pop()
    return parts[-1] in _ENTRIES


def _cuda_accelerator(value: ast.expr, ctx: Context) -> str | None:
    """``"gpu"`` or ``"cuda"`` when ``value`` names one (a literal, a name bound to one,
    Lightning's CUDA accelerator class made), else None."""
    if isinstance(value, ast.Name) and ctx.may_hold_a_value(value.id):
        value = ctx.value_of(value) or value
    if isinstance(value, ast.Constant) and value.value in _WHAT:
        return str(value.value)
    if isinstance(value, ast.Call):
        name = ctx.qualname(value.func) or ""
        root, _, tail = name.rpartition(".")
        if tail in _CUDA_CLASSES and root.partition(".")[0] in _LIGHTNING:
            return "cuda"
    return None
