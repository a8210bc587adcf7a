"""Names of a project module a model class could be behind that the project view cannot resolve.

A module binds a name by importing it from another project module (a package's
``__init__``: ``from .model import Net``), by a chain of such imports, a star import or an
alias (``Net = _Net``): the view resolves each to its definition (``_reexports.py``).
Where it cannot, and a model class could be behind the name, the name is *unsure*: an
importing file's port reports a call of it (TP523) rather than take it for an unknown
callable and say "0 left" with the model on the CPU:

* a name the module binds more than once where one binding is a model class (its own, one
  it imports, an alias), or an import of a factory (``from .model import make_model`` and
  ``make_model = None``; ``_project._imports_of``): which one an importer gets, the code
  decides when it runs;
* a name it imports from a project module where it is unsure;
* a capitalised name it does not bind itself where it defines a module-level
  ``__getattr__`` (``ModuleFacts.dynamic``): what that returns, only a run can tell.

A name imported from a module the view cannot read (an import cycle Python cuts, a file that
does not parse) is left to ``_project_owners.UNRESOLVED``, not reported: a module named as
the standard library's (``utilities/argparse.py`` doing ``from argparse import Namespace``)
reads as importing itself, and most such names are no models.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._project_imports import ProjectImports
from torchport.check.semantic import BindingKind

__all__ = ["dynamic", "unsure_names"]


def unsure_names(ctx: Context, imported: ProjectImports, known: set[str]) -> frozenset[str]:
    """The unsure names of the module ``ctx`` holds (module docstring); ``imported``: its
    view; ``known``: the model classes its knowledge holds (its own and the imported)."""
    bindings = ctx.scopes.module.bindings
    out = set(imported.unsure)
    for name, bound in bindings.items():
        if len(bound) < 2 or name not in known:
            continue
        if all(b.kind is BindingKind.IMPORT for b in bound) and name in imported.classes:
            continue  # `try: from .fast import Net` / `except: from .model import Net`
        out.add(name)
    return frozenset(out)


def dynamic(tree: ast.Module) -> bool:
    """Whether the module defines a module-level ``__getattr__`` (PEP 562)."""
    return any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__getattr__"
        for s in tree.body
    )
