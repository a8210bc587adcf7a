"""Where a fix may write ``import torch`` and the one ``device`` definition, and under which name.

Every fix that needs the device or the torch module asks here, with the node it
rewrites, and gets either a name bound to *our* meaning at that node plus the
edits (maybe none) that make it so, or None: no safe way, report without a fix.

The rules (each one a way a fix once broke working code):

* ``device`` must be bound at the node, to the accelerator choice: not to a
  local assigned in a sibling branch or later, not to ``device = "cpu"`` or any
  other meaning, not to an enclosing function's local seen by a closure, and a
  new module-level ``device`` must not shadow a name the module already reads
  (from a star import, say). Otherwise the next candidate name is tried.
* The definition goes right after the module's leading imports, and after the
  first unconditional ``import torch`` (never above it, even when an earlier
  ``if TYPE_CHECKING: import torch`` exists); on a line shared with ``;`` it goes
  right after the import, before the code that uses it. Code that runs before
  that point (module-level code above it) gets no fix.
* ``import torch`` is added only to modules that never import torch, or that
  always import something from torch at module level; a module that imports
  torch only optionally (``try``, ``if``, ``TYPE_CHECKING``, inside functions)
  gets no fix, since it must keep working without torch.
"""

from __future__ import annotations

import ast

from torchport.check._edit import Edit
from torchport.check.semantic._binding import Binding, BindingKind, ScopeKind, TorchImport

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = [
    "DEVICE_NAMES",
    "device_at",
    "device_expr",
    "device_line",
    "device_type_at",
    "is_import_block",
    "means_accelerator",
    "torch_at",
]

# Names tried, in order, for the device; the first one that is safe at the node wins.
DEVICE_NAMES = ("device", "_device", "torch_device", "_torchport_device")


def device_expr(torch: str = "torch") -> str:
    """The expression every fix binds the device to: the accelerator if there is one, else CPU."""
    return (
        f"{torch}.accelerator.current_accelerator() if {torch}.accelerator.is_available() "
        f'else {torch}.device("cpu")'
    )


def device_line(name: str = "device", torch: str = "torch") -> str:
    """The one ``device`` definition that fixes and ``port`` write (with its newline)."""
    return f"{name} = {device_expr(torch)}\n"


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def is_import_block(stmt: ast.stmt) -> bool:
    """An import, or a ``try``/``if`` that only imports (optional dependencies)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, (ast.Try, ast.If)):
        parts = [*stmt.body, *stmt.orelse]
        if isinstance(stmt, ast.Try):
            parts += [s for handler in stmt.handlers for s in handler.body]
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in parts)
    return False


def _leading_end(body: list[ast.stmt]) -> int:
    """Index of the last statement of the module's leading docstring-and-imports block (-1)."""
    last = -1
    for i, stmt in enumerate(body):
        if (i == 0 and _is_docstring(stmt)) or is_import_block(stmt):
            last = i
        else:
            break
    return last


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno


def _index(body: list[ast.stmt], stmt: ast.stmt | None) -> int:
    for i, s in enumerate(body):
        if s is stmt:
            return i
    return -1


def means_accelerator(value: ast.expr, ctx: Context) -> bool:
    """Whether ``value`` is a device choice a fix may stand in for ``.cuda()`` / ``"cuda"``.

    Our own definition, ``torch.device("cuda")``, ``"cuda"``, and the
    ``"cuda" if torch.cuda.is_available() else "cpu"`` idiom (as such or in
    ``torch.device(...)``): where the original ran, each picks the same device.
    """
    scopes = ctx.scopes
    if isinstance(value, ast.Constant):
        return value.value == "cuda"
    if isinstance(value, ast.IfExp):
        test, body = value.test, value.body
        if not isinstance(test, ast.Call):
            return False
        tested = scopes.qualname(test.func)
        if tested == "torch.cuda.is_available" and not test.args:
            return isinstance(body, ast.Constant) and body.value == "cuda"
        return (
            tested == "torch.accelerator.is_available"
            and isinstance(body, ast.Call)
            and scopes.qualname(body.func) == "torch.accelerator.current_accelerator"
        )
    if isinstance(value, ast.Call) and scopes.qualname(value.func) == "torch.device":
        return len(value.args) == 1 and not value.keywords and means_accelerator(value.args[0], ctx)
    return False


