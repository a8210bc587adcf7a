"""TP302 against the interpreter: every spelling of ``torch.load(..., weights_only=False)``.

Programs load through ``torch.load`` spelled many ways (an alias, a name bound to
the function, ``functools.partial``, ``getattr``, ``torch.serialization.load``, a
parameter named ``torch``) with ``weights_only`` spelled many ways (``False``,
``0``, ``not True``, a name, a ``**`` dict, a value only known at run time). The
oracle runs each program against a stand-in ``torch`` whose ``load`` records the
``weights_only`` it really got. TP302 must report every load that ran with a
false ``weights_only`` (as "False" when the file says so, as "cannot tell" when
only the run knows), and never call a load false that ran with a true one.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

LOADERS = {
    "plain": ("import torch\n", "torch.load"),
    "alias": ("import torch as th\n", "th.load"),
    "serialization": ("from torch import serialization\n", "serialization.load"),
    "bound": ("import torch\nld = torch.load\n", "ld"),
    "getattr": ("import torch\n", 'getattr(torch, "load")'),
    "partial": ("import functools\nimport torch\n", "functools.partial(torch.load{extra})"),
    "from": ("from torch import load as tl\n", "tl"),
}
FLAGS = {
    "False": False,
    "0": False,
    "not True": False,
    "FLAG_OFF": False,  # a module-level name bound to False
    "True": True,
    "1": True,
    "not False": True,
    "None": True,
    "cfg.trust": None,  # known only when the program runs
}
WHERE = ("module", "function", "shadowed")


class _Stand:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def load(self, f: object, map_location: object = None, *, weights_only: Any = None) -> str:
        self.seen.append(True if weights_only is None else bool(weights_only))
        return "loaded"


def run(source: str, trust: bool) -> list[Any]:
    """The ``weights_only`` each load got when ``source`` ran (against a stand-in torch)."""
    seen: list[Any] = []
    stand = _Stand(seen)
    torch = types.ModuleType("torch")
    torch.load = stand.load  # type: ignore[attr-defined]
    serialization = types.ModuleType("torch.serialization")
    serialization.load = stand.load  # type: ignore[attr-defined]
    torch.serialization = serialization  # type: ignore[attr-defined]
    saved = {name: sys.modules.get(name) for name in ("torch", "torch.serialization")}
    sys.modules.update({"torch": torch, "torch.serialization": serialization})
    try:
        cfg = types.SimpleNamespace(trust=trust)
        exec(compile(source, "<load>", "exec"), {"cfg": cfg, "__name__": "__load__"})
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return seen


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, str]:
    loader = draw(st.sampled_from(sorted(LOADERS)))
    flag = draw(st.sampled_from(sorted(FLAGS)))
    where = draw(st.sampled_from(WHERE))
    header, call = LOADERS[loader]
    as_dict = draw(st.booleans())
    given = f'**{{"weights_only": {flag}}}' if as_dict else f"weights_only={flag}"
    if loader == "partial":
        load = call.format(extra=f", {given}") + '("ckpt.pt")'
    else:
        load = f'{call}("ckpt.pt", {given})'
    body = f"obj = {load}\n"
    if where == "function":
        body = f"def restore():\n    {body}restore()\n"
    elif where == "shadowed":  # a parameter named like the module: not torch's load
        body = (
            "class Other:\n    @staticmethod\n    def load(f, weights_only=None):\n"
            "        return f\n"
            f"def restore(torch):\n    return torch.load('x', weights_only={flag})\n"
            "restore(Other)\n"
            f"{body}"
        )
    return header + "FLAG_OFF = False\n" + body, flag


@settings(max_examples=200, deadline=None)
@given(programs())
def test_every_false_weights_only_that_runs_is_reported(case: tuple[str, str]) -> None:
    source, _ = case
    ast.parse(source)
    findings = check_source(source, select=["TP302"])
    decided = [f for f in findings if not f.message.startswith("cannot tell")]
    undecided = [f for f in findings if f.message.startswith("cannot tell")]
    runs = [run(source, trust) for trust in (False, True)]
    got = {value for seen in runs for value in seen}
    assert got, source  # the load ran
    if False in got and all(False in seen for seen in runs):
        assert decided, f"a load ran with weights_only False and was not reported:\n{source}"
    elif False in got:
        assert decided or undecided, f"a load may run with weights_only False:\n{source}"
    if got == {True}:
        assert not decided, f"reported False for a load that got True:\n{source}"
    assert len(findings) <= 1, findings  # one load of torch's per program, one report


DEFAULTS = (
    '    kwargs.setdefault("weights_only", True)\n',
    '    kwargs.setdefault("weights_only", False)\n',
    '    if "weights_only" not in kwargs:\n        kwargs["weights_only"] = True\n',
    '    if "weights_only" not in kwargs:\n        kwargs["weights_only"] = False\n',
    '    kwargs["weights_only"] = not True\n',
    '    kwargs.setdefault("weights_only", cfg.trust)\n',
    "    pass\n",
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DEFAULTS), st.sampled_from(("kwargs", "dict(kwargs)")))
def test_a_forwarding_load_is_quiet_only_when_safe_by_default(default: str, forwarded: str) -> None:
    """TP305 leaves a drop-in ``torch.load`` alone only where a caller who says nothing is safe."""
    source = (
        "import torch\n\n\ndef load(f, **kwargs):\n"
        f"{default}    return torch.load(f, **{forwarded})\n\n\nobj = load('ckpt.pt')\n"
    )
    reported = bool(check_source(source, select=["TP305"]))
    got = {value for trust in (False, True) for value in run(source, trust)}
    if not reported:
        assert got == {True}, f"quiet about a load that ran unsafe by default:\n{source}"
    if forwarded != "kwargs":  # only the function's own `**kwargs` is followed
        assert reported, source
