"""Whose code a frame runs: the user's, torch's, torchport's, or another installed package's."""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import torchport
import torchport._origin
from torchport._origin import (
    LIBRARY,
    Origin,
    added_by_watcher,
    caller_frame,
    code_origin,
    installed_path,
    is_installed,
    is_library,
    is_runner,
    module_move_codes,
    origin,
)

_SEGMENT = st.text(alphabet="abcdefghij_0123456789", min_size=1, max_size=12)


def test_each_origin_is_found() -> None:
    assert origin(torch.__file__) is Origin.TORCH
    assert origin(torchport.__file__) is Origin.TORCHPORT
    assert origin(json.__file__) is Origin.INSTALLED  # the standard library
    assert origin(__file__) is Origin.USER
    assert origin("<string>") is Origin.USER  # code compiled from text: the user's
    assert origin("<frozen runpy>") is Origin.INSTALLED


@given(st.lists(_SEGMENT, max_size=4), st.lists(_SEGMENT, min_size=1, max_size=4))
def test_anything_under_a_package_folder_is_installed(head: list[str], tail: list[str]) -> None:
    for folder in ("site-packages", "dist-packages"):
        path = os.path.join(os.sep, *head, folder, *tail) + ".py"
        assert is_installed(path) and origin(path) is Origin.INSTALLED
        assert not is_library(path)  # only torch and torchport are the "library" of run's shims


@given(st.lists(_SEGMENT, min_size=1, max_size=5))
def test_a_project_folder_is_the_users(parts: list[str]) -> None:
    path = os.path.join(os.getcwd(), *parts) + ".py"
    assert not is_installed(path) and origin(path) is Origin.USER


# -- one vocabulary, held by one module -------------------------------------------------------

_TORCH = os.path.dirname(os.path.abspath(torch.__file__))
_TORCHPORT = os.path.dirname(os.path.abspath(torchport.__file__))


_ROOTS = [_TORCH, os.path.join(_TORCH, "optim"), _TORCHPORT, os.getcwd(), "/opt/site-packages"]


@given(
    st.sampled_from(_ROOTS),
    st.lists(_SEGMENT, min_size=1, max_size=4),
)
def test_is_library_is_torch_or_torchport_in_the_one_vocabulary(
    root: str, parts: list[str]
) -> None:
    path = os.path.join(root, *parts) + ".py"
    assert is_library(path) == (origin(path) in LIBRARY)
    assert is_library(path) == root.startswith((_TORCH, _TORCHPORT))  # the oracle: which folder


def test_torch_host_bookkeeping_is_told_apart_from_the_schedulers() -> None:
    import inspect

    assert origin(inspect.getfile(torch.optim.SGD)) is Origin.HOST_SIDE
    assert origin(inspect.getfile(torch.utils.data.RandomSampler)) is Origin.HOST_SIDE
    scheduler = inspect.getfile(torch.optim.lr_scheduler.ReduceLROnPlateau)
    assert origin(scheduler) is Origin.TORCH  # its step reads the user's loss
    assert origin(torch.nn.functional.__file__) is Origin.TORCH


def _user_function() -> None:
    pass


def test_code_objects_name_module_moves_and_the_watched_calls() -> None:
    import torchport.diagnose  # registers the tensor methods the audit wraps

    assert torchport.diagnose
    moves = module_move_codes()
    assert moves and all(code_origin(code) is Origin.MODULE_MOVE for code in moves)
    assert any(code.co_name == "convert" for code in moves)  # nn.Module.to's per-tensor function
    assert code_origin(torch.Tensor.__repr__.__code__) is Origin.TORCHPORT  # wrapped by the audit
    assert code_origin(torch.overrides.handle_torch_function.__code__) is Origin.TORCHPORT
    assert code_origin(torch.Tensor.backward.__code__) is Origin.TORCH
    assert code_origin(_user_function.__code__) is Origin.USER
    assert code_origin(json.dumps.__code__) is Origin.INSTALLED


def test_model_moves_are_found_under_a_patched_module_to(monkeypatch: pytest.MonkeyPatch) -> None:
    original = nn.Module.to

    @functools.wraps(original)
    def patched(self: nn.Module, *args: Any, **kwargs: Any) -> Any:  # as torchport.redirect does
        return original(self, *args, **kwargs)

    unpatched = module_move_codes()
    monkeypatch.setattr(nn.Module, "to", patched)  # `torchport run` imports the audit after this
    assert module_move_codes() == unpatched


def test_the_runner_is_torchport_runpy_and_contextlib() -> None:
    assert is_runner(runpy.__file__) and is_runner(contextlib.__file__)
    assert is_runner("<frozen runpy>") and is_runner(torchport.__file__)
    assert not is_runner(__file__) and not is_runner(json.__file__)


@given(st.lists(_SEGMENT, max_size=3), st.lists(_SEGMENT, min_size=1, max_size=3))
def test_an_installed_path_keeps_what_follows_the_package_folder(
    head: list[str], tail: list[str]
) -> None:
    inside = os.path.join(*tail) + ".py"
    assert installed_path(os.path.join(os.sep, *head, "site-packages", inside)) == inside
    assert installed_path(os.path.join(os.getcwd(), inside)) is None


def test_the_standard_library_is_shown_from_its_folder() -> None:
    assert installed_path(json.__file__) == os.path.join("json", "__init__.py")