class _Plan:
    """Where the module-level definition and a missing ``import torch`` go, if anywhere."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        scopes = ctx.scopes
        body = ctx.tree.body
        self.body = body
        status, first = scopes.torch_import()
        self.status = status
        lead = _leading_end(body)
        # The first module-level statement that binds a torch alias: `import torch [as t]`.
        self.alias: str | None = None
        alias_at = -1
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    local = a.asname or a.name.partition(".")[0]
                    if (a.name if a.asname else local) == "torch" and _only_torch(ctx, local):
                        self.alias, alias_at = local, i
                        break
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module[:5] != "torch":
                for a in stmt.names:  # `from ..compat import torch`: torch, re-exported
                    local = a.asname or a.name
                    if a.name == "torch" and _only_torch(ctx, local):
                        self.alias, alias_at = local, i
                        break
            if self.alias is not None:
                break
        self.needs_import = False
        self.import_at = -1  # index of the statement `import torch` goes before (-1: header)
        self.after: int | None = None  # the definition goes after body[after] (-1: at the top)
        self._definitions: dict[str, tuple[Edit, ...]] = {}  # name -> definition_edits(name)
        if self.alias is None:
            if status is TorchImport.OPTIONAL or not _only_torch(ctx, "torch"):
                return  # torch must stay optional here, or `torch` means something else
            if scopes.module_reads("torch") and scopes.module.star_imports:
                return  # `torch` may come from a star import: do not shadow it
            self.alias, self.needs_import = "torch", True
            if status is TorchImport.UNCONDITIONAL:
                self.import_at = _index(body, first)  # right before `from torch import ...`
            else:
                self.import_at = next(
                    (
                        i
                        for i, s in enumerate(body[: lead + 1])
                        if isinstance(s, (ast.Import, ast.ImportFrom))
                        and not (isinstance(s, ast.ImportFrom) and s.module == "__future__")
                    ),
                    -1,
                )
        self.after = max(lead, alias_at, self.import_at)

    def torch_edits(self) -> tuple[Edit, ...]:
        """The edit adding ``import torch`` (none when the module binds an alias already)."""
        if not self.needs_import:
            return ()
        ctx = self.ctx
        if self.import_at >= 0:
            stmt = self.body[self.import_at]
            at = ctx.offset(_first_line(stmt), 0)
            if ctx.source[at : ctx.start(stmt)].strip(" \t"):
                at = ctx.start(stmt)  # `x = 1; from torch import nn`: same line, before it
                return (Edit(at, at, "import torch; "),)
            return (Edit(at, at, "import torch" + ctx.newline),)
        return (self._after_edit(["import torch"]),)

    def definition_edits(self, name: str) -> tuple[Edit, ...]:
        """``import torch`` if missing, then ``name = <the accelerator choice>``.

        The same edits for every finding of the file (the plan is fixed once made): made
        once per name, not once per finding (a file of 40,000 findings held 40,000 copies).
        """
        found = self._definitions.get(name)
        if found is not None:
            return found
        assert self.alias is not None
        line = device_line(name, self.alias).rstrip("\n")
        if self.needs_import and self.import_at < 0:
            found = (self._after_edit(["import torch", line]),)
        else:
            found = (*self.torch_edits(), self._after_edit([line]))
        self._definitions[name] = found
        return found

    def _after_edit(self, lines: list[str]) -> Edit:
        """Insert ``lines`` after the statement at ``self.after`` (at the top when -1)."""
        ctx = self.ctx
        nl = ctx.newline
        assert self.after is not None
        if self.after < 0:
            first = self.body[0] if self.body else None
            at = ctx.offset(_first_line(first), 0) if first is not None else len(ctx.source)
            return Edit(at, at, nl.join(lines) + nl + nl)
        stmt = self.body[self.after]
        end = ctx.end(stmt)
        line_end = ctx.source.find("\n", end)
        rest = ctx.source[end : line_end if line_end >= 0 else len(ctx.source)].strip()
        if rest and not rest.startswith("#"):
            # `import torch; x = ...`: define it on the same line, before the code after it.
            return Edit(end, end, "; " + "; ".join(lines))
        starts = ctx._line_starts()
        last = stmt.end_lineno or stmt.lineno
        if last + 1 < len(starts):
            at = starts[last + 1]
            line_end = ctx.source.find("\n", at)
            follows = ctx.source[at : line_end if line_end >= 0 else None].strip()
            # A blank line before the definition, and after it when code follows at once.
            return Edit(at, at, nl + nl.join(lines) + nl + (nl if follows else ""))
        at = len(ctx.source)
        return Edit(at, at, nl + nl + nl.join(lines) + nl)

    def runs_after(self, node: ast.AST) -> bool:
        """Whether ``node`` runs only after the inserted definition (module order)."""
        assert self.after is not None
        top = self.ctx.scopes.top_statement(node)
        if top is None:
            return False
        # where the scope pass saw it (no index of the body of our own: memory per finding)
        where = self.ctx.scopes.flow.statement_position(top)
        return where is not None and where[0] is self.body and where[1] > self.after


def _only_torch(ctx: Context, name: str) -> bool:
    """Whether every module-level binding of ``name`` imports the torch module itself."""
    found = ctx.scopes.module.bindings.get(name, [])
    return all(b.kind is BindingKind.IMPORT and b.qualified == "torch" for b in found)


def torch_at(ctx: Context, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
    """A name for the torch module usable at ``node`` and the edits (maybe none) that bind it.

    None when torch is imported only optionally or the name ``torch`` means
    something else at ``node``: the fix must then be dropped.
    """
    scopes = ctx.scopes
    alias = scopes.torch_alias(node)
    if alias is not None:
        return alias, ()
    plan = ctx.placement
    if plan.after is None or plan.alias is None:
        return None
    if scopes.resolve(plan.alias, node) is not scopes.module or not plan.runs_after(node):
        return None
    if plan.needs_import:
        return plan.alias, plan.torch_edits()
    return None  # an alias exists but is not bound on every path here


def device_at(
    ctx: Context, node: ast.AST, names: tuple[str, ...] = DEVICE_NAMES
) -> tuple[str, tuple[Edit, ...]] | None:
    """A name bound to the accelerator choice at ``node`` and the edits that define it.

    Tries :data:`DEVICE_NAMES` in order. A name that already means the
    accelerator choice at ``node`` (see :func:`means_accelerator`), bound on
    every path before it, is reused as it is; a name no code reads at module
    level and nothing binds gets a new module-level definition. None when no
    name works or the definition cannot be placed before ``node`` runs.

    The name may hold a ``torch.device`` or a device-type string (``"cuda"``):
    a fix that needs the type asks :func:`device_type_at`. ``names``: the
    names to try (``port`` keeps to the one it chose for the file).
    """
    found = _device_choice(ctx, node, names)
    return None if found is None else (found[0], found[1])


def device_type_at(ctx: Context, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
    """An expression for the device *type* (``"cuda"``) of the device at ``node``, and edits.

    ``device.type`` where the name holds a ``torch.device`` (our definition,
    ``torch.device(...)``); the name itself where it holds a device-type string
    (``device = "cuda" if torch.cuda.is_available() else "cpu"``, on which
    ``.type`` raises). None as for :func:`device_at`.
    """
    found = _device_choice(ctx, node)
    if found is None:
        return None
    name, edits, value = found
    return (name if value is not None and _type_string(value) else f"{name}.type"), edits


def _type_string(value: ast.expr) -> bool:
    """Whether a device choice :func:`means_accelerator` accepts is a string, not a device."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, ast.IfExp):
        return _type_string(value.body) or _type_string(value.orelse)
    return isinstance(value, ast.Attribute) and value.attr == "type"


