"""TP508 item-count-per-batch: ``correct += (pred == y).sum().item()`` in every step."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import PortFacts, port_facts

_HEAD = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"
_NESTED = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class ItemCountPerBatch(Rule):
    """## What it does
    Finds counts accumulated with `.item()` in every step of a loop,
    `correct += (pred == y).sum().item()`, where the count starts from an
    integer before the loop and is read only after it.

    ## Why is this bad?
    On an accelerator, each `.item()` waits for the device to finish the
    step: the host cannot queue the next batch's work meanwhile. The fix
    accumulates on the device and reads once, right after the loop
    (`correct = int(correct)`). The sum of a boolean tensor is an integer, so
    the count, and everything printed from it, is exactly the same.
    """

    code = "TP508"
    name = "item-count-per-batch"
    intent = Intent.PORT
    default = False
    message = "accumulate the count on the device and read it once after the loop: `int(correct)`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.For, ast.AsyncFor)
    valid = (
        _HEAD + "correct = 0\nfor x, y in loader:\n"
        "    correct += (model(x).argmax(1) == y).sum().item()\n"
        "    print(correct)\n",
        _HEAD + "total = 0.0\nfor x, y in loader:\n    total += model(x).sum().item()\n",
    )
    invalid = (
        Example(
            _HEAD + "correct = 0\nfor x, y in loader:  # eval\n"
            "    correct += (model(x).argmax(1) == y).sum().item()\n"
            "print(correct / 100)\n",
            fixed=_HEAD + "correct = 0\nfor x, y in loader:  # eval\n"
            "    correct += (model(x).argmax(1) == y).sum()\n"
            "correct = int(correct)\n"
            "print(correct / 100)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, (ast.For, ast.AsyncFor))
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.internal or node.orelse or not ctx.owns_lines(node):
            return
        holders = _blocks_around(node, facts)
        if holders is None:
            return
        for stmt in _loop_nodes(node):
            name = _count(stmt)
            if name is None or not _starts_at_int(name, node, holders, ctx):
                continue
            assert isinstance(stmt, ast.AugAssign)
            if _read_in_the_loop(name, node, stmt.target):
                continue  # read (or rebound) inside the loop: the per-step value is used
            yield ctx.finding(self, stmt, fix=_count_on_the_device(stmt, name, node, ctx))


def _blocks_around(node: ast.AST, facts: PortFacts) -> list[ast.AST] | None:
    """The blocks the loop sits in, where the count may start; None outside the port's blocks.

    Its own, then (through ``with`` blocks, such as ``with torch.no_grad():``) the
    enclosing ones.
    """
    holders: list[ast.AST] = []
    child: ast.AST = node
    while True:
        parent = facts.parents.get(id(child))
        if parent is None or facts.structure.block_of(child) is None:
            return None
        holders.append(parent)
        if not isinstance(parent, (ast.With, ast.AsyncWith)):
            return holders
        child = parent


def _read_in_the_loop(name: str, loop: ast.AST, target: ast.expr) -> bool:
    """Whether ``name`` is read or bound in the loop other than by the count itself."""
    return any(isinstance(n, ast.Name) and n.id == name and n is not target for n in ast.walk(loop))


def _count_on_the_device(
    stmt: ast.AugAssign, name: str, loop: ast.For | ast.AsyncFor, ctx: Context
) -> Fix:
    """Drop the ``.item()`` and read the count once after the loop: ``n = int(n)``."""
    assert isinstance(stmt.value, ast.Call)
    item = stmt.value
    assert isinstance(item.func, ast.Attribute)
    drop = Edit(ctx.receiver_end(item.func), ctx.end(item), "")
    end = loop.end_lineno or loop.lineno
    starts = ctx._line_starts()
    at = starts[end + 1] if end + 1 < len(starts) else len(ctx.source)
    lead = "" if at < len(ctx.source) or ctx.source.endswith("\n") else ctx.newline
    read = f"{lead}{ctx.indent_of(loop)}{name} = int({name}){ctx.newline}"
    return Fix((drop, Edit(at, at, read)), FixSafety.SAFE)


def _loop_nodes(loop: ast.For | ast.AsyncFor) -> list[ast.AST]:
    """The nodes of the loop's body, not those of nested loops or functions."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, _NESTED):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _count(stmt: ast.AST) -> str | None:
    """``name`` when ``stmt`` is ``name += <bool tensor>.sum().item()``."""
    if not (
        isinstance(stmt, ast.AugAssign)
        and isinstance(stmt.op, ast.Add)
        and isinstance(stmt.target, ast.Name)
    ):
        return None
    item = stmt.value
    if not (
        isinstance(item, ast.Call)
        and not item.args
        and isinstance(item.func, ast.Attribute)
        and item.func.attr == "item"
    ):
        return None
    total = item.func.value
    if not (
        isinstance(total, ast.Call)
        and not total.args
        and not total.keywords
        and isinstance(total.func, ast.Attribute)
        and total.func.attr == "sum"
    ):
        return None
    counted = total.func.value
    boolean = isinstance(counted, ast.Compare) or (
        isinstance(counted, ast.Call)
        and isinstance(counted.func, ast.Attribute)
        and counted.func.attr in ("eq", "ne", "lt", "le", "gt", "ge", "isclose")
    )
    return stmt.target.id if boolean else None


def _starts_at_int(name: str, loop: ast.AST, holders: list[ast.AST], ctx: Context) -> bool:
    """Whether ``name`` holds an int literal when the loop starts, bound in one of ``holders``.

    The binding that reaches the loop is ``name = <int>`` (or a tuple of them),
    a statement of the loop's block or of a ``with`` around it, and nothing reads
    or binds ``name`` between it and the loop.
    """
    scopes = ctx.scopes
    binding = scopes.reaching(name, loop)
    if binding is None:
        return False
    stmt = scopes.statement(binding.node)
    if stmt is None or not any(scopes.parent(stmt) is h for h in holders):
        return False
    bound = dict((t.id, v) for t, v in _bound(stmt) if isinstance(t, ast.Name))
    value = bound.get(name)
    if not (isinstance(value, ast.Constant) and type(value.value) is int):
        return False
    # No other mention of the name between that statement and the loop.
    return not port_facts(ctx).structure.mentions_between(name, stmt, loop)


def _bound(stmt: ast.stmt) -> list[tuple[ast.expr, ast.expr]]:
    if not isinstance(stmt, ast.Assign):
        return []
    out: list[tuple[ast.expr, ast.expr]] = []
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            out.append((target, stmt.value))
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(stmt.value, ast.Tuple)
            and len(target.elts) == len(stmt.value.elts)
        ):
            out.extend(zip(target.elts, stmt.value.elts, strict=True))
    return out
