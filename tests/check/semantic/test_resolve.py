"""The one resolver against Python itself: what a name means is what the program sees when it runs.

Programs are generated with imports of look-alike names at every level (``from
numba import cuda`` beside ``from torch import cuda``, ``import cupy as th``),
parameters and locals named ``torch``/``cuda``, conditional and optional
imports, ``global`` declarations, class bodies and rebindings. Each
``probe(k, expr)`` records, when it runs, the dotted import path of the value
``expr`` evaluates to (the fake modules below hand out such paths; anything
else records None). The oracle is the interpreter: the resolver may answer
"unknown" (None), but a dotted name it does give must be what every run of that
probe saw, and a probe that only ever saw one path in a program with a single
meaning per name must be resolved.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context


class _Path:
    """What an attribute of a fake module is: its dotted path, and more of them below."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> _Path:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Path(f"{self._path}.{name}")


class _Local:
    """A value of the program's own: attributes of it are no import of anything."""

    def __getattr__(self, name: str) -> _Local:
        if name.startswith("__"):
            raise AttributeError(name)
        return self


class _FakeModule(types.ModuleType):
    def __getattr__(self, name: str) -> _Path:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Path(f"{self.__name__}.{name}")


_MODULES = ("torch", "torch.cuda", "torch.cuda.amp", "numba", "numba.cuda", "cupy", "apex")


@contextmanager
def fake_modules() -> Iterator[None]:
    saved = {name: sys.modules.get(name) for name in _MODULES}
    for name in _MODULES:
        sys.modules[name] = _FakeModule(name)
    for name in _MODULES:  # `import torch.cuda` binds torch, whose `cuda` is the module
        head, _, tail = name.rpartition(".")
        if head:
            setattr(sys.modules[head], tail, sys.modules[name])
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def observed(module: types.ModuleType | _Path | Any) -> str | None:
    if isinstance(module, _Path):
        return module._path
    if isinstance(module, _FakeModule):
        return module.__name__
    return None


# ---------------------------------------------------------------- programs

ROOTS = ("torch", "cuda", "amp", "th")
IMPORTS = {
    "torch": ("import torch", "import numba as torch", "import torch.cuda"),
    "cuda": ("from torch import cuda", "from numba import cuda", "from cupy import cuda"),
    "amp": ("from torch.cuda import amp", "from apex import amp"),
    "th": ("import torch as th", "import cupy as th", "import torch.cuda.amp as th"),
}
OTHER = ("{r} = Local()", "{r} = None", "for {r} in [Local()]:\n    pass", "del {r}")
ATTRS = ("", ".synchronize", ".cuda.synchronize", ".autocast", ".load")


