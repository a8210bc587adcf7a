"""What ``torch_bindings`` keeps between questions changes none of its answers.

Branch t34b made its repeated work once: the torch names picked from a module's kept answer
(``_star_imports._TORCH_NAMES``, per answer object), the file a dotted name has under a folder
(``Lookups.modules``, per span), the importer's folder without a ``Path``. The oracle is the
full resolution without those keeps: the same questions, in the same order, with the torch
names picked again each time and each module file looked for again
(``_module_file_of``, uncached), on generated projects: compat modules chained, cycles,
relative and absolute imports, packages whose ``__init__`` re-exports, modules without the
word torch re-exporting one that has it, star imports, optional imports under ``if`` and
``try``. The module answers of ``_CACHE`` depend on the order questions come in (a cycle is
cut where it is entered), so both runs ask in the same drawn order from cleared caches.
Each module file ``find_module`` gives inside one span is also the one it gives with no
span at all.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once
from torchport.check.port import _module_files, _star_imports
from torchport.check.semantic._binding import statement_facts

_MODULES = ("m0", "m1", "m2", "m3")
_NAMES = ("L", "T", "nn", "X")


def _line(kind: int, target: str, name: str) -> str:
    """One statement of a module in ``pkg``."""
    lines = (
        f"from torch import load as {name}",
        f"import torch as {name}",
        "from torch import nn",
        f"from .{target} import {name}",
        f"from pkg.{target} import {name}",
        f"from {target} import {name}",  # a script's sibling, as the package sees it
        f"from .{target} import *",
        f"import pkg.{target} as {name}",
        f"{name} = 1",
        f"def {name}():\n    pass",
        f"if COND:\n    from .{target} import {name}",
        f"try:\n    from pkg.{target} import {name}\nexcept ImportError:\n    {name} = None",
        f"__all__ = [{name!r}, 'L']",
        f"from . import {target}",
        "import os",
        f"from collections import OrderedDict as {name}",
    )
    return lines[kind]  # (a module may import itself: a cycle of one)


_BODY = st.lists(
    st.tuples(st.integers(0, 15), st.sampled_from(_MODULES), st.sampled_from(_NAMES)),
    max_size=6,
)
_PROJECT = st.fixed_dictionaries(
    {
        **{m: _BODY for m in _MODULES},
        "__init__": _BODY,
        "main": st.lists(
            st.tuples(st.integers(0, 7), st.sampled_from(_MODULES), st.sampled_from(_NAMES)),
            max_size=5,
        ),
    }
)


def _write(root: Path, project: dict[str, list[tuple[int, str, str]]]) -> list[Path]:
    (root / "pkg").mkdir()
    paths = []
    for module, body in project.items():
        if module == "main":  # a script beside the package: absolute imports only
            lines = [_line(kind, t, n).replace("from .", "from pkg.") for kind, t, n in body]
            path = root / "main.py"
        else:
            lines = [_line(kind, t, n) for kind, t, n in body]
            path = root / "pkg" / f"{module}.py"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


class _Forgetful(dict):  # type: ignore[type-arg]
    """A store that keeps nothing: the torch names are picked again at each question."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


def _answers(paths: list[Path], *, kept: bool) -> list[object]:
    """Each file's torch_bindings, asked in order, from cleared caches, in one span."""
    _star_imports._CACHE.clear()
    _star_imports._TORCH_NAMES.clear()
    out: list[object] = []
    with listed_once(), pytest.MonkeyPatch.context() as patch:
        if not kept:
            patch.setattr(_star_imports, "_TORCH_NAMES", _Forgetful())
        for path in paths:
            facts = statement_facts(ast.parse(path.read_text(encoding="utf-8")))
            named, through = _star_imports.torch_bindings(str(path), facts.froms, facts.plain)
            order = {id(s): i for i, s in enumerate(facts.froms)}
            out.append((sorted((order[k], v) for k, v in named.items()), through))
    return out


@settings(max_examples=150, deadline=None)
@given(_PROJECT, st.randoms(use_true_random=False))
def test_kept_answers_equal_the_full_resolution(
    project: dict[str, list[tuple[int, str, str]]], rnd: object
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = _write(Path(folder), project)
        rnd.shuffle(paths)  # type: ignore[attr-defined]
        fast = _answers(paths, kept=True)
        with pytest.MonkeyPatch.context() as patch:
            full = _module_files._module_file_of
            patch.setattr(_module_files, "_module_file", full)  # every file looked for again
            slow = _answers(paths, kept=False)
        assert fast == slow
        # a name found under a folder inside a span is the one found with no span at all
        with listed_once():
            lookups = _module_files.Lookups()
            for path in paths:
                for module in (*_MODULES, *(f"pkg.{m}" for m in _MODULES), "pkg", "os"):
                    for level in (0, 1, 2):
                        spanned = _module_files.find_module(path, module, level, lookups)
                        assert spanned == _module_files.find_module(path, module, level)


def test_a_torch_free_module_passes_torch_on() -> None:
    """``pkg/m1.py`` has no word torch and re-exports ``m0``'s ``torch.load``: kept or not."""
    with tempfile.TemporaryDirectory() as folder:
        project = {"m0": [(0, "m0", "L")], "m1": [(3, "m0", "L")], "main": [(4, "m1", "L")]}
        paths = _write(Path(folder), project)
        assert "torch" not in paths[1].read_text(encoding="utf-8")
        for kept in (True, False):
            answers = _answers([paths[2]], kept=kept)
            assert answers == [([(0, {"L": "torch.load"})], {})]
