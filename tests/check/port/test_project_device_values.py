"""A device value another module of the project holds reaches the model (issue 31).

``config.py`` holds ``CONFIG = {"device": "cpu"}`` (a constant, a ``SimpleNamespace``, a
dataclass default, a class attribute, a function's dict) and ``train.py`` moves its model
there, making its tensors with no device. On the base the port took any ``.to(x)`` as
placed: it wrote a device line of its own and moved the tensors to the accelerator, where
they met the model on the CPU, "0 left"; a ``Config().device`` or ``self.cfg.device`` was
the same. The invariant: the port reads the other module's value as it reads one of the
same file; it reuses it where it reaches the model (a module-level constant bound once to
the CPU or a CUDA-or-CPU choice: its moves write ``DEVICE``/``config.DEVICE``), and it
reports its moves where it cannot tell (a dict entry, a value made by a call, a name bound
twice, an attribute stored here).

Oracle (apart from the port; one child per table): each original runs on the CPU, then,
the simulated accelerator installed (seen as no CUDA, as MPS or XPU), the original and its
port run there. Every port raises nothing and is idempotent; where it leaves no finding,
it runs on ``sim`` with the CPU's values and puts each output on the device the original's
own outputs went to there. Where the port made a lone ``device = torch.device("cpu")`` the
accelerator's (TP507: no deliberate choice, ``port/_choices.deliberate_cpu``), every output is
on the device.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import RUN_PROJECT, in_a_child
from torchport.check import port_paths

pytest.importorskip("torch")

_IDIOM = '"cuda" if torch.cuda.is_available() else "cpu"'
VALUES = {
    "cpu": '"cpu"',
    "cpu:0": '"cpu:0"',
    "torch.device cpu": 'torch.device("cpu")',
    "idiom": _IDIOM,
    "torch.device idiom": f"torch.device({_IDIOM})",
}
# holder -> (config.py's lines with {v}, the read after `from config import ...`, the name
# imported, the read after `import config`; `{setup}` lines go first in the function)
HOLDERS: dict[str, tuple[str, str, str, str]] = {
    "constant": ("DEVICE = {v}", "DEVICE", "DEVICE", "config.DEVICE"),
    "dict": ('CONFIG = {{"device": {v}, "lr": 0.1}}', 'CONFIG["device"]', "CONFIG",
             'config.CONFIG["device"]'),
    "dict get": ('CONFIG = {{"device": {v}}}', 'CONFIG.get("device")', "CONFIG",
                 'config.CONFIG.get("device")'),
    "nested dict": ('CONFIG = {{"train": {{"device": {v}}}}}', 'CONFIG["train"]["device"]',
                    "CONFIG", 'config.CONFIG["train"]["device"]'),
    "namespace": ("cfg = SimpleNamespace(device={v})", "cfg.device", "cfg", "config.cfg.device"),
    "dataclass made": ("@dataclass\nclass Config:\n    device: str = {v}", "Config().device",
                       "Config", "config.Config().device"),
    "class attribute": ("class Config:\n    device = {v}", "Config.device", "Config",
                        "config.Config.device"),
    "function's dict": ('def get_config():\n    return {{"device": {v}}}',
                        'get_config()["device"]', "get_config", 'config.get_config()["device"]'),
    # near misses: bound twice (on a path the CPU run does not take), stored on here
    "constant bound twice": ('DEVICE = {v}\nif os.environ.get("NO_SUCH_VARIABLE_P31AH"):\n'
                             '    DEVICE = "cuda"', "DEVICE", "DEVICE", "config.DEVICE"),
    "constant in a function": ("def _pick():\n    global DEVICE\n    DEVICE = {v}\n\n\n"
                               "DEVICE = None\n_pick()", "DEVICE", "DEVICE", "config.DEVICE"),
}  # fmt: skip
STYLES = ("from", "module", "same file")
WHERE = ("main", "module level", "a class")


def project(holder: str, value: str, style: str, where: str, used: bool, inputs: int) -> dict:
    """``config.py`` and ``train.py`` (``style`` "same file": ``train.py`` alone, the
    holder's lines in it). ``used``: the program moves one more tensor to the value itself;
    ``inputs``: tensors it makes with no device (the port's to move or report)."""
    lines, read, name, module_read = HOLDERS[holder]
    head = "import os\nfrom dataclasses import dataclass\nfrom types import SimpleNamespace\n\n"
    held = "import torch\n" + head + lines.format(v=VALUES[value]) + "\n"
    if style == "module" and where == "a class" and holder == "constant bound twice":
        where = "main"  # (one near miss is enough)
    ref = module_read if style == "module" else read
    made = ["x = torch.randn(4, 3)", "b = torch.zeros(3)"][:inputs]
    terms = [
        "model(x)",
        *(["b"] if inputs > 1 else []),
        *([f"torch.ones(3).to({ref})"] if used else []),
    ]
    body = [f"model = nn.Linear(3, 3).to({ref})", *made, f"out = {' + '.join(terms)}",
            "OUT.append(out.detach())"]  # fmt: skip
    top = "import torch\nimport torch.nn as nn\n"
    files: dict[str, str] = {}
    if style == "same file":
        top = held + "import torch.nn as nn\n"
    else:
        files["config.py"] = held
        top += "import config\n" if style == "module" else f"from config import {name}\n"
    if where == "module level":
        text = top + "\n" + "\n".join(body) + "\n"
    elif where == "main":
        text = top + "\n\ndef main():\n" + "".join(f"    {b}\n" for b in body) + "\n\nmain()\n"
    else:
        inner = [b.replace("model", "self.model") for b in body]
        text = (
            top + "\n\nclass Runner:\n    def __init__(self):\n"
            + f"        {inner[0]}\n\n    def run(self):\n"
            + "".join(f"        {b}\n" for b in inner[1:]) + "\n\nRunner().run()\n"
        )  # fmt: skip
    files["train.py"] = text
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
    was, now = run_project(original), run_project(ported)
    entry = {"cpu": "error" not in cpu, "was": was.get("error"), "now": now.get("error")}
    if "out" in was:
        entry["was_devices"] = [str(t.device) for t in was["out"]]
    if "out" in now and "out" in cpu:
        entry["now_devices"] = [str(t.device) for t in now["out"]]
        entry["same"] = len(cpu["out"]) == len(now["out"]) and all(
            torch.allclose(a, b.cpu()) for a, b in zip(cpu["out"], now["out"])
        )
    results.append(entry)
print(json.dumps(results))
"""
)


def _write(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")


def _read(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))}


def reuse_or_report(cases: list[tuple[str, str, str, str, bool, int]]) -> list[dict[str, Any]]:
    """The oracle of the module docstring over ``cases``; each case's record."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs, records = [], []
        for i, case in enumerate(cases):
            files = project(*case)
            original, ported = Path(tmp) / f"o{i}", Path(tmp) / f"p{i}"
            _write(original, files)
            _write(ported, files)
            result = port_paths([ported], jobs=1)
            assert not result.errors, (case, result.errors)
            text = _read(ported)
            again = port_paths([ported], jobs=1)
            assert not again.changed, (case, "not idempotent", text)
            left = [f"{Path(f.path).name}:{f.line} {f.code}" for f in result.remaining]
            # TP507: a lone lower-case `device = torch.device("cpu")` (here a class attribute
            # at module level) is the CPU-only script's device, not a deliberate choice
            # (`port/_choices.deliberate_cpu`): the port makes it the accelerator's
            chosen = any("TP507" in f.fixed for f in result.changed)
            records.append({"case": case, "left": left, "text": text, "chosen": chosen})
            pairs.append((str(original), str(ported)))
        results = in_a_child(_CHILD, pairs)
    for record, got in zip(records, results, strict=True):
        record.update(got)
        assert got["cpu"] and got["was"] is None, record  # the original runs, CPU and sim
        if record["left"]:
            continue  # reported
        assert got["now"] is None, record  # the port runs where the original ran,
        if record["chosen"]:  # the program's device made the accelerator's: all placed
            assert got["same"] and set(got["now_devices"]) == {"sim:0"}, record
            continue
        assert got["same"] and got["now_devices"] == got["was_devices"], record  # placed alike
    return records


CASES = st.tuples(
    st.sampled_from(sorted(HOLDERS)),
    st.sampled_from(sorted(VALUES)),
    st.sampled_from(STYLES),
    st.sampled_from(WHERE),
    st.booleans(),
    st.sampled_from((1, 2)),
)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CASES, min_size=8, max_size=8))
def test_another_modules_device_value_is_reused_or_reported(cases: list) -> None:
    """See the module docstring (one child per example)."""
    reuse_or_report(cases)