def test_caller_frame_steps_over_the_files_named() -> None:
    here = sys._getframe()
    assert caller_frame(here, past=()) is here
    above = caller_frame(here, past=(__file__,))
    assert above is here.f_back  # pytest's frame: the first not in this file
    assert caller_frame(here, past=(os.sep, "<")) is None  # every file


def test_a_warning_pinned_on_a_watcher_or_on_torchs_dispatch_is_the_watchers() -> None:
    import torch._ops
    import torch.utils._python_dispatch

    assert added_by_watcher(__file__, watcher=__file__)
    assert added_by_watcher(torch._ops.__file__, watcher=__file__)
    assert added_by_watcher(torch.utils._python_dispatch.__file__, watcher="x.py")
    assert not added_by_watcher(torch.nn.functional.__file__, watcher="x.py")


# -- the claim: every part that looks at the stack asks here ----------------------------------
# Read from the source with ``ast`` (as tests/test_layers.py reads imports): a module that
# compares a frame's, a traceback's or a warning's file name (``co_filename``, ``filename``,
# ``__file__``) itself, names the folders installed code lives in, or asks ``site`` or
# ``sysconfig`` where they are, decides whose code it is; only ``_origin.py`` may. A file
# name passed to one of ``_origin``'s functions is asking. The checker (``check/``) reads
# source files, never a frame, and is left out.

_PACKAGE = Path(torchport.__file__).resolve().parent
_FILE_NAMES = frozenset({"co_filename", "filename", "__file__"})
_ASKS = frozenset(torchport._origin.__all__)


def _names_a_file(node: ast.AST, held: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` reads a file name (or a variable in ``held`` that holds one) other
    than as an argument of ``_origin``'s."""
    asked = {
        id(inner)
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and _callee(call) in _ASKS
        for arg in call.args
        for inner in ast.walk(arg)
    }
    return any(
        id(inner) not in asked
        and (
            (isinstance(inner, ast.Attribute) and inner.attr in _FILE_NAMES)
            or (isinstance(inner, ast.Name) and inner.id in _FILE_NAMES | held)
        )
        for inner in ast.walk(node)
    )


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _docstrings(tree: ast.Module) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _is_file_name(node: ast.expr, held: frozenset[str]) -> bool:
    """Whether ``node`` is a file name itself (``code.co_filename``, ``os.path.abspath(name)``),
    not a value computed from one (``linecache.getlines(code.co_filename)``)."""
    if isinstance(node, ast.Call) and _callee(node) in ("abspath", "realpath", "normpath"):
        return bool(node.args) and _is_file_name(node.args[0], held)
    if isinstance(node, ast.Attribute):
        return node.attr in _FILE_NAMES
    return isinstance(node, ast.Name) and node.id in _FILE_NAMES | held


def _holding_file_names(tree: ast.Module) -> frozenset[str]:
    """Variables assigned a file name (``name = code.co_filename``), followed to a fixpoint."""
    held: frozenset[str] = frozenset()
    while True:
        more = set(held)
        for node in ast.walk(tree):
            assigns = isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr)
            if assigns and node.value and _is_file_name(node.value, held):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                more.update(t.id for at in targets for t in ast.walk(at) if isinstance(t, ast.Name))
        if more == held:
            return held
        held = frozenset(more)


def _decides_origin(source: str) -> list[str]:
    """Each line of ``source`` that decides whose code a file is, with what it does."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    held = _holding_file_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and _names_a_file(node, held):
            found.append(f"{node.lineno}: compares a file name: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and _callee(node) in ("startswith", "endswith")
            and _names_a_file(node, held)
        ):
            found.append(f"{node.lineno}: tests a file name's ends: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and ("site-packages" in node.value or "dist-packages" in node.value)
        ):
            found.append(f"{node.lineno}: names where packages are installed")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "torchport._origin"
            and any(alias.name.startswith("_") for alias in node.names)
        ):
            found.append(f"{node.lineno}: reads _origin's private folders")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                {a.name for a in node.names} if isinstance(node, ast.Import) else {node.module}
            )
            if {"site", "sysconfig"} & modules:
                found.append(f"{node.lineno}: asks where installed code lives")
    return found


def _runtime_modules() -> list[Path]:
    return sorted(
        path
        for path in _PACKAGE.rglob("*.py")
        if path.relative_to(_PACKAGE).parts[0] != "check" and path.name != "_origin.py"
    )


@pytest.mark.parametrize(
    "path", _runtime_modules(), ids=lambda p: str(p.relative_to(_PACKAGE.parent))
)
def test_no_other_module_decides_whose_code_a_frame_runs(path: Path) -> None:
    assert _decides_origin(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        "if frame.f_code.co_filename.startswith(TORCH_DIR): pass",
        "keep = [e for e in tb if e.tb_frame.f_code.co_filename != runpy.__file__]",
        "mine = w.filename in _DISPATCH_FILES",
        "name = code.co_filename\nif name.startswith(TORCH_DIR): pass",
        "ROOTS = ('/site-packages/',)",
        "import sysconfig",
        "from site import getsitepackages",
        "from torchport._origin import _TORCH_DIR",
    ],
)
def test_the_claim_check_finds_a_second_home(source: str) -> None:
    assert len(_decides_origin(source)) == 1


def test_asking_origin_about_a_file_name_is_not_deciding() -> None:
    source = "mine = origin(frame.f_code.co_filename) is Origin.USER or is_library(f.co_filename)"
    assert _decides_origin(source) == []
