"""Which rules run: resolving codes, prefixes and ``ALL`` against the available rules.

``select=None`` means the default rules (``default = True``; the noisy TP9xx are
off). The most specific selector wins, and a tie goes to ``ignore``, as in Ruff.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Collection, Iterable, Sequence

from torchport.check._context import Context
from torchport.check._rule import FixSafety, Intent, Rule
from torchport.errors import ConfigError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

    class _Selectable(Protocol):
        """What the selection reads of a rule (a class, or the catalog's entry of one)."""

        @property
        def code(self) -> str: ...
        @property
        def default(self) -> bool: ...

    _T = TypeVar("_T", bound=_Selectable)

__all__ = [
    "BENCH",
    "CODE",
    "CONTEXTS",
    "CUDA_NAMING",
    "HELD",
    "LEFT_FORMS",
    "NEEDS_CUDA",
    "ONLY_FORMS",
    "TEST",
    "available_codes",
    "available_rules",
    "context_of",
    "default_reports",
    "fix_command",
    "fixable_rules",
    "in_a_benchmark",
    "left_out_why",
    "normalise_selectors",
    "scoped_codes",
    "select_rules",
    "swapped_rules",
]

# The contexts a finding is in, for the default scope (check/_default_scope.py holds the
# policy and its judged figures; what a run needs of it lives here, loaded by every check)
CODE, TEST, BENCH = "code", "test", "bench"
CONTEXTS = frozenset({CODE, TEST, BENCH})

# Benchmark code: a file under a folder of these names (any folder of the path as given, as
# for test folders), or named ``bench.py``, ``bench_*``, ``*_bench``, ``benchmark*``,
# ``*_benchmark`` (``-`` also separates). What real repositories use: ``benchmarks/``
# (xformers, flash-attention, fairscale, kornia, mamba, kymatio's asv), ``bench/``,
# ``benches/``, ``benchmarking/``; ``bench_*.py`` (rl_games), ``benchmark_*.py``
# (flash-attention, xformers), ``*_benchmark.py`` (llm-awq), ``*_bench.py``
# (flash-attention's ``clc_bench.py``), ``*-benchmark.py`` (torchani's tools). Not a
# ``benchmark/`` folder: PARL keeps its algorithms' training programs there (judged real in
# sample A) and PyG its accuracy reproductions (``benchmark/citation/``) beside its timings.
_BENCH_FOLDERS = frozenset({"bench", "benches", "benchmarks", "benchmarking"})
_BENCH_HEADS = ("bench_", "bench-", "benchmark")
_BENCH_TAILS = ("_bench", "-bench", "_benchmark", "-benchmark")

# Rules whose finding is "CUDA is named where another accelerator would do": a default run
# leaves them out of code that needs CUDA anyway (rules/_cuda_projects.py: it reaches a
# CUDA-only engine of its own or a CUDA-only package), where what they say is correct but
# of low value (sample R: 61 of TP101's 82 rows); a rule the run names reports there too.
CUDA_NAMING = frozenset(
    {
        *("TP101", "TP102", "TP103", "TP109", "TP110", "TP111", "TP113", "TP115", "TP116"),
        *("TP104", "TP119", "TP401", "TP402", "TP403", "TP404", "TP406", "TP407", "TP408"),
    }
)

# why a default run leaves a rule out at a node (left_out_why)
OUT_OF_CONTEXT, NEVER_RUNS = "out of context", "never runs"
NEEDS_CUDA, LOW_VALUE_FORM = "needs CUDA", "a form of low value"
OUTSIDE_FORMS = "outside the forms a default run reports"
HELD = (NEEDS_CUDA, LOW_VALUE_FORM)  # those whose findings a default run counts (its summary)


# Forms of a rule a default run leaves out, by the node the rule is handed (a run naming the rule
# reports them): TP101's CUDA default of a parameter (`def f(device="cuda")`, ast.arguments) and
# CUDA value of a settings dict (`{"device": "cuda"}`, ast.Dict). Judged mostly not real and
# found at no held-out recall site (check/_default_scope.py, KEPT_ON's TP101 reason, states the
# figures; benchmarks/RESULTS.md, branch a34ak).
LEFT_FORMS: dict[str, tuple[type[ast.AST], ...]] = {"TP101": (ast.arguments, ast.Dict)}


# Rules a default run reports in one form only (a run naming the rule reports every form), by
# the module and function that tell it: TP301's loads of a model's saved state in code naming a
# device (`rules/_model_state_loads`: judged 86 of 92 real, the rule's other loads 43 of 73;
# benchmarks/RESULTS.md, branch r34al). Not counted in a run's summary: the rest was off before.
ONLY_FORMS: dict[str, tuple[str, str]] = {
    "TP301": ("torchport.check.rules._model_state_loads", "restores_model_state"),
}
_FORM_TESTS: dict[str, Callable[[ast.AST, Context], bool]] = {}


def _in_only_form(code: str, ctx: Context, node: ast.AST) -> bool:
    """Whether ``node`` is the form of rule ``code`` a default run reports (:data:`ONLY_FORMS`)."""
    test = _FORM_TESTS.get(code)
    if test is None:  # imported on first use: a rule's own module, off the start-up path
        import importlib

        module, name = ONLY_FORMS[code]
        test = _FORM_TESTS[code] = getattr(importlib.import_module(module), name)
    return test(node, ctx)


def _left_form(code: str, ctx: Context, node: ast.AST) -> bool:
    """Whether ``node`` is a form of rule ``code`` a default run leaves out: its node type, or a
    parameter's default spelled ``torch.device(...)`` (``def f(device=torch.device("cuda"))``;
    not another call, which Python runs when the ``def`` runs, used or not)."""
    forms = LEFT_FORMS[code]
    if isinstance(node, forms):
        return True
    return (
        ast.arguments in forms
        and isinstance(node, ast.Call)
        and isinstance(ctx.parent, ast.arguments)
        and ctx.qualname(node.func) == "torch.device"
    )


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _specificity(selectors: Iterable[str], code: str) -> int | None:
    """How specific the most specific selector that matches ``code`` is (``ALL`` = 0)."""
    best: int | None = None
    for selector in selectors:
        if _matches(selector, code):
            spec = 0 if selector == "ALL" else len(selector)
            best = spec if best is None else max(best, spec)
    return best


def normalise_selectors(
    selectors: Iterable[str] | None, known: Sequence[str], what: str
) -> list[str]:
    out: list[str] = []
    for raw in selectors or ():
        selector = raw.strip().upper()
        if not selector:
            continue
        if selector != "ALL" and not any(code.startswith(selector) for code in known):
            import difflib  # the error path alone

            close = difflib.get_close_matches(selector, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown rule selector {raw!r} in {what}: it matches no rule code{hint} "
                f"(use a code such as TP101, a prefix such as TP1, or ALL; "
                f"`torchport check --explain CODE` describes one)"
            )
        out.append(selector)
    return out


def swapped_rules() -> tuple[type[Rule], ...] | None:
    """The rules a test swapped into ``torchport.check.rules.RULES``; None: the shipped ones."""
    loaded = vars(sys.modules.get("torchport.check.rules", sys))
    swapped: tuple[type[Rule], ...] | None = loaded.get("RULES")
    if swapped is not None and swapped is not loaded.get("SHIPPED"):
        return tuple(swapped)
    return None


def available_rules() -> tuple[type[Rule], ...]:
    """The rules torchport ships, as the catalog's stand-ins (no rule module imported).

    A test that swaps ``torchport.check.rules.RULES`` for its own rules gets those
    (read at call time); otherwise each stand-in imports its rule on first use.
    """
    swapped = swapped_rules()
    if swapped is not None:
        return swapped
    # Imported here: the catalog imports the engine's parts, which import this module.
    from torchport.check._catalog import shipped_rules

    return shipped_rules()


def available_codes() -> tuple[str, ...]:
    """The codes of :func:`available_rules`, sorted, read without making the stand-ins."""
    swapped = swapped_rules()
    if swapped is not None:
        return tuple(sorted(rule.code for rule in swapped))
    from torchport.check._catalog import ENTRIES

    return tuple(sorted(entry.code for entry in ENTRIES))


def select_rules(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    *,
    available: Sequence[type[Rule]] | None = None,
    origin: str = "the selection",
) -> tuple[type[Rule], ...]:
    """Resolve code/prefix/``ALL`` selectors to rule classes, the most specific selector winning.

    ``select=None`` means the default rules (``default = True``). A rule is on when
    the most specific selector in ``select`` + ``extend_select`` that matches it is
    more specific than the most specific match in ``ignore`` (a tie ignores it), so
    ``select=["TP1"], ignore=["TP101"]`` runs TP1xx but TP101, and
    ``ignore=["TP1"], extend_select=["TP101"]`` runs TP101.

    Raises:
        ConfigError: a selector that matches no rule (naming it and close matches).
    """
    pool = available if available is not None else swapped_rules()
    if pool is None:  # the shipped rules: chosen by the catalog's entries, their codes
        # and defaults, so that only the chosen rules' stand-ins are made
        from torchport.check._catalog import ENTRIES, stand_in

        chosen = _chosen(ENTRIES, select, ignore, extend_select, origin)
        return tuple(stand_in(entry) for entry in chosen)
    return tuple(_chosen(tuple(pool), select, ignore, extend_select, origin))


def _chosen(
    pool: Sequence[_T],
    select: Iterable[str] | None,
    ignore: Iterable[str] | None,
    extend_select: Iterable[str] | None,
    origin: str,
) -> list[_T]:
    """:func:`select_rules` over ``pool`` (rules or catalog entries), sorted by code."""
    known = sorted(cls.code for cls in pool)
    chosen_select = None if select is None else normalise_selectors(select, known, origin)
    extend = normalise_selectors(extend_select, known, origin)
    ignored = normalise_selectors(ignore, known, origin)
    out: list[_T] = []
    for cls in pool:
        if chosen_select is None:
            on = -1 if cls.default else None
        else:
            on = _specificity(chosen_select, cls.code)
        more = _specificity(extend, cls.code)
        if more is not None and (on is None or more > on):
            on = more
        if on is None:
            continue
        off = _specificity(ignored, cls.code)
        if off is None or on > off:
            out.append(cls)
    return sorted(out, key=lambda cls: cls.code)


def fixable_rules(
    rules: Sequence[type[Rule]], *, explicit: Iterable[str] = (), speed: bool = False
) -> tuple[type[Rule], ...]:
    """The rules among ``rules`` whose fixes a ``torchport fix`` applies.

    DEVICE and SAFETY fixes always (unsafe ones still need ``--unsafe``). SPEED
    fixes change how fast data moves, not whether the program runs, and are not
    mixed into a fix the user did not ask for: they apply with ``speed=True``
    (``fix --speed``) or when a selector in ``explicit`` (what the user wrote in
    ``--select``/``--extend-select`` or the config's ``select``/``extend-select``)
    names the rule by its code or a prefix; ``ALL`` and ``TP`` do not count.
    PORT fixes apply whenever the rule runs (only ``torchport port`` selects them).
    """
    chosen = [s.strip().upper() for s in explicit]
    chosen = [s for s in chosen if s not in ("ALL", "TP", "")]
    return tuple(
        rule
        for rule in rules
        if rule.intent is not Intent.SPEED or speed or any(rule.code.startswith(s) for s in chosen)
    )


def fix_command(rule: type[Rule], *, some_safe: bool = False) -> str:
    """The command that applies ``rule``'s fix, as :func:`fixable_rules` and ``--unsafe`` decide.

    One sentence for ``--explain`` (and anything else that tells users how a
    fix applies), so the words cannot drift from the behaviour. ``some_safe``:
    an unsafe rule that also offers safe fixes (``.cuda()`` is safe to rewrite,
    ``.cuda(1)`` is not), which the command without ``--unsafe`` applies.
    """
    if rule.fix_safety is FixSafety.NONE:
        return "no automatic fix"
    if rule.intent is Intent.PORT:
        return "`torchport port` applies it"  # the port applies its fixes, unsafe ones too
    # (a rule a default run reports in one form only: the run that names it fixes every form)
    selected = "" if rule.default and rule.code not in ONLY_FORMS else f" --select {rule.code}"
    commands = [f"torchport fix{selected}"]
    if rule.intent is Intent.SPEED:
        commands = [f"torchport fix --speed{selected}", f"torchport fix --select {rule.code}"]
    if rule.fix_safety is FixSafety.SAFE:
        return " or ".join(f"`{c}`" for c in commands) + " applies it"
    forced = " or ".join(f"`{c} --unsafe`" for c in commands)
    if some_safe:
        plain = " or ".join(f"`{c}`" for c in commands)
        return f"{plain} applies its safe fixes, {forced} the others too"
    return f"{forced} applies it"


def in_a_benchmark(path: str) -> bool:
    """Whether the file at ``path`` is benchmark code by its folders or its name (see above)."""
    *folders, name = path.replace("\\", "/").lower().split("/")
    if any(folder in _BENCH_FOLDERS for folder in folders):
        return True
    stem = name.rpartition(".")[0] or name
    return stem == "bench" or stem.startswith(_BENCH_HEADS) or stem.endswith(_BENCH_TAILS)


def context_of(ctx: Context) -> str:
    """The context of the node being checked: ``"test"``, ``"bench"`` or ``"code"``.

    Test code as ``rules/_test_code.collected_by_a_test_runner`` tells it, first (a test
    under ``benchmarks/`` is a test); then benchmark code (:func:`in_a_benchmark`).
    """
    if not _RUNNER:  # imported on first use, then kept (asked per node and scoped rule)
        from torchport.check.rules._test_code import collected_by_a_test_runner

        _RUNNER.append(collected_by_a_test_runner)
    if _RUNNER[0](ctx):
        return TEST
    bench = ctx.memo.get(_BENCH)
    if bench is None:  # the path's answer, once per file (asked per node and scoped rule)
        bench = ctx.memo[_BENCH] = in_a_benchmark(ctx.path)
    return BENCH if bench else CODE


_RUNNER: list[Callable[[Context], bool]] = []
_BENCH = "select.in_a_benchmark"  # Context.memo's key


def default_reports(
    rule: type[Rule], ctx: Context, node: ast.AST | None = None, *, follow: bool = True
) -> bool:
    """Whether a default run reports ``rule`` at the node being checked (``node``): the node
    is in one of the rule's default contexts, is not a form of the rule a default run leaves
    out (:data:`LEFT_FORMS`), and not in a method a later ``def`` of its class replaces
    (``rules/_shadowed_defs``: it never runs), and, for a rule of :data:`CUDA_NAMING`, it
    does not need CUDA anyway (:func:`left_out_why`).

    ``follow=False``: all but the last, which resolves the file's imports: the engine asks
    that first, and the whole question only of a finding about to be reported (a file's
    imports are worth resolving only where a finding is at stake, not for every node a
    rule is handed)."""
    return not left_out_why(rule, ctx, node, follow=follow)


def left_out_why(
    rule: type[Rule], ctx: Context, node: ast.AST | None = None, *, follow: bool = True
) -> str:
    """Why a default run leaves ``rule`` out at the node being checked, or ``""`` where it
    reports it (:func:`default_reports`, ``follow`` as there).

    :data:`OUT_OF_CONTEXT`: the node is in none of the rule's default contexts;
    :data:`LOW_VALUE_FORM`: it is a form of the rule a default run leaves out
    (:data:`LEFT_FORMS`); :data:`OUTSIDE_FORMS`: the rule is reported by a default run in
    one form only (:data:`ONLY_FORMS`) and the node is not of it;
    :data:`NEVER_RUNS`: it is in a method a later ``def`` of its class replaces;
    :data:`NEEDS_CUDA`: the rule is of :data:`CUDA_NAMING` and the code there needs CUDA
    anyway (``rules/_cuda_projects.needs_cuda_here``: its file, or a block holding it,
    imports a CUDA-only package or extension, or it is in a test class run only once such an
    import succeeded; or its file surely imports a module of its own project that needs CUDA
    anyway, ``rules/_cuda_imports.imports_cuda_module``; or the function holding it, or the
    script's run it is part of, surely loads a model with FlashAttention,
    ``rules/_flash_attention``). A run's summary counts the findings left out for the
    reasons of :data:`HELD` (``CheckOutcome.held``): correct findings of low value there,
    which a default run does not list but never hides."""
    if rule.default_contexts != CONTEXTS and context_of(ctx) not in rule.default_contexts:
        return OUT_OF_CONTEXT
    if node is not None and rule.code in LEFT_FORMS and _left_form(rule.code, ctx, node):
        return LOW_VALUE_FORM
    if node is not None and rule.code in ONLY_FORMS and not _in_only_form(rule.code, ctx, node):
        return OUTSIDE_FORMS
    # (each module below is imported only where its file can hold what it looks for)
    if follow and node is not None and "class " in ctx.source and ctx.source.count("def ") > 1:
        from torchport.check.rules._shadowed_defs import in_a_shadowed_def  # on first use

        if in_a_shadowed_def(ctx, node):
            return NEVER_RUNS
    if rule.code not in CUDA_NAMING:
        return ""
    from torchport.check.rules._cuda_projects import needs_cuda_here  # on first use

    if needs_cuda_here(ctx, node):
        return NEEDS_CUDA
    if not follow:
        return ""
    if "flash_attention_" in ctx.source:
        from torchport.check.rules._flash_attention import surely_loads_flash_attention

        if surely_loads_flash_attention(ctx, node):
            return NEEDS_CUDA  # the code there surely loads a model with FlashAttention
    from torchport.check.rules._own_extensions import may_import_local

    if not may_import_local(ctx):  # a look with os.path before the project view is loaded
        return ""
    from torchport.check.rules._cuda_imports import imports_cuda_module

    return NEEDS_CUDA if imports_cuda_module(ctx) else ""


def scoped_codes(
    rules: Iterable[type[Rule]],
    select: Collection[str] | None,
    extend_select: Collection[str] = (),
) -> tuple[str, ...]:
    """The codes of ``rules`` a run reports only where :func:`default_reports` says.

    Those on by the default selection alone (``select`` is None and no
    ``extend_select`` selector names them) whose default contexts are not all, or
    that are of :data:`CUDA_NAMING`, :data:`LEFT_FORMS` or :data:`ONLY_FORMS`.
    """
    if select is not None:
        return ()
    named = [s.strip().upper() for s in extend_select]
    return tuple(
        sorted(
            rule.code
            for rule in rules
            if (
                rule.default_contexts != CONTEXTS
                or rule.code in CUDA_NAMING
                or rule.code in LEFT_FORMS
                or rule.code in ONLY_FORMS
            )
            and not any(s == "ALL" or (s and rule.code.startswith(s)) for s in named)
        )
    )
