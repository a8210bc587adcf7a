"""Where a rule runs when nobody selected it: its default contexts, and the policy behind them.

A finding is in one of three contexts: ``test`` (test code, as the checker tells it everywhere,
``rules/_test_code.collected_by_a_test_runner``: a test folder or module, a test
function, class or fixture), ``bench`` (benchmark code that is not a test:
``_select.in_a_benchmark``, a ``benchmarks``/``bench``/... folder or a ``bench_*``/
``*_benchmark``/... file: a benchmark measures the device it was written for) or ``code``
(everything else). Each rule says in
which of them a default run reports it (``Rule.default_contexts``, mirrored in
the catalog). The policy, held by ``tests/check/test_default_scope.py`` against the
judged samples (``benchmarks/data/precision_sample*.csv``, every row judged under the
standard written in benchmarks/precision_standard.md, and the contexts of their rows,
``benchmarks/data/precision_scope.csv``): a rule is on by default in a
context only where at least 90% of its judged findings there are real problems;
with fewer than 8 judged there, only if every one is; and never in test or benchmark
code alone. A rule whose judged findings in other code reach the bar is on there, unless
left off by decision (:data:`LEFT_OFF`): an off rule's page says it is under the bar. The
figures are :data:`JUDGED` (``benchmarks/bench_precision_sample.py --scope`` writes the
rows; the test recomputes these from them), over samples :data:`SAMPLES` in every context
(:data:`BENCH_SAMPLES` is the same span); U-Y were drawn and judged as held-out
measurements before they joined the pool, and V is two uniform draws on one set of
repositories, V and V2 (the findings TP109 and TP401 added there when they went on).

A rule may stay on below the bar only where its figure reaches the bar in a context a rule
of code narrows (:data:`KEPT_ON`, each with its reason, held by the same test): the rules
that name CUDA (``_select.CUDA_NAMING``) are left by a default run out of code that needs
CUDA anyway (``rules/_cuda_projects.py``: a module importing a CUDA-only package or its
project's own CUDA-only extension, compiling CUDA sources, or calling apex's
``amp.initialize``/``DistributedDataParallel`` on every run, or surely importing a module of
its project that does one of these; code after such an import or call in a block holding
it), so what a default run reports of them is their judged findings in other code outside
such code (:data:`NARROWED`, from the ``cuda`` column of
``precision_scope.csv``). Every other rule
under the bar is off by default and its page says so with its figure, save one kept on
by decision (a :data:`KEPT_ON` entry with no :data:`NARROWED` figure): TP101, hard-coded
CUDA, is the first thing a port changes, and off it left a plain ``check`` of a ``.cuda()``
script printing "All checks passed." (the silent empty report issue 34 names) and default
recall of held-out port commits at 0 of 32 (round 5e). Its reason states its figures.
:data:`JUDGED` counts rows a rule reports when named, so that scope does not change it.

A rule a run names (``--select TP101``, a prefix, ``ALL``, ``--extend-select``,
the config's ``select``) runs in every context: the scope is the default's, not
the rule's.
"""

from __future__ import annotations

from torchport.check._select import BENCH, TEST

__all__ = [
    "BAR",
    "BENCH_SAMPLES",
    "FEW",
    "JUDGED",
    "KEPT_ON",
    "LEFT_OFF",
    "NARROWED",
    "SAMPLES",
    "judged_sentence",
]

SAMPLES = "A-Y"  # the judged samples pooled (benchmarks/RESULTS.md)
BENCH_SAMPLES = "A-Y"  # the same for benchmark code (the "bench" context)
BAR, FEW = 0.9, 8  # the share of real findings a default context needs; "too few judged"

# Judged findings per rule and context over the pooled samples (benchmark code: BENCH_SAMPLES),
# counting only what the rules still report: (real, judged). Written from
# benchmarks/data/precision_scope.csv; tests/check/test_default_scope.py recomputes it and
# fails when it differs.
JUDGED: dict[str, dict[str, tuple[int, int]]] = {
    "TP101": {"code": (651, 907), "test": (47, 87), "bench": (0, 31)},
    "TP102": {"code": (17, 20), "bench": (0, 3)},
    "TP103": {"code": (16, 23)},
    "TP104": {"code": (12, 22), "test": (1, 4)},
    "TP105": {"code": (12, 12)},
    "TP106": {"code": (156, 177), "test": (0, 3), "bench": (0, 4)},
    "TP107": {"code": (2, 2), "test": (1, 1), "bench": (1, 1)},
    "TP108": {"code": (9, 17), "bench": (2, 2)},
    "TP109": {"code": (282, 312), "bench": (6, 10)},
    "TP110": {"code": (31, 33)},
    "TP111": {"code": (10, 18)},
    "TP112": {"code": (0, 6)},
    "TP113": {"code": (20, 23), "bench": (0, 26)},
    "TP114": {"test": (0, 1)},
    "TP115": {"code": (19, 21), "bench": (0, 1)},
    "TP116": {"code": (5, 6)},
    "TP201": {"code": (0, 2)},
    "TP202": {"code": (140, 173), "test": (0, 1), "bench": (1, 1)},
    "TP203": {"code": (127, 130), "test": (0, 3), "bench": (3, 3)},
    "TP301": {"code": (132, 165), "test": (0, 1), "bench": (0, 5)},
    "TP302": {"code": (6, 8)},
    "TP303": {"code": (14, 18)},
    "TP304": {"code": (0, 1)},
    "TP305": {"code": (0, 1)},
    "TP307": {"code": (32, 44), "test": (1, 1)},
    "TP308": {"code": (8, 9)},
    "TP309": {"code": (6, 6), "test": (0, 1)},
    "TP401": {"code": (74, 118), "test": (0, 1), "bench": (1, 5)},
    "TP402": {"test": (0, 1)},
    "TP403": {"code": (54, 78), "test": (0, 2)},
    "TP404": {"code": (17, 20), "test": (7, 10)},
    "TP405": {"code": (29, 37)},
    "TP406": {"code": (16, 19), "bench": (0, 1)},
    "TP407": {"code": (10, 14), "bench": (0, 2)},
}