def test_every_holder_value_and_style() -> None:
    """The table (one child): each holder x value x style, in ``main`` with two inputs, and
    each holder x style x place with the CPU written out. Constants bound once at module
    level are reused, never reported: the port is not silent by saying everything."""
    cases = [(h, v, s, "main", False, 2) for h in HOLDERS for v in VALUES for s in STYLES]
    cases += [(h, "cpu", s, w, True, 1) for h in HOLDERS for s in STYLES for w in WHERE[1:]]
    records = reuse_or_report(cases)
    for record in records:
        holder, _, style, where, _, _ = record["case"]
        if holder == "constant" and style != "same file" and where != "a class":
            assert not [x for x in record["left"] if "train.py" in x], record
            read = "config.DEVICE" if style == "module" else "DEVICE"
            assert f"torch.randn(4, 3).to({read})" in record["text"]["train.py"], record


@pytest.mark.parametrize("holder", ["constant bound twice", "constant in a function"])
def test_a_constant_the_other_module_binds_twice_is_reported(holder: str) -> None:
    """Near misses: the other module binds the name on two paths; the port cannot tell
    which value the model gets in a function, and says so at the moves. (At module level,
    ``config.DEVICE`` read where the model is moved is the model's value, as a same-file
    ``cfg.device`` is: reused, and the run says whether rightly.)"""
    cases = [(holder, "cpu", s, w, False, 1) for s in ("from", "module") for w in WHERE]
    for record in reuse_or_report(cases):
        _, _, style, where, _, _ = record["case"]
        if style == "from" or where != "module level":
            assert any("train.py" in x for x in record["left"]), record


