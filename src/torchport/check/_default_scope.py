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
code alone. The figures are :data:`JUDGED` (``benchmarks/bench_precision_sample.py
--scope`` writes the rows; the test recomputes these from them), over samples
:data:`SAMPLES` in every context (:data:`BENCH_SAMPLES` is the same span).

A rule may stay on below the bar only where its figure reaches the bar in a context a rule
of code narrows (:data:`KEPT_ON`, each with its reason, held by the same test): the rules
that name CUDA (``_select.CUDA_NAMING``) are left by a default run out of code that needs
CUDA anyway (``rules/_cuda_projects.py``: a module importing a CUDA-only package or its
project's own CUDA-only extension, compiling CUDA sources, or calling apex's
``amp.initialize``/``DistributedDataParallel`` on every run; code after such an import or
call in a block holding it), so what a default run reports of them is their judged findings in
other code outside such code (:data:`NARROWED`, from the ``cuda`` column of
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

SAMPLES = "A-T"  # the judged samples pooled (benchmarks/RESULTS.md)
BENCH_SAMPLES = "A-T"  # the same for benchmark code (the "bench" context)
BAR, FEW = 0.9, 8  # the share of real findings a default context needs; "too few judged"

# Judged findings per rule and context over the pooled samples (benchmark code: BENCH_SAMPLES),
# counting only what the rules still report: (real, judged). Written from
# benchmarks/data/precision_scope.csv; tests/check/test_default_scope.py recomputes it and
# fails when it differs.
JUDGED: dict[str, dict[str, tuple[int, int]]] = {
    "TP101": {"code": (309, 491), "test": (47, 88), "bench": (0, 32)},
    "TP102": {"code": (17, 20), "bench": (0, 3)},
    "TP103": {"code": (16, 23)},
    "TP104": {"code": (10, 10), "test": (1, 1)},
    "TP105": {"code": (7, 7)},
    "TP106": {"code": (131, 149), "test": (0, 3), "bench": (0, 4)},
    "TP107": {"code": (2, 2), "test": (1, 1), "bench": (1, 1)},
    "TP108": {"code": (5, 13), "bench": (2, 2)},
    "TP109": {"code": (190, 213), "bench": (6, 11)},
    "TP110": {"code": (15, 16)},
    "TP111": {"code": (8, 11)},
    "TP113": {"code": (20, 23), "bench": (0, 26)},
    "TP114": {"test": (0, 1)},
    "TP115": {"code": (13, 15), "bench": (0, 1)},
    "TP116": {"code": (5, 6)},
    "TP201": {"code": (0, 2)},
    "TP202": {"code": (140, 173), "test": (0, 1), "bench": (1, 1)},
    "TP203": {"code": (81, 82), "test": (0, 3), "bench": (3, 3)},
    "TP301": {"code": (121, 143), "test": (0, 1)},
    "TP302": {"code": (6, 8)},
    "TP303": {"code": (14, 18)},
    "TP304": {"code": (0, 1)},
    "TP305": {"code": (0, 1)},
    "TP307": {"code": (22, 22), "test": (1, 1)},
    "TP308": {"code": (8, 9)},
    "TP309": {"code": (6, 6), "test": (0, 1)},
    "TP401": {"code": (71, 78), "test": (0, 1), "bench": (1, 5)},
    "TP403": {"code": (54, 61), "test": (0, 2)},
    "TP404": {"code": (15, 18), "test": (7, 10)},
    "TP405": {"code": (25, 29)},
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
        "5e: 0 of 32 sites without it); 309 of 491 judged findings in other code are real "
        "(308 of 403 outside code that needs CUDA anyway), most of the rest correct but of "
        "low value in CUDA-only code the checker does not recognise; held out, samples V, W "
        "and X found 103 of 137, 82 of 82 and 35 of 46 real (the rest: library code with "
        'overridden `device="cuda"` defaults, code the program never runs, scripts built '
        "on apex's amp and their helpers)"
    ),
    "TP109": (
        "by decision: 190 of 213 judged findings in other code are real, one short of the "
        "bar, after every row was judged again at the code under the written standard "
        "(a34r); held out, samples U, V2, W and X found 36 of 39, 17 of 20, 9 of 9 and 24 of "
        "24 (86 of 92, 93%); the rest are timers, log lines and one-off scripts, no class a "
        "rule can tell; off, a plain `check` of the most common unported line, `device = 'cuda' if "
        "torch.cuda.is_available() else 'cpu'`, says nothing"
    ),
}
# Rules off by default though their judged figure reaches the bar somewhere, by decision: the
# reason, printed on the rule's page, states the figures and the evidence against them.
LEFT_OFF: dict[str, str] = {
    "TP401": (
        "by decision: 71 of 78 real findings in other code over samples A-T, many judged "
        "before the written standard (`empty_cache` and timing syncs counted real); held out "
        "under it, sample O found 11 of 21 real and sample V2 3 of 40: counts that CUDA-only "
        "device maps or a TP109 choice beside them decide, `empty_cache`, unused vendored code"
    ),
    "TP403": (
        "by decision: its 54 of 61 real findings in other code were judged before the written "
        "standard and never judged again; under it, held-out sample V found 0 of 17 real: off "
        "CUDA, `torch.cuda.amp` warns and turns itself off, so the program already runs on "
        "every device (in full precision) and the advice changes none of the standard's four "
        "effects"
    ),
    "TP112": (
        "by decision: 0 of 0 real findings in other code over samples A-T (the four judged "
        "there, all low, are no longer reported); held out, samples V and Y found 0 of 2 and "
        "0 of 4 real: a project's own NPU kernels timed on purpose, a device map's integer "
        "index named for the backends that use one; code written for one non-CUDA "
        "accelerator is rarely code meant to run on another"
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