# Rules on by default outside test code though their judged figure there is under the bar,
# by decision (no NARROWED figure: the reason says why and states the figures), or
# because the figure reaches it in the part of that context a rule of code leaves them
# (NARROWED: other code that does not need CUDA anyway, what a default run reports of a rule
# naming CUDA): the reason, printed on the rule's page. tests/check/test_default_scope.py
# recomputes NARROWED, and fails when it misses the bar, when the plain figure reaches it
# (then the rule needs no entry) or when the rule is on anywhere else.
NARROWED: dict[str, tuple[int, int]] = {}
KEPT_ON: dict[str, str] = {
    "TP101": (
        "by decision: a hard-coded CUDA device is the first thing a port changes, and off, "
        "a plain `check` of a `.cuda()` script says nothing (held-out default recall, round "
        "5e: 0 of 32 sites without it); 651 of 907 judged findings in other code are real "
        "(648 of 796 outside code that needs CUDA anyway, what a default run reports of it), "
        "most of the rest correct but of low value: CUDA-only code the checker does not "
        'recognise, library code with overridden `device="cuda"` defaults, code the program '
        "never runs; samples U-Y, judged held out before they joined the pool, found 342 of "
        "406 of what a default run reported real. Two of its forms are left to a run that "
        "names it (`_select.LEFT_FORMS`): a CUDA default of a parameter (`def f(device="
        '"cuda")`: 54 of 126 judged findings over samples A-AH real, 41 of 92 of those a '
        "default run still reported before; held out in AF-AH 1 of 9; the rest a default "
        "every caller overrides, code nothing runs, CUDA-only code) and a CUDA value of a "
        'settings dict (`{"device": "cuda"}`: 0 of 5 real); neither is at any of the 99 '
        "held-out recall sites of rounds 5 and 5b (branch a34ak)"
    ),
    "TP301": (
        "by decision: 132 of 165 judged findings in other code over samples A-Y are real, too "
        "few for the whole rule, so a default run reports one form only (`_select.ONLY_FORMS`): "
        "where what is loaded reaches `load_state_dict(...)` (directly, by key or through a "
        "name), no `mmap=` maps the file, and the module names a device (a trained model's "
        "state, saved where it was trained), 86 of the 92 judged findings of samples A-U in "
        "that form are real, against 43 of 73 of the other loads it still reports; held-out "
        "default recall: 8 more of the 99 sites of rounds 5 and 5b, 3 more of the 19 of round "
        "5j (branch r34al)"
    ),
}
# Rules off by default though their judged figure in other code reaches the bar, by decision:
# the reason, printed on the rule's page, states the figures and the evidence against them.
# tests/check/test_default_scope.py fails when a figure no longer reaches the bar (the bar
# keeps the rule off then, and its page says so) and when a rule off by default reaches it
# with no entry here (its page would say "under the bar").
LEFT_OFF: dict[str, str] = {
    "TP115": (
        "by decision: 19 of 21 real findings in other code over samples A-Y (13 of 15 over A-T, "
        "6 of 6 held out in U), but off when V, W, X and Y were drawn, so none of the 42 "
        "findings it adds on their repositories was drawn or judged (16 in LoRA's NLU "
        "examples, 10 in one explainability library, 5 in ByteTrack); it goes on when a "
        "held-out draw of what it adds reaches the bar"
    ),
    "TP309": (
        "by decision: 6 of 6 real findings in other code over samples A-Y, under 8 judged and "
        "all from samples B, E and I (three repositories); off when U-Y were drawn, so none "
        "of the 25 findings it adds on V-Y's repositories was drawn or judged; it goes on when "
        "a held-out draw of what it adds reaches the bar"
    ),
}


def judged_sentence(code: str) -> str:
    """Where the rule is on by default and why, in the judged figures; "" when none are kept."""
    figures = JUDGED.get(code)
    if not figures:
        return ""
    parts = [
        f"{'test code' if where == TEST else 'other code'} {real} of {n} real"
        for where, (real, n) in sorted(figures.items())
        if n and where != BENCH
    ]
    text = f"judged over samples {SAMPLES}: {', '.join(parts)}" if parts else ""
    real, n = figures.get(BENCH, (0, 0))
    if n:  # benchmark code: its own span (BENCH_SAMPLES)
        bench = f"benchmark code {real} of {n} real over samples {BENCH_SAMPLES}"
        text = f"{text}; {bench}" if text else f"judged: {bench}"
    return text
