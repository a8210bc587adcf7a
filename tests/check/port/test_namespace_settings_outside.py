"""A setting another module of the project stores on the namespace it is handed (issue 34).

timm's ``train.py`` hands its namespace to ``utils.init_distributed_device(args)``, which
stores ``args.world_size``; the script then computes with ``args.world_size`` beside a tensor
on the device. The invariant, as for the file's own stores (``test_namespace_settings.py``):
a setting every store of which, in the file and in the other module's function, is a number,
a string or a bool by what that function's code shows is never reported; one that may hold a
tensor (a store of one there, or a function that hands the namespace on, binds it to another
name or gives it to ``setattr``: not read) still is.

Programs are generated: the other module (``cfg<i>.py`` beside the program, read by the port
through the project view) stores ``ws`` once, in one of several ways, from a value of
``test_namespace_settings``; the program imports the function by name or the module, at the
top or inside ``main``, and calls it by position or keyword. The findings are checked against
what the generator knows (an oracle apart from the port); each original and its port run on
the CPU and on the simulated accelerator (seen as CUDA and as not CUDA): the port runs
wherever the original ran, or leaves a finding at the line where it stops.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")  # (before the sibling's names: it skips at import without torch)

from tests.check.port.no_cuda_sim import in_a_child
from tests.check.port.test_namespace_settings import _CHILD as _SETTINGS_CHILD
from tests.check.port.test_namespace_settings import _VALUES, kept_or_stopped_where_said
from torchport.check.port import port_text

# the same child, with the folder of the other modules on its path
_READ = "programs = json.loads(open(sys.argv[1]).read())"
assert _READ in _SETTINGS_CHILD
_CHILD = _SETTINGS_CHILD.replace(
    _READ,
    "job = json.loads(open(sys.argv[1]).read())\nsys.path.insert(0, job['folder'])\n"
    "programs = job['programs']",
)

# How the other module's function stores `ws` (text, whether the port can read it all).
_FUNCTIONS = {
    "direct": ("def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n", True),
    "returned": ("def configure(cfg, k=1):\n    n = 3\n    cfg.ws = {v}\n    return cfg\n", True),
    "read too": ("def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n    print(cfg.ws)\n", True),
    "handed on": (
        "def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n    finish(cfg)\n\n\n"
        "def finish(c):\n    c.ws = torch.ones(8, 1)\n",
        False,
    ),
    # handed on to functions of the same module: followed (p31ah)
    "handed on, plain": (
        "def configure(cfg):\n    finish(cfg)\n\n\ndef finish(c):\n    n = 3\n    c.ws = {v}\n",
        True,
    ),
    "handed on by keyword, read": (
        "def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n    show(1, c=cfg)\n\n\n"
        "def show(k, c=None):\n    print(k, c.ws, c.quiet)\n",
        True,
    ),
    "handed on twice": (
        "def configure(cfg):\n    middle(cfg)\n\n\ndef middle(m):\n    last(m)\n    return m\n"
        "\n\ndef last(c):\n    n = 3\n    c.ws = {v}\n",
        True,
    ),
    "handed on, recursive": (
        "def configure(cfg, depth=0):\n    n = 3\n    cfg.ws = {v}\n"
        "    if depth < 0:\n        configure(cfg, depth + 1)\n",
        True,
    ),
    # near misses: a decorated callee, an alias in the callee (not followed)
    "handed on, decorated": (
        "def keep(f):\n    return f\n\n\ndef configure(cfg):\n    finish(cfg)\n\n\n"
        "@keep\ndef finish(c):\n    n = 3\n    c.ws = {v}\n",
        False,
    ),
    "handed on, alias there": (
        "def configure(cfg):\n    finish(cfg)\n\n\ndef finish(c):\n    n = 3\n"
        "    cfg = c\n    cfg.ws = {v}\n",
        False,
    ),
    "alias": ("def configure(cfg):\n    n = 3\n    other = cfg\n    other.ws = {v}\n", False),
    "setattr": ('def configure(cfg):\n    n = 3\n    setattr(cfg, "ws", {v})\n', False),
    "rebinds": (
        "def configure(cfg):\n    n = 3\n    cfg.ws = {v}\n    cfg = None\n    return cfg\n",
        False,
    ),
}
_IMPORTS = {
    "name": ("from {m} import configure\n", "configure"),
    "module": ("import {m}\n", "{m}.configure"),
}


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, str, bool | None]:
    """(the program, the other module, whether ``args.ws`` must be reported: True, never:
    False, either: None) with ``{m}`` for the other module's name."""
    return program_case(
        draw(st.sampled_from(sorted(_VALUES))),
        draw(st.sampled_from(sorted(_FUNCTIONS))),
        draw(st.sampled_from(sorted(_IMPORTS))),
        inside=draw(st.booleans()),
        keyword=draw(st.booleans()),
        declared=draw(st.booleans()),
    )


