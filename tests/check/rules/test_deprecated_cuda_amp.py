"""TP403's fix on generated programs: the device type it passes, and the imports it leaves.

The oracle runs the fixed program (CPU): ``device.type`` on a string device
raises, so a fix that does not know a string from a ``torch.device`` fails here.
After ``fix --unsafe`` no import from ``torch.cuda.amp`` is left that nothing uses.
"""

from __future__ import annotations

import ast
import warnings

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

DEVICES = (
    "",
    'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
    "device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')\n",
    'device = "cuda"\n',
)
IMPORTS = {
    "dotted": ("", "torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler"),
    "from": ("from torch.cuda.amp import autocast, GradScaler\n", "autocast", "GradScaler"),
    "alias": ("import torch.cuda.amp as amp\n", "amp.autocast", "amp.GradScaler"),
    "split": (
        "from torch.cuda.amp import autocast\nfrom torch.cuda.amp import GradScaler as GS\n",
        "autocast",
        "GS",
    ),
}
CALL_ARGS = ("", "enabled=False", "(False)", "enabled=(True)")


@st.composite
def programs(draw: st.DrawFn) -> str:
    device = draw(st.sampled_from(DEVICES))
    header, autocast, scaler = IMPORTS[draw(st.sampled_from(sorted(IMPORTS)))]
    args = draw(st.sampled_from(CALL_ARGS))
    body = (
        f"scaler = {scaler}(enabled=False)\n"
        f"with {autocast}({args}):\n"
        "    y = torch.ones(2) * 2\n"
        "OUT.append(y.tolist())\n"
    )
    if draw(st.booleans()):
        body = "def step():\n" + "".join("    " + line for line in body.splitlines(True))
        body += "step()\n"
    return "import torch\n" + header + device + body


def run(source: str) -> list[object]:
    out: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "<amp>", "exec"), {"OUT": out, "__name__": "__amp__"})
    return out


def _unused_amp_imports(source: str) -> list[str]:
    tree = ast.parse(source)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    left = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.cuda.amp"):
            left += [a.asname or a.name for a in node.names if (a.asname or a.name) not in read]
        elif isinstance(node, ast.Import):
            left += [
                a.asname
                for a in node.names
                if a.name == "torch.cuda.amp" and a.asname and a.asname not in read
            ]
    return left


@given(programs())
def test_unsafe_fix_runs_and_leaves_no_unused_amp_import(source: str) -> None:
    before = run(source)
    fixed = fix_source(source, unsafe=True)
    assert fix_source(fixed, unsafe=True) == fixed
    assert run(fixed) == before  # `device.type` on a string device would raise here
    assert _unused_amp_imports(fixed) == []
    assert not [f for f in check_source(fixed) if f.code == "TP403"]


def test_string_device_is_passed_as_the_type() -> None:
    source = (
        "import torch\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "with torch.cuda.amp.autocast():\n    pass\n"
    )
    fixed = fix_source(source, select=["TP403"], unsafe=True)
    assert "with torch.amp.autocast(device):" in fixed


def test_an_import_still_used_is_kept() -> None:
    source = (
        "import torch\nfrom torch.cuda.amp import autocast, GradScaler\n"
        "with autocast():\n    pass\nmake = GradScaler\n"
    )
    fixed = fix_source(source, select=["TP403"], unsafe=True)
    assert "from torch.cuda.amp import GradScaler\n" in fixed
    assert "with torch.amp.autocast(device.type):" in fixed
