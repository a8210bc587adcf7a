"""A device string another library uses, read back by torch through its own module.

Breaker c34am of branch p34al (``rules/_foreign_devices.py``): a module-level device string
whose every *name* read is another library's is left alone by TP101/TP109, but the module can
read its own global as an attribute of itself (``getattr(sys.modules[__name__], "device")``,
``sys.modules[__name__].device``, ``__main__.device``, ``importlib.import_module("run")
.device``) or another file can take it by ``from run import *`` and ``globals()`` without
naming it as a word. Each program below hands the string to torch that way too, so CUDA reaches
torch: the finding must stay (it did before p34al, 0b4c999a; after it, lost: a silent miss).
The four reads of the module as an object keep it now (the file spelling one keeps every
finding, as ``globals(`` did); the star import read by ``globals()`` in another file is still
lost (strict xfail). Oracle by hand: every program hands ``device`` to ``torch.zeros``.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from torchport.check import check_source

_HEAD = 'import torch\nfrom faster_whisper import WhisperModel\n{imports}\ndevice = "{value}"\n'
_USE = 'WhisperModel("s", device=device)\nx = torch.zeros(2, device={read})\n'
# (imports, how torch reads it, another file's text or None)
CASES = {
    "getattr of sys.modules": ("import sys", 'getattr(sys.modules[__name__], "device")', None),
    "sys.modules attribute": ("import sys", "sys.modules[__name__].device", None),
    "__main__ attribute": ("import __main__", "__main__.device", None),
    "import_module attribute": ("import importlib", 'importlib.import_module("run").device', None),
}
STAR = (
    "",
    '"cpu"',
    "import torch\nfrom run import *\nx = torch.zeros(2).to(globals()['dev' + 'ice'])\n",
)


@pytest.mark.parametrize("value", ["cuda", "cuda:0"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_module_reading_its_own_device_string_keeps_the_finding(case: str, value: str) -> None:
    _kept(CASES[case], value)


@pytest.mark.xfail(strict=True, reason="another file's star import is not followed (c34am)")
def test_a_star_import_read_by_globals_keeps_the_finding() -> None:
    _kept(STAR, "cuda")


def _kept(case: tuple[str, str, str | None], value: str) -> None:
    imports, read, other = case
    source = _HEAD.format(imports=imports, value=value) + _USE.format(read=read)
    line = source.splitlines().index(f'device = "{value}"') + 1
    with tempfile.TemporaryDirectory() as top:
        os.mkdir(os.path.join(top, ".git"))
        path = os.path.join(top, "run.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        if other is not None:
            with open(os.path.join(top, "other.py"), "w", encoding="utf-8") as handle:
                handle.write(other)
        found = check_source(source, path=path)
    assert any(f.code in ("TP101", "TP109") and f.line == line for f in found), source
