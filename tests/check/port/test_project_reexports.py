"""A model class another project module re-exports: placed as if imported where it is defined.

``train.py`` does ``from pkg import Net`` where ``pkg/__init__.py`` re-exports it (``from
.model import Net``): the port once changed nothing and said "0 left", the model on the
CPU, though ``from pkg.model import Net`` was ported. A project is generated from a layout
(how the package binds ``Net``: a re-export, a chain of them, relative imports up and
down, a star import with and without ``__all__``, an alias ``Net = _Net``, ``from .
import model``, an import in an ``except`` block; or bindings the port cannot resolve: a
name bound twice, a module ``__getattr__``) and an import spelling in the script.

The oracle shares no code with the port: the original runs on the CPU and the port on
the simulated accelerator (``no_cuda_sim.in_a_child``); the port either reported what it
left, or its outputs are the original's values on the accelerator.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import RUN_PROJECT, in_a_child
from torchport.check import port_paths

_NET = """import torch
from torch import nn


class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


def _net(name: str = "Net", tail: str = "") -> str:
    return _NET.format(name=name) + tail


# How the package binds `Net` for its importers (each makes `pkg.Net` the model class).
LAYOUTS: dict[str, dict[str, str]] = {
    "init": {"pkg/__init__.py": "from .model import Net\n", "pkg/model.py": _net()},
    "init_absolute": {"pkg/__init__.py": "from pkg.model import Net\n", "pkg/model.py": _net()},
    "init_all": {
        "pkg/__init__.py": "from .model import Net\n\n__all__ = ['Net']\n",
        "pkg/model.py": _net(),
    },
    "chain": {
        "pkg/__init__.py": "from .nets import Net\n",
        "pkg/nets/__init__.py": "from .model import Net\n",
        "pkg/nets/model.py": _net(),
    },
    "deep": {
        "pkg/__init__.py": "from .a.b.model import Net as Net\n",
        "pkg/a/__init__.py": "",
        "pkg/a/b/__init__.py": "",
        "pkg/a/b/model.py": _net(),
    },
    "up": {
        "pkg/__init__.py": "from .a.b import Net\n",
        "pkg/a/__init__.py": "",
        "pkg/a/b.py": "from ..model import Net\n",
        "pkg/model.py": _net(),
    },
    "star": {"pkg/__init__.py": "from .model import *\n", "pkg/model.py": _net()},
    "star_all": {
        "pkg/__init__.py": "from .model import *\n",
        "pkg/model.py": "__all__ = ['Net']\n" + _net(),
    },
    "alias": {
        "pkg/__init__.py": "from .model import Net\n",
        "pkg/model.py": _net("_Net", "\n\nNet = _Net\n"),
    },
    "alias_init": {
        "pkg/__init__.py": "from .model import _Net\n\nNet = _Net\n",
        "pkg/model.py": _net("_Net"),
    },
    "except": {
        "pkg/__init__.py": (
            "try:\n    from .fast import Net\nexcept ImportError:\n    from .model import Net\n"
        ),
        "pkg/model.py": _net(),
    },
    "cycle": {
        "pkg/__init__.py": "from .model import Net\n",
        "pkg/model.py": "import pkg\n" + _net(),
    },
    "submodule": {
        "pkg/__init__.py": "from . import model\nNet = model.Net\n",
        "pkg/model.py": _net(),
    },
    # what the port cannot resolve: reported
    "twice": {
        "pkg/__init__.py": "from .model import Net\n\nif False:\n    Net = None\n",
        "pkg/model.py": _net(),
    },
    "twice_class": {
        "pkg/__init__.py": "from .model import Net\n\nif False:\n\n    class Net:\n        pass\n",
        "pkg/model.py": _net(),
    },
    "getattr": {
        "pkg/__init__.py": (
            "import importlib\n\n\ndef __getattr__(name):\n"
            "    return getattr(importlib.import_module('.model', __name__), name)\n"
        ),
        "pkg/model.py": _net(),
    },
}
SPELLINGS = {
    "from": ("from pkg import Net", "Net"),
    "import": ("import pkg", "pkg.Net"),
    "import_as": ("import pkg as p", "p.Net"),
    "star": ("from pkg import *", "Net"),
    "module": ("from pkg import model", "model.Net"),
    "dotted_as": ("import pkg.model as m", "m.Net"),
}
# (layout, spelling) pairs whose original does not run: a star import of a module
# `__getattr__` binds nothing; these layouts have no `pkg.model.Net`
_NO_RUN = {("getattr", "star")} | {
    (layout, spelling)
    for layout in ("chain", "deep", "alias_init")
    for spelling in ("module", "dotted_as")
}
CASES = [(lay, sp) for lay in LAYOUTS for sp in SPELLINGS if (lay, sp) not in _NO_RUN]


