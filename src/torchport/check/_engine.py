"""The checker's engine: one parse and one walk per file, rules dispatched by node type.

For every file the engine calls :func:`ast.parse` once and walks the tree once, iteratively,
children in :func:`ast.iter_child_nodes` order. At each node it runs the selected rules registered
for the node's exact type (a dispatch table built once per rule set), then does what
``ctx.enter(node)`` does (inlined: two calls per node were a tenth of the walk), walks the
children and does what ``ctx.leave(node)`` does. Expression contexts (``Load``/``Store``) and
operator nodes (``Add``, ``Eq`` ...) are not visited unless a rule asks for their type: they carry
no position and nearly halve the number of nodes. Leaves no rule wants (``Name``, most often) are
not pushed either: a third of what is left.

Nodes go only to the rules that can care about them: a call ``recv.attr(...)`` by ``attr``
(``c.L``, a compat module's torch ``load``: ``load`` too) and a bare ``name(...)`` by what
``name`` imports (its last part, ``load`` for ``from torch import load as ld``) and by ``name``
itself (``Rule.call_attrs``), or by its keywords' names (``Rule.call_keywords``), an attribute
``x.attr`` by ``attr`` (``Rule.attr_names``), a constant by its value (``Rule.constants``); when
every rule for constants lists its values, the walk skips the other constants as those leaves.

A rule on by default only in some contexts and not named by the run (``RuleSet.scoped``) is
not handed the nodes of the others (``_select.context_of``). A rule that names CUDA runs
where the code needs CUDA anyway, and a rule at a form a default run leaves out
(``_select.left_out_why``; project imports: at a finding), but what it finds there is only
counted (``CheckOutcome.held``), for the summary to say.

A rule that raises is a bug in torchport, not in the checked code: the engine records a
:class:`RuleFailure` naming the rule and the file, turns that rule off for the rest of the
file, and goes on (:func:`check_source` raises instead, so that rule tests see the
traceback). Applying fixes lives in ``_fix.py``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Collection, Iterable, Sequence

from torchport.check._context import Context
from torchport.check._dispatch import call_rules, constant_rules, named_rules
from torchport.check._file_settings import UNLIMITED, FileSettings
from torchport.check._nodes import children_getter, children_of
from torchport.check._noqa import NoqaMap, parse_noqa
from torchport.check._prefilter import absent_rules, port_gated, port_may_report
from torchport.check._records import field, record
from torchport.check._rule import Finding, Rule, finding_key, unique_findings
from torchport.check._select import (
    HELD,
    left_out_why,
    scoped_codes,
    select_rules,
    swapped_rules,
)
from torchport.check._syntax import kept_for, parse_source
from torchport.check._torch_api import within_target

_Codes = tuple[str, ...]
TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CheckOutcome", "RuleFailure", "RuleSet", "check_source", "check_text", "ruleset_for"]

# Node classes with no position that rules have no use for; skipped unless asked for.
_UNPOSITIONED: tuple[type[ast.AST], ...] = (
    ast.expr_context,
    ast.boolop,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
)
_COMPOUND: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
_LEAVE = object()  # stack marker: the innermost node on ctx.ancestors is finished
# Node classes with no child nodes: pushed only for a rule wanting their type (no ancestors lost).
_LEAVES: tuple[type[ast.AST], ...] = (
    ast.Name,
    ast.Constant,
    ast.alias,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Global,
    ast.Nonlocal,
)


@record(frozen=True)
class RuleFailure:
    """A rule raised while checking a file: a bug in torchport, reported, never fatal."""

    code: str
    name: str
    path: str
    line: int
    error: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: internal error in rule {self.code} ({self.name}): "
            f"{self.error}; this is a torchport bug, please report it "
            f"(skip it with --ignore {self.code})"
        )


class RuleSet:
    """Instances of the selected rules and the table that maps a node type to its rules."""

    def __init__(self, rules: Iterable[type[Rule]], scoped: Collection[str] = ()) -> None:
        self.classes: tuple[type[Rule], ...] = tuple(sorted(set(rules), key=lambda r: r.code))
        # codes reported only in their default contexts (on by default alone: _default_scope.py)
        self.scoped = frozenset(scoped)
        self.rules: tuple[Rule, ...] = tuple(cls() for cls in self.classes)
        dispatch: dict[type[ast.AST], list[Rule]] = {}
        for rule in self.rules:
            for node_type in rule.node_types:
                dispatch.setdefault(node_type, []).append(rule)
        self.dispatch: dict[type[ast.AST], tuple[Rule, ...]] = {
            node_type: tuple(found) for node_type, found in dispatch.items()
        }
        self.visit_unpositioned = any(issubclass(t, _UNPOSITIONED) for t in self.dispatch)
        # Constants go only to rules listing them, when all do: the others are leaves to skip.
        constant_rules = self.dispatch.get(ast.Constant, ())
        self.constants: frozenset[object] = frozenset()
        if constant_rules and all(rule.constants is not None for rule in constant_rules):
            self.constants = frozenset().union(*(rule.constants or () for rule in constant_rules))
        wanted = set(self.dispatch) - ({ast.Constant} if self.constants else set())
        # a rule for Load/Store needs the Name above each (its one unpositioned child)
        self.unvisited_leaves = frozenset(
            () if self.visit_unpositioned else (t for t in _LEAVES if t not in wanted)
        )
        self.codes = frozenset(cls.code for cls in self.classes)
        # keyword names that send a call to a rule whatever it calls (Rule.call_keywords)
        self.call_keywords: frozenset[str | None] = frozenset().union(
            *(r.call_keywords for r in self.dispatch.get(ast.Call, ()) if r.call_attrs is not None)
        )
        # filled by the walks, shared by every file this set checks
        self.by_callee: dict[object, tuple[Rule, ...] | None] = {}
        self.by_attr: dict[str, tuple[Rule, ...] | None] = {}
        self.fields_of: dict[type[ast.AST], tuple[Callable[[ast.AST], Any], bool, bool]] = {}
        self._lacking: dict[frozenset[str], RuleSet] = {}
        # The set this was cut from (lacking/without): its answers filtered, one walk learning names
        self._root: RuleSet | None = None
        self._instances: dict[str, Rule] = {rule.code: rule for rule in self.rules}

    def __len__(self) -> int:
        return len(self.rules)

    def without(self, codes: Collection[str]) -> RuleSet:
        """This set minus the rules whose code starts with one of ``codes``."""
        prefixes = tuple(codes)
        return self._cut(cls for cls in self.classes if not cls.code.startswith(prefixes))

    def lacking(self, codes: frozenset[str]) -> RuleSet:
        """This set minus the rules with exactly these codes (kept: files share them)."""
        found = self._lacking.get(codes)
        if found is None:
            found = self._lacking[codes] = self._cut(c for c in self.classes if c.code not in codes)
        return found

    def _cut(self, rules: Iterable[type[Rule]]) -> RuleSet:
        cut = RuleSet(rules, self.scoped)
        cut._root = self._root or self
        return cut

    def call_rules(self, callee: object) -> tuple[Rule, ...] | None:
        """``_dispatch.call_rules`` over this set's dispatch: for a set cut from another,
        the other's (kept) answer less the rules this set lacks, each this set's own.
        """
        root = self._root
        if root is None:
            return call_rules(self.dispatch, callee)
        found = root.by_callee.get(callee, _MISSING)
        if found is _MISSING:
            found = root.by_callee[callee] = call_rules(root.dispatch, callee)
        return self._mine(found)

    def named_rules(self, name: str) -> tuple[Rule, ...] | None:
        """``_dispatch.named_rules`` for attributes, as :meth:`call_rules` does it."""
        root = self._root
        if root is None:
            return named_rules(self.dispatch, ast.Attribute, name)
        found = root.by_attr.get(name, _MISSING)
        if found is _MISSING:
            found = root.by_attr[name] = named_rules(root.dispatch, ast.Attribute, name)
        return self._mine(found)

    def _mine(self, found: tuple[Rule, ...] | None) -> tuple[Rule, ...] | None:
        if found is None:
            return None
        mine = self._instances
        wanted = tuple(mine[rule.code] for rule in found if rule.code in mine)
        return wanted or None


@record()
class CheckOutcome:
    """What checking one source produced.

    ``held``: per code, the findings a default run leaves out as of low value there (the
    code needs CUDA anyway, or a form of the rule left out: ``_select.HELD``), counted so
    that the summary can say so rather than call such a file clean (``noqa`` applies first).
    """

    findings: list[Finding]
    failures: list[RuleFailure] = field(default_factory=list)
    noqa: NoqaMap | None = None  # the file's comments, and which of them silenced something
    held: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------- rule sets


@functools.lru_cache(maxsize=64)
def _cached_ruleset(
    select: _Codes | None, ignore: _Codes, pool: tuple[type[Rule], ...] | None, extend: _Codes
) -> RuleSet:
    rules = select_rules(select, ignore, extend, available=pool)
    return RuleSet(rules, scoped_codes(rules, select, extend))


def ruleset_for(
    select: Collection[str] | None, ignore: Collection[str] | None, extend: Collection[str] = ()
) -> RuleSet:
    """The (cached) rule set for these selectors over :func:`available_rules`."""
    chosen = None if select is None else tuple(select)
    return _cached_ruleset(chosen, tuple(ignore or ()), swapped_rules(), tuple(extend))


# ---------------------------------------------------------------- the walk


def _statement_span(node: ast.AST, ancestors: Sequence[ast.AST]) -> tuple[int, int] | None:
    """Lines of the innermost simple statement holding ``node`` (None inside a compound header)."""
    for candidate in (node, *reversed(ancestors)):
        if isinstance(candidate, ast.stmt):
            if isinstance(candidate, _COMPOUND):
                return None
            end = candidate.end_lineno or candidate.lineno
            return candidate.lineno, end
    return None


def _walk(
    tree: ast.Module, ctx: Context, ruleset: RuleSet, noqa: NoqaMap, *, strict: bool
) -> CheckOutcome:
    findings: list[Finding] = []
    failures: list[RuleFailure] = []
    held: list[Finding] = []  # left out as of low value there (_select.HELD): counted
    dispatch = ruleset.dispatch
    skip, fields_of = not ruleset.visit_unpositioned, ruleset.fields_of
    by_name: dict[Any, Any] = ruleset.by_callee  # callee (and keywords) -> the call rules
    keyword_names = ruleset.call_keywords
    tails = ctx.import_tails  # imported name -> its tail; an attribute's (`c.L`, `self.pack`):
    attr_tails = {**{k: v for k, v in ctx.attribute_alias_tails.items() if v}, **ctx.attr_tails}
    by_attr: dict[str, Any] = ruleset.by_attr  # attribute name -> the rules that want it
    leaves = ruleset.unvisited_leaves
    scoped = ruleset.scoped
    learn_call, learn_attr = ruleset.call_rules, ruleset.named_rules
    # the constants rules want, when they all say (the others are leaves to skip)
    wanted_class, wanted = (ast.Constant, ruleset.constants) if ruleset.constants else (None, ())
    # Context.enter/leave inlined (two calls per node are a tenth of the walk).
    ancestors = ctx.ancestors
    append_ancestor, pop_ancestor = ancestors.append, ancestors.pop
    node_class = ast.AST
    stack: list[Any] = [tree]  # nodes to visit, and a _LEAVE under the children of each
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is _LEAVE:
            pop_ancestor()
            continue
        cls = type(node)
        if cls is ast.Call:
            func = node.func
            callee: Any  # a name, (name, import tail), or None: every call rule
            if func.__class__ is ast.Attribute:
                callee = func.attr
                if attr_tails and callee in attr_tails:  # `c.L`, compat's torch `load`: "load"
                    callee = (callee, attr_tails[callee])
            elif func.__class__ is ast.Name:
                callee = func.id
                tail = tails.get(callee, callee)  # None: imported as different things
                if (aliases := ctx.alias_tails) and callee in aliases:  # `pack = nn....pack_...`
                    tail = aliases[callee] if tail in (callee, aliases[callee]) else None
                if tail != callee:
                    callee = None if tail is None else (callee, tail)
            else:
                callee = None
            if callee is None:
                rules = dispatch.get(cls)
            else:
                if keyword_names:  # the call's keywords some rule lists, if any
                    for kw in node.keywords:
                        if kw.arg in keyword_names:
                            callee = (
                                callee,
                                tuple(k.arg for k in node.keywords if k.arg in keyword_names),
                            )
                            break
                rules = by_name.get(callee, _MISSING)
                if rules is _MISSING:
                    rules = by_name[callee] = learn_call(callee)
        elif cls is ast.Attribute:
            rules = by_attr.get(node.attr, _MISSING)
            if rules is _MISSING:
                rules = by_attr[node.attr] = learn_attr(node.attr)
        elif cls is ast.Constant:
            rules = constant_rules(dispatch, node.value)
        else:
            rules = dispatch.get(cls)
        if rules is not None:
            for rule in rules:
                lazy = scoped and rule.code in scoped  # its project imports asked at a finding
                out = lazy and left_out_why(type(rule), ctx, node, follow=False)
                if out and out not in HELD:
                    continue  # a default run leaves this context to explicit selection
                try:
                    for finding in rule.check(node, ctx):
                        if lazy and not out:
                            out = left_out_why(type(rule), ctx, node)  # project imports too
                            if out and out not in HELD:
                                break  # in a def that never runs
                        if noqa:
                            first, last = finding.line, finding.end_line
                            span = _statement_span(node, ctx.ancestors)
                            if span is not None:
                                first, last = min(first, span[0]), max(last, span[1])
                            if noqa.silences(finding.code, first, last):
                                continue
                        (held if out else findings).append(finding)
                except Exception as exc:
                    line = getattr(node, "lineno", 1)
                    failure = RuleFailure(rule.code, rule.name, ctx.path, line, repr(exc))
                    if strict:
                        raise RuntimeError(str(failure)) from exc
                    failures.append(failure)
                    # The rule is broken for this file: stop calling it.
                    dispatch = {
                        t: tuple(r for r in rs if r is not rule) for t, rs in dispatch.items()
                    }
                    by_name, by_attr = {}, {}
                    learn_call = functools.partial(call_rules, dispatch)
                    learn_attr = functools.partial(named_rules, dispatch, ast.Attribute)
        push(_LEAVE)  # below the children: the node is finished when it comes back
        found = fields_of.get(cls)
        if found is None:
            found = fields_of[cls] = children_getter(cls, unpositioned=not skip)
        get_children, single, exact = found
        start = len(stack)
        try:  # the child fields' values, got at once
            children = (get_children(node),) if single else get_children(node)
        except AttributeError:  # a node built without some field: none there
            children = children_of(node, cls, unpositioned=not skip)
        for value in children:
            if value is None:
                continue
            if value.__class__ is list:
                for item in value:
                    if item is None:
                        continue
                    kind = item.__class__
                    if kind not in leaves:
                        if exact or isinstance(item, node_class):
                            push(item)
                    elif kind is wanted_class and item.value in wanted:
                        push(item)
            else:
                kind = value.__class__
                if kind not in leaves:
                    if exact or isinstance(value, node_class):
                        push(value)
                elif kind is wanted_class and value.value in wanted:
                    push(value)
        pushed = len(stack) - start
        if pushed:
            append_ancestor(node)  # for the rules at its children, popped at its _LEAVE
            if pushed > 1:
                stack[start:] = stack[: start - 1 : -1]
        else:
            pop()  # nothing below it to visit: finished already
    findings.sort(key=finding_key)
    outcome = CheckOutcome(unique_findings(findings), failures)
    if held:  # counted as the listed are: each distinct finding once
        held.sort(key=finding_key)
        for finding in unique_findings(held):
            outcome.held[finding.code] = outcome.held.get(finding.code, 0) + 1
    return outcome


_MISSING: Any = object()


def check_tree(
    source: str,
    path: str,
    tree: ast.Module,
    ruleset: RuleSet,
    *,
    strict: bool = False,
    settings: FileSettings = UNLIMITED,
    prefilter: bool = True,
) -> CheckOutcome:
    """Run ``ruleset`` over an already parsed ``tree`` of ``source``.

    ``settings``: the file's target torch (fixes that write an API it lacks are
    dropped, the finding kept) and whether other tools' file-wide noqa counts.
    ``prefilter``: skip the rules the text (or the port's file gate) shows cannot report
    here (``_prefilter.py``; the same findings: False is for the tests that hold it so).
    """
    if not ruleset.rules:
        return CheckOutcome([])
    if prefilter:
        absent = absent_rules(source, ruleset.codes)
        if absent:
            ruleset = ruleset.lacking(absent)
            if not ruleset.rules:
                return CheckOutcome([])
    noqa = parse_noqa(source, foreign=settings.respect_foreign_noqa)
    if noqa.file_codes is None:
        return CheckOutcome([])
    if noqa.file_codes:
        ruleset = ruleset.without(noqa.file_codes)
    if kept_for(tree) is None:  # (nothing another pass built on this parse: most files)
        ctx = Context(source, path, tree, target_torch=settings.target_torch)
    else:  # a project view's Context of it, taken (check/_file_context.py)
        from torchport.check._file_context import file_context

        ctx = file_context(source, path, tree, settings.target_torch)
    try:
        gated = prefilter and port_gated(ruleset.codes) and not port_may_report(ctx)
        outcome = CheckOutcome([]) if gated else _walk(tree, ctx, ruleset, noqa, strict=strict)
    finally:
        ctx.release()  # no analysis garbage left for the collector
    if settings.target_torch is not None:
        outcome.findings = within_target(outcome.findings, source, settings.target_torch)
    outcome.noqa = noqa
    return outcome


def check_text(
    source: str,
    path: str,
    ruleset: RuleSet,
    *,
    strict: bool = False,
    settings: FileSettings = UNLIMITED,
    prefilter: bool = True,
) -> CheckOutcome:
    """Parse ``source`` once and run ``ruleset`` over it.

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    tree = parse_source(source, path)
    return check_tree(
        source, path, tree, ruleset, strict=strict, settings=settings, prefilter=prefilter
    )


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Collection[str] | None = None,
    ignore: Collection[str] | None = None,
    extend_select: Collection[str] = (),
) -> list[Finding]:
    """Check one source text with the selected rules (default: every default rule).

    ``extend_select`` adds rules to the selection, as ``--extend-select`` does.

    Findings come sorted by (line, col, code); ``# noqa`` comments are honoured.

    Raises:
        SyntaxError: ``source`` does not parse.
        ConfigError: a selector matches no rule.
        RuntimeError: a rule raised (a torchport bug; the message names the rule).
    """
    rules = ruleset_for(select, ignore, extend_select)
    return check_text(source, path, rules, strict=True).findings
