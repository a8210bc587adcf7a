"""Where a rule runs when nobody selected it: its default contexts, and the policy behind them.

A finding is in one of three contexts: ``test`` (test code, as the checker tells it everywhere,
``rules/_test_code.collected_by_a_test_runner``: a test folder or module, a test
function, class or fixture), ``bench`` (benchmark code that is not a test:
``_select.in_a_benchmark``, a ``benchmarks``/``bench``/... folder or a ``bench_*``/
``*_benchmark``/... file: a benchmark measures the device it was written for) or ``code``
(everything else). Each rule says in
which of them a default run reports it (``Rule.default_contexts``, mirrored in
the catalog). The policy, held by ``tests/check/test_default_scope.py`` against the
judged samples (``benchmarks/data/precision_sample*.csv`` and the contexts of their
rows, ``benchmarks/data/precision_scope.csv``): a rule is on by default in a
context only where at least 90% of its judged findings there are real problems;
with fewer than 8 judged there, only if every one is; and never in test or benchmark
code alone. The figures are :data:`JUDGED` (``benchmarks/bench_precision_sample.py
--scope`` writes the rows; the test recomputes these from them): test code and the
rest over samples :data:`SAMPLES`, benchmark code over :data:`BENCH_SAMPLES` (the first
samples whose judges tagged benchmark rows are Q-S).

Two rules stay on by default outside test code below the bar, by decision (:data:`KEPT_ON`,
each with its reason, held by the same test): they find what a port must change first,
and a plain ``check`` that says nothing of a hard-coded ``.cuda()`` is the silent empty
report the checker exists to prevent. Their figures are printed on their pages as they are.

Beside the contexts, a default run leaves the rules that name CUDA (``_select.CUDA_NAMING``)
out of code that needs CUDA anyway (``rules/_cuda_projects.py``: a module importing a
CUDA-only package or its project's own CUDA-only extension, or compiling CUDA sources):
what they say there is correct but of low value (sample R). :data:`JUDGED` counts rows a
rule reports when named, so that scope does not change it; its effect on the judged rows
is in benchmarks/RESULTS.md (issue 34, branch ``q34``).

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
    "SAMPLES",
    "judged_sentence",
]

SAMPLES = "A-P"  # the judged samples pooled (benchmarks/RESULTS.md)
BENCH_SAMPLES = "A-S"  # the same for benchmark code (the "bench" context)
BAR, FEW = 0.9, 8  # the share of real findings a default context needs; "too few judged"

# Judged findings per rule and context over the pooled samples (benchmark code: BENCH_SAMPLES),
# counting only what the rules still report: (real, judged). Written from
# benchmarks/data/precision_scope.csv; tests/check/test_default_scope.py recomputes it and
# fails when it differs.
JUDGED: dict[str, dict[str, tuple[int, int]]] = {
    "TP101": {"code": (151, 171), "test": (35, 45), "bench": (0, 32)},
    "TP102": {"code": (14, 15), "bench": (0, 3)},
    "TP103": {"code": (14, 17)},
    "TP104": {"code": (8, 8), "test": (1, 1)},
    "TP105": {"code": (7, 7)},
    "TP106": {"code": (105, 112), "test": (0, 2), "bench": (0, 4)},
    "TP107": {"code": (2, 2), "test": (1, 1), "bench": (1, 1)},
    "TP108": {"code": (9, 10), "bench": (2, 2)},
    "TP109": {"code": (131, 138), "bench": (2, 9)},
    "TP110": {"code": (11, 11)},
    "TP111": {"code": (8, 8)},
    "TP113": {"code": (16, 17), "bench": (0, 26)},
    "TP114": {"test": (0, 1)},
    "TP115": {"code": (12, 13), "bench": (0, 1)},
    "TP116": {"code": (5, 6)},
    "TP201": {"code": (0, 2)},
    "TP202": {"code": (140, 173), "test": (0, 1), "bench": (1, 1)},
    "TP203": {"code": (51, 52), "test": (0, 1)},
    "TP301": {"code": (78, 87)},
    "TP302": {"code": (6, 7)},
    "TP303": {"code": (13, 18)},
    "TP304": {"code": (0, 1)},
    "TP305": {"code": (0, 1)},
    "TP307": {"code": (9, 9), "test": (0, 1)},
    "TP308": {"code": (8, 9)},
    "TP309": {"code": (6, 6), "test": (0, 1)},
    "TP401": {"code": (71, 80), "test": (0, 1), "bench": (1, 5)},
    "TP403": {"code": (24, 25), "test": (0, 2)},
    "TP404": {"code": (10, 10), "test": (0, 1)},
    "TP405": {"code": (18, 19)},
    "TP406": {"code": (16, 19), "bench": (0, 1)},
    "TP407": {"code": (8, 8), "bench": (0, 2)},
}


# Rules on by default outside test code though their judged figure there is under the bar:
# the reason, printed on the rule's page. tests/check/test_default_scope.py fails when one
# of them reaches the bar (then it needs no entry) or is on anywhere else.
KEPT_ON: dict[str, str] = {
    "TP101": (
        "a hard-coded CUDA device is the first thing a port changes; off, a plain `check` "
        "would say nothing of `.cuda()` (held-out default recall fell from 62 to 10 of 74 "
        "sites); what is not real is mostly correct but low value in CUDA-only code"
    ),
    "TP301": (
        "a checkpoint saved on a GPU fails to load on a machine without one; off, default "
        "recall loses every `torch.load` site the held-out port commits changed"
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
    if n:  # benchmark code is judged over more samples
        bench = f"benchmark code {real} of {n} real over samples {BENCH_SAMPLES}"
        text = f"{text}; {bench}" if text else f"judged: {bench}"
    return text