def project(layout: str, spelling: str) -> dict[str, str]:
    files = dict(LAYOUTS[layout])
    imported, expr = SPELLINGS[spelling]
    files["train.py"] = (
        f"import torch\n{imported}\n\nnet = {expr}()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"
    )
    return files


_CHILD = (
    RUN_PROJECT
    + """
import json

pairs = json.loads(open(sys.argv[1]).read())
cpus = [run_project(original) for original, _ in pairs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
results = []
for cpu, (original, ported) in zip(cpus, pairs):
    now = run_project(ported)
    entry = {"cpu": cpu.get("error"), "now": now.get("error")}
    if "out" in now and "out" in cpu:
        entry["devices"] = [str(t.device) for t in now["out"]]
        entry["same"] = len(cpu["out"]) == len(now["out"]) and all(
            torch.allclose(a, b.cpu()) for a, b in zip(cpu["out"], now["out"])
        )
    results.append(entry)
print(json.dumps(results))
"""
)


def placed_or_reported(cases: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The module docstring's oracle over ``cases`` (one child); each case's record."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs, records = [], []
        for i, case in enumerate(cases):
            original, ported = Path(tmp) / f"o{i}", Path(tmp) / f"p{i}"
            for root in (original, ported):
                for rel, text in project(*case).items():
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text(text, encoding="utf-8")
            result = port_paths([ported], jobs=1)
            assert not result.errors, (case, result.errors)
            again = port_paths([ported], jobs=1)
            assert not again.changed, (case, "not idempotent")
            left = [f"{Path(f.path).name}:{f.line} {f.code}" for f in result.remaining]
            text = (ported / "train.py").read_text(encoding="utf-8")
            records.append({"case": case, "left": left, "train": text})
            pairs.append((str(original), str(ported)))
        results = in_a_child(_CHILD, pairs)
    return judged(records, results)


def judged(records: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each port's record with what :data:`_CHILD` saw: the original ran on the CPU, and the
    port either left a finding or printed the original's values, every tensor on ``sim:0``."""
    for record, got in zip(records, results, strict=True):
        record.update(got)
        assert got["cpu"] is None, record  # the original runs
        if record["left"]:
            continue  # reported
        assert got["now"] is None, record
        assert got["same"] and set(got["devices"]) == {"sim:0"}, record  # placed
    return records


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(CASES), min_size=6, max_size=6, unique=True))
def test_a_reexported_model_is_placed_or_reported(cases: list[tuple[str, str]]) -> None:
    """See the module docstring (one child per example)."""
    placed_or_reported(cases)


@pytest.mark.slow  # every layout and spelling: a child of ~90 ports
def test_every_layout_and_spelling() -> None:
    records = placed_or_reported(CASES)
    unsure = {"twice", "twice_class", "getattr"}
    for record in records:
        layout, spelling = record["case"]
        resolved = layout not in unsure or spelling in ("module", "dotted_as")
        assert bool(record["left"]) != resolved, record  # placed where it resolves, else said


def test_the_resolved_layouts_are_ported_without_a_finding() -> None:
    """No child: each layout the view resolves moves the model in the script, 0 left."""
    with tempfile.TemporaryDirectory() as tmp:
        for i, layout in enumerate(("init", "chain", "star", "alias_init", "except")):
            root = Path(tmp) / f"p{i}"
            for rel, text in project(layout, "from").items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text, encoding="utf-8")
            result = port_paths([root / "train.py"], jobs=1)
            assert not result.remaining, layout
            assert "Net().to(device)" in (root / "train.py").read_text(encoding="utf-8"), layout
