r'''What a checker rule is: its metadata, its examples, and what it reports.

A rule is a class in its own file under ``check/rules/``, named after the rule.
The engine parses a file once, walks the tree once, and hands each node whose
type is in a rule's ``node_types`` to that rule's :meth:`Rule.check`, together
with the :class:`~torchport.check._context.Context` of the walk (where we are,
what names are bound, how to build edits). A rule yields :class:`Finding`
objects; a finding may carry a :class:`Fix`, which is a set of text edits at
character offsets into the original source (Ruff's model: formatting and
comments elsewhere are untouched, and no second parser is needed).

Example of a complete rule, as a file ``check/rules/empty_cache_in_loop.py`` (then
add its entry to ``check/_catalog.py``, which ``tests/check/test_catalog.py`` prints;
pick a free code).
``tests/check/test_rule_doc_example.py`` runs this very text on its examples and
holds it to the contract of ``tests/check/test_rule_contract.py``::

    from __future__ import annotations

    import ast
    from collections.abc import Iterator

    from torchport.check._context import Context
    from torchport.check._rule import Example, Finding, Intent, Rule


    class EmptyCacheInLoop(Rule):
        """## What it does
        Finds `torch.cuda.empty_cache()` called inside a loop.

        ## Why is this bad?
        Each call hands cached blocks back to the driver, and the next iteration
        asks for them again: allocations get slower and no memory is saved.
        """

        code = "TP299"
        name = "empty-cache-in-loop"
        intent = Intent.SPEED
        message = "call `torch.cuda.empty_cache()` once after the loop, if at all"
        node_types = (ast.Call,)
        call_attrs = frozenset({"empty_cache"})  # the engine hands only these calls over
        valid = ("import torch\n\nfor x in xs:\n    step(x)\ntorch.cuda.empty_cache()\n",)
        invalid = (
            Example("import torch\n\nfor x in xs:\n    step(x)\n    torch.cuda.empty_cache()\n"),
        )

        def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
            assert isinstance(node, ast.Call)
            if ctx.qualname(node.func) == "torch.cuda.empty_cache" and ctx.in_loop(node):
                yield ctx.finding(self, node)

This module imports nothing but the standard library.
'''

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator

from torchport.check._edit import NO_FIX, Edit
from torchport.check._records import record

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import ClassVar

    from torchport.check._context import Context

__all__ = [
    "NO_FIX",
    "Edit",
    "Example",
    "Finding",
    "Fix",
    "FixSafety",
    "Intent",
    "Rule",
    "finding_key",
    "unique_findings",
]

_SHIPPED = "torchport.check.rules."


class FixSafety(enum.Enum):
    """Whether a rule's fix may change what the program does."""

    NONE = "none"  # the rule offers no fix
    SAFE = "safe"  # applied by `torchport fix`
    UNSAFE = "unsafe"  # applied only by `torchport fix --unsafe`


class Intent(enum.Enum):
    """What a rule's finding is about; decides which fixes a plain ``torchport fix`` applies.

    A plain ``fix`` applies the fixes of DEVICE and SAFETY rules. SPEED fixes
    change how fast data moves, not whether the program runs: they are applied
    only when the user selects those rules explicitly (``--select`` or config
    ``select``) or passes ``fix --speed``. PORT rules (TP5xx) are off by default
    and run under ``torchport port``.
    """

    DEVICE = "device"  # runs on any accelerator: TP1xx/TP4xx portability and correctness
    SPEED = "speed"  # transfer and sync speed: non_blocking, pin_memory, syncs in loops
    SAFETY = "safety"  # loading security: torch.load and pickle
    PORT = "port"  # CPU-only code -> accelerator (TP5xx), run by `torchport port`


@record(frozen=True)
class Fix:
    """The edits that fix one finding; applied together or not at all.

    ``changes`` says, for a fix that may change the program's results, what
    changes (``"reseeds the CPU generator too"``); renderers show it beside the
    finding so that nobody applies it unawares. Empty for fixes that keep results.
    """

    edits: tuple[Edit, ...]
    safety: FixSafety
    changes: str = ""


@record(frozen=True)
class Finding:
    """One problem at one place. Lines are 1-based; columns are 1-based characters."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    code: str
    name: str
    message: str
    fix: Fix | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


def finding_key(finding: Finding) -> tuple[int, int, str, int, int, str]:
    """The order a file's findings come in: position, code, end, message."""
    return (
        finding.line,
        finding.col,
        finding.code,
        finding.end_line,
        finding.end_col,
        finding.message,
    )