def test_an_attribute_stored_here_is_reported() -> None:
    """``config.DEVICE = ...`` in the script: not the module's value; reported."""
    files = project("constant", "cpu", "module", "main", False, 1)
    files["train.py"] = files["train.py"].replace(
        "def main():\n", 'config.DEVICE = "cpu"\n\n\ndef main():\n'
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        _write(root, files)
        result = port_paths([root], jobs=1)
        assert [f.code for f in result.remaining if Path(f.path).name == "train.py"], _read(root)
        assert "accelerator" not in _read(root)["train.py"]


def test_an_accelerator_written_in_another_module_is_reported() -> None:
    """``DEVICE = "cuda"`` in ``config.py``: no CPU program; the port's moves are reported,
    not written to it (nor to a device of the port's own beside it)."""
    for holder, style in itertools.product(("constant", "dict"), ("from", "module")):
        files = project(holder, "cpu", style, "main", False, 1)
        files["config.py"] = files["config.py"].replace('"cpu"', '"cuda"')
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "p"
            _write(root, files)
            result = port_paths([root], jobs=1)
            text = _read(root)["train.py"]
            assert [f for f in result.remaining if Path(f.path).name == "train.py"], text
            assert text == files["train.py"], text


def test_the_generated_projects_hold_what_they_say() -> None:
    """The generator's own check: every form runs on the CPU and its model is moved by it."""
    files = project("dict", "idiom", "module", "a class", True, 2)
    assert 'config.CONFIG["device"]' in files["train.py"]
    assert json.dumps(sorted(files)) == '["config.py", "train.py"]'