def _device_choice(
    ctx: Context, node: ast.AST, names: tuple[str, ...] = DEVICE_NAMES
) -> tuple[str, tuple[Edit, ...], ast.expr | None] | None:
    """(name, edits, the value an existing definition binds; None for a new one)."""
    scopes = ctx.scopes
    for name in names:
        where = scopes.resolve(name, node)
        if where is not scopes.module:
            if where.kind in (ScopeKind.FUNCTION, ScopeKind.CLASS, ScopeKind.MODULE):
                found = scopes.reaching(name, node)
                if _ours(found, ctx):
                    assert found is not None
                    return name, (), found.value
            continue  # a local, parameter or closure variable with its own meaning
        existing = scopes.bindings(name, node)
        if existing:
            if (
                len(existing) == 1
                and isinstance(scopes.parent(existing[0].node), ast.Assign)
                and scopes.top_statement(existing[0].node) is scopes.parent(existing[0].node)
                and _ours(existing[0], ctx)
                and scopes.definitely_bound(name, node)
            ):
                return name, (), existing[0].value
            continue
        if scopes.module_reads(name):
            continue  # a read that a new global would capture (a star import, a builtin)
        plan = ctx.placement
        if plan.after is None or plan.alias is None or not plan.runs_after(node):
            return None
        return name, plan.definition_edits(name), None
    return None


def _ours(binding: Binding | None, ctx: Context) -> bool:
    """Whether ``binding`` is ``name = <a value that means the accelerator choice>``."""
    return (
        binding is not None
        and binding.kind is BindingKind.ASSIGN
        and binding.value is not None
        and means_accelerator(binding.value, ctx)
    )
