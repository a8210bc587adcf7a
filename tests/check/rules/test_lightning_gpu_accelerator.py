"""TP123: Lightning's ``Trainer``/``Fabric`` given ``accelerator="gpu"`` or ``"cuda"``.

Held-out recall round 5h (BiomedSciAI/fuse-med-ml, the knight baseline's
``pl.Trainer(accelerator="gpu", devices=cfg["num_gpus"], ...)``, which no machine without a GPU
ran). The oracle, apart from the rule, is what Lightning's accelerator connector does with the
value (its docs, "GPU training (Basic)"): ``"cuda"`` and a CUDA accelerator object select CUDA
alone, ``"gpu"`` MPS or CUDA and raises on a machine with neither; ``"auto"``, ``"cpu"``,
``"mps"`` and ``"tpu"`` say no GPU is required. Only Lightning's ``Trainer`` and ``Fabric``
read the keyword so (a Hugging Face ``Trainer``, a project's own function, a ``dict`` do not),
and a call under a test of the device is a choice.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, check_source

# (the import, the callee as written, whether it is Lightning's)
CALLEES = (
    ("import pytorch_lightning as pl", "pl.Trainer", True),
    ("from pytorch_lightning import Trainer", "Trainer", True),
    ("from pytorch_lightning import Trainer", "Trainer.from_argparse_args", True),
    ("import lightning as L", "L.Trainer", True),
    ("import lightning as L", "L.Fabric", True),
    ("import lightning.pytorch as lp", "lp.Trainer", True),
    ("from lightning.pytorch import Trainer as T", "T", True),
    ("from lightning.fabric import Fabric", "Fabric", True),
    ("import lightning_fabric", "lightning_fabric.Fabric", True),
    ("from transformers import Trainer", "Trainer", False),
    ("from mylib.training import Trainer", "Trainer", False),
    ("def Trainer(**kw):\n    return kw", "Trainer", False),
    ("import pytorch_lightning as pl", "dict", False),
    ("import pytorch_lightning as pl", "pl.LightningModule", False),
)
# (the value given, whether it requires a GPU)
VALUES = (
    ('"gpu"', True),
    ('"cuda"', True),
    ("acc", True),  # `acc = "gpu"` bound before
    ("CUDAAccelerator()", True),
    ('"auto"', False),
    ('"cpu"', False),
    ('"mps"', False),
    ('"tpu"', False),
    ("choice", False),  # `choice = "gpu" if torch.cuda.is_available() else "cpu"`
    ("args.accelerator", False),
)
EXTRAS = ("", ", devices=1", ', devices=[0, 1], strategy="ddp"', ", max_epochs=3")
GUARDS = (
    ("", False),
    ("if torch.cuda.is_available():\n", True),
    ('if device.type == "cuda":\n', True),
)
WRAPPERS = ("", "def main(args, device):\n")
_HEAD = (
    "import torch\nfrom pytorch_lightning.accelerators import CUDAAccelerator\n{imp}\n\n"
    'acc = "gpu"\nchoice = "gpu" if torch.cuda.is_available() else "cpu"\n'
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(CALLEES),
    st.sampled_from(VALUES),
    st.sampled_from(EXTRAS),
    st.sampled_from(GUARDS),
    st.sampled_from(WRAPPERS),
)
def test_a_gpu_accelerator_of_lightning_is_reported(
    callee: tuple[str, str, bool],
    value: tuple[str, bool],
    extra: str,
    guard: tuple[str, bool],
    wrapper: str,
) -> None:
    first = "args, " if callee[1].endswith("from_argparse_args") else ""
    call = f"out = {callee[1]}({first}accelerator={value[0]}{extra})\n"
    body = guard[0] + ("    " if guard[0] else "") + call
    if wrapper:
        body = wrapper + "".join(f"    {line}\n" for line in body.splitlines())
    source = _HEAD.format(imp=callee[0]) + body
    found = [f for f in check_source(source, select=["TP123"])]
    expected = callee[2] and value[1] and not guard[1]
    assert bool(found) == expected, source
    if found:
        (finding,) = found
        assert finding.fix is None
        assert source.splitlines()[finding.line - 1].strip() == call.strip()
        named = "cuda" if value[0] in ('"cuda"', "CUDAAccelerator()") else "gpu"
        assert f'accelerator="{named}"' in finding.message


def test_it_is_off_by_default() -> None:
    source = 'import pytorch_lightning as pl\n\ntrainer = pl.Trainer(accelerator="gpu")\n'
    assert check_source(source) == []
    assert [f.code for f in check_source(source, select=["TP123"])] == ["TP123"]


def test_test_code_is_left_alone(tmp_path: Path) -> None:
    """A test that asks Lightning for the GPU is a GPU test (Lightning's own: ``@RunIf``)."""
    call = '    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp")\n'
    test = "import pytest\nimport pytorch_lightning as pl\n\n\n@RunIf(min_cuda_gpus=2)\n"
    test += "def test_ddp(tmp_path):\n" + call
    script = "import pytorch_lightning as pl\n\n\ndef train(args):\n" + call
    for name, source, found in (("test_ddp.py", test, 0), ("train_ddp.py", script, 1)):
        (tmp_path / name).write_text(source)
        result = check_paths([tmp_path / name], select=["TP123"], jobs=1)
        assert len(result.findings) == found, name
