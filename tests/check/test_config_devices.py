"""A "cuda" that another module of the project keeps for this file's `.to(...)` is reported.

Issue 34 (c34ag): a device setting kept by another module (``CONFIG = {"device": "cuda"}``,
``SimpleNamespace(device="cuda")``, a ``setup(args)`` storing ``args.device = "cuda"``) and
read here as ``.to(cfg["device"])`` / ``.to(ns.device)``. On the base ``check`` said nothing
for a dict's ``"cuda"`` (the other two were TP101's already). The invariant: every ``"cuda"``
(or ``"cuda:N"``) that reaches a device argument is reported by TP101 at the literal's
file:line:col, whichever module of the project holds it; ``"cuda"`` as data (a list of names,
a log label, a dict key, a backend name) stays quiet.

Generated projects: ``main.py`` and one or two configuration modules (``conf.py``,
``conf2.py``), a holder read directly or through a module that re-exports it (``mid.py``: a
three-file project). The oracle is the generator's own record of where each device literal
was written (no torchport code is asked where they are).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# (holder in the configuration module, how main reads it as a device); `{v}` the value
HOLDERS = {
    "dict": ("CFG{i} = {{'batch': 4, 'device': {v}}}\n", "torch.ones(1).to({m}CFG{i}['device'])"),
    "dict made": (
        "def get{i}():\n    return {{'device': {v}, 'lr': 0.1}}\n",
        "torch.ones(1).to({m}get{i}()['device'])",
    ),
    "nested dict": (
        "CFG{i} = {{'train': {{'device': {v}}}}}\n",
        "torch.ones(1).to({m}CFG{i}['train']['device'])",
    ),
    "keyed": ("CFG{i} = {{'eval_device': {v}}}\n", "torch.zeros(2).to({m}CFG{i}['eval_device'])"),
    "dict call": ("CFG{i} = dict(device={v})\n", "torch.ones(1).to({m}CFG{i}['device'])"),
    "namespace": ("NS{i} = SimpleNamespace(device={v})\n", "torch.ones(1).to({m}NS{i}.device)"),
    "namespace made": (
        "def ns{i}():\n    return SimpleNamespace(device={v}, seed=0)\n",
        "torch.ones(1).to(device={m}ns{i}().device)",
    ),
    "setup": (
        "def setup{i}(args):\n    args.device = {v}\n    return args\n",
        "torch.ones(1).to({m}setup{i}(argparse.Namespace()).device)",
    ),
}
# "cuda" as data: never a device (each line holds the literal once)
NEAR_MISSES = (
    "NAMES{i} = ['cuda', 'cpu']\n",
    "def label{i}():\n    print('cuda')\n",
    "KEYS{i} = {{'cuda': 1, 'cpu': 0}}\n",
    "LOG{i} = {{'backend': 'cuda'}}\n",
    "TITLE{i} = 'trained on cuda'\n",
)
VALUES = ("'cuda'", "'cuda:0'", "'cpu'")
HEADER = "import argparse\nfrom types import SimpleNamespace\n\n"


@st.composite
def projects(draw: st.DrawFn) -> tuple[dict[str, str], set[tuple[str, int, int]], set[str]]:
    """(files, the device literals (file, line, col) that must be reported, the files where
    a near miss was written)."""
    modules = ["conf"] + (["conf2"] if draw(st.booleans()) else [])
    texts = {m: HEADER for m in modules}
    expected: set[tuple[str, int, int]] = set()
    uses: list[str] = []
    imports: list[str] = []
    mid: list[str] = []
    kinds = draw(st.lists(st.sampled_from(sorted(HOLDERS)), min_size=1, max_size=4))
    for i, kind in enumerate(kinds):
        module = draw(st.sampled_from(modules))
        value = draw(st.sampled_from(VALUES))
        holder, use = HOLDERS[kind]
        text = holder.format(i=i, v=value)
        before = texts[module].count("\n")
        for n, line in enumerate(text.splitlines(), start=before + 1):
            at = line.find(value)
            if at >= 0 and value != "'cpu'":
                expected.add((f"{module}.py", n, at + 1))
        texts[module] += text + "\n"
        name = holder.split("=")[0].split("(")[0].replace("def ", "").strip().format(i=i)
        how = draw(st.sampled_from(["from", "module", "through mid"]))
        if how == "from":
            imports.append(f"from {module} import {name}\n")
            uses.append(use.format(m="", i=i))
        elif how == "module":
            imports.append(f"import {module}\n")
            uses.append(use.format(m=f"{module}.", i=i))
        else:
            mid.append(f"from {module} import {name}\n")
            imports.append(f"from mid import {name}\n")
            uses.append(use.format(m="", i=i))
    missed: set[str] = set()
    for j in draw(st.lists(st.sampled_from(range(len(NEAR_MISSES))), max_size=3)):
        module = draw(st.sampled_from(modules))
        texts[module] += NEAR_MISSES[j].format(i=f"{j}_{len(missed)}") + "\n"
        missed.add(f"{module}.py")
    main = "import argparse\nimport torch\n" + "".join(sorted(set(imports))) + "\n"
    main += "".join(f"x{k} = {u}\n" for k, u in enumerate(uses))
    files = {f"{m}.py": t for m, t in texts.items()} | {"main.py": main}
    if mid:
        files["mid.py"] = "".join(mid)
    return files, expected, missed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
def test_a_cuda_another_module_keeps_for_a_device_is_reported(
    case: tuple[dict[str, str], set[tuple[str, int, int]], set[str]],
) -> None:
    files, expected, _ = case
    with tempfile.TemporaryDirectory(prefix="cfgproj") as folder:
        for name, text in files.items():
            Path(folder, name).write_text(text, encoding="utf-8")
        result = check_paths([folder], select=["TP1"], jobs=1)
    assert not result.errors, result.errors
    found = {
        (Path(f.path).name, f.line, f.col)
        for f in result.findings
        if Path(f.path).name.startswith("conf")
    }
    codes = {f.code for f in result.findings if Path(f.path).name.startswith("conf")}
    shown = "\n".join(f"--- {n}\n{t}" for n, t in files.items())
    assert found == expected, f"missing {expected - found}, extra {found - expected}\n{shown}"
    assert codes <= {"TP101"}, codes
