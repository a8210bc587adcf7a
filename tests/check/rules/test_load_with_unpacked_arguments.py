"""TP305 against the interpreter: a ``**kw`` dict filled in key by key before the load.

Generated programs build ``kw`` from a literal, store keys into it one by one (some
under a run-time condition), and call ``torch.load(path, **kw)``. Each program runs
twice (the condition false, then true) against a stand-in ``torch`` whose ``load``
records the ``weights_only`` and ``pickle_module`` it really got. The oracle is
those runs: TP305 may stay quiet only if every run loaded with ``weights_only``
absent or true and no ``pickle_module``; and where every store is a constant key
that keeps loading safe (``kw["map_location"] = "cpu"``), it must stay quiet.
"""

from __future__ import annotations

import pickle
import sys
import types
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

STARTS = ("{}", '{"map_location": "cpu"}', '{"weights_only": True}')
SAFE = ('kw["map_location"] = "cpu"', 'kw["weights_only"] = True', 'kw["mmap"] = True')
OTHER = (
    'kw["weights_only"] = False',
    'kw["weights_only"] = cfg.trust',
    'kw["pickle_module"] = pickle',
    "kw[key] = False",
    "kw.update(weights_only=False)",
    'kw.update(map_location="cpu")',
)


def run(source: str, trust: bool) -> list[tuple[Any, Any]]:
    """``(weights_only, pickle_module)`` of each load when ``source`` ran."""
    seen: list[tuple[Any, Any]] = []

    def load(f: object, map_location: object = None, **kwargs: Any) -> str:
        seen.append((kwargs.get("weights_only"), kwargs.get("pickle_module")))
        return "loaded"

    torch = types.ModuleType("torch")
    torch.load = load  # type: ignore[attr-defined]
    saved = sys.modules.get("torch")
    sys.modules["torch"] = torch
    try:
        cfg = types.SimpleNamespace(trust=trust)
        names = {"cfg": cfg, "pickle": pickle, "key": "weights_only"}
        exec(compile(source, "<load>", "exec"), names)
    finally:
        if saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = saved
    return seen


@given(
    start=st.sampled_from(STARTS),
    stores=st.lists(st.tuples(st.sampled_from(SAFE + OTHER), st.booleans()), max_size=3),
    in_function=st.booleans(),
)
def test_quiet_only_when_every_run_loads_safely(
    start: str, stores: list[tuple[str, bool]], in_function: bool
) -> None:
    lines = [f"kw = {start}"]
    for store, conditional in stores:
        lines += [f"if cfg.trust:\n    {store}"] if conditional else [store]
    lines.append('obj = torch.load("ckpt.pt", **kw)')
    body = "\n".join(lines)
    if in_function:
        body = "def restore():\n" + "\n".join("    " + ln for ln in body.splitlines())
        body += "\nrestore()"
    source = f"import torch\n\n{body}\n"
    reported = bool(check_source(source, select=["TP305"]))
    got = [entry for trust in (False, True) for entry in run(source, trust)]
    assert got, source  # the load ran
    safe = all(wo in (None, True) and pm is None for wo, pm in got)
    if not reported:
        assert safe, f"quiet about a load that ran unsafe:\n{source}"
    if all(store in SAFE for store, _ in stores):
        assert not reported, f"reported a dict only ever filled with safe keys:\n{source}"