def unique_findings(findings: list[Finding]) -> list[Finding]:
    """``list(dict.fromkeys(findings))`` of findings sorted by :func:`finding_key`.

    Equal findings have equal keys, so they sit in one run of equal keys: each run is
    made unique on its own (first kept), with no dict of every finding of the file
    (a file's last peak of memory: tree, scope map and findings all alive).
    """
    out: list[Finding] = []
    run: list[Finding] = []
    run_key: tuple[int, int, str, int, int, str] | None = None
    for finding in findings:
        key = finding_key(finding)
        if key != run_key:
            run_key, run = key, [finding]
            out.append(finding)
        elif finding not in run:
            run.append(finding)
            out.append(finding)
    return out


@record(frozen=True)
class Example:
    """An invalid example: ``source`` must be reported by the rule.

    ``fixed`` is the expected source after the rule's fix (``None`` when the rule
    has no fix or this example is reported but left alone). ``count`` is how many
    findings of this rule the example holds.
    """

    source: str
    fixed: str | None = None
    count: int = 1


class Rule:
    """Base class of every checker rule; subclasses set the class attributes and ``check``.

    The class docstring is the rule's documentation and must contain the headings
    "What it does", "Why is this bad?" and, for unsafe fixes, "Fix safety".
    """

    # "TP101": TP1xx placement, TP2xx transfers/syncs, TP3xx loading, TP4xx APIs, TP9xx noisy
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case name of the bad pattern, e.g. "hard-coded-cuda"
    message: ClassVar[str]  # what to do instead, not only what is wrong
    fix_safety: ClassVar[FixSafety] = FixSafety.NONE
    default: ClassVar[bool] = True  # False: run only when selected (TP9xx, TP5xx, low precision)
    # Where a default run reports it: "code", "test", "bench" (check/_default_scope.py); a selected
    # rule runs everywhere. The judged precision of each context decides
    # (tests/check/test_default_scope.py).
    default_contexts: ClassVar[frozenset[str]] = frozenset({"code", "test", "bench"})
    intent: ClassVar[Intent] = Intent.DEVICE  # which `fix` applies it; see Intent
    node_types: ClassVar[tuple[type[ast.AST], ...]]
    # For rules that look at ``ast.Call``: the callee names whose calls can concern
    # the rule, or None for every call. The engine hands the rule ``recv.NAME(...)``
    # and a bare ``NAME(...)`` when ``NAME`` is listed, and a bare ``alias(...)``
    # when the last part of what ``alias`` imports is (``load`` for
    # ``from torch import load as ld``): one dict lookup per call instead of one
    # generator per rule. A bare ``name(...)`` whose import ends in another name reaches
    # the rule when either is listed (a rule may test ``name`` itself: ``DDP``). Calls
    # of anything else (``f()(x)``, ``fs[0](x)``) and other node types always reach it.
    call_attrs: ClassVar[frozenset[str] | None] = None
    # With ``call_attrs`` set: the keyword names (None for a ``**`` unpacking) whose
    # calls reach the rule too, whatever they call (``f(x, device="cuda")``).
    call_keywords: ClassVar[frozenset[str | None]] = frozenset()
    # The same for rules that look at ``ast.Attribute`` (``x.NAME``, by ``NAME``) and
    # at ``ast.Constant`` (by value): None for every one. When every rule for
    # constants lists its values, the walk skips all other constants.
    attr_names: ClassVar[frozenset[str] | None] = None
    constants: ClassVar[frozenset[object] | None] = None
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()

    # Every shipped rule (a class defined under torchport.check.rules), by code;
    # filled by __init_subclass__. Rules defined elsewhere (tests, plugins in the
    # making) stay out, so they cannot collide with or leak into the shipped set.
    registry: ClassVar[dict[str, type[Rule]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is not None and cls.__module__.startswith(_SHIPPED):
            if code in Rule.registry and Rule.registry[code] is not cls:
                other = Rule.registry[code]
                raise TypeError(f"rule code {code} is defined twice: {other} and {cls}")
            Rule.registry[code] = cls

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        """Yield the findings of this rule at ``node`` (one of ``node_types``)."""
        raise NotImplementedError
        yield  # pragma: no cover  (makes this a generator for type checkers)
