"""A setting the script stores on its argparse namespace is a number, not a CPU tensor (issue 31).

timm's ``train.py`` does ``args.world_size = 1`` and then ``args.world_size * batch_size /
total`` with ``total`` on the device; the port reported "made by ``args.world_size``, which
the port cannot follow, so it may be a tensor on the CPU" (TP523). The invariant: an
attribute of the parsed namespace every store of which is a number, a string or a bool by
what the code shows (argparse's own, a literal, ``not``, ``max(1, args.n)``, ``int(...)``)
is never reported; one that may hold a tensor (a store of one, a namespace handed to
``setattr`` or ``vars(...).update``) still is.

Programs are generated: a setting declared with argparse or not, stored once or twice
(a number, an expression of numbers and other settings, or a tensor), through the
namespace or a function of the file handed it, or handed out. The findings are checked
against what the generator knows it stored (an oracle apart from the port), and each
original and its port run on the CPU and on the simulated accelerator: the port runs
wherever the original ran, or leaves a finding.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from tests.check.port.test_own_device_kept import _CHILD as _KEPT_CHILD
from torchport.check.port import port_text

pytest.importorskip("torch")

# test_own_device_kept's child, where an original may also stop on the CPU (its values: None)
_CPU = 'results = [{"cpu": [t.tolist() for t in run(p)[0]]} for p in programs]'
_VALUES_OR_NONE = (
    "def values(p):\n    out = run(p)[0]\n"
    "    return None if out is None else [t.tolist() for t in out]\n"
    'results = [{"cpu": values(p)} for p in programs]'
)
assert _CPU in _KEPT_CHILD
_CHILD = _KEPT_CHILD.replace(_CPU, _VALUES_OR_NONE)

# What a store gives (text, whether it is a Python number).
_VALUES = {
    "one": ("1", True),
    "float": ("2.5", True),
    "flag": ("not args.quiet", True),
    "max": ("max(1, args.lr * 4)", True),
    "env": ('int(os.environ.get("WORLD", "2"))', True),
    "len": ("len(sys.argv[:1]) + 1", True),
    "local": ("n", True),  # `n = 3` in main
    "test": ('"a" in "abc"', True),
    "scalar tensor": ("torch.tensor(2.0)", False),  # a CPU scalar: runs, still a tensor
    "tensor": ("torch.ones(8, 1)", False),  # meets the model's (8, 1) output: stops
    "item": ("torch.ones(1).item()", True),  # `.item()` is a float
}
# How the store is made: on the namespace, through a function of the file, or handed out.
_CONFIGURE = "def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n\n\n"
_STORES = {
    "direct": "    args.ws = {v}\n",
    "twice": "    args.ws = 1\n    args.ws = {v}\n",
    "augmented": "    args.ws = 1\n    args.ws += {v}\n",
    "own function": "    configure(args)\n",
    "setattr": '    setattr(args, "ws", {v})\n',
    "vars": "    vars(args).update(ws={v})\n",
}


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, bool]:
    """A program and whether ``args.ws`` must be reported (may hold a tensor)."""
    value, number = _VALUES[draw(st.sampled_from(sorted(_VALUES)))]
    how = draw(st.sampled_from(sorted(_STORES)))
    declared = draw(st.booleans())
    configure = _CONFIGURE
    store = _STORES[how].format(v=value)
    if how == "augmented" and value.startswith('"'):
        value, number = "2", True  # (a bool added to an int: still a number)
        store = _STORES[how].format(v=value)
    program = (
        "import argparse\nimport os\nimport sys\n\nimport torch\nimport torch.nn as nn\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--lr", type=float, default=0.1)\n'
        'parser.add_argument("--quiet", action="store_true")\n'
        + ('parser.add_argument("--ws", type=int, default=1)\n' if declared else "")
        + "\n\n"
        + (configure.format(v=value.replace("args.", "cfg.")) if how == "own function" else "")
        + "def main():\n    args = parser.parse_args([])\n    n = 3\n"
        + store
        + "    model = nn.Linear(4, 1)\n    x = torch.randn(8, 4)\n    out = model(x)\n"
        "    total = torch.tensor(float(x.shape[0]))\n"
        "    scale = args.ws * x.shape[0] / total\n"
        "    OUT.append((out * scale).sum().detach().cpu())\n"
        "    OUT.append((out * args.ws).sum().detach().cpu())\n\n\nmain()\n"
    )
    # `vars(args).update(...)` may store anything under any name: the port does not read it
    return program, not number or how == "vars"


def _names_the_setting(source: str) -> bool:
    return any("args.ws" in f.message for f in port_text(source, "p.py").remaining)


@settings(max_examples=40, deadline=None)
@given(programs())
def test_a_number_stored_on_the_namespace_is_never_reported(case: tuple[str, bool]) -> None:
    source, reported = case
    if reported:
        assert _names_the_setting(source) or port_text(source, "p.py").remaining, source
    else:
        assert not _names_the_setting(source), source


def runs_or_is_reported(sources: list[str]) -> None:
    """On the CPU each port gives its original's values; on the simulated accelerator (seen
    as CUDA and as not CUDA) it runs wherever the original ran on the CPU, or the port left a
    finding at the line where it stops (a silenced finding never hides a real leftover)."""
    outcomes = [port_text(source, "p.py") for source in sources]
    assert all(not o.failures for o in outcomes), [o.failures for o in outcomes]
    runs = in_a_child(_CHILD, sources + [o.source for o in outcomes])
    kept_or_stopped_where_said(outcomes, runs)


def kept_or_stopped_where_said(outcomes: list[Any], runs: list[dict[str, Any]]) -> None:
    """``runs``: the originals' runs, then their ports' (``_CHILD``'s records). Each port prints
    its original's values on the CPU; where it stops on a device view, a finding is left there."""
    before, after = runs[: len(outcomes)], runs[len(outcomes) :]
    for outcome, was, now in zip(outcomes, before, after, strict=True):
        assert now["cpu"] == was["cpu"], outcome.source
        if was["cpu"] is None:
            continue  # the original stops on the CPU: nothing to keep
        for view in ("as_cuda", "not_cuda"):
            if now[view] is not None:
                lines = {f.line for f in outcome.remaining}
                assert now[view][1] in lines, (view, now[view], outcome.source)


# One child per example (a torch start): one example by default, more in the slow leg.
@settings(max_examples=1, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_namespace_setting_runs_or_is_reported(
    cases: list[tuple[str, bool]],
) -> None:
    runs_or_is_reported([source for source, _ in cases])


@pytest.mark.slow  # a simulated-accelerator child per example
@settings(max_examples=10, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_namespace_setting_runs_or_is_reported_many(
    cases: list[tuple[str, bool]],
) -> None:
    runs_or_is_reported([source for source, _ in cases])


def test_the_reduced_timm_case() -> None:
    """``/tmp/lead/s25/ws/a.py``: TP523 at ``args.world_size`` was noise."""
    source = (
        "import argparse\n\nimport torch\nimport torch.nn as nn\n\n"
        'parser = argparse.ArgumentParser()\nparser.add_argument("--lr", type=float, default=0.1)'
        "\n\n\ndef main():\n    args = parser.parse_args()\n    args.world_size = 1\n"
        "    model = nn.Linear(4, 1)\n    x = torch.randn(8, 4)\n    out = model(x)\n"
        "    batch_size = x.shape[0]\n"
        "    total = torch.tensor(batch_size, dtype=torch.float32)\n"
        "    scale = args.world_size * batch_size / total\n"
        "    print((out.sum() * scale).item())\n\n\nmain()\n"
    )
    assert port_text(source, "a.py").remaining == []
    handed = source.replace(
        "    args.world_size = 1\n", "    args.world_size = 1\n    setup(args)\n"
    )
    handed = handed.replace("import torch\n", "import torch\nfrom utils import setup\n", 1)
    assert any("args.world_size" in f.message for f in port_text(handed, "a.py").remaining)


def test_a_project_function_storing_numbers_on_the_namespace(tmp_path: object) -> None:
    """timm's ``utils.init_distributed_device(args)`` storing a number: read in that module
    (``_namespace_callees.py``; generated: ``test_namespace_settings_outside.py``)."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    (tmp_path / "dist.py").write_text(
        "def init_distributed_device(args):\n    args.world_size = 1\n    return 'cpu'\n"
    )
    source = (
        "import argparse\n\nimport torch\nimport torch.nn as nn\n\n"
        "from dist import init_distributed_device\n\n"
        "parser = argparse.ArgumentParser()\n\n\ndef main():\n"
        "    args = parser.parse_args()\n    init_distributed_device(args)\n"
        "    model = nn.Linear(4, 1)\n    x = torch.randn(8, 4)\n    out = model(x)\n"
        "    total = torch.tensor(8.0)\n    scale = args.world_size * 8 / total\n"
        "    print((out.sum() * scale).item())\n\n\nmain()\n"
    )
    (tmp_path / "train.py").write_text(source)
    assert port_text(source, str(tmp_path / "train.py")).remaining == []