def program_case(
    key: str, form: str, style: str, *, inside: bool, keyword: bool, declared: bool
) -> tuple[str, str, bool | None]:
    """:func:`programs`' draw: the value ``key`` stored by ``form`` of :data:`_FUNCTIONS`,
    imported by ``style``; ``declared``: ``--ws`` is an argparse float too (p31ah)."""
    value, number = _VALUES[key]
    value = value.replace("args.", "cfg.")
    function, read = _FUNCTIONS[form]
    module = "import os\nimport sys\n\nimport torch\n\n\n" + function.format(v=value)
    imported, called = _IMPORTS[style]
    call = f"{called}(cfg=args)" if keyword else f"{called}(args)"
    program = (
        "import argparse\n\nimport torch\nimport torch.nn as nn\n"
        + ("" if inside else imported)
        + "\nparser = argparse.ArgumentParser()\n"
        'parser.add_argument("--lr", type=float, default=0.1)\n'
        'parser.add_argument("--quiet", action="store_true")\n'
        + ('parser.add_argument("--ws", type=float, default=1.0)\n' if declared else "")
        + "\n\n"
        "def main():\n"
        + ("    " + imported if inside else "")
        + f"    args = parser.parse_args([])\n    {call}\n"
        "    model = nn.Linear(4, 1)\n    x = torch.randn(8, 4)\n    out = model(x)\n"
        "    total = torch.tensor(float(x.shape[0]))\n"
        "    scale = args.ws * x.shape[0] / total\n"
        "    OUT.append((out * scale).sum().detach().cpu())\n"
        "    OUT.append((out * args.ws).sum().detach().cpu())\n\n\nmain()\n"
    )
    reads_settings = "cfg." in value  # judged in the other module alone: may be reported
    reported = None if reads_settings and number and read else (not number or not read)
    if declared and number and not read:
        reported = None  # a number argparse declares, stored where the port cannot follow
    return program, module, reported


def _ported(cases: list[tuple[str, str, bool | None]], folder: Path) -> list[object]:
    """Each program written beside its own other module (``cfg<i>.py``), ported there."""
    outcomes = []
    for i, (program, module, _) in enumerate(cases):
        name = f"cfg{i}"
        (folder / f"{name}.py").write_text(module.replace("{m}", name), encoding="utf-8")
        source = program.replace("{m}", name)
        path = folder / f"p{i}.py"
        path.write_text(source, encoding="utf-8")
        outcomes.append((source, port_text(source, str(path))))
    return outcomes


@settings(max_examples=30, deadline=None)
@given(st.lists(programs(), min_size=4, max_size=4))
def test_a_number_another_module_stores_is_never_reported(
    cases: list[tuple[str, str, bool | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = _ported(cases, Path(tmp))
    for (_, _, reported), (source, outcome) in zip(cases, outcomes, strict=True):
        named = any("args.ws" in f.message for f in outcome.remaining)
        if reported is True:
            assert named or outcome.remaining, source
        elif reported is False:
            assert not named, source


def runs_or_is_reported(cases: list[tuple[str, str, bool | None]]) -> None:
    """As ``test_namespace_settings.runs_or_is_reported``, with the other modules beside."""
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = _ported(cases, Path(tmp))
        assert all(not o.failures for _, o in outcomes), [o.failures for _, o in outcomes]
        sources = [s for s, _ in outcomes]
        job = {"folder": tmp, "programs": sources + [o.source for _, o in outcomes]}
        runs = in_a_child(_CHILD, job)
    kept_or_stopped_where_said([o for _, o in outcomes], runs)


# One child per example (a torch start): one example by default, more in the slow leg.
@settings(max_examples=1, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_setting_stored_outside_runs_or_is_reported(
    cases: list[tuple[str, str, bool | None]],
) -> None:
    runs_or_is_reported(cases)


@pytest.mark.slow  # a simulated-accelerator child per example
@settings(max_examples=10, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_setting_stored_outside_runs_or_is_reported_many(
    cases: list[tuple[str, str, bool | None]],
) -> None:
    runs_or_is_reported(cases)


def test_every_form_handed_on_declared_or_not() -> None:
    """Each form of :data:`_FUNCTIONS` with a tensor and a number, ``--ws`` declared or not
    (one child). On e403c4bf a declared ``--ws`` that the other module's function stored as a
    tensor through a function it hands the namespace on to was argparse's float: not
    reported, and the port stopped on ``sim`` (silent); a number stored so was reported."""
    cases = [
        program_case(key, form, "name", inside=False, keyword=False, declared=declared)
        for key in ("tensor", "one", "local")
        for form in _FUNCTIONS
        for declared in (False, True)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = _ported(cases, Path(tmp))
    for (_, _, reported), (source, outcome) in zip(cases, outcomes, strict=True):
        named = any("args.ws" in f.message for f in outcome.remaining)
        assert named if reported else (reported is None or not named), source
    runs_or_is_reported(cases)
