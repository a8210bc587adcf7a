"""The port's file gate: a file where no port rule can report is not walked by them.

A port walks every file with its 18 rules (:data:`~torchport.check._prefilter.PORT_GATED`),
and most of a tree's files give them nothing. :func:`may_report` is a necessary
condition of any finding of those rules in a file, cheap to ask: where it is false the
engine skips the rules' walk (``_engine.check_tree``). It may let through a file with
nothing to report; it never stops one with something.

Where it is false, the file holds neither ``torch`` nor ``numpy`` as a word the parse
could make (:func:`~torchport.check._prefilter.may_hold`: escapes, split constants and
non-ASCII identifiers keep the file), no star import, no name bound to torch's through the
project's own modules (``from compat import L``: ``Context.has_project_torch``), and its
project view (:func:`~torchport.check.port._project_view.project_of`) holds nothing at all.
Then:

* no name resolves to ``torch.*`` (``Context.qualname`` resolves only what an import binds,
  or any name after a star import of torch's): TP301 (``torch.load``), TP505
  (torch's ``DataLoader``), TP507 (``torch.device("cpu")``), TP509 (``torch.FloatTensor``)
  and TP504's creators (``torch.zeros``...) cannot match;
* no ``.numpy()`` is called: TP201 and TP506 cannot match;
* the port's facts are inactive (no torch text, an empty project view): no scope holds a
  node (``scope_of`` is empty), no model, no device value, no operand, an empty batch
  plan. Every other rule reports only a node of a scope (TP501, TP503, TP504's leftovers,
  TP506, TP508, TP509, TP510, TP511, TP522), an operand or the plan (TP502, TP520, TP521, TP523),
  or what the facts' scopes hold (TP523's escapes, sparse inputs, CPU placements; its
  ``sys.path`` entries only in an active file).
* TP109, which the port runs to report the program's kept CUDA-or-CPU choices: a
  ``torch.cuda.is_available()`` test resolves to torch, so it cannot match there; a flag
  named for CUDA (``"cuda" if args.cuda else "cpu"``) in a file with no torch at all is not
  the port's (it leaves such a file alone) and stays a ``check`` finding. TP120 (a fallback
  to the CPU, ``if not torch.cuda.is_available():``) likewise tests torch's own call.

The project view is asked first, of every file, as the facts ask it first of every file
the port walks (TP502 asks them of the module node): the module facts it caches, and the
import cycles it cuts, are met in the same order as without the gate. So the gate
applies only to a rule set holding TP502 (``RuleSet.port_gated``).
``tests/check/port/test_file_gate.py`` holds the port with and without the gate equal.
"""

from __future__ import annotations

from dataclasses import fields

from torchport.check._context import Context
from torchport.check._prefilter import may_hold
from torchport.check.port._project import ProjectImports
from torchport.check.port._project_view import project_of

__all__ = ["may_report"]


def may_report(ctx: Context) -> bool:
    """Whether any port rule may report in the file ``ctx`` walks (see the module docstring)."""
    project = project_of(ctx)  # first, for every file: the project view's order unchanged
    source = ctx.source
    return (
        may_hold(source, "torch")
        or may_hold(source, "numpy")
        or ctx.has_star_imports
        or ctx.has_project_torch
        or not _empty(project)
    )


def _empty(project: ProjectImports) -> bool:
    """Whether the view holds nothing in any of its fields: no name of any kind, no module,
    no owner, nothing unresolved (more than ``bool(project)``, which leaves plain classes
    and owners out; a field added later counts too)."""
    return not any(getattr(project, f.name) for f in fields(project) if f.name != "_index")
