"""Is every rule linear in its matches? Each rule's own examples, grown 4x, timed.

For every rule: a file made of its invalid examples repeated ``n`` times (each copy
twice: once at module level, once inside a function, names kept apart per copy;
the examples' imports once, at the top),
then ``4n`` times; ``check`` with that rule alone selected, process CPU time,
median of ``--repeat`` runs in this process (the rule set is built once). A rule
that walks its module or scope for every match grows ~16x; a linear one ~4x. The
issue-34 bound: at most ~5x. Times at these sizes are noisy on a loaded machine, so
the table also gives the ratio of Python function calls (``cProfile``'s count, one
run per size): it does not depend on the load, and a walk per match shows in it
(a rule that is linear in calls but over 5x in time is this machine's noise or the
memory of a bigger tree, not a walk per match). ``--grow 8`` compares n with 8n.

Run: ``.venv/bin/python benchmarks/bench_check_linearity.py [--n 50] [--repeat 3]``
(``--rules TP301,TP302`` for some rules only)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import statistics
import time

from torchport.check._catalog import LazyRule, real_rule
from torchport.check._engine import check_text, ruleset_for
from torchport.check._rule import Rule

# Names, not attributes: `torch.device` renamed to `torch.device_3` calls nothing torch has
# (TP507's copies found nothing that way).
_NAME = re.compile(
    r"(?<![.\w])(model|net|x|y|ckpt|state|path|device|dev|scaler|loader|batch|data)\b"
)


def _rule_class(rule_code: str) -> type[Rule]:
    """The rule's own class: the engine's stand-ins (LazyRule) carry no examples."""
    found = type(next(r for r in ruleset_for([rule_code], None).rules))
    return real_rule(found) if issubclass(found, LazyRule) else found


def _copies(rule_code: str, n: int) -> str:
    rule = _rule_class(rule_code)
    imports: dict[str, None] = {"import torch\n": None}
    examples = []
    for example in rule.invalid or ():
        kept = []
        for line in example.source.splitlines(True):
            if line.startswith(("import ", "from ")):
                imports[line] = None  # once, in the header: n copies of an import are no use
            else:
                kept.append(line)
        examples.append("".join(kept))
    parts = ["".join(imports)]
    examples = examples or [""]
    for k in range(n):
        for j, source in enumerate(examples):
            renamed = _NAME.sub(lambda m, k=k: f"{m.group(1)}_{k}", source)
            parts.append(renamed)
            body = "".join("    " + line for line in renamed.splitlines(True)) or "    pass\n"
            parts.append(f"def copy_{k}_{j}():\n{body}")
    return "\n".join(parts)


def _time(source: str, code: str, repeat: int) -> tuple[float, int]:
    ruleset = ruleset_for([code], None)
    times, found = [], 0
    check_text(source, "bench.py", ruleset)  # the rule's module is imported on first use
    for _ in range(repeat):
        start = time.process_time()
        found = len(check_text(source, "bench.py", ruleset).findings)
        times.append(time.process_time() - start)
    return statistics.median(times), found


def _calls(source: str, code: str) -> int:
    ruleset = ruleset_for([code], None)
    profile = cProfile.Profile()
    profile.enable()
    check_text(source, "bench.py", ruleset)
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rules", default="")
    parser.add_argument("--grow", type=int, default=4, help="compare n copies with grow*n")
    args = parser.parse_args()
    codes = (
        args.rules.split(",") if args.rules else [r.code for r in ruleset_for(["ALL"], None).rules]
    )
    grow = args.grow
    bound = 1.25 * grow  # ~5x for 4x
    print(
        f"{'rule':6} {'lines n':>8} {'found n':>8} {f'found {grow}n':>9} {'s n':>8}"
        f" {f's {grow}n':>8} {'ratio':>6}"
        f" {'calls':>6}"
    )
    worst = worst_calls = 0.0
    for code in codes:
        small, big = _copies(code, args.n), _copies(code, grow * args.n)
        t1, f1 = _time(small, code, args.repeat)
        t4, f4 = _time(big, code, args.repeat)
        ratio = t4 / t1 if t1 > 0 else float("nan")
        calls = _calls(big, code) / max(_calls(small, code), 1)
        worst = max(worst, ratio) if f4 else worst
        worst_calls = max(worst_calls, calls)
        flag = f"  <-- over {bound:g}x" if ratio > bound and t4 > 0.05 else ""
        flag += "  <-- calls superlinear" if calls > 1.1 * grow else ""
        print(
            f"{code:6} {small.count(chr(10)):8} {f1:8} {f4:9} {t1:8.3f} {t4:8.3f} {ratio:6.1f}"
            f" {calls:6.2f}{flag}"
        )
    print(f"worst ratio: {worst:.1f}; worst ratio of calls: {worst_calls:.2f}")


if __name__ == "__main__":
    main()