@st.composite
def statements(draw: st.DrawFn, depth: int, counter: list[int]) -> list[str]:
    """A few statements: imports, other bindings, probes, and blocks holding more."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["import", "import", "other", "probe", "probe", "block"]))
        root = draw(st.sampled_from(ROOTS))
        if kind == "import":
            out.append(draw(st.sampled_from(IMPORTS[root])))
        elif kind == "other":
            out.append(draw(st.sampled_from(OTHER)).format(r=root))
        elif kind == "probe" or depth >= 2:
            counter[0] += 1
            out.append(f"probe({counter[0]}, {root}{draw(st.sampled_from(ATTRS))})")
        else:
            inner = draw(statements(depth + 1, counter))
            block = draw(st.sampled_from(["def", "if", "try", "class", "global"]))
            body = "".join(f"    {line}\n" for s in inner for line in s.splitlines())
            if block == "def" or block == "global":
                counter[0] += 1
                name = f"f{counter[0]}"
                params = draw(st.lists(st.sampled_from(ROOTS), max_size=2, unique=True))
                if block == "global" and root in params:
                    params.remove(root)  # a parameter cannot be global
                head = f"def {name}({', '.join(params)}):\n"
                if block == "global":
                    head += f"    global {root}\n"
                args = ", ".join("Local()" for _ in params)
                out.append(f"{head}{body}{name}({args})")
                if draw(st.booleans()):
                    out.append(f"{name}({args})")  # called again, maybe after a rebinding
            elif block == "if":
                other = draw(statements(depth + 1, counter))
                orelse = "".join(f"    {line}\n" for s in other for line in s.splitlines())
                out.append(f"if FLAG:\n{body}else:\n{orelse}".rstrip("\n"))
            elif block == "try":
                out.append(f"try:\n{body}except ImportError:\n    {root} = None")
            else:
                counter[0] += 1
                out.append(f"class C{counter[0]}:\n{body}".rstrip("\n"))
    return out


@st.composite
def programs(draw: st.DrawFn) -> str:
    return "\n".join(draw(statements(0, [0]))) + "\n"


def guarded(source: str) -> str:
    """Every statement in ``try``: a probe of an unbound name, or a bad ``del``, is skipped."""
    tree = ast.parse(source)

    class Wrap(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            super().generic_visit(node)
            for field in ("body", "orelse"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    setattr(node, field, [_try(s) for s in block])
            return node

    return ast.unparse(Wrap().visit(tree))


def _try(stmt: ast.stmt) -> ast.stmt:
    if not isinstance(stmt, (ast.Expr, ast.Delete)):
        return stmt
    handler = ast.ExceptHandler(
        type=ast.Tuple([ast.Name("NameError"), ast.Name("AttributeError")], ast.Load()),
        name=None,
        body=[ast.Pass()],
    )
    return ast.Try(body=[stmt], handlers=[handler], orelse=[], finalbody=[])


def run(source: str, flag: bool) -> dict[int, set[str | None]]:
    seen: dict[int, set[str | None]] = {}

    def probe(k: int, value: object) -> None:
        seen.setdefault(k, set()).add(observed(value))

    namespace = {"probe": probe, "Local": _Local, "FLAG": flag, "__name__": "__probe__"}
    with fake_modules(), suppress(NameError, UnboundLocalError, AttributeError, ImportError):
        exec(compile(source, "<probe>", "exec"), namespace)
    return seen


def static(source: str) -> dict[int, str | None]:
    tree = ast.parse(source)
    ctx = Context(source, "<probe>", tree)
    found: dict[int, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "probe":
            key = node.args[0]
            assert isinstance(key, ast.Constant)
            found[key.value] = ctx.qualname(node.args[1])
    return found


@settings(max_examples=300, deadline=None)
@given(programs())
def test_a_resolved_name_is_what_every_run_sees(source: str) -> None:
    source = guarded(source)
    answers = static(source)
    for flag in (False, True):
        for k, paths in run(source, flag).items():
            if answers[k] is not None:
                assert paths == {answers[k]}, f"probe {k}: said {answers[k]}, saw {paths}\n{source}"


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(ROOTS), st.data())
def test_one_meaning_everywhere_is_resolved_everywhere(root: str, data: st.DataObject) -> None:
    """A name imported once at the top and never rebound resolves in every scope."""
    imported = data.draw(st.sampled_from(IMPORTS[root]))
    attr = data.draw(st.sampled_from(ATTRS))
    where = data.draw(st.sampled_from(["module", "def", "nested", "class", "lambda", "comp"]))
    expr = f"{root}{attr}"
    body = {
        "module": f"probe(1, {expr})",
        "def": f"def f(x):\n    probe(1, {expr})\nf(0)",
        "nested": f"def f():\n    def g():\n        probe(1, {expr})\n    g()\nf()",
        "class": f"class C:\n    probe(1, {expr})",
        "lambda": f"(lambda: probe(1, {expr}))()",
        "comp": f"[probe(1, {expr}) for _ in range(1)]",
    }[where]
    source = f"{imported}\n{body}\n"
    (paths,) = run(source, False).values()
    assert static(source)[1] == paths.pop()
