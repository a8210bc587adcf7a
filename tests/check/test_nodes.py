"""The table of which node fields hold child nodes, against ``ast.iter_child_nodes``."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import pytest

from torchport.check._nodes import _ALL_NODES, _NOT_NODES, child_fields

# Every kind of node Python 3.11 has, in one module
EVERY_NODE = '''
import a.b as c
from .d import e as f, g
from h import *
x: int = 1  # type: ignore
y += (z := 2)
del x[0], y.attr
global gg
def outer(p, /, q: int = 1, *r, s, t=2, **u) -> "T":  # type: (...) -> None
    nonlocal_target = 0
    def inner():
        nonlocal nonlocal_target
        return lambda v, *, w=3: v
    async def co(items):
        async for i in items:
            await i
        async with ctx() as (k, *l):
            yield i
        yield from items
    return inner
@decorator(1)
class C(Base, metaclass=M):
    """doc"""
    attr: int
    def m(self): pass
for i, j in pairs: break
else: continue_ = 1
while not done: continue
if a and b or not c: pass
elif -a < b <= c is not d in e: ...
with open(p) as fh, other(): pass
try:
    raise E("m") from None
except (A, B) as err:
    pass
else:
    assert x, "msg"
finally:
    pass
try:
    pass
except* ValueError as group:
    pass
match command.split():
    case [action]: pass
    case ["go", direction] | ["move", direction] if direction: pass
    case {"key": value, **rest}: pass
    case Point(x=0, y=yy) as pt: pass
    case [1, *others]: pass
    case None | True: pass
    case str() | bytes(): pass
    case _: pass
s = f"{a!r:>{width}} {b=}" + b"bytes".decode() + rb"\\d"
d = {1: 2, **other}
st = {1, 2}
ls = [1, 2]
comp = [i for i in range(3) if i async for q in aiter() if q]
gen = (i for i in x)
dc = {k: v for k, v in items}
sc = {i for i in x}
sl = x[1:2:3, ..., None]
st2 = *a, b
cond = a if b else c
call(*args, key=1, **kwargs)
'''


def _stdlib_sources() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    names = ["ast.py", "typing.py", "dataclasses.py", "argparse.py", "inspect.py", "enum.py"]
    folders = ["asyncio", "json", "email", "importlib"]
    found = [root / name for name in names]
    for folder in folders:
        found.extend(sorted((root / folder).glob("*.py"))[:12])
    return [path for path in found if path.is_file()]


def _children(node: ast.AST) -> list[ast.AST]:
    fields, exact = child_fields(type(node), unpositioned=True)
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        for item in value if isinstance(value, list) else [value]:
            if exact:
                assert item is None or isinstance(item, ast.AST), (type(node), name, item)
            if isinstance(item, ast.AST):
                out.append(item)
    return out


def _check_tree(tree: ast.AST) -> int:
    seen = 0
    for node in ast.walk(tree):
        assert _children(node) == list(ast.iter_child_nodes(node)), ast.dump(node)[:200]
        seen += 1
    return seen


def test_every_node_kind_has_exactly_the_children_iter_child_nodes_finds() -> None:
    tree = ast.parse(EVERY_NODE, type_comments=True)
    kinds = {type(node) for node in ast.walk(tree)}
    # the sample really holds every node class this table knows (contexts and operators aside)
    missing = {
        cls.__name__
        for cls in (*_NOT_NODES, *_ALL_NODES)
        if cls not in kinds
        and cls not in (ast.Interactive, ast.Expression, ast.FunctionType, ast.TypeIgnore)
    }
    assert missing == set()
    assert _check_tree(tree) > 300
    assert _check_tree(ast.parse("x = 1  # type: ignore[attr]\n", type_comments=True)) > 0


@pytest.mark.parametrize("path", _stdlib_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_code_has_the_same_children(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), type_comments=True)
    assert _check_tree(tree) > 0


def test_the_table_names_fields_that_exist() -> None:
    for cls, names in _NOT_NODES.items():
        assert names <= set(cls._fields), cls.__name__


def test_contexts_and_operators_are_left_out_unless_asked_for() -> None:
    assert child_fields(ast.Name, unpositioned=False) == ((), True)
    assert child_fields(ast.Name, unpositioned=True) == (("ctx",), True)
    assert child_fields(ast.Compare, unpositioned=False) == (("left", "comparators"), True)


def test_a_class_the_table_does_not_know_is_walked_value_by_value() -> None:
    class Future(ast.expr):
        _fields = ("label", "child")

    fields, exact = child_fields(Future, unpositioned=False)
    assert fields == ("label", "child") and not exact
